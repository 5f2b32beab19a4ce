// The tile IR of examples/python/gemm_scale_relu.py: the epilogue of
// examples/gemm_scale_relu.mlir (a scalar meets a tile through tile.splat).
// RUN: python -m tawa.frontend %S/../../../examples/python/gemm_scale_relu.py --no-locations | filecheck %s

// CHECK:      func.func @gemm_scale_relu({{.*}}, %alpha: f32) {
// CHECK:        %[[F0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:        %[[ACC:.*]] = scf.for
// CHECK:          tile.dot
// CHECK-NEXT:     scf.yield
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[ALPHA:.*]] = tile.splat %alpha : f32 -> tensor<128x256xf32>
// CHECK-NEXT:   %[[SCALED:.*]] = arith.mulf %[[ACC]], %[[ALPHA]] : tensor<128x256xf32>
// CHECK-NEXT:   %[[ZEROS:.*]] = tile.splat %[[F0]] : f32 -> tensor<128x256xf32>
// CHECK-NEXT:   %relu = arith.maximumf %[[SCALED]], %[[ZEROS]] : tensor<128x256xf32>
// CHECK-NEXT:   %[[C:.*]] = arith.truncf %relu : tensor<128x256xf32> to tensor<128x256xbf16>
// CHECK-NEXT:   tile.store %[[C]], %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
