// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4}' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=1}' | filecheck %s --check-prefix=D1

// CHECK-LABEL: func.func @gemm
// CHECK:         %[[R:.*]] = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK:         partition producer
// CHECK:           aref.put %[[R]]
// CHECK:         partition consumer
// The dot of slot k stays in flight; slot k-1 is released once dot k-1 is
// complete (dot_wait 1), except in the first iteration.
// CHECK:           %[[ACC:.*]] = scf.for %[[K:.*]] = %[[LB:.*]] to %[[UB:.*]] step %{{.*}} iter_args(%[[ACC_I:.*]] = %{{.*}}) -> (tensor<128x256xf32>) {
// CHECK-NEXT:        %[[A:.*]], %[[B:.*]] = aref.get %[[R]]
// CHECK-NEXT:        %[[D:.*]] = tile.dot_async %[[A]], %[[B]], %[[ACC_I]] {rhs_transposed}
// CHECK-NEXT:        tile.dot_wait 1
// CHECK-NEXT:        %[[NF:.*]] = arith.cmpi ne, %[[K]], %[[LB]] : index
// CHECK-NEXT:        scf.if %[[NF]] {
// CHECK-NEXT:          aref.consumed %[[R]]
// CHECK-NEXT:        }
// CHECK-NEXT:        scf.yield %[[D]]
// CHECK-NEXT:      }
// After the loop the last dot completes and, if the loop ran, its slot is released;
// the epilogue reads the completed accumulator.
// CHECK-NEXT:      %[[DONE:.*]] = tile.dot_wait 0 (%[[ACC]]) : tensor<128x256xf32>
// CHECK-NEXT:      %[[RAN:.*]] = arith.cmpi slt, %[[LB]], %[[UB]] : index
// CHECK-NEXT:      scf.if %[[RAN]] {
// CHECK-NEXT:        aref.consumed %[[R]]
// CHECK-NEXT:      }
// CHECK-NEXT:      arith.truncf %[[DONE]]

// With one slot the consumer cannot hold slot k-1 while it gets slot k: dots stay synchronous.
// D1:     aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 1>
// D1-NOT: tile.dot_async
// D1:     tile.dot
// D1-NEXT: aref.consumed
