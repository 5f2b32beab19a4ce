// RUN: tawa-opt %s -t ptx | filecheck %s
// An MN-major A in shared memory (`lhs_transposed`) sets imm-trans-a to 1,
// with a K-major B (imm-trans-b 0) and with an MN-major one (1).

func.func @mn_major_a() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 24576>} {
  %flag = arith.constant false
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
  %sb = nvgpu.smem_alloc offset(8192) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  // CHECK:      add.u32 %r[[SA:[0-9]+]], %r{{[0-9]+}}, 0;
  // CHECK:      cvt.u64.u32 %rd[[DA:[0-9]+]], %r[[SA]];
  // CHECK:      cvt.u64.u32 %rd[[DB:[0-9]+]],
  %a = nvgpu.smem_address %sa : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
  %da = nvgpu.wgmma_desc_encode %a lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  %b = nvgpu.smem_address %sb : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  %db = nvgpu.wgmma_desc_encode %b lbo(16384) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x128xf32, wgmma>
  %z2 = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  nvgpu.wgmma_fence
  // CHECK:      wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %rd[[DA]], %rd[[DB]], %p{{[0-9]+}}, 1, 1, 1, 0;
  %r0 = nvgpu.wgmma_mma_async %da, %db, %z, %flag {lhs_transposed, rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
  // CHECK:      wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, %rd[[DA]], %rd[[DA]], %p{{[0-9]+}}, 1, 1, 1, 1;
  %r1 = nvgpu.wgmma_mma_async %da, %da, %z2, %flag {lhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  nvgpu.wgmma_commit_group
  %w:2 = nvgpu.wgmma_wait_group 0 (%r0, %r1) : !nvgpu.frag<64x128xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
