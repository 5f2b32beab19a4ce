// The tile IR of examples/python/gemm.py: the ops of examples/gemm.mlir, in
// its order (constants first, index ones by value), and what tawa-opt makes
// of it.  A constexpr given on the command line changes the tile shapes.
// RUN: python -m tawa.frontend %S/../../../examples/python/gemm.py --no-locations | filecheck %s
// RUN: python -m tawa.frontend %S/../../../examples/python/gemm.py | tawa-opt -p tawa-warp-specialize | filecheck %s --check-prefix=WS
// RUN: python -m tawa.frontend %S/../../../examples/python/gemm.py --no-locations --constexpr BLOCK_N=128 | filecheck %s --check-prefix=N128

// CHECK:      func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %M: index, %N: index, %K: index) {
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %c64 = arith.constant 64 : index
// CHECK-NEXT:   %c128 = arith.constant 128 : index
// CHECK-NEXT:   %c256 = arith.constant 256 : index
// CHECK-NEXT:   %pid_m = tile.program_id 0
// CHECK-NEXT:   %pid_n = tile.program_id 1
// CHECK-NEXT:   %m0 = arith.muli %pid_m, %c128 : index
// CHECK-NEXT:   %n0 = arith.muli %pid_n, %c256 : index
// CHECK-NEXT:   %[[ZERO:.*]] = tile.zeros : tensor<128x256xf32>
// CHECK-NEXT:   %[[ACC:.*]] = scf.for %k = %c0 to %K step %c64 iter_args(%[[ACC_I:.*]] = %[[ZERO]]) -> (tensor<128x256xf32>) {
// CHECK-NEXT:     %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:     %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
// CHECK-NEXT:     %[[D:.*]] = tile.dot %a, %b, %[[ACC_I]] {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
// CHECK-NEXT:     scf.yield %[[D]] : tensor<128x256xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[C:.*]] = arith.truncf %[[ACC]] : tensor<128x256xf32> to tensor<128x256xbf16>
// CHECK-NEXT:   tile.store %[[C]], %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
// CHECK-NEXT:   func.return

// WS: aref.warp_specialize

// N128: tile.zeros : tensor<128x128xf32>
// N128: tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
