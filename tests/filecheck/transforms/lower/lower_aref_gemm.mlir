// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase,tawa-lower-aref' | filecheck %s
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=5},tawa-assign-stage-phase,tawa-lower-aref' 2>&1 | filecheck %s --check-prefix=SMEM
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-lower-aref' 2>&1 | filecheck %s --check-prefix=UNASSIGNED

// Rings: 4 stages of A (16 KB) and B (32 KB), 1024-byte aligned, then the barriers.
// CHECK-LABEL: func.func @gemm
// CHECK-SAME:    attributes {nvgpu.kernel = #nvgpu.kernel<smem = 197696>}
// CHECK:         %[[SA:.*]] = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %[[SB:.*]] = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<4x256x64xbf16, swizzle = 128>
// CHECK-NEXT:    %[[FULL:.*]] = nvgpu.smem_alloc offset(196608) : !nvgpu.mbarrier<4>
// CHECK-NEXT:    %[[EMPTY:.*]] = nvgpu.smem_alloc offset(196640) : !nvgpu.mbarrier<4>
// Thread 0 initialises: full expects 1 arrival, empty one per consumer warp group.
// CHECK:         scf.if
// CHECK:           nvgpu.mbarrier_init %[[FULL]][%{{.*}}], 1
// CHECK-NEXT:      nvgpu.mbarrier_init %[[EMPTY]][%{{.*}}], 2
// CHECK:           nvgpu.fence_mbarrier_init
// CHECK-NEXT:      nvgpu.fence_proxy_async
// CHECK:         nvgpu.named_barrier_sync 0, 384
// CHECK:         %[[TA:.*]] = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %[[TB:.*]] = nvgpu.tma_descriptor %B : memref<?x?xbf16> -> !nvgpu.tma_desc<256x64xbf16, swizzle = 128>
// Producer: wait empty with the flipped phase, expect the stage's bytes, two TMA loads.
// CHECK:         partition producer
// CHECK:           scf.for %[[K:.*]] = {{.*}} iter_args(%[[N:.*]] = %{{.*}}) -> (i32) {
// Stage n mod 4 and phase (n / 4) & 1 from the counter n mod 8 (tawa-assign-stage-phase).
// CHECK:             %[[S:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT:        %[[PH:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK:             %[[FLIP:.*]] = arith.xori %[[PH]], %{{.*}} : index
// CHECK-NEXT:        nvgpu.mbarrier_wait_parity %[[EMPTY]][%[[S]]], %[[FLIP]]
// CHECK-NEXT:        nvgpu.mbarrier_arrive_expect_tx %[[FULL]][%[[S]]], 49152
// CHECK-NEXT:        nvgpu.tma_load %[[TA]][%{{.*}}, %[[K]]], %[[SA]][%[[S]]], %[[FULL]][%[[S]]]
// CHECK-NEXT:        nvgpu.tma_load %[[TB]][%{{.*}}, %[[K]]], %[[SB]][%[[S]]], %[[FULL]][%[[S]]]
// Consumer: wait full with the phase, read the slot in place; releases arrive on empty.
// CHECK:         partition consumer
// CHECK:             nvgpu.mbarrier_wait_parity %[[FULL]][%[[CS:.*]]], %{{.*}}
// CHECK-NEXT:        %{{.*}} = nvgpu.smem_tile %[[SA]][%[[CS]]]
// CHECK-NEXT:        %{{.*}} = nvgpu.smem_tile %[[SB]][%[[CS]]]
// CHECK:             nvgpu.mbarrier_arrive %[[EMPTY]]

// SMEM: {{^}}{{.*}}gemm.mlir:7:1: error: tawa-lower-aref: the aref rings need 246864 bytes of shared memory, more than the 232448 a block may use; use fewer stages
// UNASSIGNED: {{^}}{{.*}}gemm.mlir:{{[0-9]+}}:{{[0-9]+}}: error: tawa-lower-aref: aref.put has no stage and phase; run tawa-assign-stage-phase first
