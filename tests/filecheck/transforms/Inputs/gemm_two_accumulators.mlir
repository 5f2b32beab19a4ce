// A 64x256 GEMM tile computed as two independent 64x128 accumulators (two wgmma chains
// per warp group, both kept in flight by tawa-pipeline), C = A · Bᵀ, B N×K; grid (⌈M/64⌉, ⌈N/256⌉).
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
    %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %block_k = arith.constant 64 : index
  %block_m = arith.constant 64 : index
  %block_n = arith.constant 256 : index
  %half = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %block_m : index
  %n0 = arith.muli %pid_n, %block_n : index
  %n1 = arith.addi %n0, %half : index
  %zero = tile.zeros : tensor<64x128xf32>
  %acc1, %acc2 = scf.for %k = %c0 to %K step %block_k iter_args(%x1 = %zero, %x2 = %zero) -> (tensor<64x128xf32>, tensor<64x128xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %b1 = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b2 = tile.load %B[%n1, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d1 = tile.dot %a, %b1, %x1 {rhs_transposed} : tensor<64x64xbf16>, tensor<128x64xbf16> -> tensor<64x128xf32>
    %d2 = tile.dot %a, %b2, %x2 {rhs_transposed} : tensor<64x64xbf16>, tensor<128x64xbf16> -> tensor<64x128xf32>
    scf.yield %d1, %d2 : tensor<64x128xf32>, tensor<64x128xf32>
  }
  %c1 = arith.truncf %acc1 : tensor<64x128xf32> to tensor<64x128xbf16>
  %c2 = arith.truncf %acc2 : tensor<64x128xf32> to tensor<64x128xbf16>
  tile.store %c1, %C[%m0, %n0] : tensor<64x128xbf16>, memref<?x?xbf16>
  tile.store %c2, %C[%m0, %n1] : tensor<64x128xbf16>, memref<?x?xbf16>
  func.return
}
