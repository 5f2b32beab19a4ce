// Software prefetch with the last K slice after the loop (the classic form):
// C = A · Bᵀ in bf16 with f32 accumulation (A M×K, B N×K, C M×N, row-major).
// Slice 0 is loaded before the loop; the loop runs over the first ⌈K/64⌉ − 1
// slices, loading slice i+1 while it multiplies slice i; the dot of the last
// slice follows the loop.  One program per 128×128 tile of C; launch grid
// (⌈M/128⌉, ⌈N/128⌉).
func.func @prefetch_tail(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
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
  %k_last = arith.subi %K, %c64 : index
  %acc, %a_last, %b_last = scf.for %k = %c0 to %k_last step %c64
      iter_args(%acc_i = %zero, %a = %a0, %b = %b0)
      -> (tensor<128x128xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>) {
    %k_next = arith.addi %k, %c64 : index
    %a_next = tile.load %A[%m0, %k_next] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b_next = tile.load %B[%n0, %k_next] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d, %a_next, %b_next : tensor<128x128xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>
  }
  %sum = tile.dot %a_last, %b_last, %acc {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
  %c = arith.truncf %sum : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}
