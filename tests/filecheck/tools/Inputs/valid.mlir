// A small valid kernel for the command-line tests.
func.func @scale(%X: memref<?x?xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %pid = tile.program_id 0
  %x = tile.load %X[%pid, %c0] : memref<?x?xf32> -> tensor<64x64xf32>
  %f = tile.splat %s : f32 -> tensor<64x64xf32>
  %y = arith.mulf %x, %f : tensor<64x64xf32>
  tile.store %y, %X[%pid, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  func.return
}
