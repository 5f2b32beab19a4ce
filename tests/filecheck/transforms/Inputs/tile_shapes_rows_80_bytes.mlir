// B read MN-major (K x N, no rhs_transposed) with BLOCK_N = 40: 80-byte slot rows are no
// whole swizzle spans (a transposed B or an A tile has K in its rows, which the tile.dot
// verifier already keeps to multiples of 32 bytes).
func.func @rows_80_bytes(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %b = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<64x40xbf16>
  %z = tile.zeros : tensor<128x40xf32>
  %d = tile.dot %a, %b, %z : tensor<128x64xbf16>, tensor<64x40xbf16> -> tensor<128x40xf32>
  tile.store %d, %C[%c0, %c0] : tensor<128x40xf32>, memref<?x?xf32>
  func.return
}
