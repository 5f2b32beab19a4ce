// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// The verifier messages of nvgpu.frag_store_shared (those of nvgpu.tma_store,
// nvgpu.tma_store_wait and the named barriers are in invalid.mlir).

// Whole rows: the fragment's columns are the tile's.
func.func @frag_store_shared_columns(%v: !nvgpu.frag<64x128xbf16, wgmma>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x256xbf16, swizzle = 128>
  nvgpu.frag_store_shared %v, %s[%i, %i] : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.smem<1x128x256xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.frag_store_shared writes whole rows of one stage of !nvgpu.smem<1x128x256xbf16, swizzle = 128> from a fragment of its element type, got !nvgpu.frag<64x128xbf16, wgmma>

// -----

// The fragment's element type is the tile's (convert first).
func.func @frag_store_shared_element_type(%v: !nvgpu.frag<64x256xf32, wgmma>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x256xbf16, swizzle = 128>
  nvgpu.frag_store_shared %v, %s[%i, %i] : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.smem<1x128x256xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.frag_store_shared writes whole rows of one stage of !nvgpu.smem<1x128x256xbf16, swizzle = 128> from a fragment of its element type, got !nvgpu.frag<64x256xf32, wgmma>

// -----

// Elements the threads can store: f32, bf16, f16.
func.func @frag_store_shared_int(%v: !nvgpu.frag<64x64xi32, wgmma>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x64xi32, swizzle = 128>
  nvgpu.frag_store_shared %v, %s[%i, %i] : !nvgpu.frag<64x64xi32, wgmma>, !nvgpu.smem<1x64x64xi32, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.frag_store_shared writes f32, bf16, f16 or fp8 elements, got i32
