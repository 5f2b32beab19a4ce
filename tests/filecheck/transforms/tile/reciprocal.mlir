// RUN: tawa-opt %s -p tawa-divide-by-reciprocal | filecheck %s
// RUN: tawa-opt %s -p tawa-hopper-pipeline -t ptx | filecheck %s --check-prefix=PTX

// Division by a row vector broadcast along the columns (a softmax's
// normalization): one reciprocal per row, then a product per element.  The
// broadcast of the sums is gone; the reciprocal is broadcast the same way.
// CHECK-LABEL: func.func @normalize_rows
// CHECK:         %row_sum = tile.reduce sum %p, 1 : tensor<16x64xf32> -> tensor<16xf32>
// CHECK-NEXT:    %one = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %ones = tile.splat %one : f32 -> tensor<16xf32>
// CHECK-NEXT:    %row_sum_inv = arith.divf %ones, %row_sum : tensor<16xf32>
// CHECK-NEXT:    %row_sum_inv_x = tile.expand_dims %row_sum_inv, 1 : tensor<16xf32> -> tensor<16x1xf32>
// CHECK-NEXT:    %row_sum_inv_b = tile.broadcast %row_sum_inv_x : tensor<16x1xf32> -> tensor<16x64xf32>
// CHECK-NEXT:    %o = arith.mulf %p, %row_sum_inv_b : tensor<16x64xf32>
// CHECK-NOT:     arith.divf %p
// The reciprocal is `rcp.rn` (one a row a thread); no division per element is left.
// PTX-LABEL: .entry normalize_rows(
// PTX:         .reqntid 128, 1, 1
// PTX-NOT:     div.{{rn|full}}.f32
// PTX:         rcp.rn.f32
// PTX-NOT:     div.{{rn|full}}.f32
// PTX:         }
func.func @normalize_rows(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %p = math.exp2 %x : tensor<16x64xf32>
  %row_sum = tile.reduce sum %p, 1 : tensor<16x64xf32> -> tensor<16xf32>
  %sum_col = tile.expand_dims %row_sum, 1 : tensor<16xf32> -> tensor<16x1xf32>
  %sum_b = tile.broadcast %sum_col : tensor<16x1xf32> -> tensor<16x64xf32>
  %o = arith.divf %p, %sum_b : tensor<16x64xf32>
  tile.store %o, %Y[%c0, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  func.return
}

// A column vector broadcast along the rows, and a scalar splat: the same.
// An elementwise division by a whole tile is left as it is (the lowering
// takes it to `div.full.f32`).
// CHECK-LABEL: func.func @others
// CHECK:         %w_inv = arith.divf %ones, %w : tensor<64xf32>
// CHECK-NEXT:    %w_inv_x = tile.expand_dims %w_inv, 0 : tensor<64xf32> -> tensor<1x64xf32>
// CHECK-NEXT:    %w_inv_b = tile.broadcast %w_inv_x : tensor<1x64xf32> -> tensor<16x64xf32>
// CHECK-NEXT:    %by_col = arith.mulf %x, %w_inv_b : tensor<16x64xf32>
// CHECK-NEXT:    %one_1 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %s_inv = arith.divf %one_1, %s : f32
// CHECK-NEXT:    %s_inv_b = tile.splat %s_inv : f32 -> tensor<16x64xf32>
// CHECK-NEXT:    %by_scalar = arith.mulf %by_col, %s_inv_b : tensor<16x64xf32>
// CHECK-NEXT:    %by_tile = arith.divf %by_scalar, %x : tensor<16x64xf32>
// PTX-LABEL: .entry others(
// PTX:         rcp.rn.f32
// PTX:         div.rn.f32
// PTX:         div.full.f32
// PTX-NOT:     div.rn.f32
// PTX:         }
func.func @others(%X: memref<?x?xf32>, %W: memref<?xf32>, %Y: memref<?x?xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %w = tile.load %W[%c0] : memref<?xf32> -> tensor<64xf32>
  %w_row = tile.expand_dims %w, 0 : tensor<64xf32> -> tensor<1x64xf32>
  %w_b = tile.broadcast %w_row : tensor<1x64xf32> -> tensor<16x64xf32>
  %by_col = arith.divf %x, %w_b : tensor<16x64xf32>
  %s_b = tile.splat %s : f32 -> tensor<16x64xf32>
  %by_scalar = arith.divf %by_col, %s_b : tensor<16x64xf32>
  %by_tile = arith.divf %by_scalar, %x : tensor<16x64xf32>
  tile.store %by_tile, %Y[%c0, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  func.return
}
