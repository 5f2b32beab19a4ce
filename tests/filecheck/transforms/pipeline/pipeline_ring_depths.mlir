// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{ring-depths=3,2}' | filecheck %s
// RUN: tawa-opt %S/../Inputs/gemm_two_accumulators.mlir -p 'tawa-warp-specialize,tawa-pipeline{ring-depths=4,1}' | filecheck %s --check-prefix=SHALLOW
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{prepare=false ring-depths=3,2}' | filecheck %s --check-prefix=SMEM
// RUN: not tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{ring-depths=3}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{ring-depths=3,0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{stages=2 ring-depths=3,2}' 2>&1 | filecheck %s --check-prefix=BOTH

// Each ring its own depth, in the order of the kernel's aref.creates (the ones
// filled inside a loop: K, then V); Q, filled once per program, keeps its one slot.
// CHECK-LABEL: func.func @attention_fwd
// CHECK:         %ref_q = aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 1>
// CHECK-NEXT:    %ref_k = aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 3>
// CHECK-NEXT:    %ref_v = aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 2>
// CHECK-LABEL: func.func @attention_fwd_causal
// CHECK:         aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 1>
// CHECK-NEXT:    aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 3>
// CHECK-NEXT:    aref.create : !aref.ref<[tensor<128x128xbf16>], depth = 2>

// A dot stays in flight only where every ring it reads has two slots: with one
// slot in %ref_b2 the consumer cannot hold slot k-1 while it borrows slot k.
// SHALLOW:      aref.create : !aref.ref<[tensor<64x64xbf16>, tensor<128x64xbf16>], depth = 4>
// SHALLOW-NEXT: aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 1>
// SHALLOW-NOT:  tile.dot_async

// Lowered, the K ring has three buffers and three barriers of each kind, V two;
// Q's second slot no longer fits beside them (once-depth decides 1).
// SMEM:      nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x128xbf16, swizzle = 128>
// SMEM-NEXT: nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.mbarrier<1>
// SMEM-NEXT: nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.mbarrier<1>
// SMEM-NEXT: nvgpu.smem_alloc offset(32768) : !nvgpu.smem<3x128x128xbf16, swizzle = 128>
// SMEM-NEXT: nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.mbarrier<3>
// SMEM-NEXT: nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.mbarrier<3>
// SMEM-NEXT: nvgpu.smem_alloc offset(131072) : !nvgpu.smem<2x128x128xbf16, swizzle = 128>
// SMEM-NEXT: nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.mbarrier<2>
// SMEM-NEXT: nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.mbarrier<2>

// COUNT: attention_fwd.mlir:17:1: error: tawa-pipeline: ring-depths gives 1 depth for 2 rings (%ref_k, %ref_v)
// ZERO: tawa-opt: error: tawa-pipeline: ring-depths must be at least 1 each, got 3,0
// BOTH: tawa-hopper-pipeline: error: give stages=2 or ring-depths=3,2, not both
// COUNT-NOT: Traceback
