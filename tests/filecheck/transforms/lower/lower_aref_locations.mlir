// The ops the passes make of a located program keep its source lines: tawa-warp-specialize
// locates each aref.put at its group's last load, the aref.get at the first use and the
// aref.consumed at the last; tawa-pipeline, tawa-assign-stage-phase and tawa-lower-aref give
// what they make of an op that op's location (so a protocol error names the program's line).
// RUN: tawa-opt %S/../Inputs/gemm_located.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref' --print-debuginfo | filecheck %s

// The producer: the empty wait, the expected bytes and both TMA loads at the last load (line 22).
// CHECK:      nvgpu.mbarrier_wait_parity {{.*}} loc("gemm.py":22:13)
// CHECK-NEXT: nvgpu.mbarrier_arrive_expect_tx {{.*}} loc("gemm.py":22:13)
// CHECK-NEXT: nvgpu.tma_load {{.*}} loc("gemm.py":22:13)
// CHECK-NEXT: nvgpu.tma_load {{.*}} loc("gemm.py":22:13)
// The consumer: the full wait and the releases at the dot (line 23).
// CHECK:      nvgpu.mbarrier_wait_parity {{.*}} loc("gemm.py":23:15)
// CHECK:      nvgpu.mbarrier_arrive {{.*}} loc("gemm.py":23:15)
