// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// A row vector of the accumulators (held by the 4 threads of a quad).
func.func @row_vector(%v: !nvgpu.frag<64xf32, wgmma_row>, %a: index, %p: index) {
  nvgpu.frag_red_global %v, %a, %p : !nvgpu.frag<64xf32, wgmma_row>
  func.return
}
// CHECK: error: nvgpu.frag_red_global adds 2-D fragments

// -----

func.func @bf16(%v: !nvgpu.frag<64x128xbf16, wgmma>, %a: index, %p: index) {
  nvgpu.frag_red_global %v, %a, %p : !nvgpu.frag<64x128xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_red_global adds f32 fragments, got !nvgpu.frag<64x128xbf16, wgmma>

// -----

func.func @into_bf16(%v: !nvgpu.frag<64x128xf32, wgmma>, %D: memref<?x?xbf16>, %i: index) {
  nvgpu.frag_atomic_add %v, %D[%i, %i] : !nvgpu.frag<64x128xf32, wgmma>, memref<?x?xbf16>
  func.return
}
// CHECK: error: nvgpu.frag_atomic_add adds into f32 memrefs, got memref<?x?xbf16>
