// Two chained products per query tile, attention without the softmax:
// O = (Q·Kᵀ)·V, with the 128×128 block of Q·Kᵀ rounded to bf16 and fed to the
// second product from registers.  Q, K, V, O are [batch·heads, seq_len, 128]
// bf16, row-major.  One program computes 128 rows of O for one (batch, head),
// streaming 128-key blocks of K and V; launch grid (⌈seq_len/128⌉, batch·heads).
// Keys past seq_len load as 0 and add nothing.
func.func @gemm_chain(%Q: memref<?x?x?xbf16>, %K: memref<?x?x?xbf16>, %V: memref<?x?x?xbf16>,
                      %O: memref<?x?x?xbf16>, %seq_len: index) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id 0
  %bh = tile.program_id 1
  %m0 = arith.muli %pid_m, %c128 : index
  %q = tile.load %Q[%bh, %m0, %c0] : memref<?x?x?xbf16> -> tensor<128x128xbf16>
  %acc_init = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %n0 = %c0 to %seq_len step %c128 iter_args(%acc_prev = %acc_init) -> (tensor<128x128xf32>) {
    %k = tile.load %K[%bh, %n0, %c0] : memref<?x?x?xbf16> -> tensor<128x128xbf16>
    %v = tile.load %V[%bh, %n0, %c0] : memref<?x?x?xbf16> -> tensor<128x128xbf16>
    %s_zero = tile.zeros : tensor<128x128xf32>
    %s = tile.dot %q, %k, %s_zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    %p = arith.truncf %s : tensor<128x128xf32> to tensor<128x128xbf16>
    %acc_new = tile.dot %p, %v, %acc_prev : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    scf.yield %acc_new : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %O[%bh, %m0, %c0] : tensor<128x128xbf16>, memref<?x?x?xbf16>
  func.return
}
