// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p tawa-pipeline 2>&1 | filecheck %s
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{max-stages=0}' 2>&1 | filecheck %s --check-prefix=MAX
// RUN: not tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{once-depth=-1}' 2>&1 | filecheck %s --check-prefix=ONCE

// CHECK: gemm.mlir:7:1: remark: tawa-pipeline left @gemm unchanged: it has no aref.warp_specialize (run tawa-warp-specialize first)
// ZERO: tawa-opt: error: tawa-pipeline: stages must be at least 1, got 0
// MAX: tawa-hopper-pipeline: error: max-stages must be at least 1, got 0
// ONCE: tawa-hopper-pipeline: error: once-depth must be 0 (decided per kernel) or at least 1, got -1
// MAX-NOT: Traceback
