// BLOCK_M = 320: five warp groups, and the A tile is no TMA box (at most 256 rows).
func.func @rows_320(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<320x64xbf16>
  %b = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %z = tile.zeros : tensor<320x128xf32>
  %d = tile.dot %a, %b, %z {rhs_transposed} : tensor<320x64xbf16>, tensor<128x64xbf16> -> tensor<320x128xf32>
  tile.store %d, %C[%c0, %c0] : tensor<320x128xf32>, memref<?x?xf32>
  func.return
}
