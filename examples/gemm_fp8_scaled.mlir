// A scaled fp8 GEMM, the form used for fp8 inference:
//   C[i, j] = ScaleA[i] · ScaleB[j] · Σ_k A[i, k] · B[j, k]
// with e4m3 inputs, f32 accumulation, f32 per-row scales of A (M values) and
// per-column scales of B (N values), and a bf16 result.  A is M×K, B is N×K
// (both K-major, as fp8 wgmma requires), C is M×N, all row-major; 128×256×128
// tiles; launch grid (⌈M/128⌉, ⌈N/256⌉).
//
// The scales do not feed a dot, so the consumer warp groups load them
// themselves: each thread reads the rows and columns it holds in the
// accumulator layout (docs/passes.md, "Consumer-side operands").
func.func @gemm_fp8_scaled(%A: memref<?x?xf8E4M3FN>, %B: memref<?x?xf8E4M3FN>,
                           %ScaleA: memref<?xf32>, %ScaleB: memref<?xf32>, %C: memref<?x?xbf16>,
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
  %sa = tile.load %ScaleA[%m0] : memref<?xf32> -> tensor<128xf32>
  %sb = tile.load %ScaleB[%n0] : memref<?xf32> -> tensor<256xf32>
  %sa_col = tile.expand_dims %sa, 1 : tensor<128xf32> -> tensor<128x1xf32>
  %sa_t = tile.broadcast %sa_col : tensor<128x1xf32> -> tensor<128x256xf32>
  %sb_row = tile.expand_dims %sb, 0 : tensor<256xf32> -> tensor<1x256xf32>
  %sb_t = tile.broadcast %sb_row : tensor<1x256xf32> -> tensor<128x256xf32>
  %rows_scaled = arith.mulf %acc, %sa_t : tensor<128x256xf32>
  %scaled = arith.mulf %rows_scaled, %sb_t : tensor<128x256xf32>
  %c = arith.truncf %scaled : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
