// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// The verifier messages of nvgpu.frag_load_shared_at and nvgpu.frag_store_shared_at.

// A base and an offset per access (a 64x16 f16 wgmma fragment: 4 vectors of 2, an access each).
func.func @too_few(%u: i32) {
  %a = nvgpu.frag_load_shared_at [%u] bases [0, 0] offsets [0, 4] : !nvgpu.frag<64x16xf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_load_shared_at needs a base and an offset for each of the 4 accesses of !nvgpu.frag<64x16xf16, wgmma>, got 2 and 2

// -----

// Bases index the address operands.
func.func @base_out_of_range(%u: i32) {
  %a = nvgpu.frag_load_shared_at [%u] bases [0, 0, 1, 0] offsets [0, 4, 8, 12] : !nvgpu.frag<64x16xf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_load_shared_at bases must index its 1 addresses, got [0, 0, 1, 0]

// -----

// Offsets keep every access aligned (a packed pair: 4 bytes).
func.func @misaligned(%v: !nvgpu.frag<64x16xbf16, wgmma>, %u: i32) {
  nvgpu.frag_store_shared_at %v, [%u] bases [0, 0, 0, 0] offsets [0, 2, 8, 12] : !nvgpu.frag<64x16xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_store_shared_at offsets must be non-negative multiples of its 4-byte accesses, got [0, 2, 8, 12]

// -----

// At least one address.
func.func @no_address(%v: !nvgpu.frag<64x16xbf16, wgmma>) {
  nvgpu.frag_store_shared_at %v, [] bases [0, 0, 0, 0] offsets [0, 4, 8, 12] : !nvgpu.frag<64x16xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_store_shared_at needs at least one address

// -----

// Element types as frag_load_shared's: f32, bf16, f16.
func.func @int_load(%u: i32) {
  %a = nvgpu.frag_load_shared_at [%u] bases [0, 0, 0, 0] offsets [0, 8, 16, 24] : !nvgpu.frag<64x16xi32, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_load_shared_at reads f32, bf16 or f16 elements, got i32
