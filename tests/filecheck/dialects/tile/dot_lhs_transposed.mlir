// RUN: tawa-opt %s | filecheck %s
// A transposed lhs (`lhs_transposed`) is K×M: M comes from its columns, K
// from its rows (dot_lhs_transposed_invalid.mlir: what the verifier rejects).

// CHECK-LABEL: func.func @at_b
// CHECK: tile.dot %a, %b, %c {lhs_transposed} : tensor<64x128xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
// CHECK: tile.dot_async %a, %bt, %c {lhs_transposed, rhs_transposed} : tensor<64x128xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
func.func @at_b(%a: tensor<64x128xbf16>, %b: tensor<64x256xbf16>, %bt: tensor<256x64xbf16>, %c: tensor<128x256xf32>) {
  %d = tile.dot %a, %b, %c {lhs_transposed} : tensor<64x128xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
  %e = tile.dot_async %a, %bt, %c {lhs_transposed, rhs_transposed} : tensor<64x128xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
  func.return
}
