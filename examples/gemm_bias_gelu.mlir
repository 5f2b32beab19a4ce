// A GEMM with a bias and a GELU epilogue: C = gelu(A·Bᵀ + bias) in bf16, f32
// accumulation, where bias is a vector of N bf16 values added to every row
// and gelu(x) = x/2 · (1 + tanh(√(2/π) · (x + 0.044715·x³))) (the tanh form).
// A is M×K, B is N×K, C is M×N, all row-major; 128×256×64 tiles; launch grid
// (⌈M/128⌉, ⌈N/256⌉).
//
// The bias does not feed a dot, so the consumer warp groups load it
// themselves: each thread reads the columns it holds in the accumulator
// layout (docs/passes.md, "Consumer-side operands").  Outside N it reads 0.
func.func @gemm_bias_gelu(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %Bias: memref<?xbf16>,
                          %C: memref<?x?xbf16>, %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %k0 = arith.constant 0.7978845608 : f32
  %k1 = arith.constant 0.044715 : f32
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
  %bias = tile.load %Bias[%n0] : memref<?xbf16> -> tensor<256xbf16>
  %bias_f = arith.extf %bias : tensor<256xbf16> to tensor<256xf32>
  %bias_row = tile.expand_dims %bias_f, 0 : tensor<256xf32> -> tensor<1x256xf32>
  %bias_t = tile.broadcast %bias_row : tensor<1x256xf32> -> tensor<128x256xf32>
  %x = arith.addf %acc, %bias_t : tensor<128x256xf32>
  // gelu(x) = x · (0.5 + 0.5 · tanh(k0 · (x + k1 · x³)))
  %k0_t = tile.splat %k0 : f32 -> tensor<128x256xf32>
  %k1_t = tile.splat %k1 : f32 -> tensor<128x256xf32>
  %half_t = tile.splat %half : f32 -> tensor<128x256xf32>
  %x2 = arith.mulf %x, %x : tensor<128x256xf32>
  %x3 = arith.mulf %x2, %x : tensor<128x256xf32>
  %cubic = arith.mulf %x3, %k1_t : tensor<128x256xf32>
  %inner = arith.addf %x, %cubic : tensor<128x256xf32>
  %arg = arith.mulf %inner, %k0_t : tensor<128x256xf32>
  %th = math.tanh %arg : tensor<128x256xf32>
  %hth = arith.mulf %th, %half_t : tensor<128x256xf32>
  %gate = arith.addf %hth, %half_t : tensor<128x256xf32>
  %y = arith.mulf %x, %gate : tensor<128x256xf32>
  %c = arith.truncf %y : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
