// tawa-pipeline keeps every accumulating dot of a loop in flight: with two accumulators
// (two wgmma chains per warp group) both dots are async, one `tile.dot_wait 2` completes
// the two of iteration k-1 before their slots go, and `tile.dot_wait 0` after the loop
// completes both accumulators.  Lowered: two commit groups per iteration, `wait_group 2`.
// RUN: tawa-opt %S/../Inputs/gemm_two_accumulators.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4}' | filecheck %s
// RUN: tawa-opt %S/../Inputs/gemm_two_accumulators.mlir -p 'tawa-hopper-pipeline{stages=4}' -t ptx | filecheck %s --check-prefix=PTX

// CHECK:      partition consumer
// CHECK:        %acc1, %acc2 = scf.for %[[K:.*]] = %[[LB:.*]] to %K step %{{.*}} iter_args(%[[X1:.*]] = %zero, %[[X2:.*]] = %zero)
// CHECK-NEXT:     %[[A:.*]], %[[B1:.*]] = aref.get %ref_a_b1
// CHECK-NEXT:     %d1 = tile.dot_async %[[A]], %[[B1]], %[[X1]] {rhs_transposed}
// CHECK-NEXT:     %[[B2:.*]] = aref.get %ref_b2
// CHECK-NEXT:     %d2 = tile.dot_async %[[A]], %[[B2]], %[[X2]] {rhs_transposed}
// CHECK-NEXT:     tile.dot_wait 2
// CHECK-NEXT:     %not_first = arith.cmpi ne, %[[K]], %[[LB]] : index
// CHECK-NEXT:     scf.if %not_first {
// CHECK-NEXT:       aref.consumed %ref_a_b1
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.if %not_first {
// CHECK-NEXT:       aref.consumed %ref_b2
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.yield %d1, %d2
// CHECK-NEXT:   }
// CHECK-NEXT:   %{{.*}}, %{{.*}} = tile.dot_wait 0 (%acc1, %acc2)
// CHECK-NEXT:   %ran = arith.cmpi slt, %[[LB]], %K : index

// PTX:     wgmma.commit_group.sync.aligned;
// PTX:     wgmma.commit_group.sync.aligned;
// PTX-NEXT: wgmma.wait_group.sync.aligned 2;
// PTX:     wgmma.wait_group.sync.aligned 0;
