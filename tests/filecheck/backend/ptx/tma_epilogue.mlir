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
  // 64 bf16 values per thread, packed in pairs: 32 stores of 32 bits; the address of
  // each: column chunk (64 columns of 128 bytes), row, column, then the 128B swizzle
  // (bits 4-6 ^= bits 7-9).
  // CHECK:      shr.u32 %r[[T:[0-9]+]], %r[[COL:[0-9]+]], 6;
  // CHECK-NEXT: mad.lo.u32 %r[[A:[0-9]+]], %r[[T]], 8192, %r{{[0-9]+}};
  // CHECK-NEXT: mad.lo.u32 %r[[A]], %r{{[0-9]+}}, 128, %r[[A]];
  // CHECK-NEXT: and.b32 %r[[T]], %r[[COL]], 63;
  // CHECK-NEXT: mad.lo.u32 %r[[A]], %r[[T]], 2, %r[[A]];
  // CHECK-NEXT: shr.u32 %r[[T]], %r[[A]], 7;
  // CHECK-NEXT: and.b32 %r[[T]], %r[[T]], 7;
  // CHECK-NEXT: shl.b32 %r[[T]], %r[[T]], 4;
  // CHECK-NEXT: xor.b32 %r[[A]], %r[[A]], %r[[T]];
  // CHECK-NEXT: st.shared.b32 [%r[[A]]], %r{{[0-9]+}};
  // CHECK-COUNT-31: st.shared.b32
  nvgpu.frag_store_shared %v, %staging[%i, %i] : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.smem<1x64x128xbf16, swizzle = 128>
  // f32: vectors of 2, one st.shared.v2.f32 each (64B swizzle: bits 4-5 ^= bits 7-8).
  // CHECK:      and.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 3;
  // CHECK:      st.shared.v2.f32 [%r{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  // CHECK-COUNT-3: st.shared.v2.f32
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
