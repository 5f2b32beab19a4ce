// RUN: tawa-opt %s -p tawa-prepare-ptx | filecheck %s
// RUN: not tawa-opt %s -t ptx 2>&1 | filecheck %s --check-prefix=UNPREPARED
// RUN: not tawa-opt %s -p convert-scf-to-cf -t ptx 2>&1 | filecheck %s --check-prefix=WGMMA
// RUN: tawa-opt %s -p tawa-prepare-ptx -t ptx | filecheck %s --check-prefix=PTX

// tawa-prepare-ptx: whole-tile wgmma expanded, descriptors encoded, divisions
// by powers of two as shifts, and scf as cf blocks (scf.for's iter_args and
// scf.if's results become block arguments).
// CHECK-LABEL: func.func @kernel
// CHECK:       cf.br ^[[HEAD:.*]](%{{.*}}, %{{.*}} : index, !nvgpu.frag<64x64xf32, wgmma>)
// CHECK:       ^[[HEAD]](%[[IV:.*]]: index, %[[ACC:.*]]: !nvgpu.frag<64x64xf32, wgmma>):
// CHECK:       arith.cmpi slt, %[[IV]]
// CHECK:       cf.cond_br
// CHECK:       arith.andi %[[IV]]
// CHECK:       nvgpu.wgmma_desc_encode
// CHECK-COUNT-4: nvgpu.wgmma_mma_async
// CHECK:       cf.br ^[[HEAD]]
// CHECK-NOT:   scf.
// CHECK-NOT:   nvgpu.wgmma %
// CHECK-NOT:   arith.remui

// The printer names the pass that an op needs.
// UNPREPARED: error: the PTX printer does not support 'scf.for': run convert-scf-to-cf first (tawa-hopper-pipeline does)
// WGMMA: error: the PTX printer does not support 'nvgpu.wgmma_descriptor': run tawa-encode-wgmma-descriptors first (tawa-hopper-pipeline does)

// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX: bra $bb_
func.func @kernel(%n: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 33792>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %false = arith.constant false
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x64xf32, wgmma>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (!nvgpu.frag<64x64xf32, wgmma>) {
    %s = arith.remui %i, %c2 : index
    %da = nvgpu.wgmma_descriptor %sa[%s, %c0] : !nvgpu.smem<2x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
    %d = nvgpu.wgmma %da, %da, %acc, %false {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
    %w = nvgpu.wgmma_wait_group 0 (%d) : !nvgpu.frag<64x64xf32, wgmma>
    scf.yield %w : !nvgpu.frag<64x64xf32, wgmma>
  }
  func.return
}
