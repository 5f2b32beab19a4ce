// Masks of data: each float comparison of tile.cmpf chooses between two tiles (tile.select), a
// splat on either side. Y[:, j] for column block j of 6: the predicates oeq, une, olt, ole, ogt, oge
// of X against 0.5, choosing X or -X; NaNs in X take the unordered answer only for une.
func.func @data_masks(%X: memref<?x?xf32>, %Y: memref<?x?xf32>, %M: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c96 = arith.constant 96 : index
  %c128 = arith.constant 128 : index
  %c160 = arith.constant 160 : index
  %half = arith.constant 5.000000e-01 : f32
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c32 : index
  %x = tile.load %X[%m0, %c0] : memref<?x?xf32> -> tensor<32x32xf32>
  %h = tile.splat %half : f32 -> tensor<32x32xf32>
  %n = arith.negf %x : tensor<32x32xf32>
  %eq = tile.cmpf oeq, %x, %h : tensor<32x32xf32>
  %s0 = tile.select %eq, %x, %n : tensor<32x32xi1>, tensor<32x32xf32>
  tile.store %s0, %Y[%m0, %c0] : tensor<32x32xf32>, memref<?x?xf32>
  %ne = tile.cmpf une, %x, %h : tensor<32x32xf32>
  %s1 = tile.select %ne, %x, %n : tensor<32x32xi1>, tensor<32x32xf32>
  tile.store %s1, %Y[%m0, %c32] : tensor<32x32xf32>, memref<?x?xf32>
  %lt = tile.cmpf olt, %h, %x : tensor<32x32xf32>
  %s2 = tile.select %lt, %h, %n : tensor<32x32xi1>, tensor<32x32xf32>
  tile.store %s2, %Y[%m0, %c64] : tensor<32x32xf32>, memref<?x?xf32>
  %le = tile.cmpf ole, %x, %h : tensor<32x32xf32>
  %s3 = tile.select %le, %x, %h : tensor<32x32xi1>, tensor<32x32xf32>
  tile.store %s3, %Y[%m0, %c96] : tensor<32x32xf32>, memref<?x?xf32>
  %gt = tile.cmpf ogt, %x, %n : tensor<32x32xf32>
  %s4 = tile.select %gt, %x, %n : tensor<32x32xi1>, tensor<32x32xf32>
  tile.store %s4, %Y[%m0, %c128] : tensor<32x32xf32>, memref<?x?xf32>
  %ge = tile.cmpf oge, %x, %h : tensor<32x32xf32>
  %s5 = tile.select %ge, %x, %n : tensor<32x32xi1>, tensor<32x32xf32>
  tile.store %s5, %Y[%m0, %c160] : tensor<32x32xf32>, memref<?x?xf32>
  func.return
}
