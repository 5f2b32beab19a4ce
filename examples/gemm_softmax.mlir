// Row softmax of a product: C = softmax(scale · A·Bᵀ) over each row of C,
// with A M×K, B 256×K (exactly 256 rows: the whole row fits one tile), C M×256,
// bf16 in and out, f32 math.  `scale` is in the log2 domain
// (scale = s·log2(e) for softmax(s·A·Bᵀ)).  One program computes 128 rows;
// launch grid (⌈M/128⌉).  Max, exponent and sum run on the accumulator
// registers, with the row reductions shared across each quad of threads.
func.func @gemm_softmax(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                        %M: index, %K: index, %scale: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c128 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %scale_t = tile.splat %scale : f32 -> tensor<128x256xf32>
  %s = arith.mulf %acc, %scale_t : tensor<128x256xf32>
  %row_max = tile.reduce max %s, 1 : tensor<128x256xf32> -> tensor<128xf32>
  %max_col = tile.expand_dims %row_max, 1 : tensor<128xf32> -> tensor<128x1xf32>
  %max_b = tile.broadcast %max_col : tensor<128x1xf32> -> tensor<128x256xf32>
  %shifted = arith.subf %s, %max_b : tensor<128x256xf32>
  %p = math.exp2 %shifted : tensor<128x256xf32>
  %row_sum = tile.reduce sum %p, 1 : tensor<128x256xf32> -> tensor<128xf32>
  %sum_col = tile.expand_dims %row_sum, 1 : tensor<128xf32> -> tensor<128x1xf32>
  %sum_b = tile.broadcast %sum_col : tensor<128x1xf32> -> tensor<128x256xf32>
  %o = arith.divf %p, %sum_b : tensor<128x256xf32>
  %c = arith.truncf %o : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%m0, %c0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
