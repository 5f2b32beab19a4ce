// RUN: tawa-opt %s -p 'tawa-warp-specialize{strict=true}' | filecheck %s

// A grouped GEMM driven by a table (examples/python/grouped_gemm.py, BLOCK_M = 64):
// each program reads its A row block and its expert from Tiles.  The loads that
// place the producer's TMA loads are replicated like index arithmetic: the producer
// reads both entries, the consumers only the row block their store needs.
// (tawa/transforms/partition/loaded_offsets.py: the guards.)

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

// CHECK:      aref.warp_specialize partition producer warps(4) regs(40) {
// CHECK:        %p = tile.program_id 0
// CHECK:        %[[ROW:.*]] = tile.load_scalar %Tiles[%p, %c0] : memref<?x?xi32> -> i32
// CHECK:        %[[E:.*]] = tile.load_scalar %Tiles[%p, %c1] : memref<?x?xi32> -> i32
// CHECK-NEXT:   %expert = arith.index_cast %[[E]] : i32 to index

// Offsets read from the table are guarded before the loop: outside the tensor, the box
// moves past its end (leading axes to 0, the tile's first axis to its dimension).
// CHECK:        %[[M:.*]] = memref.dim %A, %{{.*}} : memref<?x?xbf16>
// CHECK-NEXT:   %[[MOK:.*]] = arith.cmpi ult, %m0, %[[M]] : index
// CHECK-NEXT:   %m0_guarded = arith.select %[[MOK]], %m0, %[[M]] : index
// CHECK:        %[[E_DIM:.*]] = memref.dim %W, %{{.*}} : memref<?x?x?xbf16>
// CHECK-NEXT:   %[[EOK:.*]] = arith.cmpi ult, %expert, %[[E_DIM]] : index
// CHECK:        %expert_guarded = arith.select %[[EOK]], %expert, %{{.*}} : index
// CHECK:        %[[N:.*]] = memref.dim %W, %{{.*}} : memref<?x?x?xbf16>
// CHECK-NEXT:   %n0_guarded = arith.select %[[EOK]], %n0, %[[N]] : index
// CHECK-NEXT:   scf.for
// CHECK-NEXT:     %a = tile.load %A[%m0_guarded, %k]
// CHECK-NEXT:     %w = tile.load %W[%expert_guarded, %n0_guarded, %k]
// CHECK-NEXT:     aref.put
// CHECK:      } partition consumer warps(4) regs(256) {
// CHECK:        tile.load_scalar %Tiles[%p_1, %c0_1] : memref<?x?xi32> -> i32
// CHECK-NOT:    tile.load_scalar
// CHECK:        arith.cmpi ult, %m0_1
// CHECK-NEXT:   %m0_guarded_1 = arith.select
// CHECK:        tile.store %{{.*}}, %C[%m0_guarded_1, %n0_1]
