// RUN: tawa-opt %s -t ptx | filecheck %s
// Each op of emit_memory.py and the instruction(s) it prints.

func.func @memory(%A: memref<?x?xbf16>) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 67584>} {
  // CHECK:      mov.u32 %r[[T:[0-9]+]], %tid.x;
  // CHECK-NEXT: cvt.u64.u32 %rd{{[0-9]+}}, %r[[T]];
  %t = nvgpu.thread_id
  // CHECK-NEXT: mov.u32 %r[[L:[0-9]+]], %laneid;
  // CHECK-NEXT: cvt.u64.u32 %rd{{[0-9]+}}, %r[[L]];
  %l = nvgpu.lane_id
  // CHECK-NEXT: mov.u32 %r[[W:[0-9]+]], %tid.x;
  // CHECK-NEXT: shr.u32 %r[[W]], %r[[W]], 5;
  // CHECK-NEXT: cvt.u64.u32 %rd{{[0-9]+}}, %r[[W]];
  %w = nvgpu.warp_id
  // CHECK-NEXT: mov.u32 %r[[G:[0-9]+]], %tid.x;
  // CHECK-NEXT: shr.u32 %r[[G]], %r[[G]], 7;
  %g = nvgpu.warp_group_id
  // CHECK:      mov.u32 %r{{[0-9]+}}, %ctaid.y;
  %b = nvgpu.block_id 1
  // CHECK:      mov.u32 %r{{[0-9]+}}, %nctaid.x;
  %n = nvgpu.grid_dim 0
  // CHECK:      ld.param.u64 %rd{{[0-9]+}}, [grid0];
  %gx = nvgpu.launch_grid 0
  // CHECK-NEXT: elect.sync _|%p{{[0-9]+}}, 0xffffffff;
  %e = nvgpu.elect_one
  // The shared-memory base is rounded up to 1024 at entry; a buffer is an offset from it.
  // CHECK-NEXT: add.u32 %r[[SA:[0-9]+]], %r[[BASE:[0-9]+]], 1024;
  %sa = nvgpu.smem_alloc offset(1024) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  // CHECK-NEXT: add.u32 %r[[BARS:[0-9]+]], %r[[BASE]], 0;
  %bars = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  // The shared address of a buffer is its register: no instruction.
  %addr = nvgpu.smem_address %sa : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  // CHECK-NEXT: mov.u64 %rd[[IDX:[0-9]+]], 1;
  %i = arith.constant 1 : index
  // mbarrier i of an array: base + 8 i.
  // CHECK-NEXT: cvt.u32.u64 %r[[I:[0-9]+]], %rd[[IDX]];
  // CHECK-NEXT: shl.b32 %r[[I]], %r[[I]], 3;
  // CHECK-NEXT: add.u32 %r[[B1:[0-9]+]], %r[[BARS]], %r[[I]];
  // CHECK-NEXT: mbarrier.init.shared::cta.b64 [%r[[B1]]], 1;
  nvgpu.mbarrier_init %bars[%i], 1 : !nvgpu.mbarrier<2>
  // CHECK-NEXT: fence.mbarrier_init.release.cluster;
  nvgpu.fence_mbarrier_init
  // CHECK-NEXT: bar.sync 0, 128;
  nvgpu.named_barrier_sync 0, 128
  // CHECK-NEXT: bar.arrive 1, 128;
  nvgpu.named_barrier_arrive 1, 128
  // CHECK:      mbarrier.arrive.shared::cta.b64 _, [%r{{[0-9]+}}];
  nvgpu.mbarrier_arrive %bars[%i] : !nvgpu.mbarrier<2>
  // CHECK:      mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], 32768;
  nvgpu.mbarrier_arrive_expect_tx %bars[%i], 32768 : !nvgpu.mbarrier<2>
  // CHECK:      add.u32 %r[[A:[0-9]+]], %r[[BARS]], %r{{[0-9]+}};
  // CHECK-NEXT: cvt.u32.u64 %r[[PAR:[0-9]+]], %rd[[IDX]];
  // CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p{{[0-9]+}}, [%r[[A]]], %r[[PAR]];
  %ok = nvgpu.mbarrier_try_wait_parity %bars[%i], %i : !nvgpu.mbarrier<2>
  // The blocking wait is a fixed spin on try_wait.
  // CHECK:      add.u32 %r[[A2:[0-9]+]], %r[[BARS]], %r{{[0-9]+}};
  // CHECK-NEXT: cvt.u32.u64 %r[[PAR2:[0-9]+]], %rd[[IDX]];
  // CHECK-NEXT: [[WAIT:\$wait_[0-9]+]]:
  // CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p[[OK:[0-9]+]], [%r[[A2]]], %r[[PAR2]];
  // CHECK-NEXT: @!%p[[OK]] bra [[WAIT]];
  nvgpu.mbarrier_wait_parity %bars[%i], %i : !nvgpu.mbarrier<2>
  // A tensor map is a kernel parameter, addressed generically.
  // CHECK-NEXT: mov.b64 %rd[[TM:[0-9]+]], tmap0;
  // CHECK-NEXT: cvta.param.u64 %rd[[TM]], %rd[[TM]];
  %ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  // A TMA box load (tawa-split-tma-chunks makes them of nvgpu.tma_load): stage s of
  // the buffer (s × 16384 bytes on) plus the box's offset in it, one instruction.
  // CHECK-NEXT: cvt.u32.u64 %r[[S:[0-9]+]], %rd{{[0-9]+}};
  // CHECK-NEXT: mad.lo.u32 %r[[DST:[0-9]+]], %r[[S]], 16384, %r[[SA]];
  // CHECK:      cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r[[DST]]], [%rd[[TM]], {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
  nvgpu.tma_load_box %ta[%i, %i], %sa[%i] offset 0, %bars[%i] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  %wide = nvgpu.smem_alloc offset(33792) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
  %tw = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  // The second 64-column chunk of a 128-column tile: 8192 bytes further.
  // CHECK:      mad.lo.u32 %r[[DST2:[0-9]+]], %r{{[0-9]+}}, 16384, %r[[SB:[0-9]+]];
  // CHECK:      add.u32 %r[[CHUNK:[0-9]+]], %r[[DST2]], 8192;
  // CHECK:      cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r[[CHUNK]]], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
  nvgpu.tma_load_box %tw[%i, %i], %wide[%i] offset 8192, %bars[%i] : !nvgpu.tma_desc<64x128xbf16, swizzle = 128>, !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  // With an L2 eviction priority: the policy it names, then the load that carries it.
  // CHECK:      createpolicy.fractional.L2::evict_first.b64 %rd[[POL:[0-9]+]], 1.0;
  // CHECK:      cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%r{{[0-9]+}}], [%rd[[TM]], {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}], %rd[[POL]];
  nvgpu.tma_load_box %ta[%i, %i], %sa[%i] offset 0, %bars[%i] l2 "evict_first" : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  // CHECK:      fence.proxy.async.shared::cta;
  nvgpu.fence_proxy_async
  // A CTA-scope fence (tawa.transforms.lower.pin_waits).
  // CHECK-NEXT: fence.acq_rel.cta;
  nvgpu.fence_cta
  // A box store, then the commit that closes its bulk group.
  // CHECK:      cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd[[TM]], {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
  // CHECK-NEXT: cp.async.bulk.commit_group;
  nvgpu.tma_store_box %sa[%i] offset 0, %ta[%i, %i] : !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  nvgpu.tma_store_commit
  // CHECK-NEXT: cp.async.bulk.wait_group.read 0;
  nvgpu.tma_store_wait 0
  // CHECK-NEXT: setmaxnreg.inc.sync.aligned.u32 232;
  nvgpu.setmaxnreg inc 232
  // CHECK-NEXT: setmaxnreg.dec.sync.aligned.u32 40;
  nvgpu.setmaxnreg dec 40
  func.return
}
