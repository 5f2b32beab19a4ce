// A loop around the K loop: C = A · Bᵀ in bf16 with f32 accumulation (A M×K,
// B N×K, C M×N, row-major), one program per 128×256 tile of C computed as two
// 128×128 halves, one after the other, each with its own K loop and store.
// Launch grid (⌈M/128⌉, ⌈N/256⌉).  Both partitions replicate the outer loop;
// the ring keeps turning from one half to the next.
func.func @nested_loops(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                        %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  scf.for %half = %c0 to %c2 step %c1 {
    %dn = arith.muli %half, %c128 : index
    %n = arith.addi %n0, %dn : index
    %zero = tile.zeros : tensor<128x128xf32>
    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
      %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = tile.load %B[%n, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      scf.yield %d : tensor<128x128xf32>
    }
    %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
    tile.store %c, %C[%m0, %n] : tensor<128x128xbf16>, memref<?x?xbf16>
  }
  func.return
}
