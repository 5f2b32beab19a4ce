// examples/python/gemm.py as `python -m tawa.frontend` prints it, with its source locations
// (tests/filecheck/transforms/lower/lower_aref_locations.mlir).
builtin.module {
  func.func @gemm(%A: memref<?x?xbf16> loc("gemm.py":12:10), %B: memref<?x?xbf16> loc("gemm.py":12:40), %C: memref<?x?xbf16> loc("gemm.py":12:70), %M: index loc("gemm.py":13:10), %N: index loc("gemm.py":13:23), %K: index loc("gemm.py":13:36)) {
    %c0 = arith.constant 0 : index loc("gemm.py":20:14)
    %c64 = arith.constant 64 : index loc("gemm.py":20:14)
    %c128 = arith.constant 128 : index loc("gemm.py":17:10)
    %c256 = arith.constant 256 : index loc("gemm.py":18:10)
    %pid_m = tile.program_id 0 loc("gemm.py":15:13)
    %pid_n = tile.program_id 1 loc("gemm.py":16:13)
    %m0 = arith.muli %pid_m, %c128 : index loc("gemm.py":17:10)
    %n0 = arith.muli %pid_n, %c256 : index loc("gemm.py":18:10)
    %acc = tile.zeros : tensor<128x256xf32> loc("gemm.py":19:11)
    %acc_1 = scf.for %k = %c0 to %K step %c64 iter_args(%acc_2 = %acc) -> (tensor<128x256xf32>) {
      %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16> loc("gemm.py":21:13)
      %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16> loc("gemm.py":22:13)
      %acc_3 = tile.dot %a, %b, %acc_2 {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32> loc("gemm.py":23:15)
      scf.yield %acc_3 : tensor<128x256xf32> loc("gemm.py":20:5)
    } loc("gemm.py":20:5)
    %0 = arith.truncf %acc_1 : tensor<128x256xf32> to tensor<128x256xbf16> loc("gemm.py":24:27)
    tile.store %0, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16> loc("gemm.py":24:5)
    func.return loc("gemm.py":12:1)
  } loc("gemm.py":12:1)
} loc("gemm.py":1:1)
