// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

func.func @bf16_table(%T: memref<?xbf16>, %i: index) {
  %v = tile.load_scalar %T[%i] : memref<?xbf16> -> bf16
  func.return
}
// CHECK: error: tile.load_scalar reads i32 or f32 elements, got a memref<?xbf16>

// -----

func.func @too_few_offsets(%T: memref<?x?xi32>, %i: index) {
  %v = tile.load_scalar %T[%i] : memref<?x?xi32> -> i32
  func.return
}
// CHECK: error: tile.load_scalar expects 2 offsets for a rank-2 memref, got 1

// -----

func.func @wrong_result(%T: memref<?xi32>, %i: index) {
  %v = tile.load_scalar %T[%i] : memref<?xi32> -> f32
  func.return
}
// CHECK: error: tile.load_scalar result type f32 differs from the memref element type i32
