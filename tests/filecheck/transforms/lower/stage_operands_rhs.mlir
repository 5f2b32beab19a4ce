// RUN: tawa-opt %s -p tawa-stage-operands | filecheck %s
// RUN: tawa-opt %s -p tawa-stage-stores | filecheck %s --check-prefix=STAGED
// RUN: tawa-opt %s -p 'tawa-stage-stores,tawa-stage-operands,tawa-lower-tile' | filecheck %s --check-prefix=LOWERED
// RUN: tawa-opt %s -p 'tawa-stage-stores,tawa-stage-operands,tawa-lower-tile,tawa-drain-stores,tawa-materialize-partitions,tawa-expand-fragment-stores,tawa-prepare-ptx' -t ptx | filecheck %s --check-prefix=PTX

// A dot whose rhs is a bf16 K×N tile computed in registers, its K rows the two
// consumer warp groups' (attention backward's dSᵀ in dQᵀ = Kᵀ·dSᵀ, 128 keys): wgmma
// reads B from shared memory only, and each warp group's product needs all K rows, so
// tawa-stage-operands gives the whole tile a buffer (1 x K x N) and the dot its staged
// rhs; tawa-lower-tile has each warp group write its rows there between two barriers
// over all the consumer threads (named barrier 1, 256: before, the other warp group has
// read the previous instance; after, every row is written) and reads the whole tile as
// a K×N slot (one buffer: no ring slot in the dot's block alternates). The f32 product is added into O by the TMA-store epilogue's stores,
// which add (cp.reduce.async.bulk.tensor ... .add), in a loop of the program: the
// full tile, one store per warp group (its own rows).
func.func @dqt_share(%O: memref<?x?xf32>, %n: index) {
  %ring = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x128xbf16, swizzle = 128>
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %k = nvgpu.smem_tile %ring[%c0] : !nvgpu.smem<2x128x128xbf16, swizzle = 128> -> tensor<128x128xbf16>
    %q = nvgpu.smem_tile %ring[%c1] : !nvgpu.smem<2x128x128xbf16, swizzle = 128> -> tensor<128x128xbf16>
    scf.for %m0 = %c0 to %n step %c64 {
      %zero = tile.zeros : tensor<128x128xf32>
      %st = tile.dot %k, %q, %zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
      %ds16 = arith.truncf %st : tensor<128x128xf32> to tensor<128x128xbf16>
      %zero_q = tile.zeros : tensor<128x128xf32>
      %dqt = tile.dot %k, %ds16, %zero_q {lhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
      tile.atomic_add %dqt, %O[%c0, %m0] : tensor<128x128xf32>, memref<?x?xf32>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @dqt_share
// CHECK:         %operand = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<1x128x128xbf16, swizzle = 128>
// CHECK:         %ds16 = arith.truncf %st
// CHECK-NEXT:    %zero_q = tile.zeros
// CHECK-NEXT:    %ds16_staged = nvgpu.staged_operand %ds16 via %operand : tensor<128x128xbf16>, !nvgpu.smem<1x128x128xbf16, swizzle = 128>
// CHECK-NEXT:    %dqt = tile.dot %k, %ds16_staged, %zero_q {lhs_transposed}

// STAGED-LABEL: func.func @dqt_share
// STAGED:         %staging = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<2x64x128xf32, swizzle = 128>
// STAGED:         nvgpu.staged_store %dqt, %O[%c0, %m0] via %staging, %tmap_O add : tensor<128x128xf32>, memref<?x?xf32>, !nvgpu.smem<2x64x128xf32, swizzle = 128>, !nvgpu.tma_desc<64x128xf32, swizzle = 128>

// LOWERED-LABEL: func.func @dqt_share
// LOWERED:         %staging = nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.smem<2x64x128xf32, swizzle = 128>
// LOWERED:         scf.for
// LOWERED:           %[[DS:[0-9a-z_]+]] = nvgpu.frag_convert %{{.*}} : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>
// LOWERED-NEXT:      %[[Z:[0-9a-z_]+]] = arith.constant 0 : index
// LOWERED-NEXT:      nvgpu.named_barrier_sync 1, 256
// LOWERED-NEXT:      nvgpu.frag_store_shared %[[DS]], %operand[%[[Z]], %wg_row0]
// LOWERED-NEXT:      nvgpu.fence_proxy_async
// LOWERED-NEXT:      nvgpu.named_barrier_sync 1, 256
// LOWERED-NEXT:      %[[DB:[0-9a-z_]+]] = nvgpu.wgmma_descriptor %operand[%[[Z]], %[[Z]]] : !nvgpu.smem<1x128x128xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<128x128xbf16, swizzle = 128>
// LOWERED:           nvgpu.wgmma %{{.*}}, %[[DB]], %{{.*}} {lhs_transposed}
// LOWERED:           nvgpu.tma_store %staging[%wg_index], %tmap_O[%my_row, %m0] add :
// LOWERED-NOT:     nvgpu.staged_operand
// LOWERED-NOT:     nvgpu.frag_atomic_add

// With a slot of a 2-deep ring read in the dot's block (attention backward's Q), consecutive
// instances read slots of alternating parity: two buffers alternate by that parity, and the
// barrier before the writes goes (the other warp group read this buffer two instances ago,
// before it reached the previous instance's barrier).
func.func @dqt_share_alternating(%O: memref<?x?xf32>, %n: index) {
  %kring = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x128xbf16, swizzle = 128>
  %qring = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<2x128x128xbf16, swizzle = 128>
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %k = nvgpu.smem_tile %kring[%c0] : !nvgpu.smem<1x128x128xbf16, swizzle = 128> -> tensor<128x128xbf16>
    scf.for %m0 = %c0 to %n step %c64 {
      %s = arith.remui %m0, %c2 : index
      %q = nvgpu.smem_tile %qring[%s] : !nvgpu.smem<2x128x128xbf16, swizzle = 128> -> tensor<128x128xbf16>
      %zero = tile.zeros : tensor<128x128xf32>
      %st = tile.dot %k, %q, %zero {rhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
      %ds16 = arith.truncf %st : tensor<128x128xf32> to tensor<128x128xbf16>
      %zero_q = tile.zeros : tensor<128x128xf32>
      %dqt = tile.dot %k, %ds16, %zero_q {lhs_transposed} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
      tile.atomic_add %dqt, %O[%c0, %m0] : tensor<128x128xf32>, memref<?x?xf32>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @dqt_share_alternating
// CHECK:         %operand = nvgpu.smem_alloc offset(98304) : !nvgpu.smem<2x128x128xbf16, swizzle = 128>

// LOWERED-LABEL: func.func @dqt_share_alternating
// LOWERED:           %[[DS:[0-9a-z_]+]] = nvgpu.frag_convert %{{.*}} : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>
// LOWERED-NEXT:      %[[Z:[0-9a-z_]+]] = arith.constant 0 : index
// LOWERED-NEXT:      nvgpu.frag_store_shared %[[DS]], %operand[%s, %wg_row0]
// LOWERED-NEXT:      nvgpu.fence_proxy_async
// LOWERED-NEXT:      nvgpu.named_barrier_sync 1, 256
// LOWERED-NEXT:      %{{.*}} = nvgpu.wgmma_descriptor %operand[%s, %[[Z]]] : !nvgpu.smem<2x128x128xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<128x128xbf16, swizzle = 128>

// PTX-LABEL: .visible .entry dqt_share(
// PTX:       bar.sync 1, 256;
// PTX:       wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX:       cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group
// PTX-NOT:   red.relaxed.gpu.global.add.f32
