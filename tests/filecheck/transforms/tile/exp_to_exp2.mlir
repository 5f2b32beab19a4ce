// RUN: tawa-opt %s -p tawa-exp-to-exp2 | filecheck %s
// RUN: not tawa-opt %s -p 'tawa-exp-to-exp2{strict=true}' 2>&1 | filecheck %s --check-prefix=STRICT

// An exp on an f32 tile becomes exp2 of the product with log2(e), as a splat
// of an f32 constant; the result keeps its name (%p) and its uses.
// CHECK-LABEL: func.func @softmax_row
// CHECK:         %shifted = arith.subf %x, %max_b : tensor<16x64xf32>
// CHECK-NEXT:    %log2e = arith.constant 1.44269502 : f32
// CHECK-NEXT:    %log2e_t = tile.splat %log2e : f32 -> tensor<16x64xf32>
// CHECK-NEXT:    %x_log2e = arith.mulf %shifted, %log2e_t : tensor<16x64xf32>
// CHECK-NEXT:    %p = math.exp2 %x_log2e : tensor<16x64xf32>
// CHECK-NEXT:    %row_sum = tile.reduce sum %p, 1 : tensor<16x64xf32> -> tensor<16xf32>
// CHECK-NOT:     math.exp {{.*}}
func.func @softmax_row(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %row_max = tile.reduce max %x, 1 : tensor<16x64xf32> -> tensor<16xf32>
  %max_col = tile.expand_dims %row_max, 1 : tensor<16xf32> -> tensor<16x1xf32>
  %max_b = tile.broadcast %max_col : tensor<16x1xf32> -> tensor<16x64xf32>
  %shifted = arith.subf %x, %max_b : tensor<16x64xf32>
  %p = math.exp %shifted : tensor<16x64xf32>
  %row_sum = tile.reduce sum %p, 1 : tensor<16x64xf32> -> tensor<16xf32>
  %sum_col = tile.expand_dims %row_sum, 1 : tensor<16xf32> -> tensor<16x1xf32>
  %sum_b = tile.broadcast %sum_col : tensor<16x1xf32> -> tensor<16x64xf32>
  %o = arith.divf %p, %sum_b : tensor<16x64xf32>
  tile.store %o, %Y[%c0, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  func.return
}

// The pattern fires inside loops too (the walker visits nested regions), and
// keeps fastmath flags; it leaves an unused exp in place (no DCE).
// CHECK-LABEL: func.func @in_loop
// CHECK:         scf.for
// CHECK:           %x_log2e = arith.mulf %acc_i, %log2e_t : tensor<16x64xf32>
// CHECK-NEXT:      %e = math.exp2 %x_log2e fastmath<afn> : tensor<16x64xf32>
// CHECK:         %unused = math.exp2
func.func @in_loop(%X: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc_i = %x) -> (tensor<16x64xf32>) {
    %e = math.exp %acc_i fastmath<afn> : tensor<16x64xf32>
    scf.yield %e : tensor<16x64xf32>
  }
  %unused = math.exp %x : tensor<16x64xf32>
  tile.store %r, %X[%c0, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  func.return
}

// Not rewritten: an exp on a bf16 tile (the product would be rounded to bf16)
// and on an f32 scalar (not a tile); exp2 stays as it is.  With strict=true
// the first one left is a located error.
// CHECK-LABEL: func.func @left_alone
// CHECK:         %b = math.exp %xb : tensor<16x64xbf16>
// CHECK-NEXT:    %s = math.exp %scale : f32
// CHECK-NEXT:    %t = math.exp2 %x : tensor<16x64xf32>
// STRICT: exp_to_exp2.mlir:[[# @LINE + 5]]:3: error: tawa-exp-to-exp2: math.exp on tensor<16x64xbf16> is not rewritten (only f32 tiles are)
func.func @left_alone(%X: memref<?x?xf32>, %XB: memref<?x?xbf16>, %scale: f32) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %xb = tile.load %XB[%c0, %c0] : memref<?x?xbf16> -> tensor<16x64xbf16>
  %b = math.exp %xb : tensor<16x64xbf16>
  %s = math.exp %scale : f32
  %t = math.exp2 %x : tensor<16x64xf32>
  %s_t = tile.splat %s : f32 -> tensor<16x64xf32>
  %y = arith.mulf %t, %s_t : tensor<16x64xf32>
  tile.store %y, %X[%c0, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  tile.store %b, %XB[%c0, %c0] : tensor<16x64xbf16>, memref<?x?xbf16>
  func.return
}
