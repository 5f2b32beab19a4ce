// C = α·A·Bᵀ + β·C in bf16 with f32 accumulation (the BLAS GEMM update):
// A is M×K, B is N×K, C is M×N, all row-major; α and β are f32 scalars;
// 128×256×64 tiles; launch grid (⌈M/128⌉, ⌈N/256⌉).
//
// The old C tile does not feed a dot, so the consumer warp groups read it
// themselves, each thread the elements it holds in the accumulator layout,
// which are exactly the ones it writes afterwards (docs/passes.md,
// "Consumer-side operands").
func.func @gemm_alpha_beta(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                           %M: index, %N: index, %K: index, %alpha: f32, %beta: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c_old = tile.load %C[%m0, %n0] : memref<?x?xbf16> -> tensor<128x256xbf16>
  %c_old_f = arith.extf %c_old : tensor<128x256xbf16> to tensor<128x256xf32>
  %alpha_t = tile.splat %alpha : f32 -> tensor<128x256xf32>
  %beta_t = tile.splat %beta : f32 -> tensor<128x256xf32>
  %ab = arith.mulf %acc, %alpha_t : tensor<128x256xf32>
  %bc = arith.mulf %c_old_f, %beta_t : tensor<128x256xf32>
  %sum = arith.addf %ab, %bc : tensor<128x256xf32>
  %c = arith.truncf %sum : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
