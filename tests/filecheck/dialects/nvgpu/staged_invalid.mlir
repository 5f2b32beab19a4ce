// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// The verifier messages of nvgpu.staged_store and nvgpu.staged_operand.

// The staging buffer holds whole rows (the tile's, or a warp group's) and whole column chunks.
func.func @staged_store_rows(%C: memref<?x?xbf16>, %c: tensor<128x256xbf16>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x96x64xbf16, swizzle = 128>
  %t = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<96x64xbf16, swizzle = 128>
  nvgpu.staged_store %c, %C[%i, %i] via %s, %t : tensor<128x256xbf16>, memref<?x?xbf16>, !nvgpu.smem<1x96x64xbf16, swizzle = 128>, !nvgpu.tma_desc<96x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.staged_store: the staging buffer !nvgpu.smem<1x96x64xbf16, swizzle = 128> holds no whole rows and column chunks of the tile tensor<128x256xbf16>

// -----

// One element type: the tile's is the memref's and the buffer's (convert before the store).
func.func @staged_store_element_type(%C: memref<?x?xbf16>, %c: tensor<128x64xbf16>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x32xf32, swizzle = 128>
  %t = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  nvgpu.staged_store %c, %C[%i, %i] via %s, %t : tensor<128x64xbf16>, memref<?x?xbf16>, !nvgpu.smem<1x128x32xf32, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.staged_store: the tile tensor<128x64xbf16>, the memref memref<?x?xbf16> and the staging buffer !nvgpu.smem<1x128x32xf32, swizzle = 128> must have one element type

// -----

// The tensor map's box is one buffer's tile.
func.func @staged_store_box(%C: memref<?x?xbf16>, %c: tensor<128x256xbf16>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  %t = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
  nvgpu.staged_store %c, %C[%i, %i] via %s, %t : tensor<128x256xbf16>, memref<?x?xbf16>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.staged_store: box [64, 64] does not match the shared-memory tile [128, 64]

// -----

// One offset per dimension of the memref.
func.func @staged_store_offsets(%C: memref<?x?x?xbf16>, %c: tensor<128x64xbf16>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  %t = nvgpu.tma_descriptor %C : memref<?x?x?xbf16> -> !nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>
  nvgpu.staged_store %c, %C[%i, %i] via %s, %t : tensor<128x64xbf16>, memref<?x?x?xbf16>, !nvgpu.smem<1x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.staged_store expects 3 offsets for memref<?x?x?xbf16>, got 2

// -----

// A 2-D tile.
func.func @staged_store_rank(%C: memref<?x?x?xbf16>, %c: tensor<2x128x64xbf16>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  %t = nvgpu.tma_descriptor %C : memref<?x?x?xbf16> -> !nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>
  nvgpu.staged_store %c, %C[%i, %i, %i] via %s, %t : tensor<2x128x64xbf16>, memref<?x?x?xbf16>, !nvgpu.smem<1x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.staged_store stores a static 2-D tile, got tensor<2x128x64xbf16>

// -----

// Buffers of 2-D tiles.
func.func @staged_store_buffer_rank(%C: memref<?x?xbf16>, %c: tensor<128x64xbf16>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<128x64xbf16, swizzle = 128>
  %t = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  nvgpu.staged_store %c, %C[%i, %i] via %s, %t : tensor<128x64xbf16>, memref<?x?xbf16>, !nvgpu.smem<128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.staged_store stages through buffers of 2-D tiles (`B x rows x cols`), got !nvgpu.smem<128x64xbf16, swizzle = 128>

// -----

// One tile per warp group, together the operand's rows.
func.func @staged_operand_rows(%p: tensor<128x64xf8E4M3FN>) {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x64xf8E4M3FN, swizzle = 64>
  %q = nvgpu.staged_operand %p via %b : tensor<128x64xf8E4M3FN>, !nvgpu.smem<1x64x64xf8E4M3FN, swizzle = 64>
  func.return
}
// CHECK: error: nvgpu.staged_operand: !nvgpu.smem<1x64x64xf8E4M3FN, swizzle = 64> holds 1 tiles of 64x64 f8E4M3FN, one per warp group or the whole tile in one or two buffers: not the rows of tensor<128x64xf8E4M3FN>

// -----

// The buffer's element type is the operand's.
func.func @staged_operand_element_type(%p: tensor<128x64xf8E4M3FN>) {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x64xf8E5M2, swizzle = 64>
  %q = nvgpu.staged_operand %p via %b : tensor<128x64xf8E4M3FN>, !nvgpu.smem<2x64x64xf8E5M2, swizzle = 64>
  func.return
}
// CHECK: error: nvgpu.staged_operand: !nvgpu.smem<2x64x64xf8E5M2, swizzle = 64> holds 2 tiles of 64x64 f8E5M2, one per warp group or the whole tile in one or two buffers: not the rows of tensor<128x64xf8E4M3FN>
