// Math no pattern lowers is reported at the op itself, not at the first
// accumulator op that uses its result: GELU in the erf form (PTX has no erf).
//
// RUN: sed 's/math.tanh/math.erf/' %S/../../../../examples/gemm_bias_gelu.mlir > %t.mlir
// RUN: not tawa-opt %t.mlir -p tawa-hopper-pipeline 2>&1 | filecheck %s
// CHECK: {{.*}}.mlir:45:3: error: tawa-lower-tile: 'math.erf' is not supported by the Hopper lowering yet
// CHECK-NOT: error

// The same where only a store waits on the math (a kernel without dots; the store's own error
// would blame the store): math.exp, with the way to write it, where the lowering runs without
// tawa-exp-to-exp2 (tawa-hopper-pipeline runs it first, and the kernel compiles).
// RUN: sed 's/math.exp2/math.exp/' %S/../../../transforms/dot_free/row_softmax.mlir > %t.exp.mlir
// RUN: not tawa-opt %t.exp.mlir -p 'tawa-warp-specialize,tawa-pipeline,tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile' 2>&1 | filecheck %s --check-prefix=EXP
// RUN: tawa-opt %t.exp.mlir -p tawa-hopper-pipeline -t ptx | filecheck %s --check-prefix=PIPE
// PIPE: ex2.approx
// EXP: {{.*}}.exp.mlir:13:3: error: tawa-lower-tile: 'math.exp' is not supported by the Hopper lowering yet (write math.exp2 of x·log2(e), or run tawa-exp-to-exp2 first)
