// RUN: tawa-opt %s -p 'tawa-hopper-pipeline{prepare=false persistent=false}' | filecheck %s
// RUN: tawa-opt %s -p tawa-hopper-pipeline -t ptx | filecheck %s --check-prefix=PTX

// tile.load_scalar through the Hopper pipeline (tawa/transforms/lower/scalar_loads.py): in each
// partition that reads it, the element's address from the memref's base and dimensions and a
// predicate that every offset is inside; the producer's entries place its TMA loads (guarded:
// tawa/transforms/partition/loaded_offsets.py), the consumers' row block their store.
// examples/python/grouped_gemm.py at BLOCK_M = 64.

func.func @grouped_gemm(%A: memref<?x?xbf16>, %W: memref<?x?x?xbf16>, %Tiles: memref<?x?xi32>, %C: memref<?x?xbf16>, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %p = tile.program_id 0
  %pid_n = tile.program_id 1
  %0 = tile.load_scalar %Tiles[%p, %c0] : memref<?x?xi32> -> i32
  %1 = arith.index_cast %0 : i32 to index
  %m0 = arith.muli %1, %c64 : index
  %2 = tile.load_scalar %Tiles[%p, %c1] : memref<?x?xi32> -> i32
  %expert = arith.index_cast %2 : i32 to index
  %n0 = arith.muli %pid_n, %c128 : index
  %acc = tile.zeros : tensor<64x128xf32>
  %acc_1 = scf.for %k = %c0 to %K step %c64 iter_args(%acc_2 = %acc) -> (tensor<64x128xf32>) {
    %a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %w = tile.load %W[%expert, %n0, %k] : memref<?x?x?xbf16> -> tensor<128x64xbf16>
    %acc_3 = tile.dot %a, %w, %acc_2 {rhs_transposed} : tensor<64x64xbf16>, tensor<128x64xbf16> -> tensor<64x128xf32>
    scf.yield %acc_3 : tensor<64x128xf32>
  }
  %3 = arith.truncf %acc_1 : tensor<64x128xf32> to tensor<64x128xbf16>
  tile.store %3, %C[%m0, %n0] : tensor<64x128xbf16>, memref<?x?xbf16>
  func.return
}

// CHECK:      nvgpu.setmaxnreg dec 40
// CHECK:        %[[R0:.*]] = memref.dim %Tiles, %{{.*}} : memref<?x?xi32>
// CHECK:        %[[R1:.*]] = memref.dim %Tiles, %{{.*}} : memref<?x?xi32>
// CHECK-NEXT:   %[[IN0:.*]] = arith.cmpi ult, %pid_x, %[[R0]] : index
// CHECK:        %[[IN1:.*]] = arith.cmpi ult, %c0, %[[R1]] : index
// CHECK-NEXT:   %[[IN:.*]] = arith.andi %[[IN0]], %[[IN1]] : i1
// The element's offset: column + row · the rows' stride (a kernel parameter).
// CHECK-NEXT:   %[[STRIDE:.*]] = nvgpu.memref_stride %Tiles, 0 : memref<?x?xi32>
// CHECK-NEXT:   %[[ROWOFF:.*]] = arith.muli %pid_x, %[[STRIDE]] : index
// CHECK-NEXT:   %{{.*}} = arith.addi %c0, %[[ROWOFF]] : index
// CHECK:        %[[BASE:.*]] = nvgpu.memref_base %Tiles : memref<?x?xi32>
// CHECK:        %[[ADDR:.*]] = arith.addi %[[BASE]], %{{.*}} : index
// CHECK-NEXT:   %{{.*}} = nvgpu.load_global_scalar %[[ADDR]], %[[IN]] : i32
// CHECK:        nvgpu.load_global_scalar
// CHECK:        nvgpu.tma_load %tmap_A[%m0_guarded, %k]
// CHECK-NEXT:   nvgpu.tma_load %tmap_W[%expert_guarded, %n0_guarded, %k]
// CHECK:      nvgpu.setmaxnreg inc 256
// CHECK:        nvgpu.load_global_scalar
// CHECK-NOT:    nvgpu.load_global_scalar
// CHECK:        func.return

// PTX:         .param .u64 arg2_Tiles_stride0,
// PTX-COUNT-3: @%p{{[0-9]+}} ld.global.b32 %r{{[0-9]+}}, [%rd{{[0-9]+}}];
// PTX-NOT:     ld.global.b32
