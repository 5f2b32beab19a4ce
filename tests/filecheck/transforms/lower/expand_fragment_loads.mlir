// RUN: tawa-opt %s -p tawa-expand-fragment-stores | filecheck %s

// A column vector (bf16, pairs of adjacent columns): the thread's first
// column, its address; the fast path needs the address and the pitch to be
// multiples of a vector's 4 bytes and the thread's last column (+249) inside;
// the edge path masks each value by its column < dim − offset.
// CHECK-LABEL: func.func @load_col
// CHECK:         %[[LANE:.*]] = nvgpu.lane_id
// CHECK:         %[[Q:.*]] = arith.remui %[[LANE]], %{{.*}} : index
// CHECK-NEXT:    %{{.*}} = arith.constant 2 : index
// CHECK-NEXT:    %[[TCOL:.*]] = arith.muli %[[Q]], %{{.*}} : index
// CHECK-NEXT:    %[[COL:.*]] = arith.addi %n, %[[TCOL]] : index
// CHECK-NEXT:    %{{.*}} = arith.constant 0 : index
// CHECK-NEXT:    %[[DIM:.*]] = memref.dim %Bias, %{{.*}} : memref<?xbf16>
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[BASE:.*]] = nvgpu.memref_base %Bias : memref<?xbf16>
// CHECK-NEXT:    %[[OFF:.*]] = arith.muli %[[COL]], %[[TWO]] : index
// CHECK-NEXT:    %[[ADDR:.*]] = arith.addi %[[BASE]], %[[OFF]] : index
// CHECK-NEXT:    %[[PITCH:.*]] = arith.muli %[[DIM]], %[[TWO]] : index
// CHECK-NEXT:    %[[BOTH:.*]] = arith.ori %[[ADDR]], %[[PITCH]] : index
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[LOW:.*]] = arith.andi %[[BOTH]], %[[C3]] : index
// CHECK:         %[[ALIGNED:.*]] = arith.cmpi eq, %[[LOW]], %{{.*}} : index
// CHECK-NEXT:    %[[C249:.*]] = arith.constant 249 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.addi %[[COL]], %[[C249]] : index
// CHECK-NEXT:    %[[IN:.*]] = arith.cmpi ult, %[[LAST]], %[[DIM]] : index
// CHECK-NEXT:    %[[FAST:.*]] = arith.andi %[[ALIGNED]], %[[IN]] : i1
// CHECK-NEXT:    %b = scf.if %[[FAST]] -> (!nvgpu.frag<256xbf16, wgmma_col>) {
// CHECK-NEXT:      %[[V:.*]] = nvgpu.frag_load_global %[[ADDR]], %[[PITCH]] : !nvgpu.frag<256xbf16, wgmma_col>
// CHECK-NEXT:      scf.yield %[[V]]
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[ROOM:.*]] = arith.subi %[[DIM]], %n : index
// CHECK-NEXT:      %[[ROOM32:.*]] = arith.index_cast %[[ROOM]] : index to i32
// CHECK-NEXT:      %[[I:.*]] = nvgpu.frag_index row : !nvgpu.frag<256xi32, wgmma_col>
// CHECK-NEXT:      %[[M:.*]] = nvgpu.frag_cmpi slt, %[[I]], %[[ROOM32]] : !nvgpu.frag<256xi32, wgmma_col>, i32
// CHECK-NEXT:      %[[E:.*]] = nvgpu.frag_load_global %[[ADDR]], %[[PITCH]] mask %[[M]] : !nvgpu.frag<256xbf16, wgmma_col>, !nvgpu.frag<256xi1, wgmma_col>
// CHECK-NEXT:      scf.yield %[[E]]
func.func @load_col(%Bias: memref<?xbf16>, %n: index) -> !nvgpu.frag<256xbf16, wgmma_col> {
  %b = nvgpu.frag_load %Bias[%n] : memref<?xbf16> -> !nvgpu.frag<256xbf16, wgmma_col>
  func.return %b : !nvgpu.frag<256xbf16, wgmma_col>
}

// A 64x128 f32 tile: vectors of 2 f32 (8 bytes); the last row (+8) and the
// last column (+121) inside; the edge mask checks both axes.
// CHECK-LABEL: func.func @load_tile
// CHECK:         %[[ROW:.*]] = arith.addi %m, %{{.*}} : index
// CHECK:         %[[COL:.*]] = arith.addi %n, %{{.*}} : index
// The rows are `memref_stride` elements apart (C may be a column slice):
// the address and the row pitch take the stride, not the columns.
// CHECK:         %[[STRIDE:.*]] = nvgpu.memref_stride %C, 0 : memref<?x?xf32>
// CHECK-NEXT:    %[[LIN0:.*]] = arith.muli %[[ROW]], %[[STRIDE]] : index
// CHECK-NEXT:    %[[LIN:.*]] = arith.addi %[[COL]], %[[LIN0]] : index
// CHECK-NEXT:    %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[BASE:.*]] = nvgpu.memref_base %C : memref<?x?xf32>
// CHECK-NEXT:    %[[OFF:.*]] = arith.muli %[[LIN]], %[[FOUR]] : index
// CHECK-NEXT:    arith.addi %[[BASE]], %[[OFF]] : index
// CHECK-NEXT:    arith.muli %[[STRIDE]], %[[FOUR]] : index
// CHECK:         %[[C7:.*]] = arith.constant 7 : index
// CHECK:         arith.constant 8 : index
// CHECK:         arith.cmpi ult
// CHECK:         arith.constant 121 : index
// CHECK:         arith.cmpi ult
// CHECK:         %c = scf.if
// CHECK-NEXT:      nvgpu.frag_load_global %{{.*}}, %{{.*}} : !nvgpu.frag<64x128xf32, wgmma>
// CHECK:         } else {
// CHECK:           nvgpu.frag_index row : !nvgpu.frag<64x128xi32, wgmma>
// CHECK:           nvgpu.frag_index col : !nvgpu.frag<64x128xi32, wgmma>
// CHECK:           %[[MASK:.*]] = nvgpu.frag_binary andi
// CHECK-NEXT:      nvgpu.frag_load_global %{{.*}}, %{{.*}} mask %[[MASK]] : !nvgpu.frag<64x128xf32, wgmma>, !nvgpu.frag<64x128xi1, wgmma>
func.func @load_tile(%C: memref<?x?xf32>, %m: index, %n: index) -> !nvgpu.frag<64x128xf32, wgmma> {
  %c = nvgpu.frag_load %C[%m, %n] : memref<?x?xf32> -> !nvgpu.frag<64x128xf32, wgmma>
  func.return %c : !nvgpu.frag<64x128xf32, wgmma>
}

// A blocked 16x1024 bf16 tile (vectors of 8 columns of one row, 16 bytes): the edge path
// branches on whole vectors, and each branch computes its own mask, so that the branch by
// whole vectors leaves every mask but one a vector dead (ptxas drops them) instead of
// sharing the per-element mask the element branch needs.
// CHECK-LABEL: func.func @load_rows
// CHECK:         scf.if
// CHECK-NEXT:      nvgpu.frag_load_global %{{[^ ]*}}, %{{[^ ]*}} : !nvgpu.frag<16x1024xbf16
// CHECK:         } else {
// CHECK-NEXT:      scf.if
// CHECK-NEXT:        arith.subi
// CHECK:             nvgpu.frag_index row
// CHECK:             nvgpu.frag_index col
// CHECK:             %[[VMASK:.*]] = nvgpu.frag_binary andi
// CHECK-NEXT:        nvgpu.frag_load_global %{{.*}} mask %[[VMASK]] {vector_mask}
// CHECK:           } else {
// CHECK-NEXT:        arith.subi
// CHECK:             nvgpu.frag_index row
// CHECK:             nvgpu.frag_index col
// CHECK:             %[[EMASK:.*]] = nvgpu.frag_binary andi
// CHECK-NEXT:        nvgpu.frag_load_global %{{.*}} mask %[[EMASK]] :
func.func @load_rows(%X: memref<?x?xbf16>, %m: index) -> !nvgpu.frag<16x1024xbf16, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>> {
  %c0 = arith.constant 0 : index
  %x = nvgpu.frag_load %X[%m, %c0] : memref<?x?xbf16> -> !nvgpu.frag<16x1024xbf16, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
  func.return %x : !nvgpu.frag<16x1024xbf16, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>
}
