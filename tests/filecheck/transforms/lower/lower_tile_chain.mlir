// RUN: tawa-opt %S/../../../../examples/gemm_chain.mlir -p 'tawa-hopper-pipeline{stages=2 prepare=false epilogue=threads}' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/gemm_chain.mlir -p 'tawa-hopper-pipeline{stages=2 epilogue=threads}' -t ptx | filecheck %s --check-prefix=PTX

// The first product's accumulator, converted to bf16 in registers, is the
// second product's A operand; V is read MN-major.
// CHECK-LABEL: func.func @gemm_chain
// CHECK:         %[[S:s]] = nvgpu.wgmma_wait_group 0 (%{{.*}}) : !nvgpu.frag<64x128xf32, wgmma>
// CHECK:         %[[P:.*]] = nvgpu.frag_convert %[[S]] : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>
// CHECK:         nvgpu.wgmma %[[P]], %{{.*}}, %acc_prev, %{{.*}} : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.wgmma_desc<128x128xbf16, swizzle = 128>
// CHECK-NOT:     rhs_transposed
// CHECK:         nvgpu.memref_base %O : memref<?x?x?xbf16>
// CHECK:         nvgpu.frag_store_global %{{.*}} : !nvgpu.frag<64x128xbf16, wgmma>

// PTX:      cvt.rn.bf16x2.f32
// PTX:      wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, %p{{[0-9]+}}, 1, 1, 1;
