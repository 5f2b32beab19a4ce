// RUN: tawa-opt %s -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s

// A mask of data: tile.cmpf of a tile with a splat (the splat on the left swaps the sides) becomes
// nvgpu.frag_cmpf against the f32 scalar, and the select on it one nvgpu.frag_select.
// CHECK-LABEL: func.func @leaky
// CHECK:         %[[POS:.*]] = nvgpu.frag_cmpf ogt, %[[X:.*]], %[[ZERO:.*]] : !nvgpu.frag<16x64xf32, {{.*}}>, f32
// CHECK:         %[[NEG:.*]] = nvgpu.frag_cmpf olt, %[[X]], %[[ZERO]] : !nvgpu.frag<16x64xf32, {{.*}}>, f32
// CHECK:         nvgpu.frag_select %[[POS]], %[[X]], %{{.*}} : !nvgpu.frag<16x64xi1, {{.*}}>, !nvgpu.frag<16x64xf32, {{.*}}>, !nvgpu.frag<16x64xf32, {{.*}}>
// CHECK-NOT:     tile.cmpf
func.func @leaky(%X: memref<?x?xf32>, %Y: memref<?x?xf32>, %Z: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.000000e+00 : f32
  %slope = arith.constant 1.250000e-01 : f32
  %pid = tile.program_id 0
  %x = tile.load %X[%pid, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %z = tile.splat %zero : f32 -> tensor<16x64xf32>
  %s = tile.splat %slope : f32 -> tensor<16x64xf32>
  %pos = tile.cmpf ogt, %x, %z : tensor<16x64xf32>
  %neg = tile.cmpf ogt, %z, %x : tensor<16x64xf32>
  %small = arith.mulf %x, %s : tensor<16x64xf32>
  %y = tile.select %pos, %x, %small : tensor<16x64xi1>, tensor<16x64xf32>
  tile.store %y, %Y[%pid, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  %w = tile.select %neg, %z, %x : tensor<16x64xi1>, tensor<16x64xf32>
  tile.store %w, %Z[%pid, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  func.return
}
