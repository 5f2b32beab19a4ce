// RUN: not tawa-opt %s -p tawa-stage-operands 2>&1 | filecheck %s

// Two warp groups would each hold half of the K rows, and every output row needs all of them.
func.func @two_groups(%O: memref<?x?xf32>, %m0: index) {
  %ring = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x128xbf16, swizzle = 128>
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %k = nvgpu.smem_tile %ring[%c0] : !nvgpu.smem<2x128x128xbf16, swizzle = 128> -> tensor<128x128xbf16>
    %zero = tile.zeros : tensor<128x128xf32>
    %dst = tile.dot %k, %k, %zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    %ds16 = arith.truncf %dst : tensor<128x128xf32> to tensor<128x128xbf16>
    %ds16_t = tile.trans %ds16 : tensor<128x128xbf16> -> tensor<128x128xbf16>
    %dq = tile.dot %ds16_t, %k, %dst : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    tile.store %dq, %O[%m0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  }
  func.return
}
// CHECK: stage_operands_transposed_invalid.mlir:15:5: error: tawa-stage-operands: a transposed lhs computed in registers is read by wgmma from shared memory, all of its K rows by each warp group, but 2 warp groups hold them here: give the consumer one warp group (a 64-row tile)
