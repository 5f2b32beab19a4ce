// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP

// Every operand type combination tile.dot accepts: they verify and round-trip
// (dot_dtypes_invalid.mlir: the rejected ones).

// 16-bit types, K in steps of 16; a transposed (MN-major) rhs is allowed.
func.func @dot_16bit(%a: tensor<64x16xbf16>, %b: tensor<16x64xbf16>, %h: tensor<64x16xf16>, %hb: tensor<64x16xf16>, %c: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c : tensor<64x16xbf16>, tensor<16x64xbf16> -> tensor<64x64xf32>
  %e = tile.dot %h, %hb, %c {rhs_transposed} : tensor<64x16xf16>, tensor<64x16xf16> -> tensor<64x64xf32>
  func.return %d, %e : tensor<64x64xf32>, tensor<64x64xf32>
}
// CHECK-LABEL: func.func @dot_16bit
// CHECK:       tile.dot %a, %b, %c : tensor<64x16xbf16>, tensor<16x64xbf16> -> tensor<64x64xf32>
// CHECK:       tile.dot %h, %hb, %c {rhs_transposed} : tensor<64x16xf16>, tensor<64x16xf16> -> tensor<64x64xf32>

// fp8: both formats, and mixed either way; K in steps of 32, K-major rhs.
func.func @dot_fp8(%a4: tensor<64x32xf8E4M3FN>, %a5: tensor<64x32xf8E5M2>, %b4: tensor<64x32xf8E4M3FN>, %b5: tensor<64x32xf8E5M2>, %c: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %e5 = tile.dot %a5, %b5, %c {rhs_transposed} : tensor<64x32xf8E5M2>, tensor<64x32xf8E5M2> -> tensor<64x64xf32>
  %m45 = tile.dot %a4, %b5, %c {rhs_transposed} : tensor<64x32xf8E4M3FN>, tensor<64x32xf8E5M2> -> tensor<64x64xf32>
  %m54 = tile.dot_async %a5, %b4, %c {rhs_transposed} : tensor<64x32xf8E5M2>, tensor<64x32xf8E4M3FN> -> tensor<64x64xf32>
  %w = tile.dot_wait 0 (%m54) : tensor<64x64xf32>
  func.return %e5, %m45, %w : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
// CHECK-LABEL: func.func @dot_fp8
// CHECK:       tile.dot %a5, %b5, %c {rhs_transposed} : tensor<64x32xf8E5M2>, tensor<64x32xf8E5M2> -> tensor<64x64xf32>
// CHECK:       tile.dot %a4, %b5, %c {rhs_transposed} : tensor<64x32xf8E4M3FN>, tensor<64x32xf8E5M2> -> tensor<64x64xf32>
// CHECK:       tile.dot_async %a5, %b4, %c {rhs_transposed} : tensor<64x32xf8E5M2>, tensor<64x32xf8E4M3FN> -> tensor<64x64xf32>

// tf32: f32 operands, K in steps of 8, K-major rhs.
func.func @dot_tf32(%a: tensor<128x8xf32>, %b: tensor<64x8xf32>, %c: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<128x8xf32>, tensor<64x8xf32> -> tensor<128x64xf32>
  func.return %d : tensor<128x64xf32>
}
// CHECK-LABEL: func.func @dot_tf32
// CHECK:       tile.dot %a, %b, %c {rhs_transposed} : tensor<128x8xf32>, tensor<64x8xf32> -> tensor<128x64xf32>

// CHECK-GENERIC: "tile.dot"(%a4, %b5, %c) <{rhs_transposed}> : (tensor<64x32xf8E4M3FN>, tensor<64x32xf8E5M2>, tensor<64x64xf32>) -> tensor<64x64xf32>
