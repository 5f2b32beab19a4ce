// RUN: tawa-opt %s -p 'tawa-hopper-pipeline{prepare=false epilogue=threads}' --split-input-file --verify-diagnostics 2>&1 | filecheck %s
// RUN: tawa-opt %s -p tawa-hopper-pipeline --split-input-file --verify-diagnostics -t ptx 2>&1 | filecheck %s --check-prefix=PTX

// A row vector of an accumulator (here its row max; attention's log-sum-exp) is stored by
// the warp group that holds its rows: the store's offset moves to the warp group's first
// row, as a 2-D accumulator's does, and each thread writes the rows it holds (the 4 lanes of
// a quad hold the same rows, and write the same values), in bounds or under the row mask.
// CHECK-LABEL: func.func @gemm_row_max
// CHECK:         %wg_row0 = arith.muli %wg_index, %{{.*}} : index
// CHECK:         %row_max = nvgpu.frag_reduce max %{{.*}} : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64xf32, wgmma_row>
// CHECK:         nvgpu.frag_store_global %{{.*}} mask %{{.*}} : !nvgpu.frag<64x128xbf16, wgmma>
// CHECK:         %[[ROW0:.*]] = arith.addi %m0{{.*}}, %wg_row0 : index
// CHECK:         nvgpu.memref_base %R : memref<?xf32>
// CHECK:         nvgpu.frag_store_global %row_max, %{{.*}}, %{{.*}} : !nvgpu.frag<64xf32, wgmma_row>
// CHECK:         %{{.*}} = arith.subi %{{.*}}, %[[ROW0]] : index
// CHECK:         %[[ROWS:.*]] = nvgpu.frag_index row : !nvgpu.frag<64xi32, wgmma_row>
// CHECK:         nvgpu.frag_store_global %row_max, %{{.*}}, %{{.*}} mask %{{.*}} : !nvgpu.frag<64xf32, wgmma_row>, !nvgpu.frag<64xi1, wgmma_row>
// PTX-LABEL: .entry gemm_row_max
// PTX:         st.global.f32
func.func @gemm_row_max(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %R: memref<?xf32>,
                        %M: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c128 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %row_max = tile.reduce max %acc, 1 : tensor<128x128xf32> -> tensor<128xf32>
  %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%m0, %c0] : tensor<128x128xbf16>, memref<?x?xbf16>
  tile.store %row_max, %R[%m0] : tensor<128xf32>, memref<?xf32>
  func.return
}

// -----

// A column vector (one value per column) is whole in every warp group, and in general each
// warp group's differ (a sum over its own rows would): no one store writes it.  A located error.
// CHECK: lower_tile_row_vector_store.mlir:[[# @LINE + 22]]:3: error: tawa-lower-tile: a 1-D tile stored by a kernel with dots must be a row vector of an accumulator (one value per row, as a row reduction gives), got !nvgpu.frag<128xf32, wgmma_col>
// PTX: lower_tile_row_vector_store.mlir:[[# @LINE + 21]]:3: error: tawa-lower-tile: a 1-D tile stored
func.func @gemm_column_store(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %Bias: memref<?xf32>, %C: memref<?x?xf32>,
                             %R: memref<?xf32>, %M: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c128 : index
  %zero = tile.zeros : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %bias = tile.load %Bias[%c0] : memref<?xf32> -> tensor<128xf32>
  %bias2 = arith.mulf %bias, %bias : tensor<128xf32>
  %row = tile.expand_dims %bias2, 0 : tensor<128xf32> -> tensor<1x128xf32>
  %bb = tile.broadcast %row : tensor<1x128xf32> -> tensor<128x128xf32>
  %c = arith.addf %acc, %bb : tensor<128x128xf32>
  tile.store %c, %C[%m0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  tile.store %bias2, %R[%c0] : tensor<128xf32>, memref<?xf32>
  func.return
}
