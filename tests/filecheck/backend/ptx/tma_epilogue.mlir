// RUN: tawa-opt %s -t ptx | filecheck %s
// The TMA-store epilogue's ops in PTX: each vector of a fragment is one st.shared at
// the address operand and immediate its properties name (the dual of
// frag_load_shared_at; tawa-expand-shared-accesses forms the addresses,
// tests/filecheck/transforms/prepare/expand_shared_accesses.mlir), then the fence, the
// barrier, the TMA store of each span-wide column chunk with one commit, and the
// wait before reuse.

func.func @epilogue(%C: memref<?x?xbf16>, %i: index, %u0: i32, %u1: i32) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 33792>} {
  %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x128xbf16, swizzle = 128>
  %tmap = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  %v = nvgpu.frag_zeros : !nvgpu.frag<64x16xbf16, wgmma>
  %f = nvgpu.frag_zeros : !nvgpu.frag<64x16xf32, wgmma>
  // The addresses (kernel parameters here, arith in a lowered kernel):
  // CHECK:      ld.param.u32 %r[[U0:[0-9]+]], [arg2_u0];
  // CHECK-NEXT: ld.param.u32 %r[[U1:[0-9]+]], [arg3_u1];
  // CHECK: cp.async.bulk.wait_group.read 0;
  nvgpu.tma_store_wait 0
  // CHECK-NEXT: bar.sync 1, 128;
  nvgpu.named_barrier_sync 1, 128
  // 8 bf16 values per thread, packed in pairs: 4 stores of 32 bits, vector k at
  // [addresses[bases[k]] + offsets[k]].
  // CHECK:      st.shared.b32 [%r[[U0]]], %r{{[0-9]+}};
  // CHECK-NEXT: st.shared.b32 [%r[[U0]]+1024], %r{{[0-9]+}};
  // CHECK-NEXT: st.shared.b32 [%r[[U1]]], %r{{[0-9]+}};
  // CHECK-NEXT: st.shared.b32 [%r[[U1]]+1024], %r{{[0-9]+}};
  nvgpu.frag_store_shared_at %v, [%u0, %u1] bases [0, 0, 1, 1] offsets [0, 1024, 0, 1024] : !nvgpu.frag<64x16xbf16, wgmma>
  // f32: each vector of 2 is one 64-bit store.
  // CHECK-NEXT: st.shared.v2.f32 [%r[[U1]]], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  // CHECK-NEXT: st.shared.v2.f32 [%r[[U1]]+512], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  // CHECK-NEXT: st.shared.v2.f32 [%r[[U0]]+16], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  // CHECK-NEXT: st.shared.v2.f32 [%r[[U0]]+528], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  nvgpu.frag_store_shared_at %f, [%u0, %u1] bases [1, 1, 0, 0] offsets [0, 512, 16, 528] : !nvgpu.frag<64x16xf32, wgmma>
  // A load: packed f16 pairs, one 32-bit load each.
  // CHECK-NEXT: ld.shared.b32 %r{{[0-9]+}}, [%r[[U1]]+8];
  // CHECK-NEXT: ld.shared.b32 %r{{[0-9]+}}, [%r[[U0]]+1032];
  // CHECK-NEXT: ld.shared.b32 %r{{[0-9]+}}, [%r[[U1]]];
  // CHECK-NEXT: ld.shared.b32 %r{{[0-9]+}}, [%r[[U0]]];
  %g = nvgpu.frag_load_shared_at [%u0, %u1] bases [1, 0, 1, 0] offsets [8, 1032, 0, 0] : !nvgpu.frag<64x16xf16, wgmma>
  // CHECK:      fence.proxy.async.shared::cta;
  nvgpu.fence_proxy_async
  // CHECK-NEXT: bar.sync 1, 128;
  nvgpu.named_barrier_sync 1, 128
  // Two chunks of 64 columns: two boxes, then one bulk group.
  // CHECK:      cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
  // CHECK:      cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
  // CHECK-NEXT: cp.async.bulk.commit_group;
  %c64 = arith.constant 64 : index
  %i64 = arith.addi %i, %c64 : index
  nvgpu.tma_store_box %staging[%i] offset 0, %tmap[%i, %i] : !nvgpu.smem<1x64x128xbf16, swizzle = 128>, !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  nvgpu.tma_store_box %staging[%i] offset 8192, %tmap[%i, %i64] : !nvgpu.smem<1x64x128xbf16, swizzle = 128>, !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  nvgpu.tma_store_commit
  func.return
}

// The subtiled staging: a 64-column chunk of the fragment (a view: its registers, no
// moves) into buffer 1 of two 64x64 buffers, one 64x64 box; the wait before the next
// chunk leaves the newest store pending.
// CHECK-LABEL: .visible .entry subtile(
func.func @subtile(%C: memref<?x?xbf16>, %i: index, %u: i32) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 17408>} {
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
  nvgpu.frag_store_shared_at %v1, [%u] bases [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] offsets [0, 1024, 16, 1040, 32, 1056, 48, 1072, 64, 1088, 80, 1104, 96, 1120, 112, 1136] : !nvgpu.frag<64x64xbf16, wgmma>
  // CHECK:      fence.proxy.async.shared::cta;
  nvgpu.fence_proxy_async
  // One box, one bulk group.
  // CHECK:      cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
  // CHECK-NEXT: cp.async.bulk.commit_group;
  // CHECK-NOT:  cp.async.bulk.tensor
  nvgpu.tma_store_box %staging[%c1] offset 0, %tmap[%i, %i] : !nvgpu.smem<2x64x64xbf16, swizzle = 128>, !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
  nvgpu.tma_store_commit
  func.return
}
