// Five broken barrier protocols, each the lowered GEMM (stages=2) with one
// mutation (Inputs/protocol_*.mlir says which).  Each is a located error and
// exit 1; --verify-diagnostics prints the counterexample trace after it, one
// MLIR-style note per event, located at the event's op.
//
// RUN: not tawa-opt %S/../transforms/Inputs/protocol_dropped_release.mlir -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=EXIT-DROPPED
// RUN: tawa-opt %S/../transforms/Inputs/protocol_dropped_release.mlir -p tawa-verify-protocol --verify-diagnostics | filecheck %s --check-prefix=DROPPED
// RUN: tawa-opt %S/../transforms/Inputs/protocol_count_short.mlir -p tawa-verify-protocol --verify-diagnostics | filecheck %s --check-prefix=SHORT
// RUN: tawa-opt %S/../transforms/Inputs/protocol_initial_parity.mlir -p tawa-verify-protocol --verify-diagnostics | filecheck %s --check-prefix=PARITY
// RUN: tawa-opt %S/../transforms/Inputs/protocol_expect_tx.mlir -p tawa-verify-protocol --verify-diagnostics | filecheck %s --check-prefix=TX
// RUN: tawa-opt %S/../transforms/Inputs/protocol_runs_ahead.mlir -p tawa-verify-protocol --verify-diagnostics | filecheck %s --check-prefix=AHEAD

// (1) No consumer releases a stage inside the loop: with 4 k-steps (2 programs
// of K = 128) the producer waits for a release of stage 0 that never comes.
// EXIT-DROPPED: protocol_dropped_release.mlir:77:13: error: tawa-verify-protocol: deadlock in @gemm (K = 128, 2 programs per CTA): warp group 0 waits on %7[0] parity 0 (phase 0; the barrier is in phase 0, missing 2 arrival(s)); warp group 1 waits on %6[0] parity 1 (phase 1; the barrier is in phase 1, missing 1 arrival(s)); warp group 2 waits on %6[0] parity 1
// DROPPED:      protocol_dropped_release.mlir:77:13: error: tawa-verify-protocol: deadlock in @gemm (K = 128, 2 programs per CTA)
// DROPPED-NEXT: {{.*}}: note: counterexample (17 steps, shortest of {{[0-9]+}} states explored):
// DROPPED-NEXT: {{.*}}protocol_dropped_release.mlir:19:7: note: {{ +}}1. wg0 mbarrier_init %6[0] count 1, %7[0] count 2, %6[1] count 1, %7[1] count 2
// DROPPED-NEXT: {{.*}}protocol_dropped_release.mlir:27:5: note: {{ +}}2. wg0 named_barrier_sync 0, 384: arrives (128 threads)
// DROPPED: {{.*}}protocol_dropped_release.mlir:77:13: note: {{ +}}6. wg0 mbarrier_wait_parity %7[0], parity 1
// DROPPED-NEXT: {{.*}}protocol_dropped_release.mlir:78:13: note: {{ +}}wg0 mbarrier_arrive_expect_tx %6[0], 49152 bytes
// DROPPED-NEXT: {{.*}}protocol_dropped_release.mlir:79:13: note: {{ +}}wg0 tma_load into %4[0] on %6[0] (16384 bytes, in flight)
// DROPPED: {{.*}}protocol_dropped_release.mlir:163:9: note: {{ +}}wg1 wgmma_wait_group 0
// DROPPED-NEXT: {{.*}}protocol_dropped_release.mlir:182:13: note: {{ +}}wg1 mbarrier_arrive %7[1] (1 thread)

// (2) Empty barrier %7[0] counts 3 arrivals; the two consumer warp groups give 2
// (found with one k-step per program, 4 programs: the release after the loop).
// SHORT: protocol_count_short.mlir:77:13: error: tawa-verify-protocol: deadlock in @gemm (K = 64, 4 programs per CTA): warp group 0 waits on %7[0] parity 0 (phase 0; the barrier is in phase 0, missing 1 arrival(s));
// SHORT-NEXT: {{.*}}: note: counterexample (17 steps, shortest of {{[0-9]+}} states explored):
// SHORT-NEXT: {{.*}}protocol_count_short.mlir:19:7: note: {{ +}}1. wg0 mbarrier_init %6[0] count 1, %7[0] count 3, %6[1] count 1, %7[1] count 2
// SHORT: {{.*}}protocol_count_short.mlir:183:13: note: {{ +}}wg1 mbarrier_arrive %7[0] (1 thread)

// (3) The producer's first wait on the empty barrier asks for parity 0: it waits
// for a release of a stage nobody has filled.
// PARITY: protocol_initial_parity.mlir:77:13: error: tawa-verify-protocol: deadlock in @gemm (K = 64, 1 program per CTA): warp group 0 waits on %7[0] parity 0 (phase 0; the barrier is in phase 0, missing 2 arrival(s)); warp group 1 waits on %6[0] parity 0 (phase 0; the barrier is in phase 0, missing 1 arrival(s)); warp group 2 waits on %6[0] parity 0
// PARITY-NEXT: {{.*}}: note: counterexample (7 steps, shortest of {{[0-9]+}} states explored):
// PARITY-NEXT: {{.*}}: note: {{ +}}1. wg0 mbarrier_init
// PARITY-NEXT: {{.*}}: note: {{ +}}2. wg0 named_barrier_sync 0, 384: arrives (128 threads)
// PARITY-NEXT: {{.*}}: note: {{ +}}3. wg1 named_barrier_sync 0, 384: arrives (128 threads)
// PARITY-NEXT: {{.*}}: note: {{ +}}4. wg2 named_barrier_sync 0, 384: arrives (128 threads)
// PARITY-NEXT: {{.*}}: note: {{ +}}5. wg0 named_barrier_sync 0, 384: passes
// PARITY-NEXT: {{.*}}: note: {{ +}}6. wg1 named_barrier_sync 0, 384: passes
// PARITY-NEXT: {{.*}}: note: {{ +}}7. wg2 named_barrier_sync 0, 384: passes
// PARITY-NOT:  wg

// (4) expect_tx announces 32768 bytes; the A and B boxes bring 16384 + 32768.
// TX: protocol_expect_tx.mlir:80:13: error: tawa-verify-protocol: transaction bytes underflow in @gemm (K = 64, 1 program per CTA): the TMA load into %5[0] completes 32768 bytes on %6[0], 16384 more than its phase 0 expects (expect_tx and the boxes' bytes differ)
// TX-NEXT: {{.*}}: note: counterexample (8 steps, shortest of {{[0-9]+}} states explored):
// TX: {{.*}}protocol_expect_tx.mlir:77:13: note: {{ +}}6. wg0 mbarrier_wait_parity %7[0], parity 1
// TX-NEXT: {{.*}}protocol_expect_tx.mlir:78:13: note: {{ +}}wg0 mbarrier_arrive_expect_tx %6[0], 32768 bytes
// TX-NEXT: {{.*}}protocol_expect_tx.mlir:79:13: note: {{ +}}wg0 tma_load into %4[0] on %6[0] (16384 bytes, in flight)
// TX-NEXT: {{.*}}protocol_expect_tx.mlir:80:13: note: {{ +}}wg0 tma_load into %5[0] on %6[0] (32768 bytes, in flight)
// TX-NEXT: {{.*}}protocol_expect_tx.mlir:79:13: note: {{ +}}7. wg0 TMA load into %4[0] completes (16384 bytes on %6[0])
// TX-NEXT: {{.*}}protocol_expect_tx.mlir:80:13: note: {{ +}}8. wg0 TMA load into %5[0] completes (32768 bytes on %6[0])

// (5) Without its empty wait the producer refills stage 0 (the 3rd load, D+1)
// before anybody consumed it: a third arrival on the full barrier %6[0] in
// phase 0, whose one expected arrival is in.
// AHEAD: protocol_runs_ahead.mlir:77:13: error: tawa-verify-protocol: too many arrivals in @gemm (K = 64, 4 programs per CTA): warp group 0 arrives on %6[0] in phase 0 after all of its 1 expected arrivals
// AHEAD: {{.*}}: note: counterexample (5 steps, shortest of {{[0-9]+}} states explored):
// AHEAD: {{.*}}: note: {{ +}}5. wg0 named_barrier_sync 0, 384: passes
// AHEAD-NEXT: {{.*}}: note: {{ +}}wg0 mbarrier_arrive_expect_tx %6[0], 49152 bytes
// AHEAD-NEXT: {{.*}}: note: {{ +}}wg0 tma_load into %4[0] on %6[0]
// AHEAD-NEXT: {{.*}}: note: {{ +}}wg0 tma_load into %5[0] on %6[0]
// AHEAD-NEXT: {{.*}}: note: {{ +}}wg0 mbarrier_arrive_expect_tx %6[1], 49152 bytes
// AHEAD-NEXT: {{.*}}: note: {{ +}}wg0 tma_load into %4[1] on %6[1]
// AHEAD-NEXT: {{.*}}: note: {{ +}}wg0 tma_load into %5[1] on %6[1]
// AHEAD-NEXT: {{.*}}protocol_runs_ahead.mlir:77:13: note: {{ +}}wg0 mbarrier_arrive_expect_tx %6[0], 49152 bytes
// AHEAD-NOT:   wg0
