// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP

// tile.atomic_add: an f32 tile added into a box of an f32 memref, element by element atomically.

func.func @add(%dq: tensor<64x128xf32>, %dQ: memref<?x?x?x?xf32>, %b: index, %h: index, %m0: index) {
  %c0 = arith.constant 0 : index
  tile.atomic_add %dq, %dQ[%b, %h, %m0, %c0] : tensor<64x128xf32>, memref<?x?x?x?xf32>
  func.return
}

// CHECK-LABEL: func.func @add(
// CHECK:         tile.atomic_add %dq, %dQ[%b, %h, %m0, %c0] : tensor<64x128xf32>, memref<?x?x?x?xf32>
// CHECK-NEXT:    func.return

// CHECK-GENERIC: "tile.atomic_add"(%dq, %dQ, %b, %h, %m0, %c0) : (tensor<64x128xf32>, memref<?x?x?x?xf32>, index, index, index, index) -> ()
