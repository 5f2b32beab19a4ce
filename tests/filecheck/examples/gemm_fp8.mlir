// The fp8 GEMM example parses and verifies, re-prints identically, round-trips
// through the generic form, and compiles to k32 e4m3 wgmmas.
//
// RUN: tawa-opt %S/../../../examples/gemm_fp8.mlir > %t.mlir
// RUN: tawa-opt %t.mlir | diff %t.mlir -
// RUN: tawa-opt %S/../../../examples/gemm_fp8.mlir --print-op-generic | tawa-opt | diff %t.mlir -
// RUN: filecheck %s --input-file %t.mlir
// RUN: tawa-opt %t.mlir -p tawa-hopper-pipeline -t ptx | filecheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @gemm_fp8(%A: memref<?x?xf8E4M3FN>, %B: memref<?x?xf8E4M3FN>, %C: memref<?x?xbf16>, %M: index, %N: index, %K: index) {
// CHECK:         %a = tile.load %A[%m0, %k] : memref<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
// CHECK-NEXT:    %b = tile.load %B[%n0, %k] : memref<?x?xf8E4M3FN> -> tensor<256x128xf8E4M3FN>
// CHECK-NEXT:    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x128xf8E4M3FN>, tensor<256x128xf8E4M3FN> -> tensor<128x256xf32>
// CHECK:         tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>

// PTX: mbarrier.arrive.expect_tx.shared::cta.b64 _, [%{{.*}}], 49152;
// PTX: wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3
// PTX: cvt.rn.bf16x2.f32
