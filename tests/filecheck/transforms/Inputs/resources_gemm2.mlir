// Two 128x256 accumulators (C = A·Bᵀ, E = A·Dᵀ in one K loop): 2 x 128
// registers per consumer thread, more than setmaxnreg 232; ptxas spills 1924 bytes.
func.func @gemm2(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %D: memref<?x?xbf16>, %C: memref<?x?xbf16>, %E: memref<?x?xbf16>,
                %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc:2 = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero, %acc_j = %zero) -> (tensor<128x256xf32>, tensor<128x256xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.load %D[%n0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %x = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    %y = tile.dot %a, %d, %acc_j {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %x, %y : tensor<128x256xf32>, tensor<128x256xf32>
  }
  %c = arith.truncf %acc#0 : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  %e = arith.truncf %acc#1 : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %e, %E[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
