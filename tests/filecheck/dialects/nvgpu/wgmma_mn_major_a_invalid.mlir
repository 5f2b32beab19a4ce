// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// An MN-major A (`lhs_transposed`) that wgmma does not have, and column
// descriptors that do not fit their tile (tests/filecheck/transforms/prepare/
// wgmma_mn_major_a.mlir: the ones it has).

func.func @fp8_mn_major_a(%a: !nvgpu.wgmma_desc<32x128xf8E4M3FN, swizzle = 128>, %b: !nvgpu.wgmma_desc<64x32xf8E4M3FN, swizzle = 32>, %c: !nvgpu.frag<128x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {lhs_transposed, rhs_transposed} : !nvgpu.wgmma_desc<32x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<64x32xf8E4M3FN, swizzle = 32>, !nvgpu.frag<128x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma with f8E4M3FN operands needs a K-major lhs: wgmma transposes only 16-bit operands

// -----

func.func @register_mn_major_a(%a: !nvgpu.frag<64x16xbf16, wgmma>, %b: !nvgpu.wgmma_desc<64x16xbf16, swizzle = 32>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma_mma_async %a, %b, %c, %t {lhs_transposed, rhs_transposed} : !nvgpu.frag<64x16xbf16, wgmma>, !nvgpu.wgmma_desc<64x16xbf16, swizzle = 32>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma_mma_async lhs_transposed reads an MN-major A from shared memory; a register lhs is M×K in the wgmma layout and has no transposed form

// -----

func.func @columns_past_the_tile(%s: index) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
  %da = nvgpu.wgmma_descriptor %sa[%s, %s] {columns} : !nvgpu.smem<1x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.wgmma_descriptor: !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128> is not a column range of the 64x64 tiles of !nvgpu.smem<1x64x64xbf16, swizzle = 128>

// -----

// K of a transposed lhs is its rows.
func.func @mn_major_a_k(%a: !nvgpu.wgmma_desc<32x64xbf16, swizzle = 128>, %b: !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {lhs_transposed, rhs_transposed} : !nvgpu.wgmma_desc<32x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma contraction sizes must agree and be a multiple of 16: lhs K=32, rhs K=64
