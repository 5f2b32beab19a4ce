// RUN: tawa-opt %s -p tawa-warp-specialize --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: tawa-opt %s -p tawa-warp-specialize --split-input-file 2>/dev/null | filecheck %s
// RUN: not tawa-opt %s -p 'tawa-warp-specialize{strict=true}' 2>&1 | filecheck %s --check-prefix=STRICT

// A load under scf.if is not supported: declined, not miscompiled.
// REMARK: warp_specialize_declined.mlir:8:1: remark: tawa-warp-specialize left @guarded unchanged: a tile.load feeding a dot is nested in 'scf.if' (only scf.for loops are supported)
// STRICT: warp_specialize_declined.mlir:8:1: error: tawa-warp-specialize left @guarded unchanged: a tile.load feeding a dot is nested in 'scf.if'
func.func @guarded(%A: memref<?x?xbf16>, %C: memref<?x?xf32>, %p: i1) {
  %c0 = arith.constant 0 : index
  %z = tile.zeros : tensor<64x64xf32>
  %r = scf.if %p -> (tensor<64x64xf32>) {
    %a = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %d = tile.dot %a, %a, %z {rhs_transposed} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  } else {
    scf.yield %z : tensor<64x64xf32>
  }
  tile.store %r, %C[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @guarded
// CHECK-NOT:     aref
// CHECK:         scf.if

// -----

// Load offsets that depend on consumer data (an indirect load) cannot be
// produced ahead of the consumer.
// REMARK: warp_specialize_declined.mlir:30:1: remark: tawa-warp-specialize left @indirect unchanged: the producer would need the result of 'test.op' (at {{.*}}warp_specialize_declined.mlir:37:3), which must stay in the consumer
func.func @indirect(%A: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %z = tile.zeros : tensor<64x64xf32>
  %a = tile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %d = tile.dot %a, %a, %z {rhs_transposed} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  %row = tile.reduce max %d, 1 : tensor<64x64xf32> -> tensor<64xf32>
  %col = tile.reduce max %row, 0 : tensor<64xf32> -> tensor<f32>
  %i = "test.op"(%col) : (tensor<f32>) -> index
  %b = tile.load %A[%i, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %e = tile.dot %b, %b, %z {rhs_transposed} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  tile.store %e, %C[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  func.return
}
// CHECK-LABEL: func.func @indirect
// CHECK-NOT:     aref
// CHECK:         "test.op"
