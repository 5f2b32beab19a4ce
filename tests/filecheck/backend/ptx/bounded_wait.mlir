// RUN: tawa-opt %s -t ptx | filecheck %s
// (That this PTX assembles with ptxas -arch=sm_90a: tests/runtime/test_watchdog_cpu.py.)

// The watchdog's bounded wait (tawa-bound-waits): a kernel with a wait table
// takes the watchdog buffer as its last parameter.
// CHECK:      .visible .entry bounded(
// CHECK-NEXT:   .param .u64 arg0_n,
// CHECK-NEXT:   .param .u64 watchdog
// CHECK-NEXT: )

func.func @bounded(%n: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024, waits = [["bounded.mlir:1:1", "consumer", "mbarrier<2> at shared offset 0"]]>} {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  %i = arith.constant 1 : index
  // CHECK:      add.u32 %r[[A:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}};
  // CHECK-NEXT: cvt.u32.u64 %r[[PAR:[0-9]+]], %rd[[IDX:[0-9]+]];
  // A first try; only when it fails is the timer read.
  // CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p[[OK:[0-9]+]], [%r[[A]]], %r[[PAR]];
  // CHECK-NEXT: @%p[[OK]] bra [[DONE:\$wait_done_[0-9]+]];
  // CHECK-NEXT: mov.u64 %rd[[START:[0-9]+]], %globaltimer;
  // CHECK-NEXT: [[AGAIN:\$wait_[0-9]+]]:
  // CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p[[OK]], [%r[[A]]], %r[[PAR]];
  // CHECK-NEXT: @%p[[OK]] bra [[DONE]];
  // CHECK-NEXT: mov.u64 %rd[[NOW:[0-9]+]], %globaltimer;
  // CHECK-NEXT: sub.u64 %rd[[NOW]], %rd[[NOW]], %rd[[START]];
  // CHECK-NEXT: setp.lt.u64 %p[[LATE:[0-9]+]], %rd[[NOW]], 750000000;
  // CHECK-NEXT: @%p[[LATE]] bra [[AGAIN]];
  // Timed out: claim the buffer (host memory: system scope) ...
  // CHECK-NEXT: ld.param.u64 %rd[[BUF:[0-9]+]], [watchdog];
  // CHECK-NEXT: cvta.to.global.u64 %rd[[BUF]], %rd[[BUF]];
  // CHECK-NEXT: atom.relaxed.sys.global.cas.b32 %r[[OLD:[0-9]+]], [%rd[[BUF]]], 0, 1;
  // CHECK-NEXT: setp.ne.u32 %p[[LATE]], %r[[OLD]], 0;
  // CHECK-NEXT: @%p[[LATE]] bra [[LOST:\$wait_lost_[0-9]+]];
  // ... write the record: wait id, CTA, thread, barrier index, parity ...
  // CHECK-NEXT: st.relaxed.sys.global.u32 [%rd[[BUF]]+8], 5;
  // CHECK-NEXT: mov.u32 %r[[S:[0-9]+]], %ctaid.x;
  // CHECK-NEXT: st.relaxed.sys.global.u32 [%rd[[BUF]]+12], %r[[S]];
  // CHECK-NEXT: mov.u32 %r[[S]], %ctaid.y;
  // CHECK-NEXT: st.relaxed.sys.global.u32 [%rd[[BUF]]+16], %r[[S]];
  // CHECK-NEXT: mov.u32 %r[[S]], %ctaid.z;
  // CHECK-NEXT: st.relaxed.sys.global.u32 [%rd[[BUF]]+20], %r[[S]];
  // CHECK-NEXT: mov.u32 %r[[S]], %tid.x;
  // CHECK-NEXT: st.relaxed.sys.global.u32 [%rd[[BUF]]+24], %r[[S]];
  // CHECK-NEXT: cvt.u32.u64 %r[[I:[0-9]+]], %rd[[IDX]];
  // CHECK-NEXT: st.relaxed.sys.global.u32 [%rd[[BUF]]+28], %r[[I]];
  // CHECK-NEXT: st.relaxed.sys.global.u32 [%rd[[BUF]]+32], %r[[PAR]];
  // ... mark it valid (0x7A3A0001) after a system fence, and trap.
  // CHECK-NEXT: fence.sc.sys;
  // CHECK-NEXT: st.release.sys.global.u32 [%rd[[BUF]]+4], 2050621441;
  // CHECK-NEXT: fence.sc.sys;
  // CHECK-NEXT: trap;
  // A thread that lost the claim sleeps until the trap ends the grid.
  // CHECK-NEXT: [[LOST]]:
  // CHECK-NEXT: nanosleep.u32 1000000;
  // CHECK-NEXT: bra [[LOST]];
  // CHECK-NEXT: [[DONE]]:
  nvgpu.mbarrier_wait_parity %b[%i], %i watchdog(5, 750000000 ns) : !nvgpu.mbarrier<2>
  // The plain wait stays a two-instruction spin.
  // CHECK:      [[SPIN:\$wait_[0-9]+]]:
  // CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p[[OK2:[0-9]+]], [%r{{[0-9]+}}], %r{{[0-9]+}};
  // CHECK-NEXT: @!%p[[OK2]] bra [[SPIN]];
  nvgpu.mbarrier_wait_parity %b[%i], %i : !nvgpu.mbarrier<2>
  func.return
}
