// C = A · Bᵀ in f32 through the tensor cores' tf32: A is M×K, B is N×K (both
// K-major, as tf32 wgmma requires), C is M×N, all row-major f32.  Each
// product reads its operands as tf32 (the 13 low mantissa bits of each f32
// dropped, as the hardware does) and sums in f32; C is that f32 sum.  One
// program computes one 128×256 tile of C, stepping through K in 32-wide
// slices (128 bytes of f32: one swizzle span).  Launch grid:
// (⌈M/128⌉, ⌈N/256⌉).  Loads outside A or B read 0; stores outside C are
// dropped.
func.func @gemm_tf32(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>,
                     %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xf32> -> tensor<128x32xf32>
    %b = tile.load %B[%n0, %k] : memref<?x?xf32> -> tensor<256x32xf32>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x32xf32>, tensor<256x32xf32> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  tile.store %acc, %C[%m0, %n0] : tensor<128x256xf32>, memref<?x?xf32>
  func.return
}
