// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2 watchdog-ms=2000},tawa-break-protocol{kind="flip-empty-parity"}' | filecheck %s --check-prefix=FLIP
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2 watchdog-ms=2000},tawa-break-protocol{kind="drop-release"}' | filecheck %s --check-prefix=DROP
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2 watchdog-ms=2000}' | filecheck %s --check-prefix=INTACT
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=2},tawa-break-protocol{kind="nonsense"}' 2>&1 | filecheck %s --check-prefix=BAD

// TEST ONLY: tawa-break-protocol makes the watchdog's test kernels deadlock.
// The full barriers (offset 98304) are those the TMA loads complete; the
// empty ones (98320) are the others.

// flip-empty-parity: the producer's wait on an empty slot (written out by
// tawa-expand-bounded-waits: a timed spin and its record) gets the other
// parity (an xori 1 more), which its record reports too; the consumers'
// full waits are untouched.
// FLIP:       %[[FULL:[0-9]+]] = nvgpu.smem_alloc offset(98304) : !nvgpu.mbarrier<2>
// FLIP-NEXT:  %[[EMPTY:[0-9]+]] = nvgpu.smem_alloc offset(98320) : !nvgpu.mbarrier<2>
// FLIP:       %[[P:[0-9]+]] = arith.xori %phase, %{{[0-9]+}} : index
// FLIP-NEXT:  %parity = arith.index_cast %[[P]] : index to i32
// FLIP-NEXT:  %[[ONE:[0-9]+]] = arith.constant 1 : i32
// FLIP-NEXT:  %[[FLIPPED:.*]] = arith.xori %parity, %[[ONE]] : i32
// FLIP-NEXT:  %late = nvgpu.mbarrier_timed_wait_parity %[[EMPTY]][%stage], %[[FLIPPED]], 2000000000 ns
// FLIP:       nvgpu.atomic_cas_sys %watchdog
// FLIP:       %[[ID:.*]] = arith.constant 0 : i32
// FLIP-NEXT:  nvgpu.store_sys %[[ID]], %watchdog[8] : i32
// FLIP:       nvgpu.store_sys %[[FLIPPED]], %watchdog[32] : i32
// FLIP:       %[[FP:.*]] = arith.index_cast %phase_1 : index to i32
// FLIP-NEXT:  nvgpu.mbarrier_timed_wait_parity %[[FULL]][%stage_1], %[[FP]], 2000000000 ns

// drop-release: the consumers never arrive on the empty barriers; the
// producer's arrive.expect_tx on the full ones stays.
// DROP-NOT:   nvgpu.mbarrier_arrive %
// DROP:       nvgpu.mbarrier_arrive_expect_tx
// DROP-NOT:   nvgpu.mbarrier_arrive %
// INTACT:     nvgpu.mbarrier_arrive %

// BAD: error: tawa-break-protocol: unknown kind 'nonsense' (expected flip-empty-parity or drop-release)
