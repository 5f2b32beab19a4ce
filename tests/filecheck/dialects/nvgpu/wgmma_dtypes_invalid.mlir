// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// The operand combinations wgmma does not have, one per chunk
// (wgmma_dtypes.mlir: the ones it has).

func.func @wgmma_tf32_mn_major(%a: !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>, %b: !nvgpu.wgmma_desc<32x64xf32, swizzle = 128>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t : !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>, !nvgpu.wgmma_desc<32x64xf32, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma with f32 operands needs a K-major rhs: wgmma transposes only 16-bit operands

// -----

func.func @wgmma_e5m2_mn_major(%a: !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, %b: !nvgpu.wgmma_desc<32x128xf8E5M2, swizzle = 128>, %c: !nvgpu.frag<64x128xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma_mma_async %a, %b, %c, %t : !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, !nvgpu.wgmma_desc<32x128xf8E5M2, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma_mma_async with f8E5M2 operands needs a K-major rhs: wgmma transposes only 16-bit operands

// -----

// A tf32 (or fp8) A fragment is laid out otherwise than the wgmma layout.
func.func @wgmma_tf32_register_lhs(%a: !nvgpu.frag<64x8xf32, wgmma>, %b: !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma_mma_async %a, %b, %c, %t {rhs_transposed} : !nvgpu.frag<64x8xf32, wgmma>, !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma_mma_async register lhs must be bf16 or f16 (the wgmma fragment layout is their A layout), got f32

// -----

func.func @wgmma_fp8_bf16(%a: !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, %b: !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma operands must both be bf16, f16, f8E4M3FN, f8E5M2 or f32 (tf32) (fp8 formats may mix), got f8E4M3FN and bf16

// -----

// tf32 contracts in steps of 8: K = 12 is not a whole number of instructions.
func.func @wgmma_tf32_k(%a: !nvgpu.wgmma_desc<64x12xf32>, %b: !nvgpu.wgmma_desc<64x12xf32>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x12xf32>, !nvgpu.wgmma_desc<64x12xf32>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma contraction sizes must agree and be a multiple of 8: lhs K=12, rhs K=12
