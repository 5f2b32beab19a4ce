// tawa-defer-stores (tawa/transforms/pipeline/defer_stores.py): the persistent GEMM consumer stores
// program i's tile right after issuing program i+1's first dot; the tile travels through
// the loop over programs, a main loop that runs no step stores it after the loop, and the
// last program's tile is stored after the loop over programs.
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-persistent,tawa-defer-stores' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{defer-stores=true prepare=false}' | filecheck %s --check-prefix=LOWERED
// RUN: tawa-opt %S/../../../../examples/gemm_alpha_beta.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-persistent,tawa-defer-stores' | filecheck %s --check-prefix=READS
// RUN: tawa-opt %S/../../../../examples/gemm_tf32.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-persistent,tawa-defer-stores' | filecheck %s --check-prefix=WIDE
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-defer-stores' | filecheck %s --check-prefix=NOTPERSISTENT
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{defer-stores=true persistent=false}' 2>&1 | filecheck %s --check-prefix=PIPELINE

// CHECK:      partition consumer
// CHECK:        %[[Z:.*]] = tile.zeros : tensor<128x256xf32>
// CHECK-NEXT:   %[[Z16:.*]] = arith.truncf %[[Z]] : tensor<128x256xf32> to tensor<128x256xbf16>
// CHECK:        %[[NO:.*]] = arith.constant false
// CHECK-NEXT:   %[[YES:.*]] = arith.constant true
// CHECK-NEXT:   %[[LV:[^,]*]], %[[LM:[^,]*]], %[[LN:[^,]*]], %[[LH:[^ ]*]] = scf.for %{{.*}} = %{{.*}} to %programs step %{{.*}} iter_args(%[[PREV:.*]] = %[[Z16]], %[[PM:.*]] = %{{.*}}, %[[PN:.*]] = %{{.*}}, %[[HAVE:.*]] = %[[NO]]) -> (tensor<128x256xbf16>, index, index, i1) {
// CHECK:          %acc = scf.for %[[K:.*]] = %[[LB:.*]] to %K step
// CHECK:            tile.dot_async
// CHECK-NEXT:       %[[FIRST:.*]] = arith.cmpi eq, %[[K]], %[[LB]] : index
// CHECK-NEXT:       %[[GO:.*]] = arith.andi %[[FIRST]], %[[HAVE]] : i1
// CHECK-NEXT:       scf.if %[[GO]] {
// CHECK-NEXT:         tile.store %[[PREV]], %C[%[[PM]], %[[PN]]] {tawa.shared_staging}
// CHECK-NEXT:       }
// CHECK-NEXT:       tile.dot_wait 1
// CHECK:            scf.yield %d
// CHECK-NEXT:     }
// CHECK-NEXT:     %[[RAN:.*]] = arith.cmpi slt, %[[LB]], %K : index
// CHECK-NEXT:     %[[IDLE:.*]] = arith.xori %[[RAN]], %[[YES]] : i1
// CHECK-NEXT:     %[[LATE:.*]] = arith.andi %[[IDLE]], %[[HAVE]] : i1
// CHECK-NEXT:     scf.if %[[LATE]] {
// CHECK-NEXT:       tile.store %[[PREV]], %C[%[[PM]], %[[PN]]] {tawa.shared_staging}
// CHECK:          %c = arith.truncf
// CHECK-NEXT:     scf.yield %c, %m0_1, %n0_1, %[[YES]] : tensor<128x256xbf16>, index, index, i1
// CHECK-NEXT:   }
// CHECK-NEXT:   scf.if %[[LH]] {
// CHECK-NEXT:     tile.store %[[LV]], %C[%[[LM]], %[[LN]]] {tawa.shared_staging}
// CHECK-NOT:    tile.store

// The three store sites share one staging buffer, and the whole kernel is proved and lowered.
// LOWERED:     %staging = nvgpu.smem_alloc
// LOWERED-NOT: nvgpu.smem_alloc
// LOWERED:     nvgpu.tma_store %staging
// LOWERED:     nvgpu.tma_store %staging

// gemm_alpha_beta reads C (β·C): a deferred store would pass a load of what it writes.
// READS:      scf.for %program_1 = %{{.*}} to %programs step %{{.*}} {
// READS:        tile.store %c, %C[%m0_1, %n0_1]
// READS-NEXT: }

// An f32 C would carry as many registers as the accumulator beside it.
// WIDE:      scf.for %program_1 = %{{.*}} to %programs step %{{.*}} {
// WIDE:        tile.store %acc_1, %C[%m0_1, %n0_1]
// WIDE-NEXT: }

// Not persistent: no loop over programs to carry the tile.
// NOTPERSISTENT:     tile.store %c, %C[%m0_1, %n0_1] :
// NOTPERSISTENT-NOT: tawa.shared_staging
// PIPELINE:     tawa-hopper-pipeline: error: defer-stores needs a persistent kernel (persistent=true)
// PIPELINE-NOT: Traceback
