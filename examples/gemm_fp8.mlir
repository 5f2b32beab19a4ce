// C = A · Bᵀ with fp8 (e4m3) inputs, f32 accumulation and a bf16 result:
// A is M×K, B is N×K (both K-major, as fp8 wgmma requires), C is M×N, all
// row-major.  One program computes one 128×256 tile of C, stepping through K
// in 128-wide slices (128 bytes of fp8: one swizzle span).  Launch grid:
// (⌈M/128⌉, ⌈N/256⌉).  Loads outside A or B read 0; stores outside C are dropped.
func.func @gemm_fp8(%A: memref<?x?xf8E4M3FN>, %B: memref<?x?xf8E4M3FN>, %C: memref<?x?xbf16>,
                    %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %b = tile.load %B[%n0, %k] : memref<?x?xf8E4M3FN> -> tensor<256x128xf8E4M3FN>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x128xf8E4M3FN>, tensor<256x128xf8E4M3FN> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
