// A GEMM kernel cut off in the middle of its loop.
func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
