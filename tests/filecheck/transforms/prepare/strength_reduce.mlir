// RUN: tawa-opt %s -p tawa-strength-reduce | filecheck %s

// Unsigned division and remainder by 2^k: shifts and masks of the same type;
// other divisors stay divisions.  A divisor constant left without uses goes.
// CHECK-LABEL: func.func @reduce
// CHECK-NEXT:  %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT:  %[[K:.*]] = arith.constant 5 : index
// CHECK-NEXT:  %[[Q:.*]] = arith.shrui %[[N:.*]], %[[K]] : index
// CHECK-NEXT:  %[[M:.*]] = arith.constant 31 : index
// CHECK-NEXT:  %[[R:.*]] = arith.andi %[[N]], %[[M]] : index
// CHECK-NEXT:  %[[K3:.*]] = arith.constant 3 : i32
// CHECK-NEXT:  %[[Q32:.*]] = arith.shrui %[[X:.*]], %[[K3]] : i32
// CHECK-NEXT:  %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT:  %[[D6:.*]] = arith.divui %[[N]], %[[C6]] : index
// CHECK-NEXT:  %[[S:.*]] = arith.divsi %[[N]], %[[C32]] : index
// CHECK-NEXT:  func.return %[[Q]], %[[R]], %[[Q32]], %[[D6]], %[[S]]
func.func @reduce(%n: index, %x: i32) -> (index, index, i32, index, index) {
  %c32 = arith.constant 32 : index
  %q = arith.divui %n, %c32 : index
  %r = arith.remui %n, %c32 : index
  %c8 = arith.constant 8 : i32
  %q32 = arith.divui %x, %c8 : i32
  %c6 = arith.constant 6 : index
  %d6 = arith.divui %n, %c6 : index
  %s = arith.divsi %n, %c32 : index
  func.return %q, %r, %q32, %d6, %s : index, index, i32, index, index
}
