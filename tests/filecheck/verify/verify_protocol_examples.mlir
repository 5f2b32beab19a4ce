// tawa-verify-protocol accepts the lowered IR of the examples and leaves it
// unchanged (tests/transforms/test_verify_protocol.py runs every example at
// stages 1-4; these are the GEMM and attention at their default depths).
//
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{prepare=false}' > %t.gemm
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{prepare=false},tawa-verify-protocol' | diff %t.gemm -
// RUN: tawa-opt %S/../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{prepare=false},tawa-verify-protocol' | filecheck %s

// CHECK: func.func @attention_fwd(
// CHECK: nvgpu.mbarrier_wait_parity
// CHECK: func.func @attention_fwd_causal(
