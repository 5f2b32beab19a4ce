// Y = softmax in base 2 of each row of X's first 128 columns (f32): tests/transforms/test_dot_free.py.
// 64-row tiles, grid (⌈M/64⌉): one consumer warp group, row reductions by quad shuffles.
func.func @row_softmax(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c64 : index
  %x = tile.load %X[%m0, %c0] : memref<?x?xf32> -> tensor<64x128xf32>
  %mx = tile.reduce max %x, 1 : tensor<64x128xf32> -> tensor<64xf32>
  %mc = tile.expand_dims %mx, 1 : tensor<64xf32> -> tensor<64x1xf32>
  %mb = tile.broadcast %mc : tensor<64x1xf32> -> tensor<64x128xf32>
  %d = arith.subf %x, %mb : tensor<64x128xf32>
  %e = math.exp2 %d : tensor<64x128xf32>
  %sm = tile.reduce sum %e, 1 : tensor<64x128xf32> -> tensor<64xf32>
  %sc = tile.expand_dims %sm, 1 : tensor<64xf32> -> tensor<64x1xf32>
  %sb = tile.broadcast %sc : tensor<64x1xf32> -> tensor<64x128xf32>
  %y = arith.divf %e, %sb : tensor<64x128xf32>
  tile.store %y, %Y[%m0, %c0] : tensor<64x128xf32>, memref<?x?xf32>
  func.return
}
