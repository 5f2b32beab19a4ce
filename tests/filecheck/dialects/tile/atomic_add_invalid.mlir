// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

func.func @bf16(%v: tensor<64x64xbf16>, %D: memref<?x?xbf16>, %i: index) {
  tile.atomic_add %v, %D[%i, %i] : tensor<64x64xbf16>, memref<?x?xbf16>
  func.return
}
// CHECK: error: tile.atomic_add adds f32 tiles (red.global.add.f32), got tensor<64x64xbf16>

// -----

func.func @element_types_differ(%v: tensor<64x64xf32>, %D: memref<?x?xf16>, %i: index) {
  tile.atomic_add %v, %D[%i, %i] : tensor<64x64xf32>, memref<?x?xf16>
  func.return
}
// CHECK: error: tile.atomic_add tile element type f32 differs from the memref element type f16

// -----

func.func @offsets(%v: tensor<64x64xf32>, %D: memref<?x?xf32>, %i: index) {
  tile.atomic_add %v, %D[%i] : tensor<64x64xf32>, memref<?x?xf32>
  func.return
}
// CHECK: error: tile.atomic_add expects 2 offsets for a rank-2 memref, got 1
