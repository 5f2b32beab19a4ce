// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase,tawa-assign-stage-phase' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=3},tawa-assign-stage-phase' | filecheck %s --check-prefix=THREE
// RUN: not tawa-opt %s -p tawa-assign-stage-phase 2>&1 | filecheck %s --check-prefix=MIXED

// Each partition numbers the uses of each aref, per kind (puts, gets,
// releases), with i32 counters threaded through loops and ifs.  A counter
// counts modulo 2D: with w = n mod 8, use n names stage n mod 4 = w & 3 and
// phase (n / 4) & 1 = w >> 2.  Running the pass twice changes nothing
// (second RUN line).  A depth that is no power of two (3, the THREE lines)
// takes a compare and selects instead of masks.

// Producer: one put counter, carried by the K loop.
// CHECK-LABEL: func.func @gemm
// CHECK:         partition producer
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : i32
// CHECK:           scf.for %{{.*}} = %{{.*}} to %K step %{{.*}} iter_args(%[[N:.*]] = %[[Z]]) -> (i32) {
// CHECK:             %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:        %[[WRAP:.*]] = arith.constant 7 : i32
// CHECK-NEXT:        %[[INC:.*]] = arith.addi %[[N]], %[[ONE]] : i32
// CHECK-NEXT:        %[[NEXT:.*]] = arith.andi %[[INC]], %[[WRAP]] : i32
// CHECK-NEXT:        %[[MASK:.*]] = arith.constant 3 : i32
// CHECK-NEXT:        %[[SHIFT:.*]] = arith.constant 2 : i32
// CHECK-NEXT:        %[[S32:.*]] = arith.andi %[[N]], %[[MASK]] : i32
// CHECK-NEXT:        %[[P32:.*]] = arith.shrui %[[N]], %[[SHIFT]] : i32
// CHECK-NEXT:        %[[S:.*]] = arith.index_cast %[[S32]] : i32 to index
// CHECK-NEXT:        %[[P:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK-NEXT:        aref.put %ref_a_b[%[[S]], %[[P]]], %a, %b
// CHECK-NEXT:        scf.yield %[[NEXT]] : i32

// THREE-LABEL: func.func @gemm
// THREE:         partition producer
// THREE:           scf.for %{{.*}} iter_args(%[[N:.*]] = %{{.*}}) -> (i32) {
// THREE:             %[[ONE:.*]] = arith.constant 1 : i32
// THREE-NEXT:        %[[SIX:.*]] = arith.constant 6 : i32
// THREE-NEXT:        %[[ZERO:.*]] = arith.constant 0 : i32
// THREE-NEXT:        %[[INC:.*]] = arith.addi %[[N]], %[[ONE]] : i32
// THREE-NEXT:        %[[FULL:.*]] = arith.cmpi eq, %[[INC]], %[[SIX]] : i32
// THREE-NEXT:        %[[NEXT:.*]] = arith.select %[[FULL]], %[[ZERO]], %[[INC]] : i32
// THREE-NEXT:        %[[D:.*]] = arith.constant 3 : i32
// THREE-NEXT:        %[[Z2:.*]] = arith.constant 0 : i32
// THREE-NEXT:        %[[O2:.*]] = arith.constant 1 : i32
// THREE-NEXT:        %[[SECOND:.*]] = arith.cmpi uge, %[[N]], %[[D]] : i32
// THREE-NEXT:        %[[LESS:.*]] = arith.subi %[[N]], %[[D]] : i32
// THREE-NEXT:        %[[S32:.*]] = arith.select %[[SECOND]], %[[LESS]], %[[N]] : i32
// THREE-NEXT:        %[[P32:.*]] = arith.select %[[SECOND]], %[[O2]], %[[Z2]] : i32
// THREE-NEXT:        %[[S:.*]] = arith.index_cast %[[S32]] : i32 to index
// THREE-NEXT:        %[[P:.*]] = arith.index_cast %[[P32]] : i32 to index
// THREE-NEXT:        aref.put %ref_a_b[%[[S]], %[[P]]], %a, %b
// THREE-NEXT:        scf.yield %[[NEXT]] : i32

// Consumer: a get counter and a release counter; the release inside
// `scf.if %not_first` counts only when it runs (the if yields the count).
// CHECK:         partition consumer
// CHECK:           %acc, %{{.*}}, %[[REL:.*]] = scf.for {{.*}} iter_args(%acc_i = %zero, %[[G:.*]] = %{{.*}}, %[[C:.*]] = %{{.*}}) -> (tensor<128x256xf32>, i32, i32) {
// CHECK:             %{{.*}}, %{{.*}} = aref.get %ref_a_b[%stage{{.*}}, %phase{{.*}}]
// CHECK:             %[[AFTER:.*]] = scf.if %not_first -> (i32) {
// CHECK:               aref.consumed %ref_a_b[%stage{{.*}}, %phase{{.*}}]
// CHECK:             } else {
// CHECK-NEXT:          scf.yield %[[C]] : i32
// CHECK-NEXT:        }
// After the loop, the last release continues from the loop's count.
// CHECK:           scf.if %ran -> (i32) {
// CHECK-NEXT:        %{{.*}} = arith.constant 1 : i32
// CHECK-NEXT:        %{{.*}} = arith.constant 7 : i32
// CHECK-NEXT:        %{{.*}} = arith.addi %[[REL]], %{{.*}} : i32
// CHECK:             %{{.*}} = arith.andi %[[REL]], %{{.*}} : i32
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
