// Two K loops in sequence, the second continuing the first's sum:
// C = A1 · B1ᵀ + A2 · B2ᵀ in bf16 with f32 accumulation.  A1 is M×K1, B1 is
// N×K1, A2 is M×K2, B2 is N×K2, C is M×N, all row-major.  One program computes
// one 128×128 tile of C; launch grid (⌈M/128⌉, ⌈N/128⌉).  Each loop's loads
// get their own aref; the consumers carry one accumulator through both loops.
func.func @two_loops_chain(%A1: memref<?x?xbf16>, %B1: memref<?x?xbf16>, %A2: memref<?x?xbf16>,
                           %B2: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                           %M: index, %N: index, %K1: index, %K2: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc1 = scf.for %k = %c0 to %K1 step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A1[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B1[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %acc2 = scf.for %k = %c0 to %K2 step %c64 iter_args(%acc_i = %acc1) -> (tensor<128x128xf32>) {
    %a = tile.load %A2[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B2[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %c = arith.truncf %acc2 : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}
