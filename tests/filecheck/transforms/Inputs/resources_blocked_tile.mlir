// A kernel without dots whose one tile is too large for a thread's registers (RMSNorm, 8 rows of 4096
// f32: 256 registers a thread for the tile alone), from examples/python/norms.py.
builtin.module {
  func.func @rmsnorm(%X: memref<?x?xbf16>, %W: memref<?xbf16>, %Y: memref<?x?xbf16>, %M: index, %N: index, %eps: f32) {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %0 = tile.program_id 0
    %m0 = arith.muli %0, %c8 : index
    %1 = tile.load %X[%m0, %c0] : memref<?x?xbf16> -> tensor<8x4096xbf16>
    %x = arith.extf %1 : tensor<8x4096xbf16> to tensor<8x4096xf32>
    %2 = arith.mulf %x, %x : tensor<8x4096xf32>
    %3 = tile.reduce sum %2, 1 : tensor<8x4096xf32> -> tensor<8xf32>
    %4 = arith.index_cast %N : index to i32
    %5 = arith.sitofp %4 : i32 to f32
    %6 = tile.splat %5 : f32 -> tensor<8xf32>
    %7 = arith.divf %3, %6 : tensor<8xf32>
    %8 = tile.splat %eps : f32 -> tensor<8xf32>
    %9 = arith.addf %7, %8 : tensor<8xf32>
    %inv = math.rsqrt %9 : tensor<8xf32>
    %10 = tile.load %W[%c0] : memref<?xbf16> -> tensor<4096xbf16>
    %w = arith.extf %10 : tensor<4096xbf16> to tensor<4096xf32>
    %11 = tile.expand_dims %inv, 1 : tensor<8xf32> -> tensor<8x1xf32>
    %12 = tile.broadcast %11 : tensor<8x1xf32> -> tensor<8x4096xf32>
    %13 = arith.mulf %x, %12 : tensor<8x4096xf32>
    %14 = tile.expand_dims %w, 0 : tensor<4096xf32> -> tensor<1x4096xf32>
    %15 = tile.broadcast %14 : tensor<1x4096xf32> -> tensor<8x4096xf32>
    %16 = arith.mulf %13, %15 : tensor<8x4096xf32>
    %17 = arith.truncf %16 : tensor<8x4096xf32> to tensor<8x4096xbf16>
    tile.store %17, %Y[%m0, %c0] : tensor<8x4096xbf16>, memref<?x?xbf16>
    func.return
  }
}
