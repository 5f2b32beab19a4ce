// Input of warp_specialize_dot_free.mlir: two stored tiles of 128 and 64 rows.
func.func @two_row_counts(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] : memref<?x?xf32> -> tensor<128x64xf32>
  %b = tile.load %B[%c0, %c0] : memref<?x?xf32> -> tensor<64x64xf32>
  %a2 = arith.addf %a, %a : tensor<128x64xf32>
  %b2 = arith.addf %b, %b : tensor<64x64xf32>
  tile.store %a2, %C[%c0, %c0] : tensor<128x64xf32>, memref<?x?xf32>
  tile.store %b2, %C[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  func.return
}
