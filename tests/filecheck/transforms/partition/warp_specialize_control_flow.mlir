// RUN: tawa-opt %s -p tawa-warp-specialize --split-input-file 2>/dev/null | filecheck %s
// RUN: tawa-opt %s -p tawa-warp-specialize --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: not tawa-opt %s -p tawa-hopper-pipeline 2>&1 | filecheck %s --check-prefix=STRICT

// Control flow around the K loop (docs/passes.md, "Control flow").  Loads
// carried by hand through iter_args (software prefetch) are specialized: the
// producer puts the first tiles before the loop and the next ones in each
// iteration; the consumers get them where each iteration uses them, carry
// nothing, and take the put after the last iteration (used by nothing here)
// with a get and an immediate release.
func.func @prefetch(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %a0 = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %b0 = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %acc, %a_last, %b_last = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero, %a = %a0, %b = %b0) -> (tensor<128x128xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>) {
    %k_next = arith.addi %k, %c64 : index
    %a_next = tile.load %A[%c0, %k_next] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b_next = tile.load %B[%c0, %k_next] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d, %a_next, %b_next : tensor<128x128xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>
  }
  tile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @prefetch
// CHECK:         %[[REF:.*]] = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<128x64xbf16>], depth = 1>
// CHECK:         aref.warp_specialize partition producer
// CHECK:           %[[A0:.*]] = tile.load %A
// CHECK-NEXT:      %[[B0:.*]] = tile.load %B
// CHECK-NEXT:      aref.put %[[REF]], %[[A0]], %[[B0]]
// CHECK-NEXT:      scf.for %{{.*}} = %{{.*}} to %K step %{{.*}} {
// CHECK:             %[[AN:.*]] = tile.load %A
// CHECK-NEXT:        %[[BN:.*]] = tile.load %B
// CHECK-NEXT:        aref.put %[[REF]], %[[AN]], %[[BN]]
// CHECK-NEXT:      }
// CHECK:         } partition consumer
// CHECK:           %[[ACC:.*]] = scf.for %{{.*}} iter_args(%[[ACC_I:.*]] = %{{.*}}) -> (tensor<128x128xf32>) {
// CHECK-NEXT:        %[[A:.*]], %[[B:.*]] = aref.get %[[REF]]
// CHECK-NEXT:        %[[D:.*]] = tile.dot %[[A]], %[[B]], %[[ACC_I]]
// CHECK-NEXT:        aref.consumed %[[REF]]
// CHECK-NEXT:        scf.yield %[[D]] : tensor<128x128xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %a_last, %b_last = aref.get %[[REF]]
// CHECK-NEXT:      aref.consumed %[[REF]]
// CHECK-NEXT:      tile.store %[[ACC]], %C

// -----

// The classic prefetch form: the last slice's dot follows the loop, on the
// tiles the last iteration loaded (they arrive through the same aref).
func.func @prefetch_tail(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %a0 = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %b0 = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %k_last = arith.subi %K, %c64 : index
  %acc, %a_last, %b_last = scf.for %k = %c0 to %k_last step %c64 iter_args(%acc_i = %zero, %a = %a0, %b = %b0) -> (tensor<128x128xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>) {
    %k_next = arith.addi %k, %c64 : index
    %a_next = tile.load %A[%c0, %k_next] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b_next = tile.load %B[%c0, %k_next] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d, %a_next, %b_next : tensor<128x128xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>
  }
  %sum = tile.dot %a_last, %b_last, %acc {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
  tile.store %sum, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @prefetch_tail
// CHECK:         } partition consumer
// CHECK:           %[[ACC:.*]] = scf.for
// CHECK:             aref.get
// CHECK:             scf.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[AL:.*]], %[[BL:.*]] = aref.get %[[REF:.*]] :
// CHECK-NEXT:      %[[SUM:.*]] = tile.dot %[[AL]], %[[BL]], %[[ACC]]
// CHECK-NEXT:      aref.consumed %[[REF]]
// CHECK-NEXT:      tile.store %[[SUM]], %C

// -----

// Tiles loaded in every iteration but used only after the loop: each
// iteration's put is taken (and released at once) in the iteration, the last
// one after the loop, where the dot uses it.
func.func @prefetch_used_after(%A: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %a0 = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %a_last = scf.for %k = %c0 to %K step %c64 iter_args(%a = %a0) -> (tensor<128x64xbf16>) {
    %a_next = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    scf.yield %a_next : tensor<128x64xbf16>
  }
  %d = tile.dot %a_last, %a_last, %zero {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
  tile.store %d, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @prefetch_used_after
// CHECK:         } partition consumer
// CHECK:           scf.for %{{.*}} = %{{.*}} to %K step %{{.*}} {
// CHECK-NEXT:        %{{.*}} = aref.get %[[REF:[^ ]*]] :
// CHECK-NEXT:        aref.consumed %[[REF]]
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[AL:.*]] = aref.get %[[REF]]
// CHECK-NEXT:      %[[D:.*]] = tile.dot %[[AL]], %[[AL]], %zero
// CHECK-NEXT:      aref.consumed %[[REF]]

// -----

// A load under scf.if: the producer cannot put a tile on some paths only.
// REMARK: warp_specialize_control_flow.mlir:[[# @LINE + 2]]:1: remark: tawa-warp-specialize left @load_in_if unchanged: a tile.load feeding a dot is nested in 'scf.if' (only scf.for loops are supported): the tile.load (at {{.*}}warp_specialize_control_flow.mlir:[[# @LINE + 8]]:7) is inside the scf.if (at {{.*}}warp_specialize_control_flow.mlir:[[# @LINE + 7]]:5); the producer puts every tile it loads, so it cannot load on some paths only: load unconditionally (rows and columns out of bounds read as 0)
// STRICT: warp_specialize_control_flow.mlir:[[# @LINE + 1]]:1: error: tawa-warp-specialize left @load_in_if unchanged: a tile.load feeding a dot is nested in 'scf.if'
func.func @load_in_if(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index, %p: i1) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = scf.if %p -> (tensor<128x64xbf16>) {
      %x = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
      scf.yield %x : tensor<128x64xbf16>
    } else {
      %z = tile.zeros : tensor<128x64xbf16>
      scf.yield %z : tensor<128x64xbf16>
    }
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @load_in_if
// CHECK-NOT:     aref

// -----

// A loaded tile carried unchanged through a loop: the consumers would hold
// its aref slot across iterations.  Use it in the loop directly.
// REMARK: warp_specialize_control_flow.mlir:[[# @LINE + 1]]:1: remark: tawa-warp-specialize left @carried_unchanged unchanged: scf.for (at {{.*}}warp_specialize_control_flow.mlir:[[# @LINE + 6]]:3) carries a tile from the producer in iter_arg #1: a loaded tile may be carried only in the prefetch form (a tile.load just before the loop as the initial value, a tile.load of the loop body as the yielded value, each used by nothing else); a tile that does not change can be used in the loop directly
func.func @carried_unchanged(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %a0 = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %acc, %a_out = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero, %a = %a0) -> (tensor<128x128xf32>, tensor<128x64xbf16>) {
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d, %a : tensor<128x128xf32>, tensor<128x64xbf16>
  }
  tile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @carried_unchanged
// CHECK-NOT:     aref

// -----

// The prefetched tile is also used in the iteration that loads it: it would
// have to reach the consumers twice.
// REMARK: warp_specialize_control_flow.mlir:[[# @LINE + 1]]:1: remark: tawa-warp-specialize left @prefetch_used_twice unchanged: scf.for (at {{.*}}warp_specialize_control_flow.mlir:[[# @LINE + 7]]:3) carries a tile from the producer in iter_arg #1: a loaded tile may be carried only in the prefetch form
func.func @prefetch_used_twice(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %a0 = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %b = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %acc, %a_out = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero, %a = %a0) -> (tensor<128x128xf32>, tensor<128x64xbf16>) {
    %a_next = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %e = tile.dot %a_next, %b, %d {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %e, %a_next : tensor<128x128xf32>, tensor<128x64xbf16>
  }
  tile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @prefetch_used_twice
// CHECK-NOT:     aref

// -----

// scf.if choosing between two loaded tiles: the choice would carry an aref
// slot out of the scf.if.
// REMARK: warp_specialize_control_flow.mlir:[[# @LINE + 1]]:1: remark: tawa-warp-specialize left @select_tile unchanged: a tile from the producer is carried by 'scf.yield' (at {{.*}}warp_specialize_control_flow.mlir:[[# @LINE + 7]]:5) (operand #0): loaded tiles reach the consumers through an aref slot, which a loop may carry only in the prefetch form and a region op not at all (see docs/passes.md, Control flow)
func.func @select_tile(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %p: i1) {
  %c0 = arith.constant 0 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %a1 = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %a2 = tile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %a = scf.if %p -> (tensor<128x64xbf16>) {
    scf.yield %a1 : tensor<128x64xbf16>
  } else {
    scf.yield %a2 : tensor<128x64xbf16>
  }
  %d = tile.dot %a, %a2, %zero {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
  tile.store %d, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @select_tile
// CHECK-NOT:     aref

// -----

// A K loop written as scf.while: only scf.for loops are partitioned.
// REMARK: warp_specialize_control_flow.mlir:[[# @LINE + 1]]:1: remark: tawa-warp-specialize left @while_loop unchanged: a tile.load feeding a dot is nested in 'scf.while' (only scf.for loops are supported): the tile.load (at {{.*}}warp_specialize_control_flow.mlir:[[# @LINE + 10]]:5) is inside the scf.while (at {{.*}}warp_specialize_control_flow.mlir:[[# @LINE + 5]]:3)
func.func @while_loop(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc, %k_end = scf.while (%acc_i = %zero, %k = %c0) : (tensor<128x128xf32>, index) -> (tensor<128x128xf32>, index) {
    %go = arith.cmpi slt, %k, %K : index
    scf.condition(%go) %acc_i, %k : tensor<128x128xf32>, index
  } do {
  ^bb0(%acc_i: tensor<128x128xf32>, %k: index):
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %k_next = arith.addi %k, %c64 : index
    scf.yield %d, %k_next : tensor<128x128xf32>, index
  }
  tile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @while_loop
// CHECK-NOT:     aref
