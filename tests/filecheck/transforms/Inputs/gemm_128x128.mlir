func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
    %M: index, %N: index, %K: index) {
  // C = A · Bᵀ (128x128x64): A is M×K of bf16, B is N×K of bf16,
  // C is M×N of bf16; tawa.kernels.gemm_source, launch grid (⌈M/128⌉, ⌈N/128⌉).
  %c0 = arith.constant 0 : index
  %block_k = arith.constant 64 : index
  %block_m = arith.constant 128 : index
  %block_n = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %block_m : index
  %n0 = arith.muli %pid_n, %block_n : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %block_k iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %bt = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %bt, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}
