// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// The verifier messages of nvgpu.tma_load_box and nvgpu.tma_store_box.

// The offset is a chunk's place in the stage: a multiple of a chunk's bytes
// (64 rows x 128 bytes), below the stage's.
func.func @offset_not_a_chunk(%A: memref<?x?xbf16>, %i: index) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
  %bars = nvgpu.smem_alloc offset(32768) : !nvgpu.mbarrier<2>
  %ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  nvgpu.tma_load_box %ta[%i, %i], %sa[%i] offset 4096, %bars[%i] : !nvgpu.tma_desc<64x128xbf16, swizzle = 128>, !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: nvgpu.tma_load_box offset must be a chunk's place in the stage (a multiple of 8192 below 16384), got 4096

// -----

// The descriptor's box is a chunk of the tile.
func.func @box_of_another_tile(%A: memref<?x?xbf16>, %i: index) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
  %ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x128xbf16, swizzle = 128>
  nvgpu.tma_store_box %sa[%i] offset 0, %ta[%i, %i] : !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.tma_desc<128x128xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_store_box: box [128, 64] is not a 64x64 chunk of the tile of !nvgpu.smem<2x64x128xbf16, swizzle = 128>

// -----

func.func @coords(%A: memref<?x?xbf16>, %i: index) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
  %ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  nvgpu.tma_store_box %sa[%i] offset 0, %ta[%i] : !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_store_box expects 2 coordinates, got 1
