// An A operand transformed before the dot: the producer still delivers the
// tile by TMA; the consumers read their 64 rows of it into registers in the
// wgmma A-operand layout, compute, convert, and issue an RS wgmma (A from
// registers, B through its descriptor).  A transformed B is a located error:
// wgmma reads B only from shared memory.
//
// RUN: tawa-opt %S/../../../../examples/gemm_a_prologue.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile' | filecheck %s
// RUN: not tawa-opt %s -p tawa-hopper-pipeline 2>&1 | filecheck %s --check-prefix=BTRANS
// RUN: tawa-opt %S/../../../../examples/gemm_a_prologue.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref' | filecheck %s --check-prefix=AREF

// The A slots are read by the consumer threads (not only by wgmma), so every
// consumer thread releases them (256 arrivals), after a proxy fence; the B
// slots keep one arrival per consumer warp group.
// AREF:      nvgpu.mbarrier_init %[[EA:.*]][%{{.*}}], 256 : !nvgpu.mbarrier<2>
// AREF:      nvgpu.mbarrier_init %[[EB:.*]][%{{.*}}], 2 : !nvgpu.mbarrier<2>
// AREF:      nvgpu.fence_mbarrier_init
// AREF-NEXT: nvgpu.fence_proxy_async
// AREF:      nvgpu.fence_proxy_async
// AREF-NEXT: nvgpu.mbarrier_arrive %[[EA]][%{{.*}}]

// CHECK:         %a = nvgpu.frag_load_shared %{{.*}}[%stage{{.*}}, %wg_row0] : !nvgpu.smem<2x128x64xf16, swizzle = 128> -> !nvgpu.frag<64x64xf16, wgmma>
// CHECK-NEXT:    %a_f = nvgpu.frag_convert %a : !nvgpu.frag<64x64xf16, wgmma> -> !nvgpu.frag<64x64xf32, wgmma>
// CHECK:         %a_s = nvgpu.frag_binary mulf %a_f, %alpha : !nvgpu.frag<64x64xf32, wgmma>, f32
// CHECK:         %[[A:.*]] = nvgpu.frag_convert %a_s : !nvgpu.frag<64x64xf32, wgmma> -> !nvgpu.frag<64x64xbf16, wgmma>
// CHECK:         %[[DESC:.*]] = nvgpu.wgmma_descriptor
// CHECK:         nvgpu.wgmma %[[A]], %[[DESC]], %acc_i, %{{.*}} {rhs_transposed} : !nvgpu.frag<64x64xbf16, wgmma>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>

func.func @b_transformed(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %K: index, %beta: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %beta_t = tile.splat %beta : f32 -> tensor<128x64xf32>
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b_f = arith.extf %b : tensor<128x64xbf16> to tensor<128x64xf32>
    %b_s = arith.mulf %b_f, %beta_t : tensor<128x64xf32>
    %b_bf = arith.truncf %b_s : tensor<128x64xf32> to tensor<128x64xbf16>
    %d = tile.dot %a, %b_bf, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}
// BTRANS: lower_tile_a_prologue.mlir:[[# @LINE - 7]]:5: error: tawa-hopper-pipeline: tile.dot rhs computed in registers: wgmma reads B from shared memory, where each warp group writes its own rows of it, so it must be a 16-bit K×N tile (no trans_b) whose K rows are the warp groups' 2 x 64, got tensor<128x64xbf16> with trans_b: transform the A operand instead (e.g. compute Cᵀ = Bᵀ·Aᵀ), or transform B before the kernel
