// RUN: tawa-opt %s -p tawa-hopper-pipeline -t ptx | filecheck %s
// A split-K GEMM that reduces in its last arriver (tawa.kernels.gemm_source, 64x64x64-split2):
// the partial is stored by the threads (st.global: the release orders their stores, not a
// TMA store's), then the arrival, and only the last arriver reads the partials
// (ld.global, not the non-coherent path), both partials before their sum, and stores C, by the
// threads too.

func.func @gemm_splitk(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %W: memref<?x?x?xf32>, %Counters: memref<?xi32>,
    %M: index, %N: index, %K: index) {
  // C = A · Bᵀ (64x64x64-split2): A is M×K of bf16, B is N×K of bf16,
  // C is M×N of bf16, W is 2×M×N of f32 (the partial sums by K-slice), Counters one i32 per tile of C, zero before the first launch; tawa.kernels.gemm_source, launch grid (⌈M/64⌉, ⌈N/64⌉, 2).
  %c0 = arith.constant 0 : index
  %block_k = arith.constant 64 : index
  %block_m = arith.constant 64 : index
  %block_n = arith.constant 64 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %s = tile.program_id 2
  %split_block_k = arith.constant 128 : index
  %split_round = arith.constant 127 : index
  %k_padded = arith.addi %K, %split_round : index
  %k_steps = arith.divui %k_padded, %split_block_k : index
  %k_slice = arith.muli %k_steps, %block_k : index
  %k_start = arith.muli %s, %k_slice : index
  %k_lo = arith.minui %k_start, %K : index
  %k_end = arith.addi %k_lo, %k_slice : index
  %k_hi = arith.minui %k_end, %K : index
  %m0 = arith.muli %pid_m, %block_m : index
  %n0 = arith.muli %pid_n, %block_n : index
  %zero = tile.zeros : tensor<64x64xf32>
  %acc = scf.for %k = %k_lo to %k_hi step %block_k iter_args(%acc_i = %zero) -> (tensor<64x64xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %bt = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %d = tile.dot %a, %bt, %acc_i {rhs_transposed} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.store %acc, %W[%s, %m0, %n0] : tensor<64x64xf32>, memref<?x?x?xf32>
  %tiles_n = tile.num_programs 1
  %tile_row = arith.muli %pid_m, %tiles_n : index
  %tile = arith.addi %tile_row, %pid_n : index
  %arrivals = arith.constant 2 : index
  %last = tile.counter_arrive %Counters[%tile] count %arrivals : memref<?xi32>
  scf.if %last {
    %slice0 = arith.constant 0 : index
    %slice1 = arith.constant 1 : index
    %chunk = arith.constant 64 : index
    scf.for %j = %c0 to %block_n step %chunk {
      %n1 = arith.addi %n0, %j : index
      %partial0 = tile.load %W[%slice0, %m0, %n1] : memref<?x?x?xf32> -> tensor<64x64xf32>
      %partial1 = tile.load %W[%slice1, %m0, %n1] : memref<?x?x?xf32> -> tensor<64x64xf32>
      %sum = arith.addf %partial0, %partial1 : tensor<64x64xf32>
      %c = arith.truncf %sum : tensor<64x64xf32> to tensor<64x64xbf16>
      tile.store %c, %C[%m0, %n1] : tensor<64x64xbf16>, memref<?x?xbf16>
    }
  }
  func.return
}
// CHECK:     wgmma.mma_async
// CHECK-NOT: cp.async.bulk.tensor.{{[0-9]}}d.global.shared
// CHECK:     st.global.v2.f32
// CHECK:     fence.acq_rel.gpu;
// CHECK-NEXT: bar.sync 1, 128;
// CHECK:     atom.acq_rel.gpu.global.inc.u32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], %r{{[0-9]+}};
// CHECK:     bar.red.or.pred %p[[LAST:[0-9]+]], 1, 128,
// CHECK-NEXT: fence.acq_rel.gpu;
// CHECK-NEXT: @!%p[[LAST]] bra
// CHECK-NOT: ld.global.nc
// CHECK:     ld.global.v2.f32
// CHECK-NOT: add.f32
// CHECK:     @!%p{{[0-9]+}} bra
// CHECK-NOT: add.f32
// CHECK:     ld.global.v2.f32
// CHECK:     add.f32 %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}};
// CHECK-NOT: cp.async.bulk.tensor.{{[0-9]}}d.global.shared
// CHECK:     st.global.b32
