// RUN: tawa-opt %s -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s
// RUN: tawa-opt %s -p tawa-hopper-pipeline -t ptx | filecheck %s --check-prefix=PTX
// RUN: sed -e 's/%C: memref<?x?xbf16>,/%C: memref<?x?xf32>,/' -e 's/%ct = arith.truncf.*$//' -e 's/%c = tile.trans %ct : tensor<128x32xbf16> -> tensor<32x128xbf16>/%c = tile.trans %acc : tensor<128x32xf32> -> tensor<32x128xf32>/' -e 's/tensor<32x128xbf16>, memref<?x?xbf16>/tensor<32x128xf32>, memref<?x?xf32>/' %s | not tawa-opt -p tawa-hopper-pipeline 2>&1 | filecheck %s --check-prefix=F32
// RUN: sed -e 's/  %ct = arith.truncf %acc : tensor<128x32xf32> to tensor<128x32xbf16>/  %acc_t = tile.trans %acc : tensor<128x32xf32> -> tensor<32x128xf32>/' -e 's/  %c = tile.trans %ct : tensor<128x32xbf16> -> tensor<32x128xbf16>/  %c = arith.truncf %acc_t : tensor<32x128xf32> to tensor<32x128xbf16>/' %s | not tawa-opt -p tawa-hopper-pipeline 2>&1 | filecheck %s --check-prefix=ORDER

// C = A·Bᵀ computed as Cᵀ = B·Aᵀ (tawa.kernels.gemm_source of a transposed
// configuration): the 128x32 tile of Cᵀ, two consumer warp groups of 64 of its rows,
// stored transposed.  Each warp group converts its 64x32 accumulator to bf16, transposes
// it in registers (one movmatrix a packed register: nvgpu.frag_transpose, 32x64 in the
// wgmma_t layout) and its threads store it at its own 64 columns of C's 32x128 box, by
// pairs of columns.  No TMA store: the staging of a TMA store is laid out by rows.
// CHECK-LABEL: func.func @gemm_t
// CHECK:         %[[CONV:.*]] = nvgpu.frag_convert %{{.*}} : !nvgpu.frag<64x32xf32, wgmma> -> !nvgpu.frag<64x32xbf16, wgmma>
// CHECK-NEXT:    %[[T:.*]] = nvgpu.frag_transpose %[[CONV]] : !nvgpu.frag<64x32xbf16, wgmma> -> !nvgpu.frag<32x64xbf16, wgmma_t>
// CHECK-NEXT:    %[[COL:.*]] = arith.addi %n0{{.*}}, %wg_row0 : index
// CHECK:         nvgpu.frag_store_global %[[T]], %{{.*}}, %{{.*}} : !nvgpu.frag<32x64xbf16, wgmma_t>
// CHECK-NOT:     nvgpu.tma_store
// PTX-LABEL: .entry gemm_t
// PTX-COUNT-8:   movmatrix.sync.aligned.m8n8.trans.b16
// PTX:           st.global.b32
// PTX-NOT:       cp.async.bulk.tensor.2d.global.shared::cta
// An f32 tile is not transposed in registers (movmatrix moves 16-bit pairs).
// The transpose of the f32 accumulator, converted after it: the error is at the tile.trans.
// ORDER: {{^}}stdin:43:3: error: tawa-lower-tile: tile.trans is lowered as a dot's lhs (a transposed A) or as the stored value of a 16-bit accumulator tile (tile.store of tile.trans of arith.truncf of it), not here
// F32: error: tawa-lower-tile: a transposed tile (tile.trans) is stored from accumulators of warp groups of 64 rows into bf16 or f16 memory, got !nvgpu.frag<64x32xf32, wgmma> into memref<?x?xf32>
func.func @gemm_t(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>,
                  %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c32 = arith.constant 32 : index
  %pid_n = tile.program_id 0
  %pid_m = tile.program_id 1
  %n0 = arith.muli %pid_n, %c128 : index
  %m0 = arith.muli %pid_m, %c32 : index
  %zero = tile.zeros : tensor<128x32xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x32xf32>) {
    %b = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<32x64xbf16>
    %d = tile.dot %b, %a, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<32x64xbf16> -> tensor<128x32xf32>
    scf.yield %d : tensor<128x32xf32>
  }
  %ct = arith.truncf %acc : tensor<128x32xf32> to tensor<128x32xbf16>
  %c = tile.trans %ct : tensor<128x32xbf16> -> tensor<32x128xbf16>
  tile.store %c, %C[%m0, %n0] : tensor<32x128xbf16>, memref<?x?xbf16>
  func.return
}
