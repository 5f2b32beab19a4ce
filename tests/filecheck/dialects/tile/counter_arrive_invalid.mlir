// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

func.func @no_arrivals(%Counters: memref<?xi32>, %i: index) {
  %last = tile.counter_arrive %Counters[%i] count 0 : memref<?xi32>
  func.return
}
// CHECK: error: tile.counter_arrive count must be in [1, 2^31), got 0

// -----

func.func @wide_counters(%Counters: memref<?xi64>, %i: index) {
  %last = tile.counter_arrive %Counters[%i] count 2 : memref<?xi64>
  func.return
}
// CHECK: error: tile.counter_arrive counters must be a memref<?xi32>, got memref<?xi64>

// -----

func.func @counter_matrix(%Counters: memref<?x?xi32>, %i: index) {
  %last = tile.counter_arrive %Counters[%i] count 2 : memref<?x?xi32>
  func.return
}
// CHECK: error: tile.counter_arrive counters must be a memref<?xi32>, got memref<?x?xi32>
