// RUN: tawa-opt %s --split-input-file -p tawa-expand-wgmma,tawa-encode-wgmma-descriptors | filecheck %s
// RUN: not tawa-opt %S/../Inputs/encode_wgmma_descriptors_invalid.mlir -p tawa-expand-wgmma,tawa-encode-wgmma-descriptors 2>&1 | filecheck %s --check-prefix=INVALID

// A descriptor is the tile's shared address in arith on i32 (buffer + stage
// × stage bytes + first row × span) and an encode op with the fields.
// 128B swizzle: K-major A and MN-major B both have LBO = the next column
// chunk (rows × 128 bytes), SBO = 8 rows × 128 bytes.
// CHECK-LABEL: func.func @sw128
// CHECK:      %[[BASE:.*]] = nvgpu.smem_address %[[SA:.*]] : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
// CHECK-NEXT: %[[S:.*]] = arith.index_cast %[[STAGE:.*]] : index to i32
// CHECK-NEXT: %[[SB:.*]] = arith.constant 16384 : i32
// CHECK-NEXT: %[[SO:.*]] = arith.muli %[[S]], %[[SB]] : i32
// CHECK-NEXT: %[[AS:.*]] = arith.addi %[[SO]], %[[BASE]] : i32
// CHECK-NEXT: %[[R:.*]] = arith.index_cast %[[ROW:.*]] : index to i32
// CHECK-NEXT: %[[RB:.*]] = arith.constant 128 : i32
// CHECK-NEXT: %[[RO:.*]] = arith.muli %[[R]], %[[RB]] : i32
// CHECK-NEXT: %[[ADDR:.*]] = arith.addi %[[RO]], %[[AS]] : i32
// CHECK-NEXT: nvgpu.wgmma_desc_encode %[[ADDR]] lbo(16384) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// CHECK:      nvgpu.wgmma_desc_encode %{{.*}} lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// CHECK-NOT:  nvgpu.wgmma_descriptor
func.func @sw128(%stage: index, %row: index, %acc0: i1) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  %sb = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %da = nvgpu.wgmma_descriptor %sa[%stage, %row] : !nvgpu.smem<2x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  %db = nvgpu.wgmma_descriptor %sb[%stage, %row] : !nvgpu.smem<2x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  %d = nvgpu.wgmma %da, %db, %z, %acc0 : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}

// -----

// 32B swizzle, K-major: rows of 32 bytes, SBO = 8 × 32; LBO = rows × 32.
// Unswizzled, MN-major (rows of 16 bytes = one core-matrix row): LBO = the
// next 8 K rows (8 × 16), SBO = the next MN chunk (rows × 16).
// CHECK-LABEL: func.func @sw32_and_none
// CHECK:      arith.constant 32 : i32
// CHECK:      nvgpu.wgmma_desc_encode %{{.*}} lbo(2048) sbo(256) swizzle(32) : !nvgpu.wgmma_desc<64x16xbf16, swizzle = 32>
// CHECK:      arith.constant 16 : i32
// CHECK:      nvgpu.wgmma_desc_encode %{{.*}} lbo(128) sbo(256) swizzle(0) : !nvgpu.wgmma_desc<16x8xbf16>
func.func @sw32_and_none(%s: index, %acc0: i1) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x16xbf16, swizzle = 32>
  %sb = nvgpu.smem_alloc offset(2048) : !nvgpu.smem<1x16x8xbf16>
  %da = nvgpu.wgmma_descriptor %sa[%s, %s] : !nvgpu.smem<1x64x16xbf16, swizzle = 32> -> !nvgpu.wgmma_desc<64x16xbf16, swizzle = 32>
  %db = nvgpu.wgmma_descriptor %sb[%s, %s] : !nvgpu.smem<1x16x8xbf16> -> !nvgpu.wgmma_desc<16x8xbf16>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x8xf32, wgmma>
  %d = nvgpu.wgmma %da, %db, %z, %acc0 : !nvgpu.wgmma_desc<64x16xbf16, swizzle = 32>, !nvgpu.wgmma_desc<16x8xbf16>, !nvgpu.frag<64x8xf32, wgmma>
  func.return
}

// INVALID: encode_wgmma_descriptors_invalid.mlir:5:{{[0-9]+}}: error: tawa-expand-wgmma: an unswizzled tile is a wgmma layout only with rows of 16 bytes, got 128 in !nvgpu.smem<1x64x64xbf16>
