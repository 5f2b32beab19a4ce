// The A·B example (B row-major K×N) round-trips and compiles to MN-major
// wgmmas (imm-trans-b = 1) fed by one TMA box per 64-column chunk of B.
//
// RUN: tawa-opt %S/../../../examples/matmul.mlir > %t.mlir
// RUN: tawa-opt %t.mlir | diff %t.mlir -
// RUN: tawa-opt %S/../../../examples/matmul.mlir --print-op-generic | tawa-opt | diff %t.mlir -
// RUN: tawa-opt %t.mlir -p tawa-hopper-pipeline -t ptx | filecheck %s

// CHECK:     .param .align 128 .b8 tmap1[128]
// The producer: one box for A, four for the four 64-column chunks of B.
// CHECK:     cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-COUNT-4: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK:     wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{.*}}, 1, 1, 0, 1;
