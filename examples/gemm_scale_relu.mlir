// A GEMM with a fused epilogue: C = max(alpha · A·Bᵀ, 0) in bf16, f32
// accumulation; A is M×K, B is N×K, C is M×N, all row-major; 128×256×64 tiles;
// launch grid (⌈M/128⌉, ⌈N/256⌉).  The scaling and the ReLU run on the
// accumulator registers before the store.
func.func @gemm_scale_relu(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                           %M: index, %N: index, %K: index, %alpha: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %f0 = arith.constant 0.0 : f32
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
  %alpha_t = tile.splat %alpha : f32 -> tensor<128x256xf32>
  %scaled = arith.mulf %acc, %alpha_t : tensor<128x256xf32>
  %zeros = tile.splat %f0 : f32 -> tensor<128x256xf32>
  %relu = arith.maximumf %scaled, %zeros : tensor<128x256xf32>
  %c = arith.truncf %relu : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
