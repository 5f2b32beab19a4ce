// RUN: tawa-opt %s -p tawa-stage-operands | filecheck %s
// RUN: tawa-opt %s -p 'tawa-stage-operands,tawa-lower-tile' | filecheck %s --check-prefix=LOWERED
// RUN: not tawa-opt %s -p tawa-lower-tile 2>&1 | filecheck %s --check-prefix=UNSTAGED

// tawa-stage-operands on its own (aref-lowered IR): an fp8 A operand computed
// in registers (P = truncf(S), as attention's P·V) gets a buffer of one 64x64
// tile per warp group, after the kernel's other shared memory, and the dot
// takes its lhs through an nvgpu.staged_operand that names it.  A slot (the
// Q·Kᵀ operands) needs none.
func.func @pv(%O: memref<?x?xf32>, %m0: index) {
  %ring = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xf8E4M3FN, swizzle = 64>
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %k = nvgpu.smem_tile %ring[%c0] : !nvgpu.smem<2x128x64xf8E4M3FN, swizzle = 64> -> tensor<128x64xf8E4M3FN>
    %zero = tile.zeros : tensor<128x128xf32>
    %s = tile.dot %k, %k, %zero {rhs_transposed} : tensor<128x64xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<128x128xf32>
    %zero_p = tile.zeros : tensor<128x64xf32>
    %p = arith.truncf %zero_p : tensor<128x64xf32> to tensor<128x64xf8E4M3FN>
    %o = tile.dot %p, %k, %s {rhs_transposed} : tensor<128x64xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<128x128xf32>
    tile.store %o, %O[%m0, %m0] : tensor<128x128xf32>, memref<?x?xf32>
  }
  func.return
}
// CHECK-LABEL: func.func @pv
// CHECK-SAME:    #nvgpu.kernel<smem = 25600>
// CHECK:         %operand = nvgpu.smem_alloc offset(16384) : !nvgpu.smem<2x64x64xf8E4M3FN, swizzle = 64>
// CHECK:         %s = tile.dot %k, %k, %zero {rhs_transposed}
// CHECK:         %p = arith.truncf %zero_p
// CHECK-NEXT:    %p_staged = nvgpu.staged_operand %p via %operand : tensor<128x64xf8E4M3FN>, !nvgpu.smem<2x64x64xf8E4M3FN, swizzle = 64>
// CHECK-NEXT:    %o = tile.dot %p_staged, %k, %s {rhs_transposed}

// tawa-lower-tile: each warp group writes its rows of P to its tile of the
// buffer, and the wgmma reads them through a descriptor.
// LOWERED-LABEL: func.func @pv
// LOWERED:         %[[P8:.*]] = nvgpu.frag_convert %{{.*}} : !nvgpu.frag<64x64xf32, wgmma> -> !nvgpu.frag<64x64xf8E4M3FN, wgmma>
// LOWERED:         nvgpu.frag_store_shared %[[P8]], %operand[%wg_index, %{{.*}}]
// LOWERED-NEXT:    nvgpu.fence_proxy_async
// LOWERED:         %[[DA:.*]] = nvgpu.wgmma_descriptor %operand[%wg_index, %{{.*}}] : !nvgpu.smem<2x64x64xf8E4M3FN, swizzle = 64> -> !nvgpu.wgmma_desc<64x64xf8E4M3FN, swizzle = 64>
// LOWERED:         nvgpu.wgmma %[[DA]],
// LOWERED-NOT:     nvgpu.staged_operand

// Without the buffer the lowering cannot give wgmma the operand.
// UNSTAGED: stage_operands.mlir:21:5: error: tawa-lower-tile: tile.dot lhs in registers must be bf16 or f16, got tensor<128x64xf8E4M3FN>: the wgmma register A layout is that of 16-bit types (fp8 and tf32 A operands come from shared memory)
