// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP

// tile.counter_arrive: a program's arrival at one of `count` arrivals (a value: constant
// or computed); its i1 result (true in the last arriver) guards what only that program does.

func.func @arrive(%Counters: memref<?xi32>, %tile: index, %n: index) -> i1 {
  %four = arith.constant 4 : index
  %last = tile.counter_arrive %Counters[%tile] count %four : memref<?xi32>
  scf.if %last {
    %one = tile.counter_arrive %Counters[%tile] count %n : memref<?xi32>
  }
  func.return %last : i1
}

// CHECK-LABEL: func.func @arrive(%Counters: memref<?xi32>, %tile: index, %n: index) -> i1 {
// CHECK-NEXT:    %four = arith.constant 4 : index
// CHECK-NEXT:    %last = tile.counter_arrive %Counters[%tile] count %four : memref<?xi32>
// CHECK-NEXT:    scf.if %last {
// CHECK-NEXT:      %one = tile.counter_arrive %Counters[%tile] count %n : memref<?xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %last : i1

// CHECK-GENERIC: %last = "tile.counter_arrive"(%Counters, %tile, %four) : (memref<?xi32>, index, index) -> i1
