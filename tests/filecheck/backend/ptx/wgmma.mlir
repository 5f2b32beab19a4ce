// RUN: tawa-opt %s -t ptx | filecheck %s
// Each op of emit_wgmma.py and the instruction(s) it prints.

func.func @wgmma() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 33792>} {
  %flag = arith.constant false
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
  %sb = nvgpu.smem_alloc offset(8192) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  %s8 = nvgpu.smem_alloc offset(24576) : !nvgpu.smem<1x64x32xbf16, swizzle = 64>
  // CHECK:      add.u32 %r[[SA:[0-9]+]], %r{{[0-9]+}}, 0;
  // CHECK:      add.u32 %r[[SB:[0-9]+]], %r{{[0-9]+}}, 8192;
  // CHECK:      add.u32 %r[[S8:[0-9]+]], %r{{[0-9]+}}, 24576;
  // The address of a buffer is its register; the encode op puts its fields
  // above the address >> 4 (LBO 8192 >> 4 at bit 16, SBO 1024 >> 4 at bit
  // 32, 128B swizzle = 1 at bit 62).
  // CHECK-NEXT: cvt.u64.u32 %rd[[DA:[0-9]+]], %r[[SA]];
  // CHECK-NEXT: and.b64 %rd[[DA]], %rd[[DA]], 262143;
  // CHECK-NEXT: shr.u64 %rd[[DA]], %rd[[DA]], 4;
  // CHECK-NEXT: or.b64 %rd[[DA]], %rd[[DA]], 4611686293338849280;
  %a = nvgpu.smem_address %sa : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
  %da = nvgpu.wgmma_desc_encode %a lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  // CHECK-NEXT: cvt.u64.u32 %rd[[DB:[0-9]+]], %r[[SB]];
  // CHECK:      or.b64 %rd[[DB]], %rd[[DB]], 4611686293338849280;
  %b = nvgpu.smem_address %sb : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  %db = nvgpu.wgmma_desc_encode %b lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>
  // 64B swizzle = 2 at bit 62, SBO 512.
  // CHECK:      cvt.u64.u32 %rd[[D8:[0-9]+]], %r[[S8]];
  // CHECK:      or.b64 %rd[[D8]], %rd[[D8]], 9223372174310506496;
  %c = nvgpu.smem_address %s8 : !nvgpu.smem<1x64x32xbf16, swizzle = 64>
  %d8 = nvgpu.wgmma_desc_encode %c lbo(4096) sbo(512) swizzle(64) : !nvgpu.wgmma_desc<64x32xbf16, swizzle = 64>
  // An advance of 0 is the same register; others add offset >> 4.
  // CHECK-NEXT: add.s64 %rd[[DA1:[0-9]+]], %rd[[DA]], 2;
  %da0 = nvgpu.wgmma_desc_advance %da, 0 : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  %da1 = nvgpu.wgmma_desc_advance %da, 32 : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  // CHECK-NEXT: add.s64 %rd[[DB1:[0-9]+]], %rd[[DB]], 128;
  %db1 = nvgpu.wgmma_desc_advance %db, 2048 : !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  %z2 = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  %zz = nvgpu.frag_zeros : !nvgpu.frag<64x128xf32, wgmma>
  // CHECK:      wgmma.fence.sync.aligned;
  nvgpu.wgmma_fence
  // Shared A and K-major B (imm-trans-b 0); the accumulator %z is read
  // again below, so the result gets registers of its own.
  // CHECK-NEXT: mov.f32 %f[[R0:[0-9]+]], %f[[Z0:[0-9]+]];
  // CHECK:      wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f[[R0]], {{.*}}}, %rd[[DA]], %rd[[DB]], %p[[P:[0-9]+]], 1, 1, 0, 0;
  %r0 = nvgpu.wgmma_mma_async %da0, %db, %z, %flag {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  // The next step accumulates in place.
  // CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f[[R0]], {{.*}}}, %rd[[DA1]], %rd[[DB]], %p[[P]], 1, 1, 0, 0;
  %r1 = nvgpu.wgmma_mma_async %da1, %db, %r0, %flag {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  // MN-major B (imm-trans-b 1): N is the descriptor's columns.
  // CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f{{[0-9]+}}, {{.*}}}, %rd[[DA]], %rd[[DB1]], %p[[P]], 1, 1, 0, 1;
  %r2 = nvgpu.wgmma_mma_async %da, %db1, %zz, %flag : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
  // A in registers: k-step 1 of a 64x32 bf16 fragment is its registers 4..7.
  // CHECK:      cvt.rn.bf16x2.f32 %r[[A0:[0-9]+]],
  // CHECK-NEXT: cvt.rn.bf16x2.f32 %r{{[0-9]+}},
  // CHECK-NEXT: cvt.rn.bf16x2.f32 %r{{[0-9]+}},
  // CHECK-NEXT: cvt.rn.bf16x2.f32 %r{{[0-9]+}},
  // CHECK-NEXT: cvt.rn.bf16x2.f32 %r[[A4:[0-9]+]],
  // CHECK-NEXT: cvt.rn.bf16x2.f32 %r[[A5:[0-9]+]],
  // CHECK-NEXT: cvt.rn.bf16x2.f32 %r[[A6:[0-9]+]],
  // CHECK-NEXT: cvt.rn.bf16x2.f32 %r[[A7:[0-9]+]],
  %za = nvgpu.frag_zeros : !nvgpu.frag<64x32xf32, wgmma>
  %fa = nvgpu.frag_convert %za : !nvgpu.frag<64x32xf32, wgmma> -> !nvgpu.frag<64x32xbf16, wgmma>
  %fa1 = nvgpu.wgmma_k_slice %fa[1] : !nvgpu.frag<64x32xbf16, wgmma> -> !nvgpu.frag<64x16xbf16, wgmma>
  // No imm-trans-a with A in registers.
  // CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f[[Z0]], {{.*}}}, {%r[[A4]], %r[[A5]], %r[[A6]], %r[[A7]]}, %rd[[DB]], %p[[P]], 1, 1, 0;
  %r3 = nvgpu.wgmma_mma_async %fa1, %db, %z, %flag {rhs_transposed} : !nvgpu.frag<64x16xbf16, wgmma>, !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  // CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, %rd[[D8]], %rd[[DB]], %p[[P]], 1, 1, 0, 0;
  %r4 = nvgpu.wgmma_mma_async %d8, %db, %z2, %flag {rhs_transposed} : !nvgpu.wgmma_desc<64x32xbf16, swizzle = 64>, !nvgpu.wgmma_desc<64x128xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  // CHECK-NEXT: wgmma.commit_group.sync.aligned;
  nvgpu.wgmma_commit_group
  // The wait's results are its operands' registers.
  // CHECK-NEXT: wgmma.wait_group.sync.aligned 0;
  // CHECK-NEXT: add.f32 %f{{[0-9]+}}, %f[[R0]], %f[[Z0]];
  %w:2 = nvgpu.wgmma_wait_group 0 (%r1, %r3) : !nvgpu.frag<64x64xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>
  %sum = nvgpu.frag_binary addf %w#0, %w#1 : !nvgpu.frag<64x64xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}

func.func @wgmma_f8() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 9216>} {
  %flag = arith.constant false
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x128xf8E4M3FN, swizzle = 128>
  %a = nvgpu.smem_address %sa : !nvgpu.smem<1x64x128xf8E4M3FN, swizzle = 128>
  %da = nvgpu.wgmma_desc_encode %a lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  // f8: k32, no transpose immediates (both operands K-major).
  // CHECK-LABEL: .entry wgmma_f8(
  // CHECK:      wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {{.*}}, %rd[[A:[0-9]+]], %rd[[A]], %p{{[0-9]+}}, 1, 1;
  %r = nvgpu.wgmma_mma_async %da, %da, %z, %flag {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}

// A wgmma that does not accumulate (scale-d false) from an unspecified accumulator: the
// registers are declared and nothing writes them (no zeroing movs before the wgmma).
func.func @wgmma_undef() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 9216>} {
  %false = arith.constant false
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
  %a = nvgpu.smem_address %sa : !nvgpu.smem<1x64x64xbf16, swizzle = 128>
  %da = nvgpu.wgmma_desc_encode %a lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  // CHECK-LABEL: .entry wgmma_undef(
  // CHECK:       wgmma.fence.sync.aligned;
  // CHECK-NEXT:  wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f{{[0-9]+}}, {{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %p{{[0-9]+}}, 1, 1, 0, 0;
  // CHECK-NOT:   mov.f32
  // CHECK:       ret;
  %u = nvgpu.frag_undef : !nvgpu.frag<64x64xf32, wgmma>
  nvgpu.wgmma_fence
  %r = nvgpu.wgmma_mma_async %da, %da, %u, %false {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  nvgpu.wgmma_commit_group
  %w = nvgpu.wgmma_wait_group 0 (%r) : !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
