// tawa-cluster (tawa/transforms/pipeline/cluster.py): the CTAs of a 2-CTA cluster share the B tile
// of the GEMM (its offsets do not depend on program id 0); tawa-persistent hands out
// cluster programs, tawa-lower-aref loads each CTA's band of B multicast to both.
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-cluster{size=2}' | filecheck %s --check-prefix=MARK
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-cluster{size=1}' | filecheck %s --check-prefix=ONE
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-cluster{size=2},tawa-persistent,tawa-assign-stage-phase,tawa-lower-aref' | filecheck %s --check-prefix=LOWER
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-cluster{size=3}' 2>&1 | filecheck %s --check-prefix=SIZE
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-persistent,tawa-cluster{size=2}' 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{cluster=2 persistent=false}' 2>&1 | filecheck %s --check-prefix=NOTPERSISTENT
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{cluster=0}' 2>&1 | filecheck %s --check-prefix=PIPEZERO
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{cluster=3}' 2>&1 | filecheck %s --check-prefix=PIPETHREE
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{cluster=4}' 2>&1 | filecheck %s --check-prefix=PIPEFOUR
// RUN: sed 's/tile.load %B\[%n0, %k\]/tile.load %B[%m0, %k]/' %S/../../../../examples/gemm.mlir | not tawa-opt -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-cluster{size=2}' 2>&1 | filecheck %s --check-prefix=NOTHING
// RUN: sed -e 's/scf.for %k = %c0 to %K/scf.for %k = %m0 to %K/' -e 's/tile.load %B\[%n0, %k\]/tile.load %B[%n0, %c0]/' %S/../../../../examples/gemm.mlir | not tawa-opt -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-cluster{size=2}' 2>&1 | filecheck %s --check-prefix=STEP

// B is read by every program of a column (pid_1), A by a row: only B is shared.
// MARK:      func.func @gemm({{.*}} attributes {nvgpu.kernel = #nvgpu.kernel<cluster = 2>}
// MARK:      %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
// MARK-NEXT: %b = tile.load %B[%n0, %k] {tawa.multicast} : memref<?x?xbf16> -> tensor<256x64xbf16>

// ONE-NOT:   tawa.multicast
// ONE-NOT:   cluster = 2

// One cluster program per cluster; rank r runs pid_x = min(2 · cluster_x + r, gx - 1).
// LOWER:      func.func @gemm({{.*}}#nvgpu.kernel<smem = {{[0-9]+}}, persistent, cluster = 2>
// LOWER:      %[[GX:.*]] = nvgpu.launch_grid 0
// LOWER:      %rank = nvgpu.cluster_rank
// LOWER-NEXT: %cluster = arith.divui %{{.*}}, %[[TWO:.*]] : index
// LOWER-NEXT: %clusters = arith.divui %{{.*}}, %[[TWO]] : index
// LOWER:      %cluster_gx = arith.divui %{{.*}}, %[[TWO]] : index
// LOWER-NEXT: %programs = arith.muli %cluster_gx, %{{.*}} : index
// Each slot is released by the two consumer warp groups of both CTAs.
// LOWER:      nvgpu.mbarrier_init %[[FULL:.*]][%{{.*}}], 1 : !nvgpu.mbarrier<2>
// LOWER-NEXT: nvgpu.mbarrier_init %[[EMPTY:.*]][%{{.*}}], 4 : !nvgpu.mbarrier<2>
// LOWER:      nvgpu.fence_proxy_async
// LOWER-NEXT: }
// LOWER-NEXT: nvgpu.cluster_sync
// The B ring viewed as 2·2 bands of 128 rows; this CTA's band starts at row 128 · rank.
// LOWER:      %bands = nvgpu.smem_alloc offset([[BOFF:[0-9]+]]) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// LOWER-NEXT: %band_row0 = arith.muli %rank, %{{.*}} : index
// LOWER-NEXT: %tmap_B = nvgpu.tma_descriptor %B : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
// LOWER:      scf.for %program = %cluster to %programs step %clusters
// LOWER:      %cluster_x = arith.index_cast
// LOWER:      %[[SCALED:.*]] = arith.muli %cluster_x, %{{.*}} : index
// LOWER-NEXT: %[[MEMBER:.*]] = arith.addi %[[SCALED]], %rank : index
// LOWER-NEXT: %[[LAST:.*]] = arith.subi %[[GX]], %{{.*}} : index
// LOWER-NEXT: %pid_x = arith.minui %[[MEMBER]], %[[LAST]] : index
// LOWER:      nvgpu.mbarrier_arrive_expect_tx %[[FULL]][%stage], 49152 : !nvgpu.mbarrier<2>
// LOWER-NEXT: nvgpu.tma_load %tmap_A[%m0, %k], %{{.*}}[%stage], %[[FULL]][%stage] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>
// LOWER:      %[[S2:.*]] = arith.muli %stage, %{{.*}} : index
// LOWER-NEXT: %[[BAND:.*]] = arith.addi %[[S2]], %rank : index
// LOWER-NEXT: %[[ROW:.*]] = arith.addi %n0, %band_row0 : index
// LOWER-NEXT: nvgpu.tma_load %tmap_B[%[[ROW]], %k], %bands[%[[BAND]]], %[[FULL]][%stage] multicast 3 :
// The consumers release each slot on both CTAs.
// LOWER:      nvgpu.mbarrier_arrive %[[EMPTY]][%stage_2] cta(%{{.*}}) : !nvgpu.mbarrier<2>
// LOWER-NEXT: nvgpu.mbarrier_arrive %[[EMPTY]][%stage_2] cta(%{{.*}}) : !nvgpu.mbarrier<2>
// No CTA leaves while its peer may still arrive on its barriers.
// LOWER:      nvgpu.cluster_sync
// LOWER-NEXT: func.return

// SIZE: tawa-cluster: size must be 1 or 2, got 3 (larger clusters are not proved: the protocol proof models each CTA of a cluster)
// ORDER: error: tawa-cluster: @gemm is already persistent; run tawa-cluster before tawa-persistent
// NOTPERSISTENT: tawa-hopper-pipeline: error: cluster=2 needs a persistent kernel (persistent=true)
// PIPEZERO: tawa-hopper-pipeline: error: cluster must be 1 or 2, got 0 (larger clusters are not proved: the protocol proof models each CTA of a cluster)
// PIPEZERO-NOT: Traceback
// PIPETHREE: tawa-hopper-pipeline: error: cluster must be 1 or 2, got 3 (larger clusters are not proved: the protocol proof models each CTA of a cluster)
// A cluster of 4 is refused at once, not after minutes of proof.
// PIPEFOUR: tawa-hopper-pipeline: error: cluster must be 1 or 2, got 4 (larger clusters are not proved: the protocol proof models each CTA of a cluster)
// PIPEFOUR-NOT: Traceback
// NOTHING: error: tawa-cluster: @gemm loads no tile that the CTAs of a cluster share
// A B tile the CTAs share, in a loop whose trip count depends on program id 0.
// STEP: error: tawa-cluster: this scf.for around the aref.put of a ring the cluster shares depends on program id 0
