// GEMM with the loads software-prefetched by hand: C = A · Bᵀ in bf16 with
// f32 accumulation (A M×K, B N×K, C M×N, row-major).  The first A and B slices
// are loaded before the loop; each iteration loads the next slices and passes
// them to the next through iter_args (the last iteration loads a slice past K,
// which reads as 0 and is never used).  One program per 128×128 tile of C;
// launch grid (⌈M/128⌉, ⌈N/128⌉).  tawa-warp-specialize turns the carried
// loads into producer puts (one before the loop, one per iteration) and
// consumer gets (one per iteration, one after the loop).
func.func @prefetch(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                    %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %a0 = tile.load %A[%m0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %b0 = tile.load %B[%n0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %acc, %a_last, %b_last = scf.for %k = %c0 to %K step %c64
      iter_args(%acc_i = %zero, %a = %a0, %b = %b0)
      -> (tensor<128x128xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>) {
    %k_next = arith.addi %k, %c64 : index
    %a_next = tile.load %A[%m0, %k_next] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b_next = tile.load %B[%n0, %k_next] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d, %a_next, %b_next : tensor<128x128xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>
  }
  %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}
