// RUN: tawa-opt %s -p 'tawa-warp-specialize{strict=true}' | filecheck %s

// A batched GEMM whose program id is folded: pid 0 = batch · tiles + tile.
// The producer's loads are placed by a division and a remainder of it, which
// it recomputes (integer divisions are pure scalar ops, like the rest of the
// index arithmetic); every signed, unsigned, floor and ceiling division and
// remainder is replicated the same way.
func.func @folded(%A: memref<?x?x?xbf16>, %B: memref<?x?x?xbf16>, %C: memref<?x?x?xbf16>,
                  %K: index, %tiles: index, %n: i32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = tile.program_id 0
  %b = arith.divui %pid, %tiles : index
  %t = arith.remui %pid, %tiles : index
  %m0 = arith.muli %t, %c128 : index
  %pid_i = arith.index_cast %pid : index to i32
  %q1 = arith.divsi %pid_i, %n : i32
  %r1 = arith.remsi %q1, %n : i32
  %q2 = arith.floordivsi %r1, %n : i32
  %q3 = arith.ceildivsi %q2, %n : i32
  %q4 = arith.ceildivui %q3, %n : i32
  %n0 = arith.index_cast %q4 : i32 to index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%b, %m0, %k] : memref<?x?x?xbf16> -> tensor<128x64xbf16>
    %bt = tile.load %B[%b, %n0, %k] : memref<?x?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %bt, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%b, %m0, %n0] : tensor<128x128xbf16>, memref<?x?x?xbf16>
  func.return
}
// CHECK-LABEL: func.func @folded
// CHECK:         aref.warp_specialize partition producer
// CHECK:           %[[PID:.*]] = tile.program_id 0
// CHECK-NEXT:      %[[B:.*]] = arith.divui %[[PID]], %tiles : index
// CHECK-NEXT:      %[[T:.*]] = arith.remui %[[PID]], %tiles : index
// CHECK:           arith.divsi
// CHECK-NEXT:      arith.remsi
// CHECK-NEXT:      arith.floordivsi
// CHECK-NEXT:      arith.ceildivsi
// CHECK-NEXT:      arith.ceildivui
// CHECK:           scf.for
// CHECK-NEXT:        tile.load %A[%[[B]],
// CHECK-NEXT:        tile.load %B[%[[B]],
// CHECK-NEXT:        aref.put
// CHECK:         } partition consumer
// CHECK:           arith.divui
// CHECK-NEXT:      arith.remui
// CHECK:           tile.dot
// CHECK:           tile.store
