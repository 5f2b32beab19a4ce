// RUN: tawa-opt %s -p tawa-warp-specialize | filecheck %s
// RUN: tawa-opt %s -p tawa-hopper-pipeline -t ptx | filecheck %s --check-prefix=PTX

// A tile program that issues two dots and waits for both at once (tile.dot_async,
// tile.dot_wait): the products read their slots until the wait, so the consumer
// releases the slot after the wait that completes its last reader, not after the
// reader itself (tawa-verify-protocol proves the kernel; a release before the wait
// would let the producer overwrite the stage under the read).
func.func @two_in_flight(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %D: memref<?x?xf32>,
                         %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc, %acc2 = scf.for %k = %c0 to %K step %c64 iter_args(%x = %zero, %y = %zero) -> (tensor<128x128xf32>, tensor<128x128xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %c = tile.load %C[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %p = tile.dot_async %a, %b, %x {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %q = tile.dot_async %a, %c, %y {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %pw, %qw = tile.dot_wait 0 (%p, %q) : tensor<128x128xf32>, tensor<128x128xf32>
    scf.yield %pw, %qw : tensor<128x128xf32>, tensor<128x128xf32>
  }
  %sum = arith.addf %acc, %acc2 : tensor<128x128xf32>
  tile.store %sum, %D[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @two_in_flight
// CHECK:         } partition consumer
// CHECK:           scf.for
// CHECK:             %[[P:.*]] = tile.dot_async
// CHECK-NEXT:        aref.get
// CHECK-NEXT:        %[[Q:.*]] = tile.dot_async
// CHECK-NEXT:        tile.dot_wait 0 (%[[P]], %[[Q]])
// CHECK-NEXT:        aref.consumed
// CHECK-NEXT:        aref.consumed
// CHECK-NEXT:        scf.yield

// PTX-LABEL: .visible .entry two_in_flight(
// PTX:       wgmma.mma_async
// PTX:       wgmma.wait_group.sync.aligned 0;
