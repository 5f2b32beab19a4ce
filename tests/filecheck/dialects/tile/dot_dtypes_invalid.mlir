// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// The operand types tile.dot rejects, one per chunk, each with its reason
// (dot_dtypes.mlir: the accepted ones).

func.func @dot_tf32_mn_major(%a: tensor<64x8xf32>, %b: tensor<8x64xf32>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c : tensor<64x8xf32>, tensor<8x64xf32> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot with f32 operands needs a K-major rhs (rhs_transposed): wgmma reads MN-major (transposed) operands only for 16-bit types

// -----

func.func @dot_e5m2_mn_major(%a: tensor<64x32xf8E5M2>, %b: tensor<32x64xf8E5M2>, %c: tensor<64x64xf32>) {
  %d = tile.dot_async %a, %b, %c : tensor<64x32xf8E5M2>, tensor<32x64xf8E5M2> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot_async with f8E5M2 operands needs a K-major rhs (rhs_transposed): wgmma reads MN-major (transposed) operands only for 16-bit types

// -----

func.func @dot_mixed_fp8_mn_major(%a: tensor<64x32xf8E5M2>, %b: tensor<32x64xf8E4M3FN>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c : tensor<64x32xf8E5M2>, tensor<32x64xf8E4M3FN> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot with f8E4M3FN operands needs a K-major rhs (rhs_transposed)

// -----

func.func @dot_tf32_k_granule(%a: tensor<64x4xf32>, %b: tensor<64x4xf32>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<64x4xf32>, tensor<64x4xf32> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot shape 64x64x4 (MxNxK) is not supported by the hardware: M must be a multiple of 64, N of 8, K of 8 for f32

// -----

func.func @dot_e5m2_k_granule(%a: tensor<64x16xf8E5M2>, %b: tensor<64x16xf8E5M2>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<64x16xf8E5M2>, tensor<64x16xf8E5M2> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot shape 64x64x16 (MxNxK) is not supported by the hardware: M must be a multiple of 64, N of 8, K of 32 for f8E5M2

// -----

func.func @dot_bf16_fp8(%a: tensor<64x32xbf16>, %b: tensor<64x32xf8E4M3FN>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<64x32xbf16>, tensor<64x32xf8E4M3FN> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot operand element types differ (bf16 vs f8E4M3FN): wgmma mixes only the fp8 formats (f8E4M3FN with f8E5M2)

// -----

func.func @dot_f32_bf16(%a: tensor<64x16xf32>, %b: tensor<64x16xbf16>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<64x16xf32>, tensor<64x16xbf16> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot operand element types differ (f32 vs bf16): wgmma mixes only the fp8 formats (f8E4M3FN with f8E5M2)

// -----

func.func @dot_i8(%a: tensor<64x32xi8>, %b: tensor<64x32xi8>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<64x32xi8>, tensor<64x32xi8> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot operands must be bf16, f16, f8E4M3FN, f8E5M2 or f32 (tf32), got i8

// -----

func.func @dot_f16_accumulator(%a: tensor<64x16xf16>, %b: tensor<64x16xf16>, %c: tensor<64x64xf16>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<64x16xf16>, tensor<64x16xf16> -> tensor<64x64xf16>
  func.return
}
// CHECK: error: tile.dot accumulates in f32, got accumulator f16
