// RUN: tawa-opt %s -p tawa-stage-operands | filecheck %s
// RUN: tawa-opt %s -p 'tawa-stage-operands,tawa-lower-tile' | filecheck %s --check-prefix=LOWERED

// A dot whose lhs is tile.trans of a bf16 K×M tile computed in registers
// (attention backward's dSᵀ, whose transpose times K is dQ's share): wgmma
// reads a transposed (MN-major) A only from shared memory, so
// tawa-stage-operands gives the K×M tile a buffer (as the fragment holds it)
// and the dot its trans of the staged tile; tawa-lower-tile stores the
// fragment there and the wgmma reads the tile's columns through a {columns}
// descriptor, lhs_transposed.
func.func @dq_share(%O: memref<?x?xf32>, %m0: index) {
  %ring = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(4) regs(240) {
    %c0 = arith.constant 0 : index
    %k = nvgpu.smem_tile %ring[%c0] : !nvgpu.smem<2x64x128xbf16, swizzle = 128> -> tensor<64x128xbf16>
    %zero = tile.zeros : tensor<64x64xf32>
    %dst = tile.dot %k, %k, %zero {rhs_transposed} : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<64x64xf32>
    %ds16 = arith.truncf %dst : tensor<64x64xf32> to tensor<64x64xbf16>
    %ds16_t = tile.trans %ds16 : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %zero_q = tile.zeros : tensor<64x128xf32>
    %dq = tile.dot %ds16_t, %k, %zero_q : tensor<64x64xbf16>, tensor<64x128xbf16> -> tensor<64x128xf32>
    tile.atomic_add %dq, %O[%m0, %c0] : tensor<64x128xf32>, memref<?x?xf32>
  }
  func.return
}
// CHECK-LABEL: func.func @dq_share
// CHECK:         %operand = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
// CHECK:         %ds16 = arith.truncf %dst
// CHECK-NOT:     %ds16_t = tile.trans
// CHECK:         %ds16_staged = nvgpu.staged_operand %ds16 via %operand : tensor<64x64xbf16>, !nvgpu.smem<1x64x64xbf16, swizzle = 128>
// CHECK-NEXT:    %[[T:[0-9]+]] = tile.trans %ds16_staged : tensor<64x64xbf16> -> tensor<64x64xbf16>
// CHECK-NEXT:    %dq = tile.dot %[[T]], %k, %zero_q :

// LOWERED-LABEL: func.func @dq_share
// LOWERED:         %[[DS:[0-9a-z_]+]] = nvgpu.frag_convert %{{.*}} : !nvgpu.frag<64x64xf32, wgmma> -> !nvgpu.frag<64x64xbf16, wgmma>
// LOWERED:         nvgpu.frag_store_shared %[[DS]], %operand[%{{.*}}, %{{.*}}]
// LOWERED-NEXT:    nvgpu.fence_proxy_async
// LOWERED-NEXT:    nvgpu.named_barrier_sync
// LOWERED-NEXT:    %[[DA:[0-9a-z_]+]] = nvgpu.wgmma_descriptor %operand[%{{.*}}, %{{.*}}] {columns} : !nvgpu.smem<1x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// LOWERED:         nvgpu.wgmma %[[DA]], %{{.*}} {lhs_transposed}
// LOWERED-NOT:     nvgpu.staged_operand
// LOWERED-NOT:     tile.trans
