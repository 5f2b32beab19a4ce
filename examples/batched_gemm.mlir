// A batched GEMM: C[b] = A[b] · B[b]ᵀ for every b, in bf16 with f32
// accumulation: A is batch×M×K, B is batch×N×K, C is batch×M×N, all
// row-major and dense.  One program computes one 128×256 tile of one C[b];
// the batch is the third grid axis.  Launch grid: (⌈M/128⌉, ⌈N/256⌉, batch).
//
// The loads and the store address 3-D arrays at [b, row, column] with a 2-D
// tile: the leading (batch) dimension of the box has extent 1.
func.func @batched_gemm(%A: memref<?x?x?xbf16>, %B: memref<?x?x?xbf16>, %C: memref<?x?x?xbf16>,
                        %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %b = tile.program_id 2
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%b, %m0, %k] : memref<?x?x?xbf16> -> tensor<128x64xbf16>
    %bt = tile.load %B[%b, %n0, %k] : memref<?x?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.dot %a, %bt, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%b, %m0, %n0] : tensor<128x256xbf16>, memref<?x?x?xbf16>
  func.return
}
