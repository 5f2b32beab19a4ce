// RUN: not tawa-opt %s -p tawa-hopper-pipeline 2>&1 | filecheck %s

// A mask read from memory (not built from index tiles) cannot be computed per
// register, and the consumers load only float tiles: a located one-line error
// at the load.
// CHECK: lower_tile_masks_invalid.mlir:18:3: error: tawa-lower-tile: the consumers load f32, bf16 or f16 tiles (fp8 too in a kernel without dots), got tensor<128x256xi32>
func.func @loaded_mask(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %Mk: memref<?x?xi32>, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = tile.load %B[%c0, %k] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.dot %a, %b, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %m = tile.load %Mk[%c0, %c0] : memref<?x?xi32> -> tensor<128x256xi32>
  %zeros_i = tile.zeros : tensor<128x256xi32>
  %mask = tile.cmpi ne, %m, %zeros_i : tensor<128x256xi32>
  %ninf_t = tile.splat %ninf : f32 -> tensor<128x256xf32>
  %s = tile.select %mask, %acc, %ninf_t : tensor<128x256xi1>, tensor<128x256xf32>
  %c = arith.truncf %s : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%c0, %c0] : tensor<128x256xbf16>, memref<?x?xbf16>
  func.return
}
