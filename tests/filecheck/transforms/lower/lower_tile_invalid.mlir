// RUN: not tawa-opt %s -p tawa-hopper-pipeline 2>&1 | filecheck %s

// A dot whose accumulator never becomes a fragment (here: exp2 of a splat, which
// no pattern lowers: not a zeros or splat initialised loop-carried value; the sum
// of two splats would fold to a splat) waits in vain for its pattern; after the
// walk it is reported at the dot, never dropped.
func.func @k(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %init = tile.splat %one : f32 -> tensor<128x128xf32>
  %twice = math.exp2 %init : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%a_i = %twice) -> (tensor<128x128xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %a, %b, %a_i {rhs_transposed} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %c = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x128xbf16>, memref<?x?xbf16>
  func.return
}
// CHECK: lower_tile_invalid.mlir:16:5: error: tawa-lower-tile: tile.dot_async accumulator must be a zeros-initialised (loop-carried) accumulator
