// The GEMM example parses and verifies, its printed form re-prints identically,
// and the generic form prints back to the same custom form.
//
// RUN: tawa-opt %S/../../../examples/gemm.mlir > %t.mlir
// RUN: tawa-opt %t.mlir | diff %t.mlir -
// RUN: tawa-opt %S/../../../examples/gemm.mlir --print-op-generic > %t.generic.mlir
// RUN: tawa-opt %t.generic.mlir | diff %t.mlir -
// RUN: filecheck %s --input-file %t.mlir
// RUN: filecheck %s --input-file %t.generic.mlir --check-prefix=CHECK-GENERIC

// CHECK-LABEL: func.func @gemm(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %M: index, %N: index, %K: index) {
// CHECK:         %pid_m = tile.program_id 0
// CHECK-NEXT:    %pid_n = tile.program_id 1
// CHECK-NEXT:    %m0 = arith.muli %pid_m, %c128 : index
// CHECK-NEXT:    %n0 = arith.muli %pid_n, %c256 : index
// CHECK-NEXT:    %zero = tile.zeros : tensor<128x256xf32>
// The K loop carries the accumulator.
// CHECK-NEXT:    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
// CHECK-NEXT:      %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:      %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
// CHECK-NEXT:      %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
// CHECK-NEXT:      scf.yield %d : tensor<128x256xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
// CHECK-NEXT:    tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// CHECK-GENERIC:       "func.func"() <{sym_name = "gemm", function_type = (memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xbf16>, index, index, index) -> ()}> ({
// CHECK-GENERIC:         %zero = "tile.zeros"() : () -> tensor<128x256xf32>
// CHECK-GENERIC-NEXT:    %acc = "scf.for"(%c0, %K, %c64, %zero) ({
// CHECK-GENERIC-NEXT:    ^bb0(%k: index, %acc_i: tensor<128x256xf32>):
// CHECK-GENERIC-NEXT:      %a = "tile.load"(%A, %m0, %k) : (memref<?x?xbf16>, index, index) -> tensor<128x64xbf16>
// CHECK-GENERIC-NEXT:      %b = "tile.load"(%B, %n0, %k) : (memref<?x?xbf16>, index, index) -> tensor<256x64xbf16>
// CHECK-GENERIC-NEXT:      %d = "tile.dot"(%a, %b, %acc_i) <{rhs_transposed}> : (tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<128x256xf32>) -> tensor<128x256xf32>
// CHECK-GENERIC-NEXT:      "scf.yield"(%d) : (tensor<128x256xf32>) -> ()
// CHECK-GENERIC-NEXT:    }) : (index, index, index, tensor<128x256xf32>) -> tensor<128x256xf32>
// CHECK-GENERIC:         "tile.store"(%c, %C, %m0, %n0) : (tensor<128x256xbf16>, memref<?x?xbf16>, index, index) -> ()
