// tile.zeroes is a misspelling of tile.zeros.
func.func @f() {
  %c0 = arith.constant 0 : index
  %zero = tile.zeroes : tensor<128x256xf32>
  func.return
}
