// A kernel without dots whose tile's columns have few factors of two: 1x1000 f32 splits into
// vectors of 4 over 2 lanes only (1000 = 8 x 125), so the other 126 threads of the warp group hold
// copies and each thread 500 values, where a 1x1024 tile would give each 8.
builtin.module {
  func.func @add_one(%X: memref<?x?xf32>, %Y: memref<?x?xf32>, %M: index, %N: index) {
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.000000e+00 : f32
    %m0 = tile.program_id 0
    %x = tile.load %X[%m0, %c0] : memref<?x?xf32> -> tensor<1x1000xf32>
    %s = tile.splat %one : f32 -> tensor<1x1000xf32>
    %y = arith.addf %x, %s : tensor<1x1000xf32>
    tile.store %y, %Y[%m0, %c0] : tensor<1x1000xf32>, memref<?x?xf32>
    func.return
  }
}
