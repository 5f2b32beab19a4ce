// RUN: tawa-opt %S/../../../../examples/gemm_scale_relu.mlir -p 'tawa-hopper-pipeline{epilogue=threads}' | filecheck %s
// RUN: tawa-opt %s -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s --check-prefix=SPLAT

// The fused epilogue runs on the accumulator registers: scalars stay scalars.
// CHECK-LABEL: func.func @gemm_scale_relu
// CHECK:         %[[DONE:.*]] = nvgpu.wgmma_wait_group 0 (%{{.*}}) : !nvgpu.frag<64x256xf32, wgmma>
// CHECK:         %[[S:.*]] = nvgpu.frag_binary mulf %[[DONE]], %alpha : !nvgpu.frag<64x256xf32, wgmma>, f32
// CHECK-NEXT:    %[[R:.*]] = nvgpu.frag_binary maximumf %[[S]], %f0 : !nvgpu.frag<64x256xf32, wgmma>, f32
// CHECK:         nvgpu.frag_convert %[[R]]
// CHECK:         nvgpu.memref_base %C
// CHECK-NOT:     tile.splat

// A splat minus an accumulator: subf is not commutative, so the splat becomes a fragment
// of the accumulator's layout (a scalar per register: no registers held for it).
// SPLAT-LABEL: func.func @one_minus
// SPLAT:       %[[ONES:ones.*]] = nvgpu.frag_splat %f1 : f32 -> !nvgpu.frag<64x256xf32, wgmma>
// SPLAT-NEXT:  nvgpu.frag_binary subf %[[ONES]], %{{.*}} : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x256xf32, wgmma>
func.func @one_minus(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %f1 = arith.constant 1.0 : f32
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %ones = tile.splat %f1 : f32 -> tensor<128x256xf32>
  %r = arith.subf %ones, %acc : tensor<128x256xf32>
  %c = arith.truncf %r : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
