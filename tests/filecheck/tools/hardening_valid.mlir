// Inputs that the hardening checks must accept (tawa.diagnostics.verify):
// values used in later blocks that their block dominates, values from
// enclosing regions, and literals at the edges of their types' ranges.

// RUN: tawa-opt %s | filecheck %s

// CHECK-LABEL: func.func @dominating_blocks
func.func @dominating_blocks(%a: index, %c: i1) {
  %x = arith.addi %a, %a : index
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %y = arith.addi %x, %a : index
  cf.br ^bb3(%y : index)
^bb2:
  cf.br ^bb3(%x : index)
^bb3(%z: index):
  // CHECK: arith.addi %z, %x : index
  %w = arith.addi %z, %x : index
  func.return
}

// CHECK-LABEL: func.func @enclosing_region
func.func @enclosing_region(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
    // CHECK: arith.addi %acc, %c1 : index
    %next = arith.addi %acc, %c1 : index
    scf.yield %next : index
  }
  func.return
}

// CHECK-LABEL: func.func @edge_literals
func.func @edge_literals() {
  // CHECK-NEXT: arith.constant 6.550400e+04 : f16
  %f16 = arith.constant 65504.0 : f16
  // CHECK-NEXT: arith.constant 4.480000e+02 : f8E4M3FN
  %f8 = arith.constant 448.0 : f8E4M3FN
  // CHECK-NEXT: arith.constant 3.40282347e+38 : f32
  %f32 = arith.constant 3.4028234e38 : f32
  // Hexadecimal literals spell NaN and infinity on purpose.
  // CHECK-NEXT: arith.constant 0x7fc00000 : f32
  %nan = arith.constant 0x7FC00000 : f32
  // CHECK-NEXT: arith.constant 18446744073709551615 : index
  %umax = arith.constant 18446744073709551615 : index
  // CHECK-NEXT: arith.constant -9223372036854775808 : index
  %smin = arith.constant -9223372036854775808 : index
  func.return
}
