// RUN: tawa-opt %s -t ptx | filecheck %s
// The type strings and immediates of wgmma.mma_async for each operand type:
// fp8 and tf32 take no imm-trans operands (both K-major); 16-bit types take
// imm-trans-a and imm-trans-b.

func.func @wgmma_dtypes() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 40960>} {
  %flag = arith.constant false
  %s4 = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x128xf8E4M3FN, swizzle = 128>
  %s5 = nvgpu.smem_alloc offset(8192) : !nvgpu.smem<1x64x128xf8E5M2, swizzle = 128>
  %s32 = nvgpu.smem_alloc offset(16384) : !nvgpu.smem<1x64x32xf32, swizzle = 128>
  %s16 = nvgpu.smem_alloc offset(24576) : !nvgpu.smem<1x64x64xf16, swizzle = 128>
  %a4 = nvgpu.smem_address %s4 : !nvgpu.smem<1x64x128xf8E4M3FN, swizzle = 128>
  %d4 = nvgpu.wgmma_desc_encode %a4 lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>
  %a5 = nvgpu.smem_address %s5 : !nvgpu.smem<1x64x128xf8E5M2, swizzle = 128>
  %d5 = nvgpu.wgmma_desc_encode %a5 lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>
  %a32 = nvgpu.smem_address %s32 : !nvgpu.smem<1x64x32xf32, swizzle = 128>
  %d32 = nvgpu.wgmma_desc_encode %a32 lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>
  %a16 = nvgpu.smem_address %s16 : !nvgpu.smem<1x64x64xf16, swizzle = 128>
  %d16 = nvgpu.wgmma_desc_encode %a16 lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x64xf16, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  nvgpu.wgmma_fence
  // CHECK-LABEL: .entry wgmma_dtypes(
  // CHECK:      wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2 {{.*}}, %rd[[D5:[0-9]+]], %rd[[D5]], %p[[P:[0-9]+]], 1, 1;
  %r0 = nvgpu.wgmma_mma_async %d5, %d5, %z, %flag {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  // Mixed fp8: A's type, then B's.
  // CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2 {{.*}}, %rd{{[0-9]+}}, %rd[[D5]], %p[[P]], 1, 1;
  %r1 = nvgpu.wgmma_mma_async %d4, %d5, %r0, %flag {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  // CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e4m3 {{.*}}, %rd[[D5]], %rd{{[0-9]+}}, %p[[P]], 1, 1;
  %r2 = nvgpu.wgmma_mma_async %d5, %d4, %r1, %flag {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E5M2, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  // f32 data are multiplied as tf32, k8 per instruction.
  // CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {{.*}}, %rd[[D32:[0-9]+]], %rd[[D32]], %p[[P]], 1, 1;
  %r3 = nvgpu.wgmma_mma_async %d32, %d32, %r2, %flag {rhs_transposed} : !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>, !nvgpu.wgmma_desc<64x32xf32, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  // f16: K-major A (imm-trans-a 0), MN-major B (imm-trans-b 1).
  // CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}, %rd[[D16:[0-9]+]], %rd[[D16]], %p[[P]], 1, 1, 0, 1;
  %r4 = nvgpu.wgmma_mma_async %d16, %d16, %r3, %flag : !nvgpu.wgmma_desc<64x64xf16, swizzle = 128>, !nvgpu.wgmma_desc<64x64xf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  nvgpu.wgmma_commit_group
  %w = nvgpu.wgmma_wait_group 0 (%r4) : !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
