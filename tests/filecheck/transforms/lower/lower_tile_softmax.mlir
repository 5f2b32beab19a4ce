// RUN: tawa-opt %S/../../../../examples/gemm_softmax.mlir -p 'tawa-hopper-pipeline{epilogue=threads}' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/gemm_softmax.mlir -p 'tawa-hopper-pipeline{epilogue=threads}' -t ptx | filecheck %s --check-prefix=PTX

// The row softmax runs on the accumulator registers of each consumer warp group.
// CHECK-LABEL: func.func @gemm_softmax
// CHECK:         %[[S:.*]] = nvgpu.frag_binary mulf %{{.*}}, %scale : !nvgpu.frag<64x256xf32, wgmma>, f32
// CHECK-NEXT:    %[[M:.*]] = nvgpu.frag_reduce max %[[S]] : !nvgpu.frag<64x256xf32, wgmma> -> !nvgpu.frag<64xf32, wgmma_row>
// CHECK-NEXT:    %[[MB:.*]] = nvgpu.frag_broadcast %[[M]] : !nvgpu.frag<64xf32, wgmma_row> -> !nvgpu.frag<64x256xf32, wgmma>
// CHECK-NEXT:    %[[X:.*]] = nvgpu.frag_binary subf %[[S]], %[[MB]]
// CHECK-NEXT:    %[[P:.*]] = nvgpu.frag_unary exp2 %[[X]]
// CHECK-NEXT:    %[[L:.*]] = nvgpu.frag_reduce sum %[[P]]
// The division by the row sums is a product with their reciprocals (tawa-divide-by-reciprocal).
// CHECK-NEXT:    %[[R:.*]] = nvgpu.frag_unary rcp %[[L]]
// CHECK-NEXT:    %[[RB:.*]] = nvgpu.frag_broadcast %[[R]]
// CHECK-NEXT:    %[[O:.*]] = nvgpu.frag_binary mulf %[[P]], %[[RB]]
// CHECK:         nvgpu.frag_convert %[[O]]
// CHECK:         nvgpu.memref_base %C
// CHECK-NOT:     tile.

// A row reduction: each thread folds its 64 values of a row, then two butterfly
// shuffles within the quad.
// PTX:      max.NaN.f32
// PTX:      shfl.sync.bfly.b32 %f{{[0-9]+}}, %f{{[0-9]+}}, 1, 31, -1;
// PTX-NEXT: max.NaN.f32
// PTX-NEXT: shfl.sync.bfly.b32 %f{{[0-9]+}}, %f{{[0-9]+}}, 2, 31, -1;
// PTX:      ex2.approx.ftz.f32
// PTX:      rcp.rn.f32
// PTX-NOT:  div.rn.f32
