// RUN: tawa-opt %s -t ptx | filecheck %s
// nvgpu.counter_arrive (emit_memory.py): fence, barrier, the leader's wrapping
// acquire-release increment, and the barrier's OR of "mine was the last" for all.

func.func @arrive(%C: memref<?xi32>, %i: index, %n: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 256, smem = 0>} {
  %base = nvgpu.memref_base %C : memref<?xi32>
  %c4 = arith.constant 4 : index
  %off = arith.muli %i, %c4 : index
  %addr = arith.addi %base, %off : index
  %tid = nvgpu.thread_id
  %c128 = arith.constant 128 : index
  %leader = arith.cmpi eq, %tid, %c128 : index
  %last = nvgpu.counter_arrive %addr, %leader count %n barrier 1 threads 128
  cf.cond_br %last, ^fixup, ^done
^fixup:
  nvgpu.fence_cta
  cf.br ^done
^done:
  func.return
}
// CHECK:      setp.eq.u64 %p[[LEADER:[0-9]+]],
// CHECK:      cvt.u32.u64 %r[[COUNT:[0-9]+]], %rd{{[0-9]+}};
// CHECK-NEXT: sub.u32 %r[[TOP:[0-9]+]], %r[[COUNT]], 1;
// CHECK-NEXT: fence.acq_rel.gpu;
// CHECK-NEXT: bar.sync 1, 128;
// CHECK-NEXT: mov.u32 %r[[OLD:[0-9]+]], 0;
// CHECK-NEXT: @%p[[LEADER]] atom.acq_rel.gpu.global.inc.u32 %r[[OLD]], [%rd{{[0-9]+}}], %r[[TOP]];
// CHECK-NEXT: setp.eq.and.u32 %p[[MINE:[0-9]+]], %r[[OLD]], %r[[TOP]], %p[[LEADER]];
// CHECK-NEXT: bar.red.or.pred %p[[LAST:[0-9]+]], 1, 128, %p[[MINE]];
// CHECK-NEXT: fence.acq_rel.gpu;
// CHECK:      @!%p[[LAST]] bra
// CHECK:      fence.acq_rel.cta;
