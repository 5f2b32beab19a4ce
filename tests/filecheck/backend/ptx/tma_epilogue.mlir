// RUN: tawa-opt %s -t ptx | filecheck %s
// The TMA-store epilogue's ops in PTX: each vector of a fragment is one st.shared at
// the address of its element in the swizzled staging tile (the dual of
// frag_load_shared), then the fence, the barrier, the TMA store of each span-wide
// column chunk with one commit, and the wait before reuse.

func.func @epilogue(%C: memref<?x?xbf16>, %D: memref<?x?xf32>, %i: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 33792>} {
  %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x128xbf16, swizzle = 128>
  %s32 = nvgpu.smem_alloc offset(16384) : !nvgpu.smem<1x64x16xf32, swizzle = 64>
  %tmap = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  %v = nvgpu.frag_zeros : !nvgpu.frag<64x128xbf16, wgmma>
  %f = nvgpu.frag_zeros : !nvgpu.frag<64x16xf32, wgmma>
  // CHECK: cp.async.bulk.wait_group.read 0;
  nvgpu.tma_store_wait 0
  // CHECK-NEXT: bar.sync 1, 128;
  nvgpu.named_barrier_sync 1, 128
  // 64 bf16 values per thread, packed in pairs: 32 stores of 32 bits.  The thread's first
  // element: tb = base + row * 128 + col * 2; the 128B swizzle XORs 16-byte unit u of a
  // row with row % 8 (bits 7-9 of tb), the same for all of the thread's rows (0, 8: a
  // swizzle period apart), so one register per unit and the row (1024 bytes per 8 rows)
  // and column chunk (8192 bytes) are immediates (tawa/backend/ptx/emit_shared.py,
  // swizzle_plan; tests/backend/test_swizzle_plan.py checks every address).
  // CHECK:      mad.lo.u32 %r[[TB:[0-9]+]], %r{{[0-9]+}}, 128, %r{{[0-9]+}};
  // CHECK-NEXT: mad.lo.u32 %r[[TB]], %r{{[0-9]+}}, 2, %r[[TB]];
  // CHECK-NEXT: shr.u32 %r[[SW:[0-9]+]], %r[[TB]], 7;
  // CHECK-NEXT: and.b32 %r[[SW]], %r[[SW]], 7;
  // CHECK-NEXT: shl.b32 %r[[SW]], %r[[SW]], 4;
  // CHECK-NEXT: xor.b32 %r[[U0:[0-9]+]], %r[[SW]], 0;
  // CHECK-NEXT: add.u32 %r[[U0]], %r[[TB]], %r[[U0]];
  // CHECK:      xor.b32 %r[[U7:[0-9]+]], %r[[SW]], 112;
  // CHECK-NEXT: add.u32 %r[[U7]], %r[[TB]], %r[[U7]];
  // CHECK-NEXT: st.shared.b32 [%r[[U0]]], %r{{[0-9]+}};
  // CHECK-NEXT: st.shared.b32 [%r[[U0]]+1024], %r{{[0-9]+}};
  // CHECK-COUNT-14: st.shared.b32 [%r{{[0-9]+}}{{(\+1024)?}}], %r{{[0-9]+}};
  // CHECK-NEXT: st.shared.b32 [%r[[U0]]+8192], %r{{[0-9]+}};
  // CHECK-NEXT: st.shared.b32 [%r[[U0]]+9216], %r{{[0-9]+}};
  // CHECK-COUNT-14: st.shared.b32
  nvgpu.frag_store_shared %v, %staging[%i, %i] : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.smem<1x64x128xbf16, swizzle = 128>
  // f32 (64B swizzle): a thread's 8 columns span two 16-byte units; its own unit bits
  // (4-5 of tb) join the swizzle term (bits 7-8 of tb, moved to 4-5) and are cleared in tb.
  // CHECK:      and.b32 %r[[SW2:[0-9]+]], %r[[SW2]], 3;
  // CHECK-NEXT: shl.b32 %r[[SW2]], %r[[SW2]], 4;
  // CHECK-NEXT: and.b32 %r[[OWN:[0-9]+]], %r[[TB2:[0-9]+]], 48;
  // CHECK-NEXT: xor.b32 %r[[SW2]], %r[[SW2]], %r[[OWN]];
  // CHECK-NEXT: and.b32 %r[[TB2]], %r[[TB2]], 0xFFFFFFCF;
  // CHECK:      st.shared.v2.f32 [%r{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  // CHECK-NEXT: st.shared.v2.f32 [%r{{[0-9]+}}+512], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  // CHECK-NEXT: st.shared.v2.f32 [%r{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  // CHECK-NEXT: st.shared.v2.f32 [%r{{[0-9]+}}+512], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  nvgpu.frag_store_shared %f, %s32[%i, %i] : !nvgpu.frag<64x16xf32, wgmma>, !nvgpu.smem<1x64x16xf32, swizzle = 64>
  // CHECK:      fence.proxy.async.shared::cta;
  nvgpu.fence_proxy_async
  // CHECK-NEXT: bar.sync 1, 128;
  nvgpu.named_barrier_sync 1, 128
  // Two chunks of 64 columns: two boxes, then one bulk group.
  // CHECK:      cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
  // CHECK:      cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
  // CHECK-NEXT: cp.async.bulk.commit_group;
  nvgpu.tma_store %staging[%i], %tmap[%i, %i] : !nvgpu.smem<1x64x128xbf16, swizzle = 128>, !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  func.return
}

// The subtiled staging: a 64-column chunk of the fragment (a view: its registers, no
// moves) into buffer 1 of two 64x64 buffers, one 64x64 box; the wait before the next
// chunk leaves the newest store pending.
// CHECK-LABEL: .visible .entry subtile(
func.func @subtile(%C: memref<?x?xbf16>, %i: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 17408>} {
  %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %tmap = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
  %c1 = arith.constant 1 : index
  %v = nvgpu.frag_zeros : !nvgpu.frag<64x128xbf16, wgmma>
  %v1 = nvgpu.wgmma_k_slice %v[1] : !nvgpu.frag<64x128xbf16, wgmma> -> !nvgpu.frag<64x64xbf16, wgmma>
  // CHECK:      cp.async.bulk.wait_group.read 1;
  nvgpu.tma_store_wait 1
  // 32 packed values of the chunk: 16 stores of 32 bits, no register moves before them.
  // CHECK-NOT:  mov.b32
  // CHECK-COUNT-16: st.shared.b32
  // CHECK-NOT:  st.shared
  nvgpu.frag_store_shared %v1, %staging[%c1, %i] : !nvgpu.frag<64x64xbf16, wgmma>, !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  // CHECK:      fence.proxy.async.shared::cta;
  nvgpu.fence_proxy_async
  // One box, one bulk group.
  // CHECK:      cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
  // CHECK-NEXT: cp.async.bulk.commit_group;
  // CHECK-NOT:  cp.async.bulk.tensor
  nvgpu.tma_store %staging[%c1], %tmap[%i, %i] : !nvgpu.smem<2x64x64xbf16, swizzle = 128>, !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
  func.return
}
