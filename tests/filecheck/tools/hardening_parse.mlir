// RUN: tawa-opt %s --parsing-diagnostics --split-input-file | filecheck %s
// RUN: tawa-opt %s --parsing-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// A case that parsed would print its module.
// EVERY-CASE-FAILS-NOT: builtin.module

// Number literals out of range of their type are parse errors located at the
// literal (tawa.diagnostics.LocatedParser): xdsl 0.74 raised OverflowError
// for f16/f32 and wide hexadecimal literals (an internal error) and rounded
// bf16/f8 ones to infinity or NaN.  Index literals must fit the 64 bits the
// PTX backend gives index.

func.func @f32_too_large() {
  %x = arith.constant 1.0e39 : f32
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:23
// CHECK:      literal 1.0e39 is out of range of f32

// -----

func.func @f16_rounds_past_max() {
  %x = arith.constant 65520.0 : f16
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:23
// CHECK:      literal 65520.0 is out of range of f16

// -----

func.func @bf16_too_large() {
  %x = arith.constant -1.0e39 : bf16
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:23
// CHECK:      literal -1.0e39 is out of range of bf16

// -----

func.func @f8e4m3_too_large() {
  %x = arith.constant 480.0 : f8E4M3FN
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:23
// CHECK:      literal 480.0 is out of range of f8E4M3FN

// -----

func.func @f8e5m2_too_large() {
  %x = arith.constant 65536.0 : f8E5M2
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:23
// CHECK:      literal 65536.0 is out of range of f8E5M2

// -----

// A decimal literal never spells infinity, not even in f64.
func.func @f64_too_large() {
  %x = arith.constant 1.0e400 : f64
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:23
// CHECK:      literal 1.0e400 is out of range of f64

// -----

func.func @hex_too_wide() {
  %x = arith.constant 0x1FFFFFFFFF : f32
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:23
// CHECK:      literal 0x1FFFFFFFFF is out of range of f32

// -----

func.func @index_too_large() {
  %x = arith.constant 18446744073709551616 : index
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:23
// CHECK:      integer 18446744073709551616 does not fit in index (64 bits: [-9223372036854775808, 18446744073709551616))

// -----

func.func @index_too_small() {
  %x = arith.constant -9223372036854775809 : index
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:23
// CHECK:      integer -9223372036854775809 does not fit in index (64 bits: [-9223372036854775808, 18446744073709551616))

// -----

// xdsl checks the fixed-width integers itself.
func.func @i8_too_large() {
  %x = arith.constant 300 : i8
  func.return
}
// CHECK:      hardening_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      Integer value 300 is out of range for type i8
