// RUN: cd %S && tawa-opt hardening_verify.mlir --verify-diagnostics --split-input-file | filecheck %s
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// A case that verified would print its module.
// EVERY-CASE-FAILS-NOT: builtin.module

// What tawa.diagnostics.verify rejects beyond xdsl's verifiers (docs/testing.md,
// "Fuzzing"): values used where their definition does not dominate, and loops
// with a constant step that is not positive.  Each is one line, located at
// the op that uses the value (or at the loop).

func.func @use_before_def(%a: index) {
  %x = arith.addi %y, %a : index
  %y = arith.constant 1 : index
  func.return
}
// CHECK: {{^}}hardening_verify.mlir:[[# @LINE - 4]]:3: error: operand #0 (%y) of 'arith.addi' is used before it is defined{{$}}

// -----

func.func @own_result(%a: index) {
  %x = arith.addi %x, %a : index
  func.return
}
// CHECK: {{^}}hardening_verify.mlir:[[# @LINE - 3]]:3: error: operand #0 (%x) of 'arith.addi' is a result of the op that uses it{{$}}

// -----

// A loop body that uses a value defined after the loop.
func.func @use_in_region_before_def(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = arith.addi %i, %late : index
  }
  %late = arith.constant 7 : index
  func.return
}
// CHECK: {{^}}hardening_verify.mlir:[[# @LINE - 5]]:5: error: operand #1 (%late) of 'arith.addi' is used before it is defined{{$}}

// -----

// A forward reference into a region: the loop's init value is defined in
// its own body.
func.func @forward_reference_into_region(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %next) -> (index) {
    %next = arith.addi %acc, %i : index
    scf.yield %next : index
  }
  func.return
}
// CHECK: {{^}}hardening_verify.mlir:[[# @LINE - 6]]:3: error: operand #3 (%next) of 'scf.for' is defined in a region that does not enclose this use{{$}}

// -----

// A constant defined after the loop that uses it as its step: the input that
// made tawa-warp-specialize fail with a KeyError (hardening_passes.mlir runs
// the pass on it).
func.func @step_defined_after_loop(%A: memref<?x?xbf16>, %K: index) {
  %c0 = arith.constant 0 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    scf.yield %acc_i : tensor<128x128xf32>
  }
  %c64 = arith.constant 64 : index
  func.return
}
// CHECK: {{^}}hardening_verify.mlir:[[# @LINE - 6]]:3: error: operand #2 (%c64) of 'scf.for' is used before it is defined{{$}}

// -----

// Across blocks: ^bb1 does not dominate ^bb2.
func.func @block_does_not_dominate(%a: index, %c: i1) {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %x = arith.addi %a, %a : index
  cf.br ^bb3
^bb2:
  %y = arith.addi %x, %a : index
  cf.br ^bb3
^bb3:
  func.return
}
// CHECK: {{^}}hardening_verify.mlir:[[# @LINE - 5]]:3: error: operand #0 (%x) of 'arith.addi' is defined in a block that does not dominate this use{{$}}

// -----

// A loop with a constant step of 0 never ends (the CPU interpreter refuses a
// step <= 0 at run time; on the GPU a non-constant step of 0 hangs).
func.func @step_zero(%n: index) {
  %c0 = arith.constant 0 : index
  scf.for %i = %c0 to %n step %c0 {
  }
  func.return
}
// CHECK: {{^}}hardening_verify.mlir:[[# @LINE - 4]]:3: error: 'scf.for' step must be positive, got 0 (the loop would not end){{$}}

// -----

func.func @step_negative(%n: index) {
  %c0 = arith.constant 0 : index
  %m1 = arith.constant -1 : index
  scf.for %i = %c0 to %n step %m1 {
  }
  func.return
}
// CHECK: {{^}}hardening_verify.mlir:[[# @LINE - 4]]:3: error: 'scf.for' step must be positive, got -1 (the loop would not end){{$}}
