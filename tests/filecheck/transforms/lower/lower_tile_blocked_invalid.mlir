// RUN: tawa-opt %s -p tawa-hopper-pipeline --split-input-file --verify-diagnostics 2>&1 | filecheck %s
// RUN: tawa-opt %s -p "tawa-hopper-pipeline{consumer-warps=8}" --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=SPLIT

// Kernels without dots that blocked layouts cannot lower: one located line each, at the op.

// A row vector reduced from a 16x1024 tile and broadcast against a 16x64 one: the two tiles'
// layouts spread rows differently (the 16x64 one over lanes too), so its values would have to
// move between threads.
// CHECK: lower_tile_blocked_invalid.mlir:[[# @LINE + 7]]:3: error: tawa-lower-tile: this op gives a tensor<16xf32> tile the register layout (8)(2)(1), warps = [-3, *1], lanes = [-2, *16], vector = -1 of a 16x64 tile, but 'tile.reduce' gave it (4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1: its values would have to move between threads; reduce and broadcast it against tiles of one shape
func.func @two_layouts(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x1024xf32>
  %z = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %s = tile.reduce sum %x, 1 : tensor<16x1024xf32> -> tensor<16xf32>
  %e = tile.expand_dims %s, 1 : tensor<16xf32> -> tensor<16x1xf32>
  %b = tile.broadcast %e : tensor<16x1xf32> -> tensor<16x64xf32>
  %y = arith.mulf %z, %b : tensor<16x64xf32>
  tile.store %y, %Y[%c0, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  func.return
}

// -----

// Column sums of a 2-row tile whose rows lie over the lanes of each warp (not over warps).
// CHECK: lower_tile_blocked_invalid.mlir:[[# @LINE + 4]]:3: error: tawa-lower-tile: a reduction along the rows of a 2-row tile whose rows lie within warps is not supported yet (only a reduction along the columns, or along rows that the layout spreads over warps): sum the rows of a taller tile
func.func @rows_in_warps(%X: memref<?x?xf32>, %S: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<2x64xf32>
  %s = tile.reduce sum %x, 0 : tensor<2x64xf32> -> tensor<64xf32>
  tile.store %s, %S[%c0, %c0] : tensor<64xf32>, memref<?x?xf32>
  func.return
}

// -----

// A vector loaded and stored alone: no 2-D tile gives it a layout.
// CHECK: lower_tile_blocked_invalid.mlir:[[# @LINE + 3]]:3: error: tawa-lower-tile: a tensor<256xf32> tile has no register layout: a 1-D tile of a kernel without dots must be reduced from a 2-D tile or broadcast against one (tile.expand_dims + tile.broadcast), directly or through elementwise math and loops
func.func @lone_vector(%V: memref<?xf32>, %W: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %v = tile.load %V[%c0] : memref<?xf32> -> tensor<256xf32>
  tile.store %v, %W[%c0] : tensor<256xf32>, memref<?xf32>
  func.return
}

// -----

// Column sums keep a 128-row tile in one warp group (by default it would take two); split
// over two by consumer-warps=8, the warp groups' partial sums would have to combine.
// SPLIT: lower_tile_blocked_invalid.mlir:[[# @LINE + 4]]:3: error: tawa-lower-tile: a reduction along the rows of a tile that 2 warp groups split is not supported (the values would move between warp groups): leave consumer-warps out (one warp group holds the whole tile)
func.func @split_column_sums(%X: memref<?x?xf32>, %S: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<128x64xf32>
  %s = tile.reduce sum %x, 0 : tensor<128x64xf32> -> tensor<64xf32>
  %e = tile.expand_dims %s, 0 : tensor<64xf32> -> tensor<1x64xf32>
  %b = tile.broadcast %e : tensor<1x64xf32> -> tensor<128x64xf32>
  %y = arith.subf %x, %b : tensor<128x64xf32>
  tile.store %y, %X[%c0, %c0] : tensor<128x64xf32>, memref<?x?xf32>
  func.return
}

// -----

// A row vector reduced again, to a scalar: refused at the second reduction.
// CHECK: lower_tile_blocked_invalid.mlir:[[# @LINE + 6]]:3: error: tawa-lower-tile: a reduction of a 1-D tile (64 values) to a scalar is not supported: reduce a 2-D tile along one axis (a 1xN tile along axis 1 gives a 1-value vector)
func.func @to_a_scalar(%X: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %p = tile.program_id 0
  %x = tile.load %X[%p, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %s = tile.reduce sum %x, 0 : tensor<16x64xf32> -> tensor<64xf32>
  %t = tile.reduce max %s, 0 : tensor<64xf32> -> tensor<f32>
  func.return
}

// -----

// Math on a bf16 tile: registers compute in f32, refused at the op (not in a lowered op's verifier).
// CHECK: lower_tile_blocked_invalid.mlir:[[# @LINE + 5]]:3: error: tawa-lower-tile: 'math.tanh' on a bf16 tile is not supported: tile math runs in f32 (convert the tile first: arith.extf, .to(tl.f32) in Python, and back to store it)
func.func @bf16_math(%X: memref<?x?xbf16>, %Y: memref<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %p = tile.program_id 0
  %x = tile.load %X[%p, %c0] : memref<?x?xbf16> -> tensor<16x64xbf16>
  %t = math.tanh %x : tensor<16x64xbf16>
  tile.store %t, %Y[%p, %c0] : tensor<16x64xbf16>, memref<?x?xbf16>
  func.return
}

// -----

// A product of two bf16 tiles, the same.
// CHECK: lower_tile_blocked_invalid.mlir:[[# @LINE + 5]]:3: error: tawa-lower-tile: 'arith.mulf' on a bf16 tile is not supported: tile math runs in f32 {{.*}}
func.func @bf16_product(%X: memref<?x?xbf16>, %Y: memref<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %p = tile.program_id 0
  %x = tile.load %X[%p, %c0] : memref<?x?xbf16> -> tensor<16x64xbf16>
  %t = arith.mulf %x, %x : tensor<16x64xbf16>
  tile.store %t, %Y[%p, %c0] : tensor<16x64xbf16>, memref<?x?xbf16>
  func.return
}

// -----

// A 3-D tile: the tiles of a kernel without dots are 2-D.
// CHECK: lower_tile_blocked_invalid.mlir:[[# @LINE + 3]]:3: error: tawa-lower-tile: a tensor<2x16x64xf32> tile has no register layout: the tiles of a kernel without dots are 2-D (rows and columns), with 1-D vectors reduced from them or broadcast against them; index the leading dimensions with program ids or a loop instead
func.func @three_d(%X: memref<?x?x?xf32>, %Y: memref<?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0, %c0] : memref<?x?x?xf32> -> tensor<2x16x64xf32>
  tile.store %x, %Y[%c0, %c0, %c0] : tensor<2x16x64xf32>, memref<?x?x?xf32>
  func.return
}
