// A GEMM whose A operand is transformed on the way to the tensor cores:
// C = (α·A)·Bᵀ with A in f16 and B in bf16 (a mixed-dtype GEMM: each A tile is
// scaled and rounded to bf16 in registers), f32 accumulation, bf16 C.  A is
// M×K, B is N×K, C is M×N, all row-major; α is an f32 scalar; 128×256×64
// tiles; launch grid (⌈M/128⌉, ⌈N/256⌉).
//
// The producer still brings A into shared memory with TMA; the consumers read
// their 64 rows of each A tile into registers (the wgmma A-operand layout),
// apply the function and issue register-sourced (RS) wgmmas.  Only A can be
// transformed: wgmma reads B from shared memory alone (docs/passes.md).
func.func @gemm_a_prologue(%A: memref<?x?xf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                           %M: index, %N: index, %K: index, %alpha: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %alpha_t = tile.splat %alpha : f32 -> tensor<128x64xf32>
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xf16> -> tensor<128x64xf16>
    %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %a_f = arith.extf %a : tensor<128x64xf16> to tensor<128x64xf32>
    %a_s = arith.mulf %a_f, %alpha_t : tensor<128x64xf32>
    %a_bf = arith.truncf %a_s : tensor<128x64xf32> to tensor<128x64xbf16>
    %d = tile.dot %a_bf, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
