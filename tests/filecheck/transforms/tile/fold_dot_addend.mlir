// tawa-fold-dot-addend (tawa/transforms/tile/dot_addend.py, docs/passes.md): a broadcast added to
// or subtracted from a product whose accumulator is zeros becomes the product's accumulator.
// RUN: tawa-opt %s -p tawa-fold-dot-addend | filecheck %s

// dPᵀ − Delta (attention's backward): the negated vector, repeated as before, starts the
// accumulator; the product stays where it was and the subtraction is gone.
// CHECK-LABEL: func.func @minus_column_vector
// CHECK:         %delta = tile.load %D[%c0] : memref<?xf32> -> tensor<64xf32>
// CHECK-NEXT:    %delta_neg = arith.negf %delta : tensor<64xf32>
// CHECK-NEXT:    %[[X:.*]] = tile.expand_dims %delta_neg, 0 : tensor<64xf32> -> tensor<1x64xf32>
// CHECK-NEXT:    %[[B:.*]] = tile.broadcast %[[X]] : tensor<1x64xf32> -> tensor<128x64xf32>
// CHECK-NEXT:    %ds = tile.dot %a, %b, %[[B]] {rhs_transposed} : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
// CHECK-NEXT:    tile.store %ds, %Y[%c0, %c0]
// CHECK-NOT:     arith.subf
// CHECK-NOT:     tile.zeros
func.func @minus_column_vector(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %D: memref<?xf32>, %Y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %b = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %delta = tile.load %D[%c0] : memref<?xf32> -> tensor<64xf32>
  %z = tile.zeros : tensor<128x64xf32>
  %p = tile.dot %a, %b, %z {rhs_transposed} : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  %dx = tile.expand_dims %delta, 0 : tensor<64xf32> -> tensor<1x64xf32>
  %db = tile.broadcast %dx : tensor<1x64xf32> -> tensor<128x64xf32>
  %ds = arith.subf %p, %db : tensor<128x64xf32>
  tile.store %ds, %Y[%c0, %c0] : tensor<128x64xf32>, memref<?x?xf32>
  func.return
}

// A scalar added on the left: the splat starts the accumulator, not negated.
// CHECK-LABEL: func.func @plus_scalar
// CHECK:         %[[S:.*]] = tile.splat %s : f32 -> tensor<128x64xf32>
// CHECK-NEXT:    %y = tile.dot %a, %b, %[[S]] : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
// CHECK-NOT:     arith.addf
func.func @plus_scalar(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %s: f32, %Y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %b = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %z = tile.zeros : tensor<128x64xf32>
  %p = tile.dot %a, %b, %z : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  %sb = tile.splat %s : f32 -> tensor<128x64xf32>
  %y = arith.addf %sb, %p : tensor<128x64xf32>
  tile.store %y, %Y[%c0, %c0] : tensor<128x64xf32>, memref<?x?xf32>
  func.return
}

// Left as they are: the addend minus the product, a product read twice, an accumulator that is
// not zeros, a whole tile as the addend, and a vector defined after the product.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     arith.negf
// CHECK:         arith.subf %db, %p1
// CHECK:         arith.subf %p2, %db
// CHECK:         arith.subf %p3, %db
// CHECK:         arith.addf %p4, %c
// CHECK:         arith.subf %p5, %lb
// CHECK-NOT:     arith.negf
// CHECK:         func.return
func.func @left_alone(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %D: memref<?xf32>, %C: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %b = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %delta = tile.load %D[%c0] : memref<?xf32> -> tensor<64xf32>
  %c = tile.load %C[%c0, %c0] : memref<?x?xf32> -> tensor<128x64xf32>
  %dx = tile.expand_dims %delta, 0 : tensor<64xf32> -> tensor<1x64xf32>
  %db = tile.broadcast %dx : tensor<1x64xf32> -> tensor<128x64xf32>
  %z = tile.zeros : tensor<128x64xf32>
  %p1 = tile.dot %a, %b, %z : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  %y1 = arith.subf %db, %p1 : tensor<128x64xf32>
  %p2 = tile.dot %a, %b, %z : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  %y2 = arith.subf %p2, %db : tensor<128x64xf32>
  %t2 = arith.addf %y2, %p2 : tensor<128x64xf32>
  %p3 = tile.dot %a, %b, %c : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  %p3b = tile.dot %a, %b, %z : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  %y3 = arith.subf %p3, %db : tensor<128x64xf32>
  %p4 = tile.dot %a, %b, %z : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  %y4 = arith.addf %p4, %c : tensor<128x64xf32>
  %p5 = tile.dot %a, %b, %z : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  %late = tile.load %D[%c0] : memref<?xf32> -> tensor<64xf32>
  %lx = tile.expand_dims %late, 0 : tensor<64xf32> -> tensor<1x64xf32>
  %lb = tile.broadcast %lx : tensor<1x64xf32> -> tensor<128x64xf32>
  %y5 = arith.subf %p5, %lb : tensor<128x64xf32>
  %s1 = arith.addf %y1, %t2 : tensor<128x64xf32>
  %s2 = arith.addf %s1, %y3 : tensor<128x64xf32>
  %s3 = arith.addf %s2, %p3b : tensor<128x64xf32>
  %s4 = arith.addf %s3, %y4 : tensor<128x64xf32>
  %s5 = arith.addf %s4, %y5 : tensor<128x64xf32>
  tile.store %s5, %Y[%c0, %c0] : tensor<128x64xf32>, memref<?x?xf32>
  func.return
}
