// RUN: tawa-opt %s -p tawa-hopper-pipeline | filecheck %s --check-prefix=IR
// RUN: tawa-opt %s -p tawa-hopper-pipeline -t ptx | filecheck %s
// tile.counter_arrive with a count computed per tile at run time (the number of programs
// that share a tile, where it varies by tile): here tile t has min(t + 1, S) contributors, S = tile.num_programs 2.
// The count is an ordinary index computation: warp specialization computes it in the consumer
// partition, next to the counter's index, and the PTX takes count - 1 from its register.

func.func @partial_tiles(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %W: memref<?x?x?xf32>, %Counters: memref<?xi32>,
    %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %block_k = arith.constant 64 : index
  %block_m = arith.constant 64 : index
  %block_n = arith.constant 64 : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %s = tile.program_id 2
  %m0 = arith.muli %pid_m, %block_m : index
  %n0 = arith.muli %pid_n, %block_n : index
  %zero = tile.zeros : tensor<64x64xf32>
  %acc = scf.for %k = %c0 to %K step %block_k iter_args(%acc_i = %zero) -> (tensor<64x64xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %bt = tile.load %B[%n0, %k] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %d = tile.dot %a, %bt, %acc_i {rhs_transposed} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.store %acc, %W[%s, %m0, %n0] : tensor<64x64xf32>, memref<?x?x?xf32>
  %tiles_n = tile.num_programs 1
  %split = tile.num_programs 2
  %tile_row = arith.muli %pid_m, %tiles_n : index
  %tile = arith.addi %tile_row, %pid_n : index
  %upto = arith.addi %tile, %c1 : index
  %arrivals = arith.minui %upto, %split : index
  %last = tile.counter_arrive %Counters[%tile] count %arrivals : memref<?xi32>
  scf.if %last {
    %partial = tile.load %W[%c0, %m0, %n0] : memref<?x?x?xf32> -> tensor<64x64xf32>
    tile.store %partial, %W[%c1, %m0, %n0] : tensor<64x64xf32>, memref<?x?x?xf32>
  }
  func.return
}
// IR:      nvgpu.wgmma
// IR:      %tile = arith.addi
// IR:      %upto = arith.addi %tile, %{{.*}} : index
// IR-NEXT: %arrivals = arith.minui %upto, %{{.*}} : index
// IR:      %last = nvgpu.counter_arrive %counter, %{{.*}} count %arrivals barrier 1 threads 128

// CHECK:      min.u64 %rd[[ARRIVALS:[0-9]+]],
// CHECK:      cvt.u32.u64 %r[[COUNT:[0-9]+]], %rd[[ARRIVALS]];
// CHECK-NEXT: sub.u32 %r[[TOP:[0-9]+]], %r[[COUNT]], 1;
// CHECK-NEXT: fence.acq_rel.gpu;
// CHECK-NEXT: bar.sync 1, 128;
// CHECK-NEXT: mov.u32 %r[[OLD:[0-9]+]], 0;
// CHECK-NEXT: @%p[[LEADER:[0-9]+]] atom.acq_rel.gpu.global.inc.u32 %r[[OLD]], [%rd{{[0-9]+}}], %r[[TOP]];
// CHECK-NEXT: setp.eq.and.u32 %p[[MINE:[0-9]+]], %r[[OLD]], %r[[TOP]], %p[[LEADER]];
// CHECK-NEXT: bar.red.or.pred %p[[LAST:[0-9]+]], 1, 128, %p[[MINE]];
// CHECK-NEXT: fence.acq_rel.gpu;
// CHECK-NEXT: @!%p[[LAST]] bra
