// Math no pattern lowers is reported at the op itself, not at the first
// accumulator op that uses its result: GELU in the erf form (PTX has no erf).
//
// RUN: sed 's/math.tanh/math.erf/' %S/../../../examples/gemm_bias_gelu.mlir > %t.mlir
// RUN: not tawa-opt %t.mlir -p tawa-hopper-pipeline 2>&1 | filecheck %s
// CHECK: {{.*}}.mlir:45:3: error: tawa-lower-tile: 'math.erf' is not supported by the Hopper lowering yet
// CHECK-NOT: error
