// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP

// tile.load_scalar: one element of a tensor as a scalar (a row index, a table entry);
// its value may place other loads.

func.func @gather(%Idx: memref<?xi32>, %Table: memref<?x?xi32>, %Scale: memref<?xf32>, %X: memref<?x?xbf16>, %p: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %i = tile.load_scalar %Idx[%p] : memref<?xi32> -> i32
  %e = tile.load_scalar %Table[%p, %c0] : memref<?x?xi32> -> i32
  %s = tile.load_scalar %Scale[%p] : memref<?xf32> -> f32
  %row = arith.index_cast %i : i32 to index
  %m0 = arith.muli %row, %c64 : index
  %x = tile.load %X[%m0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  func.return
}

// CHECK-LABEL: func.func @gather(
// CHECK:         %i = tile.load_scalar %Idx[%p] : memref<?xi32> -> i32
// CHECK-NEXT:    %e = tile.load_scalar %Table[%p, %c0] : memref<?x?xi32> -> i32
// CHECK-NEXT:    %s = tile.load_scalar %Scale[%p] : memref<?xf32> -> f32

// CHECK-GENERIC: %i = "tile.load_scalar"(%Idx, %p) : (memref<?xi32>, index) -> i32
