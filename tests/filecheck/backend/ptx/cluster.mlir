// RUN: tawa-opt %s -t ptx | filecheck %s
// The cluster ops of emit_memory.py and the instructions they print (ptxas assembles this
// kernel: tests/backend/test_ptxas.py::test_cluster_ops_assemble).

// CHECK:      .visible .entry cluster(
// CHECK:      .reqntid 128, 1, 1
// CHECK-NEXT: .reqnctapercluster 2, 1, 1
func.func @cluster(%B: memref<?x?xbf16>) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 33792, persistent, cluster = 2>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %buf = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  %bars = nvgpu.smem_alloc offset(32768) : !nvgpu.mbarrier<2>
  // CHECK:      mov.u32 %r[[R:[0-9]+]], %cluster_ctarank;
  // CHECK-NEXT: cvt.u64.u32 %rd{{[0-9]+}}, %r[[R]];
  %rank = nvgpu.cluster_rank
  // CHECK:      barrier.cluster.arrive;
  // CHECK-NEXT: barrier.cluster.wait;
  nvgpu.cluster_sync
  %tb = nvgpu.tma_descriptor %B : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  // The mask is a 16-bit operand after the barrier.
  // CHECK:      mov.b16 %h[[M:[0-9]+]], 3;
  // CHECK:      cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}], %h[[M]];
  nvgpu.tma_load_box %tb[%c0, %c0], %buf[%rank] offset 0, %bars[%c0] multicast 3 : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  // With an L2 hint too: the mask comes before the cache policy.
  // CHECK:      .multicast::cluster.L2::cache_hint [%r{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}], %h{{[0-9]+}}, %rd{{[0-9]+}};
  nvgpu.tma_load_box %tb[%c0, %c0], %buf[%rank] offset 0, %bars[%c0] l2 "evict_first" multicast 1 : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  // A remote arrival: the peer's address of the same barrier, then a plain
  // (release at CTA scope) arrive on the shared::cluster window.
  // CHECK:      mapa.shared::cluster.u32 %r[[REMOTE:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}};
  // CHECK-NEXT: mbarrier.arrive.shared::cluster.b64 _, [%r[[REMOTE]]];
  nvgpu.mbarrier_arrive %bars[%c1] cta(%c1) : !nvgpu.mbarrier<2>
  // CHECK:      mbarrier.arrive.shared::cta.b64 _, [%r{{[0-9]+}}];
  nvgpu.mbarrier_arrive %bars[%c1] : !nvgpu.mbarrier<2>
  nvgpu.cluster_sync
  func.return
}
