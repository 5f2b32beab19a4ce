// Consumer-side operands: tiles that feed no dot stay with the consumer warp
// groups, which load them in the layout their use gives (docs/passes.md,
// "Consumer-side operands").
//
// RUN: tawa-opt %S/../../../../examples/gemm_bias_gelu.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile' | filecheck %s --check-prefix=BIAS
// RUN: tawa-opt %S/../../../../examples/gemm_alpha_beta.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile' | filecheck %s --check-prefix=BETA
// RUN: tawa-opt %S/../../../../examples/gemm_fp8_scaled.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile' | filecheck %s --check-prefix=SCALES
// RUN: not tawa-opt %s -p tawa-hopper-pipeline 2>&1 | filecheck %s --check-prefix=BAD

// A bias along the columns: one value per column the thread holds (16-bit,
// packed in pairs), widened where it is used, repeated over the rows in the
// same threads; no TMA, no aref for it.
// BIAS-NOT:     tma_load %tmap_Bias
// BIAS:         %bias = nvgpu.frag_load %Bias[%{{.*}}] : memref<?xbf16> -> !nvgpu.frag<256xbf16, wgmma_col>
// BIAS-NEXT:    %bias_f = nvgpu.frag_convert %bias : !nvgpu.frag<256xbf16, wgmma_col> -> !nvgpu.frag<256xf32, wgmma_col>
// BIAS-NEXT:    %bias_t = nvgpu.frag_broadcast %bias_f : !nvgpu.frag<256xf32, wgmma_col> -> !nvgpu.frag<64x256xf32, wgmma>
// BIAS:         nvgpu.frag_binary addf %{{.*}}, %bias_t
// BIAS:         nvgpu.frag_unary tanh
// BIAS:         nvgpu.frag_store %y

// The old C tile: this warp group's 64 rows, in the accumulator layout, so
// each thread reads exactly the elements it writes afterwards.
// BETA:         %[[ROWS:.*]] = arith.addi %m0_1, %wg_row0 : index
// BETA-NEXT:    %c_old = nvgpu.frag_load %C[%[[ROWS]], %n0_1] : memref<?x?xbf16> -> !nvgpu.frag<64x256xbf16, wgmma>
// BETA-NEXT:    %c_old_f = nvgpu.frag_convert %c_old : !nvgpu.frag<64x256xbf16, wgmma> -> !nvgpu.frag<64x256xf32, wgmma>
// BETA:         %bc = nvgpu.frag_binary mulf %c_old_f, %beta
// BETA:         nvgpu.frag_store %sum, %C

// Scales of rows (this warp group's 64) and of columns.
// SCALES:       %[[ROWS:.*]] = arith.addi %m0_1, %wg_row0 : index
// SCALES-NEXT:  %sa = nvgpu.frag_load %ScaleA[%[[ROWS]]] : memref<?xf32> -> !nvgpu.frag<64xf32, wgmma_row>
// SCALES-NEXT:  %sb = nvgpu.frag_load %ScaleB[%n0_1] : memref<?xf32> -> !nvgpu.frag<256xf32, wgmma_col>
// SCALES-NEXT:  %sa_t = nvgpu.frag_broadcast %sa : !nvgpu.frag<64xf32, wgmma_row> -> !nvgpu.frag<64x256xf32, wgmma>
// SCALES-NEXT:  %sb_t = nvgpu.frag_broadcast %sb : !nvgpu.frag<256xf32, wgmma_col> -> !nvgpu.frag<64x256xf32, wgmma>

// A loaded vector must be broadcast against an accumulator: alone it has no
// layout (which threads would hold it?).
func.func @unbroadcast(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %V: memref<?xf32>, %C: memref<?xf32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%a_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %a_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %v = tile.load %V[%c0] : memref<?xf32> -> tensor<128xf32>
  tile.store %v, %C[%c0] : tensor<128xf32>, memref<?xf32>
  func.return
}
// BAD: lower_tile_consumer_operands.mlir:[[# @LINE - 4]]:3: error: tawa-lower-tile: a 1-D tile loaded by the consumers must be broadcast against an accumulator (tile.expand_dims + tile.broadcast) or combined with a row vector
