// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{stages=2 prepare=false pin-waits=true}' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{stages=2 prepare=false}' | filecheck %s --check-prefix=DEFAULT
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{prepare=false pin-waits=true}' | filecheck %s --check-prefix=GEMM
// RUN: tawa-opt %s -p tawa-pin-waits | filecheck %s --check-prefix=PASS

// tawa.transforms.lower.pin_waits: with pin-waits (tawa-pin-waits, after tawa-pingpong), the wait
// that completes the P·V in flight, after the softmax of the overlapped loop, gets a fence that
// ptxas does not move code across.
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

// tawa-pin-waits on its own: a wait after register math (the multiply) gets
// the fence, a wait right after a commit does not; in a consumer partition and
// in a kernel whose partitions are already branches (IR after
// tawa-materialize-partitions).
func.func @pin(%a: !nvgpu.frag<64x64xf32, wgmma>) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(4) regs(232) {
    nvgpu.wgmma_commit_group
    %w = nvgpu.wgmma_wait_group 1 (%a) : !nvgpu.frag<64x64xf32, wgmma>
    %b = nvgpu.frag_binary mulf %w, %w : !nvgpu.frag<64x64xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>
    %c = nvgpu.wgmma_wait_group 0 (%b) : !nvgpu.frag<64x64xf32, wgmma>
  }
  func.return
}
// PASS-LABEL: func.func @pin
// PASS:         nvgpu.wgmma_commit_group
// PASS-NEXT:    %w = nvgpu.wgmma_wait_group 1 (%a)
// PASS-NEXT:    %b = nvgpu.frag_binary mulf %w, %w
// PASS-NEXT:    nvgpu.fence_cta
// PASS-NEXT:    %c = nvgpu.wgmma_wait_group 0 (%b)

func.func @materialized(%a: !nvgpu.frag<64x64xf32, wgmma>) {
  %b = nvgpu.frag_binary mulf %a, %a : !nvgpu.frag<64x64xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>
  %c = nvgpu.wgmma_wait_group 0 (%b) : !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// PASS-LABEL: func.func @materialized
// PASS:         %b = nvgpu.frag_binary mulf %a, %a
// PASS-NEXT:    nvgpu.fence_cta
// PASS-NEXT:    %c = nvgpu.wgmma_wait_group 0 (%b)
