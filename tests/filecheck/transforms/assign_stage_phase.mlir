// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase' | filecheck %s
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase,tawa-assign-stage-phase' | filecheck %s
// RUN: not tawa-opt %s -p tawa-assign-stage-phase 2>&1 | filecheck %s --check-prefix=MIXED

// Each partition numbers the uses of each aref, per kind (puts, gets,
// releases), with counters threaded through loops and ifs; use n names
// stage n mod 4 and phase (n / 4) & 1.  Running the pass twice changes
// nothing (second RUN line).

// Producer: one put counter, carried by the K loop.
// CHECK-LABEL: func.func @gemm
// CHECK:         partition producer
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : index
// CHECK:           scf.for %{{.*}} = %{{.*}} to %K step %{{.*}} iter_args(%[[N:.*]] = %[[Z]]) -> (index) {
// CHECK:             %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:        %[[NEXT:.*]] = arith.addi %[[N]], %[[ONE]] : index
// CHECK-NEXT:        %[[N32:.*]] = arith.index_cast %[[N]] : index to i32
// CHECK-NEXT:        %[[D:.*]] = arith.constant 4 : i32
// CHECK-NEXT:        %[[ONE32:.*]] = arith.constant 1 : i32
// CHECK-NEXT:        %[[S32:.*]] = arith.remui %[[N32]], %[[D]] : i32
// CHECK-NEXT:        %[[R:.*]] = arith.divui %[[N32]], %[[D]] : i32
// CHECK-NEXT:        %[[P32:.*]] = arith.andi %[[R]], %[[ONE32]] : i32
// CHECK-NEXT:        %[[S:.*]] = arith.index_cast %[[S32]] : i32 to index
// CHECK-NEXT:        %[[P:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK-NEXT:        aref.put %ref_a_b[%[[S]], %[[P]]], %a, %b
// CHECK-NEXT:        scf.yield %[[NEXT]] : index

// Consumer: a get counter and a release counter; the release inside
// `scf.if %not_first` counts only when it runs (the if yields the count).
// CHECK:         partition consumer
// CHECK:           %acc, %{{.*}}, %[[REL:.*]] = scf.for {{.*}} iter_args(%acc_i = %zero, %[[G:.*]] = %{{.*}}, %[[C:.*]] = %{{.*}}) -> (tensor<128x256xf32>, index, index) {
// CHECK:             %{{.*}}, %{{.*}} = aref.get %ref_a_b[%stage{{.*}}, %phase{{.*}}]
// CHECK:             %[[AFTER:.*]] = scf.if %not_first -> (index) {
// CHECK:               aref.consumed %ref_a_b[%stage{{.*}}, %phase{{.*}}]
// CHECK:             } else {
// CHECK-NEXT:          scf.yield %[[C]] : index
// CHECK-NEXT:        }
// After the loop, the last release continues from the loop's count.
// CHECK:           scf.if %ran -> (index) {
// CHECK-NEXT:        %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:        %{{.*}} = arith.addi %[[REL]], %{{.*}} : index
// CHECK-NEXT:        %{{.*}} = arith.index_cast %[[REL]] : index to i32
// CHECK:             aref.consumed %ref_a_b[%stage{{.*}}, %phase{{.*}}]

func.func @mixed(%a: tensor<128x64xbf16>, %s: index, %p: index) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 2>
  aref.warp_specialize partition producer warps(4) regs(40) {
    aref.put %r[%s, %p], %a : !aref.ref<[tensor<128x64xbf16>], depth = 2>
    aref.put %r, %a : !aref.ref<[tensor<128x64xbf16>], depth = 2>
  }
  func.return
}
// MIXED: assign_stage_phase.mlir:[[# @LINE - 5]]:5: error: tawa-assign-stage-phase: a partition mixes aref ops with and without slots
