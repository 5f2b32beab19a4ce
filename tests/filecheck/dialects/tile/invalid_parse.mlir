// RUN: tawa-opt %s --parsing-diagnostics --split-input-file | filecheck %s
// RUN: tawa-opt %s --parsing-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// A case that parsed would print its module.
// EVERY-CASE-FAILS-NOT: builtin.module

// Errors of the tile dialect's custom parsers.  They are raised while parsing,
// so they are checked with --parsing-diagnostics, location included: the line
// and column of the offending token.

func.func @cmpi_predicate(%a: tensor<128xi32>) {
  %m = tile.cmpi lte, %a, %a : tensor<128xi32>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:18
// CHECK-NEXT:   %m = tile.cmpi lte, %a, %a : tensor<128xi32>
// CHECK:      unknown tile.cmpi predicate 'lte'

// -----

func.func @dot_wait_too_few_types(%d: tensor<128x256xf32>, %e: tensor<128x256xf32>) {
  %w1, %w2 = tile.dot_wait 0 (%d, %e) : tensor<128x256xf32>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:39
// CHECK:      tile.dot_wait: 2 values but 1 types

// -----

func.func @dot_wait_too_many_types(%d: tensor<128x256xf32>) {
  %w = tile.dot_wait 0 (%d) : tensor<128x256xf32>, tensor<128x256xf32>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:29
// CHECK:      tile.dot_wait: 1 values but 2 types
