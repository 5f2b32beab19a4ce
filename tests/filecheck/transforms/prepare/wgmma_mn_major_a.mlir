// RUN: tawa-opt %s -p tawa-expand-wgmma | filecheck %s --check-prefix=EXPAND
// RUN: tawa-opt %s -p tawa-expand-wgmma,tawa-encode-wgmma-descriptors | filecheck %s --check-prefix=ENCODE
// An MN-major A (`lhs_transposed`: a K×M tile, the A of Aᵀ·B with A stored
// K×M) is read as an MN-major B is: k-step j is 16 K rows down (16 × 128
// bytes), LBO the next column chunk, SBO 8 K rows; a warp group's second
// 64-row block of M is the next column chunk (64 rows × 128 bytes).

// EXPAND-LABEL: func.func @two_row_blocks
// EXPAND:      %[[A0:.*]] = nvgpu.wgmma_desc_advance %[[DA:[^,]*]], 0 : !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>
// EXPAND-NEXT: %[[B0:.*]] = nvgpu.wgmma_desc_advance %[[DB:[^,]*]], 0 :
// EXPAND-NEXT: nvgpu.wgmma_mma_async %[[A0]], %[[B0]], %{{.*}} {lhs_transposed, rhs_transposed, row_block = 0 : i64}
// EXPAND-NEXT: %[[A1:.*]] = nvgpu.wgmma_desc_advance %[[DA]], 8192 :
// EXPAND-NEXT: nvgpu.wgmma_mma_async %[[A1]], %[[B0]], %{{.*}} {lhs_transposed, rhs_transposed, row_block = 1 : i64}
// EXPAND-NEXT: nvgpu.wgmma_desc_advance %[[DA]], 2048 :
// EXPAND-NEXT: nvgpu.wgmma_desc_advance %[[DB]], 32 :
// EXPAND:      nvgpu.wgmma_desc_advance %[[DA]], 10240 :
// EXPAND:      nvgpu.wgmma_desc_advance %[[DA]], 14336 :
// EXPAND-NOT:  nvgpu.wgmma %

// A's descriptor is MN-major (LBO = 64 K rows × 128 bytes, SBO = 1024);
// B's (a transposed rhs) K-major.  With `columns`, the first column of a
// warp group's M range is a chunk: K rows × 2 bytes per column (64 × 2).
// ENCODE-LABEL: func.func @two_row_blocks
// ENCODE:      %[[COL:.*]] = arith.index_cast %col : index to i32
// ENCODE-NEXT: %[[PER:.*]] = arith.constant 128 : i32
// ENCODE-NEXT: arith.muli %[[COL]], %[[PER]] : i32
// ENCODE:      nvgpu.wgmma_desc_encode %{{.*}} lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>
// ENCODE:      nvgpu.wgmma_desc_encode %{{.*}} lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
func.func @two_row_blocks(%acc0: i1, %col: index) {
  %c0 = arith.constant 0 : index
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x256xbf16, swizzle = 128>
  %sb = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
  %da = nvgpu.wgmma_descriptor %sa[%c0, %col] {columns} : !nvgpu.smem<1x64x256xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>
  %db = nvgpu.wgmma_descriptor %sb[%c0, %c0] : !nvgpu.smem<1x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<128x64xf32, wgmma>
  %d = nvgpu.wgmma %da, %db, %z, %acc0 {lhs_transposed, rhs_transposed} : !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<128x64xf32, wgmma>
  func.return
}

// 64B swizzle (spans of 32 bf16): a 64-row block of M is two column chunks
// of 32 K rows × 64 bytes, LBO 2048 between them; k-steps 16 × 64 bytes.
// EXPAND-LABEL: func.func @sw64
// EXPAND:      nvgpu.wgmma_desc_advance %[[DA:[^,]*]], 0 : !nvgpu.wgmma_desc<32x64xf16, swizzle = 64>
// EXPAND:      nvgpu.wgmma_desc_advance %[[DA]], 1024 :
// ENCODE-LABEL: func.func @sw64
// ENCODE:      nvgpu.wgmma_desc_encode %{{.*}} lbo(2048) sbo(512) swizzle(64) : !nvgpu.wgmma_desc<32x64xf16, swizzle = 64>
func.func @sw64(%acc0: i1) {
  %c0 = arith.constant 0 : index
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x32x64xf16, swizzle = 64>
  %sb = nvgpu.smem_alloc offset(4096) : !nvgpu.smem<1x32x64xf16, swizzle = 128>
  %da = nvgpu.wgmma_descriptor %sa[%c0, %c0] {columns} : !nvgpu.smem<1x32x64xf16, swizzle = 64> -> !nvgpu.wgmma_desc<32x64xf16, swizzle = 64>
  %db = nvgpu.wgmma_descriptor %sb[%c0, %c0] : !nvgpu.smem<1x32x64xf16, swizzle = 128> -> !nvgpu.wgmma_desc<32x64xf16, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  %d = nvgpu.wgmma %da, %db, %z, %acc0 {lhs_transposed} : !nvgpu.wgmma_desc<32x64xf16, swizzle = 64>, !nvgpu.wgmma_desc<32x64xf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
