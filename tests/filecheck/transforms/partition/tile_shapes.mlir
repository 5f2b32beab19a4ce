// The tile program decides the partition and the slots (docs/passes.md, "Tile shapes"):
// one consumer warp group per 64 accumulator rows, register budgets that share the CTA's
// launch pool, and slots swizzled with the widest span that divides their rows.
// RUN: tawa-opt %s -p tawa-warp-specialize | filecheck %s
// RUN: tawa-opt %s -p 'tawa-warp-specialize{consumer-warps=4 consumer-regs=240}' | filecheck %s --check-prefix=EXPLICIT
// RUN: tawa-opt %s -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref' | filecheck %s --check-prefix=SLOTS

// BLOCK_M = 64: one consumer warp group of 256 threads' pool (248 x 256): 40 + 256.
// CHECK-LABEL: func.func @m64
// CHECK:       aref.warp_specialize partition producer warps(4) regs(40) {
// CHECK:       } partition consumer warps(4) regs(256) {
// BLOCK_M = 192: three (512 threads, 128 each at launch); 40 would leave them 152 < 154, so the
// producer drops to 24 and they get 160.
// CHECK-LABEL: func.func @m192
// CHECK:       aref.warp_specialize partition producer warps(4) regs(24) {
// CHECK:       } partition consumer warps(12) regs(160) {
// BLOCK_M = 256: four (640 threads hold 96 x 640 = 61440): 24 + 4 x 112 = 472 <= 480.
// CHECK-LABEL: func.func @m256
// CHECK:       aref.warp_specialize partition producer warps(4) regs(24) {
// CHECK:       } partition consumer warps(16) regs(112) {

// Explicit options win (tawa-lower-tile would then reject @m192's 192-row accumulator for
// one warp group); the derived producer budget takes what is left, at most 40.
// EXPLICIT-LABEL: func.func @m64
// EXPLICIT:       partition producer warps(4) regs(40) {
// EXPLICIT:       } partition consumer warps(4) regs(240) {
// EXPLICIT-LABEL: func.func @m192
// EXPLICIT:       partition producer warps(4) regs(40) {
// EXPLICIT:       } partition consumer warps(4) regs(240) {

// BLOCK_K = 32 bf16: 64-byte rows, 64B swizzle, 512-byte aligned buffers; TMA boxes and the
// empty barriers (one arrival per consumer warp group) follow.
// SLOTS-LABEL: func.func @m64
// SLOTS-SAME:    #nvgpu.kernel<smem = 25632>
// SLOTS:         nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x32xbf16, swizzle = 64>
// SLOTS-NEXT:    nvgpu.smem_alloc offset(8192) : !nvgpu.smem<2x128x32xbf16, swizzle = 64>
// SLOTS:         nvgpu.mbarrier_init %{{.*}}, 1
// SLOTS-NEXT:    nvgpu.mbarrier_init %{{.*}}, 1
// SLOTS:         nvgpu.named_barrier_sync 0, 256
// SLOTS:         nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<64x32xbf16, swizzle = 64>
// SLOTS-NEXT:    nvgpu.tma_descriptor %B : memref<?x?xbf16> -> !nvgpu.tma_desc<128x32xbf16, swizzle = 64>
// SLOTS-LABEL: func.func @m192
// SLOTS:         nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x192x64xbf16, swizzle = 128>
// SLOTS:         nvgpu.mbarrier_init %{{.*}}, 1
// SLOTS-NEXT:    nvgpu.mbarrier_init %{{.*}}, 3
// SLOTS:         nvgpu.named_barrier_sync 0, 512
// SLOTS-LABEL: func.func @m256
// SLOTS:         nvgpu.mbarrier_init %{{.*}}, 1
// SLOTS-NEXT:    nvgpu.mbarrier_init %{{.*}}, 4
// SLOTS:         nvgpu.named_barrier_sync 0, 640

func.func @m64(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 32 : index
  %cbm = arith.constant 64 : index
  %cbn = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %cbm : index
  %n0 = arith.muli %pid_n, %cbn : index
  %zero = tile.zeros : tensor<64x128xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero) -> (tensor<64x128xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<64x32xbf16>
    %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<128x32xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<64x32xbf16>, tensor<128x32xbf16> -> tensor<64x128xf32>
    scf.yield %d : tensor<64x128xf32>
  }
  %c = arith.truncf %acc : tensor<64x128xf32> to tensor<64x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<64x128xbf16>, memref<?x?xbf16>
  func.return
}

func.func @m192(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 192 : index
  %cbn = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %cbm : index
  %n0 = arith.muli %pid_n, %cbn : index
  %zero = tile.zeros : tensor<192x128xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero) -> (tensor<192x128xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<192x64xbf16>
    %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<192x64xbf16>, tensor<128x64xbf16> -> tensor<192x128xf32>
    scf.yield %d : tensor<192x128xf32>
  }
  %c = arith.truncf %acc : tensor<192x128xf32> to tensor<192x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<192x128xbf16>, memref<?x?xbf16>
  func.return
}

func.func @m256(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 256 : index
  %cbn = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %cbm : index
  %n0 = arith.muli %pid_n, %cbn : index
  %zero = tile.zeros : tensor<256x128xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero) -> (tensor<256x128xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<256x64xbf16>, tensor<128x64xbf16> -> tensor<256x128xf32>
    scf.yield %d : tensor<256x128xf32>
  }
  %c = arith.truncf %acc : tensor<256x128xf32> to tensor<256x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<256x128xbf16>, memref<?x?xbf16>
  func.return
}
