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
// Descriptors: swizzle 128B (bit 62), 1024-byte stride (64 << 32), and the
// leading offset = one column chunk: 128 rows x 128 B for A (ignored, K-major),
// 64 K-rows x 128 B = 8192 (512 << 16) for B, the distance between its chunks.
// CHECK:     or.b64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, 4611686293372403712;
// CHECK:     or.b64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, 4611686293338849280;
// CHECK:     wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{.*}}, 1, 1, 0, 1;
