// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// Transposed lhs operands tile.dot rejects, one per chunk, each with its
// reason (dot_lhs_transposed.mlir: the accepted ones).

func.func @fp8_transposed_lhs(%a: tensor<64x64xf8E4M3FN>, %b: tensor<64x64xf8E4M3FN>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c {lhs_transposed, rhs_transposed} : tensor<64x64xf8E4M3FN>, tensor<64x64xf8E4M3FN> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot with f8E4M3FN operands needs a K-major lhs (no lhs_transposed): wgmma reads MN-major (transposed) operands only for 16-bit types

// -----

// M of a transposed lhs is its columns: 128, not 64.
func.func @m_is_the_columns(%a: tensor<64x128xbf16>, %b: tensor<64x256xbf16>, %c: tensor<64x256xf32>) {
  %d = tile.dot %a, %b, %c {lhs_transposed} : tensor<64x128xbf16>, tensor<64x256xbf16> -> tensor<64x256xf32>
  func.return
}
// CHECK: error: tile.dot accumulator must be 128x256, got tensor<64x256xf32>

// -----

func.func @k_is_the_rows(%a: tensor<128x64xbf16>, %b: tensor<64x256xbf16>, %c: tensor<64x256xf32>) {
  %d = tile.dot_async %a, %b, %c {lhs_transposed} : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<64x256xf32>
  func.return
}
// CHECK: error: tile.dot_async contraction sizes differ: lhs has K=128, rhs has K=64
