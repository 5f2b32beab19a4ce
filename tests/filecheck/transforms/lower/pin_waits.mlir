// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{stages=2 prepare=false pin-waits=true}' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{stages=2 prepare=false}' | filecheck %s --check-prefix=DEFAULT
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{prepare=false pin-waits=true}' | filecheck %s --check-prefix=GEMM

// tawa.transforms.lower.pin_waits: with pin-waits, the wait that completes the P·V in flight, after
// the softmax of the overlapped loop, gets a fence that ptxas does not move code across.
// CHECK-LABEL: func.func @attention_fwd
// CHECK:         %alpha_b_1 = nvgpu.frag_broadcast %alpha_1
// CHECK-NEXT:    nvgpu.fence_cta
// CHECK-NEXT:    %acc_prev = nvgpu.wgmma_wait_group 0 (%acc_new)
// The wait right after the issue of S (nothing between them to move it over) has none.
// CHECK-NOT:     nvgpu.fence_cta
// CHECK-LABEL: func.func @attention_fwd_causal
// CHECK:         nvgpu.fence_cta
// CHECK-NEXT:    %acc_prev = nvgpu.wgmma_wait_group 0 (%acc_new)

// Off by default: on the H100 it was no faster (docs/perf.md, "Cheaper softmax reductions").
// DEFAULT-NOT:   nvgpu.fence_cta

// A GEMM's waits follow a commit or the main loop: no fence.
// GEMM-NOT:      nvgpu.fence_cta
