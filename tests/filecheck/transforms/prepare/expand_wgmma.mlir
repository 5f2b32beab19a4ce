// RUN: tawa-opt %s -p tawa-expand-wgmma | filecheck %s
// A whole-tile wgmma becomes one nvgpu.wgmma_mma_async per k-step.

// K-major A (64x64 bf16, one 128-byte row) and K-major B: k-step j reads 32·j
// bytes further along the row; step 0 takes the wgmma's scale-d, later steps true.
// CHECK-LABEL: func.func @k_major
// CHECK:      %[[T:.*]] = arith.constant true
// CHECK:      %[[DA:.*]] = nvgpu.wgmma_descriptor %{{.*}}[%{{.*}}, %{{.*}}] : {{.*}} -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// CHECK:      %[[DB:.*]] = nvgpu.wgmma_descriptor
// CHECK:      %[[A0:.*]] = nvgpu.wgmma_desc_advance %[[DA]], 0
// CHECK-NEXT: %[[B0:.*]] = nvgpu.wgmma_desc_advance %[[DB]], 0
// CHECK-NEXT: %[[R0:.*]] = nvgpu.wgmma_mma_async %[[A0]], %[[B0]], %{{.*}}, %[[ACC:[^ ]*]] {rhs_transposed}
// CHECK-NEXT: %[[A1:.*]] = nvgpu.wgmma_desc_advance %[[DA]], 32
// CHECK-NEXT: %[[B1:.*]] = nvgpu.wgmma_desc_advance %[[DB]], 32
// CHECK-NEXT: %[[R1:.*]] = nvgpu.wgmma_mma_async %[[A1]], %[[B1]], %[[R0]], %[[T]] {rhs_transposed}
// CHECK-NEXT: nvgpu.wgmma_desc_advance %[[DA]], 64
// CHECK:      nvgpu.wgmma_desc_advance %[[DA]], 96
// CHECK-NEXT: nvgpu.wgmma_desc_advance %[[DB]], 96
// CHECK-NEXT: %[[R3:.*]] = nvgpu.wgmma_mma_async {{.*}}, %[[T]] {rhs_transposed}
// CHECK-NEXT: nvgpu.wgmma_wait_group 0 (%[[R3]])
// CHECK-NOT:  nvgpu.wgmma %
func.func @k_major(%acc0: i1) {
  %c0 = arith.constant 0 : index
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %sb = nvgpu.smem_alloc offset(16384) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  %da = nvgpu.wgmma_descriptor %sa[%c0, %c0] : !nvgpu.smem<2x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  %db = nvgpu.wgmma_descriptor %sb[%c0, %c0] : !nvgpu.smem<2x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x128xf32, wgmma>
  %d = nvgpu.wgmma %da, %db, %z, %acc0 {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
  %w = nvgpu.wgmma_wait_group 0 (%d) : !nvgpu.frag<64x128xf32, wgmma>
  func.return
}

// K = 128 bf16 is two 64-column chunks: k-steps 4..7 are in the second chunk,
// rows × 128 bytes on (A: 64 rows of its 128-row buffer tile = 16384; B: 8192).
// An MN-major B (K rows of 128 bytes) steps 16 rows = 2048 bytes.
// CHECK-LABEL: func.func @chunks_and_mn_major
// CHECK-COUNT-4: nvgpu.wgmma_desc_advance %{{.*}}, {{0|32|64|96}} :
// CHECK:      nvgpu.wgmma_desc_advance %[[DA:[^,]*]], 16384 :
// CHECK-NEXT: nvgpu.wgmma_desc_advance %[[DB:[^,]*]], 8192 :
// CHECK:      nvgpu.wgmma_desc_advance %[[DA]], 16480 :
// CHECK-NEXT: nvgpu.wgmma_desc_advance %[[DB]], 14336 :
func.func @chunks_and_mn_major(%acc0: i1) {
  %c0 = arith.constant 0 : index
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x128xbf16, swizzle = 128>
  %sb = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  %da = nvgpu.wgmma_descriptor %sa[%c0, %c0] : !nvgpu.smem<1x128x128xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>
  %db = nvgpu.wgmma_descriptor %sb[%c0, %c0] : !nvgpu.smem<1x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  %d = nvgpu.wgmma %da, %db, %z, %acc0 : !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}

// A register A operand: k-step j is nvgpu.wgmma_k_slice j (registers 4j..4j+3).
// CHECK-LABEL: func.func @register_a
// CHECK:      %[[S0:.*]] = nvgpu.wgmma_k_slice %[[A:.*]][0] : !nvgpu.frag<64x32xbf16, wgmma> -> !nvgpu.frag<64x16xbf16, wgmma>
// CHECK-NEXT: nvgpu.wgmma_desc_advance %{{.*}}, 0
// CHECK-NEXT: nvgpu.wgmma_mma_async %[[S0]],
// CHECK-NEXT: %[[S1:.*]] = nvgpu.wgmma_k_slice %[[A]][1]
// CHECK-NEXT: nvgpu.wgmma_desc_advance %{{.*}}, 32
// CHECK-NEXT: nvgpu.wgmma_mma_async %[[S1]],
func.func @register_a(%acc0: i1) {
  %c0 = arith.constant 0 : index
  %sb = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x32xbf16, swizzle = 64>
  %db = nvgpu.wgmma_descriptor %sb[%c0, %c0] : !nvgpu.smem<1x64x32xbf16, swizzle = 64> -> !nvgpu.wgmma_desc<64x32xbf16, swizzle = 64>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x32xf32, wgmma>
  %a = nvgpu.frag_convert %z : !nvgpu.frag<64x32xf32, wgmma> -> !nvgpu.frag<64x32xbf16, wgmma>
  %acc = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  %d = nvgpu.wgmma %a, %db, %acc, %acc0 {rhs_transposed} : !nvgpu.frag<64x32xbf16, wgmma>, !nvgpu.wgmma_desc<64x32xbf16, swizzle = 64>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
