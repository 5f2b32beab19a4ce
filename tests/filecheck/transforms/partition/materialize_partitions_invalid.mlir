// RUN: not tawa-opt %s -p tawa-materialize-partitions 2>&1 | filecheck %s

// Tile compute that tawa-lower-tile did not lower is reported, not dropped.
func.func @left() {
  aref.warp_specialize partition consumer warps(4) regs(168) {
    %z = tile.zeros : tensor<64x64xf32>
  }
  func.return
}
// CHECK: materialize_partitions_invalid.mlir:[[# @LINE - 4]]:5: error: tawa-materialize-partitions: 'tile.zeros' is not supported by the Hopper lowering yet
