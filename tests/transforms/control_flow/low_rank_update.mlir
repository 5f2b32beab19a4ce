// A load after the K loop feeding a second dot: C = A · Bᵀ + U · Vᵀ in bf16
// with f32 accumulation, where U (M×R) and V (N×R) are a low-rank update with
// R ≤ 64 (a LoRA-style correction; columns past R read as 0).  A is M×K, B is
// N×K, C is M×N, all row-major.  One program per 128×128 tile of C; launch
// grid (⌈M/128⌉, ⌈N/128⌉).  U and V travel through their own aref, filled once.
func.func @low_rank_update(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %U: memref<?x?xbf16>,
                           %V: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                           %M: index, %N: index, %K: index, %R: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %u = tile.load %U[%m0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %v = tile.load %V[%n0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %sum = tile.dot %u, %v, %acc {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
  %c = arith.truncf %sum : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}
