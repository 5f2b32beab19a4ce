// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

func.func @no_arrivals(%Counters: memref<?xi32>, %i: index) {
  %none = arith.constant 0 : index
  %last = tile.counter_arrive %Counters[%i] count %none : memref<?xi32>
  func.return
}
// CHECK: error: tile.counter_arrive count must be in [1, 2^31), got 0

// -----

func.func @wide_counters(%Counters: memref<?xi64>, %i: index, %n: index) {
  %last = tile.counter_arrive %Counters[%i] count %n : memref<?xi64>
  func.return
}
// CHECK: error: tile.counter_arrive counters must be a memref<?xi32>, got memref<?xi64>

// -----

func.func @counter_matrix(%Counters: memref<?x?xi32>, %i: index, %n: index) {
  %last = tile.counter_arrive %Counters[%i] count %n : memref<?x?xi32>
  func.return
}
// CHECK: error: tile.counter_arrive counters must be a memref<?xi32>, got memref<?x?xi32>

// -----

func.func @too_many(%Counters: memref<?xi32>, %i: index) {
  %many = arith.constant 2147483648 : index
  %last = tile.counter_arrive %Counters[%i] count %many : memref<?xi32>
  func.return
}
// CHECK: error: tile.counter_arrive count must be in [1, 2^31), got 2147483648
