// Accumulators of 128 and 64 rows in one kernel: the consumer's warp groups split one row count.
func.func @two_row_counts(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %D: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %b = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %z = tile.zeros : tensor<128x128xf32>
  %d = tile.dot %a, %b, %z {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
  tile.store %d, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  %a2 = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %b2 = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %z2 = tile.zeros : tensor<64x128xf32>
  %d2 = tile.dot %a2, %b2, %z2 {rhs_transposed} : tensor<64x64xbf16>, tensor<128x64xbf16> -> tensor<64x128xf32>
  tile.store %d2, %D[%c0, %c0] : tensor<64x128xf32>, memref<?x?xf32>
  func.return
}
