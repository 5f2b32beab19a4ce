// RUN: not tawa-opt %s -p tawa-stage-operands 2>&1 | filecheck %s

// An overlapped dot (tile.dot_async: its wait comes later) whose rhs is computed in
// registers: the staged buffer is written again at the dot's next instance, which could
// come before the wait, so it is one located error.
func.func @overlapped(%O: memref<?x?xf32>, %n: index) {
  %ring = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x128xbf16, swizzle = 128>
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %k = nvgpu.smem_tile %ring[%c0] : !nvgpu.smem<2x128x128xbf16, swizzle = 128> -> tensor<128x128xbf16>
    %zero = tile.zeros : tensor<128x128xf32>
    %st = tile.dot %k, %k, %zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    %ds16 = arith.truncf %st : tensor<128x128xf32> to tensor<128x128xbf16>
    %dqt = tile.dot_async %k, %ds16, %zero {lhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
    tile.store %dqt, %O[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  }
  func.return
}
// CHECK: stage_operands_rhs_invalid.mlir:16:5: error: tawa-stage-operands: tile.dot_async with an rhs computed in registers: its shared buffer is written again at the dot's next instance, so the dot must wait at once (tile.dot, not overlapped)
