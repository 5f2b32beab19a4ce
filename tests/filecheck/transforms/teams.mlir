// Teams of consumers (ping-pong, tawa/transforms/teams.py): `tawa-warp-specialize{teams=2}`
// gives the consumer partition two teams of one warp group; `tawa-persistent` runs every
// other program on each team and skips the others' gets (one `aref.skip` per main loop);
// `tawa-assign-stage-phase` steps the counters by the skips; `tawa-lower-aref` makes one
// team's release free a slot (empty count 1) and orders the teams' main loops with named
// barriers 2 and 3 (turns); the epilogue stores per warp group, each into its own staging.
// RUN: tawa-opt %S/Inputs/gemm_64x256.mlir -p 'tawa-warp-specialize{teams=2},tawa-pipeline{stages=4},tawa-persistent' | filecheck %s
// RUN: tawa-opt %S/Inputs/gemm_64x256.mlir -p 'tawa-warp-specialize{teams=2},tawa-pipeline{stages=4},tawa-persistent,tawa-assign-stage-phase' | filecheck %s --check-prefix=COUNTS
// RUN: tawa-opt %S/Inputs/gemm_64x256.mlir -p 'tawa-hopper-pipeline{teams=2 stages=4 prepare=false}' | filecheck %s --check-prefix=LOWERED
// RUN: tawa-opt %S/Inputs/gemm_64x256.mlir -p 'tawa-hopper-pipeline{teams=2 staging=single max-stages=8 prepare=false}' | filecheck %s --check-prefix=SINGLE
// RUN: not tawa-opt %S/Inputs/gemm_64x256.mlir -p 'tawa-hopper-pipeline{teams=2 persistent=false}' 2>&1 | filecheck %s --check-prefix=NOTPERSISTENT
// RUN: not tawa-opt %S/Inputs/gemm_64x256.mlir -p 'tawa-hopper-pipeline{teams=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not tawa-opt %S/Inputs/gemm_64x256.mlir -p 'tawa-hopper-pipeline{teams=2 consumer-warps=12}' 2>&1 | filecheck %s --check-prefix=WARPS
// RUN: not tawa-opt %S/Inputs/gemm_64x256.mlir -p 'tawa-warp-specialize{teams=2},tawa-pipeline{stages=4},tawa-persistent{order=paired}' 2>&1 | filecheck %s --check-prefix=PAIRED
// RUN: not tawa-opt %S/Inputs/gemm_64x256.mlir -p 'tawa-warp-specialize{teams=2},tawa-pipeline{stages=4},tawa-assign-stage-phase' 2>&1 | filecheck %s --check-prefix=UNDIVIDED

// CHECK:      partition consumer warps(8) teams(2) regs(232) {
// CHECK-NEXT:   scf.for %[[P:.*]] = %[[FIRST:.*]] to %programs step %[[STEP:[^ ]*]] {
// CHECK-NEXT:     %[[T:.*]] = arith.constant 2 : index
// CHECK-NEXT:     %team = aref.team_id
// CHECK-NEXT:     %[[OFF:.*]] = arith.subi %[[P]], %[[FIRST]] : index
// CHECK-NEXT:     %[[I:.*]] = arith.divui %[[OFF]], %[[STEP]] : index
// CHECK-NEXT:     %turn = arith.remui %[[I]], %[[T]] : index
// CHECK-NEXT:     %mine = arith.cmpi eq, %turn, %team : index
// CHECK-NEXT:     scf.if %mine {
// CHECK:            scf.for
// CHECK:              aref.get %ref_a_bt
// CHECK:            tile.store
// CHECK-NEXT:     } else {
// CHECK-NOT:        aref.get
// CHECK:            %[[RUNS:.*]] = arith.cmpi ugt, %K, %[[LB:.*]] : index
// CHECK:            %trips = arith.select %[[RUNS]]
// CHECK-NEXT:       aref.skip %ref_a_bt, %trips
// CHECK-NEXT:     }{tawa.team_program}

// The skip steps the get and release counters of the ring by the trip count (modulo 2D = 8).
// COUNTS:      } else {
// COUNTS:        %trips = arith.select
// COUNTS-NEXT:   %[[N:.*]] = arith.index_cast %trips : index to i32
// COUNTS-NEXT:   %[[W:.*]] = arith.constant 7 : i32
// COUNTS-NEXT:   %[[G:.*]] = arith.addi %{{.*}}, %[[N]] : i32
// COUNTS-NEXT:   %{{.*}} = arith.andi %[[G]], %[[W]] : i32
// COUNTS:        %[[R:.*]] = arith.addi %{{.*}}, %[[N]] : i32
// COUNTS-NEXT:   %{{.*}} = arith.andi %[[R]], %{{.*}} : i32
// COUNTS-NEXT:   aref.skip %ref_a_bt, %trips

// One team releases a slot; team 1 hands team 0 its first turn; each team waits for its turn
// (barrier 2 + team) before the main loop and hands it on after it, if a next program follows.
// LOWERED:      nvgpu.kernel = #nvgpu.kernel<threads = 384
// LOWERED:      nvgpu.mbarrier_init %{{.*}}, 1 : !nvgpu.mbarrier<4>
// LOWERED-NEXT: nvgpu.mbarrier_init %{{.*}}, 1 : !nvgpu.mbarrier<4>
// LOWERED:      %staging = nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.smem<2x64x256xbf16, swizzle = 128>
// LOWERED:      %team = arith.divui %wg_index
// LOWERED:      scf.if %{{.*}} {
// LOWERED-NEXT:   nvgpu.named_barrier_arrive 2, 256
// LOWERED:      scf.for %[[P:.*]] = %{{.*}} to %programs step %[[S:[^ ]*]]
// LOWERED:        scf.if %mine
// LOWERED:          nvgpu.named_barrier_sync 2, 256
// LOWERED-NEXT:   } else {
// LOWERED-NEXT:     nvgpu.named_barrier_sync 3, 256
// LOWERED:          nvgpu.mbarrier_wait_parity
// LOWERED:          %[[NEXT:.*]] = arith.addi %[[P]], %[[S]] : index
// LOWERED-NEXT:     %next_program = arith.cmpi ult, %[[NEXT]], %programs : index
// LOWERED:          scf.if %next_program {
// LOWERED:            nvgpu.named_barrier_arrive 3, 256
// LOWERED-NEXT:     } else {
// LOWERED-NEXT:       nvgpu.named_barrier_arrive 2, 256
// LOWERED:          nvgpu.named_barrier_sync 15, 128
// LOWERED-NEXT:   } else {
// LOWERED-NEXT:     nvgpu.named_barrier_sync 14, 128
// LOWERED:          nvgpu.tma_store %staging[%wg_index], %tmap_C[%my_row, %{{.*}}]

// staging=single: one 64x64 chunk buffer per warp group (2 in all), so 5 stages of 64x256
// fit beside them (max-stages=8: 223232 bytes); every chunk waits for the previous chunk's store
// to have read the buffer.
// SINGLE:      nvgpu.kernel = #nvgpu.kernel<threads = 384, smem = 223232, regs = [40, 232, 232], persistent>
// SINGLE:      %staging = nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
// SINGLE:      nvgpu.tma_store_wait 0
// SINGLE:      nvgpu.tma_store %staging[%wg_index], %tmap_C
// SINGLE:      nvgpu.tma_store_wait 0
// SINGLE:      nvgpu.tma_store %staging[%wg_index], %tmap_C

// NOTPERSISTENT: error: teams=2 needs a persistent kernel (persistent=true)
// ZERO: error: teams must be at least 1, got 0
// WARPS: consumer-warps=12 does not split into 2 teams of whole warp groups
// PAIRED: order 'paired' nests two programs in one iteration, which teams of consumers cannot take turns over
// UNDIVIDED: error: tawa-assign-stage-phase: the consumer partition has 2 teams but does not divide its programs among them
