// The lhs has K = 64 but the K-major rhs has K = 32.
func.func @f(%a: tensor<128x64xbf16>, %b: tensor<256x32xbf16>) {
  %zero = tile.zeros : tensor<128x256xf32>
  %d = tile.dot %a, %b, %zero {rhs_transposed} : tensor<128x64xbf16>, tensor<256x32xbf16> -> tensor<128x256xf32>
  func.return
}
