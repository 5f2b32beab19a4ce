// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2 watchdog-ms=2000},tawa-break-protocol{kind="flip-empty-parity"}' | filecheck %s --check-prefix=FLIP
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2 watchdog-ms=2000},tawa-break-protocol{kind="drop-release"}' | filecheck %s --check-prefix=DROP
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2 watchdog-ms=2000}' | filecheck %s --check-prefix=INTACT
// RUN: not tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2},tawa-break-protocol{kind="nonsense"}' 2>&1 | filecheck %s --check-prefix=BAD

// TEST ONLY: tawa-break-protocol makes the watchdog's test kernels deadlock.
// The full barriers (offset 98304) are those the TMA loads complete; the
// empty ones (98320) are the others.

// flip-empty-parity: the producer's wait on an empty slot gets the other
// parity (an xori 1 more), and keeps its wait id; the consumers' full waits
// are untouched.
// FLIP:       %[[FULL:[0-9]+]] = nvgpu.smem_alloc offset(98304) : !nvgpu.mbarrier<2>
// FLIP-NEXT:  %[[EMPTY:[0-9]+]] = nvgpu.smem_alloc offset(98320) : !nvgpu.mbarrier<2>
// FLIP:       %[[P:[0-9]+]] = arith.xori %phase, %{{[0-9]+}} : index
// FLIP-NEXT:  %[[ONE:[0-9]+]] = arith.constant 1 : index
// FLIP-NEXT:  %[[FLIPPED:[0-9]+]] = arith.xori %[[P]], %[[ONE]] : index
// FLIP-NEXT:  nvgpu.mbarrier_wait_parity %[[EMPTY]][%stage], %[[FLIPPED]] watchdog(0, 2000000000 ns)
// FLIP:       nvgpu.mbarrier_wait_parity %[[FULL]][%stage_1], %phase_1 watchdog(1, 2000000000 ns)

// drop-release: the consumers never arrive on the empty barriers; the
// producer's arrive.expect_tx on the full ones stays.
// DROP-NOT:   nvgpu.mbarrier_arrive %
// DROP:       nvgpu.mbarrier_arrive_expect_tx
// DROP-NOT:   nvgpu.mbarrier_arrive %
// INTACT:     nvgpu.mbarrier_arrive %

// BAD: error: tawa-break-protocol: unknown kind 'nonsense' (expected flip-empty-parity or drop-release)
