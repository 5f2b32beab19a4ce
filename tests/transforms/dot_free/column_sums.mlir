// Column sums of 32-row tiles of an M x N f32 array (S[i, :] = Σ X[32i : 32i + 32, :]) and
// the tiles with their column sums taken off (Y = X − S broadcast over the rows):
// tests/transforms/test_blocked_kernels.py.  32x256 tiles, grid (⌈M/32⌉, ⌈N/256⌉).
func.func @column_sums(%X: memref<?x?xf32>, %S: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %pid = tile.program_id 0
  %pn = tile.program_id 1
  %m0 = arith.muli %pid, %c32 : index
  %n0 = arith.muli %pn, %c256 : index
  %x = tile.load %X[%m0, %n0] : memref<?x?xf32> -> tensor<32x256xf32>
  %s = tile.reduce sum %x, 0 : tensor<32x256xf32> -> tensor<256xf32>
  tile.store %s, %S[%pid, %n0] : tensor<256xf32>, memref<?x?xf32>
  %e = tile.expand_dims %s, 0 : tensor<256xf32> -> tensor<1x256xf32>
  %b = tile.broadcast %e : tensor<1x256xf32> -> tensor<32x256xf32>
  %y = arith.subf %x, %b : tensor<32x256xf32>
  tile.store %y, %Y[%m0, %n0] : tensor<32x256xf32>, memref<?x?xf32>
  func.return
}
