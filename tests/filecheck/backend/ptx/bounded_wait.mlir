// RUN: tawa-opt %s -t ptx | filecheck %s
// RUN: not tawa-opt %S/Inputs/bounded_wait_unexpanded.mlir -t ptx 2>&1 | filecheck %s --check-prefix=UNEXPANDED
// (That this PTX assembles with ptxas -arch=sm_90a: tests/runtime/test_watchdog_cpu.py.)

// The watchdog's bounded wait as tawa-expand-bounded-waits writes it out
// (tests/filecheck/transforms/prepare/expand_bounded_waits.mlir), here in cf blocks:
// the timed spin, and the report's ops, each printed as its instruction(s).
// A kernel with a wait table takes the watchdog buffer as its last parameter.
// CHECK:      .visible .entry bounded(
// CHECK-NEXT:   .param .u64 arg0_n,
// CHECK-NEXT:   .param .u64 watchdog
// CHECK-NEXT: )

func.func @bounded(%n: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024, waits = [["bounded.mlir:1:1", "consumer", "mbarrier<2> at shared offset 0"]]>} {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  %i = arith.constant 1 : index
  // CHECK:      cvt.u32.u64 %r[[PAR:[0-9]+]], %rd{{[0-9]+}};
  %par = arith.index_cast %i : index to i32
  // The timed spin: false (in time) unless the timer runs out; a first try,
  // and only when it fails is the timer read.
  // CHECK:      add.u32 %r[[A:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}};
  // CHECK-NEXT: mov.pred %p[[LATE:[0-9]+]], 0;
  // CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p[[OK:[0-9]+]], [%r[[A]]], %r[[PAR]];
  // CHECK-NEXT: @%p[[OK]] bra [[DONE:\$wait_done_[0-9]+]];
  // CHECK-NEXT: mov.u64 %rd[[START:[0-9]+]], %globaltimer;
  // CHECK-NEXT: [[AGAIN:\$wait_[0-9]+]]:
  // CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p[[OK]], [%r[[A]]], %r[[PAR]];
  // CHECK-NEXT: @%p[[OK]] bra [[DONE]];
  // CHECK-NEXT: mov.u64 %rd[[NOW:[0-9]+]], %globaltimer;
  // CHECK-NEXT: sub.u64 %rd[[NOW]], %rd[[NOW]], %rd[[START]];
  // CHECK-NEXT: setp.ge.u64 %p[[LATE]], %rd[[NOW]], 750000000;
  // CHECK-NEXT: @!%p[[LATE]] bra [[AGAIN]];
  // CHECK-NEXT: [[DONE]]:
  // CHECK-NEXT: @!%p[[LATE]] bra [[FINE:\$bb_[0-9]+]];
  %late = nvgpu.mbarrier_timed_wait_parity %b[%i], %par, 750000000 ns : !nvgpu.mbarrier<2>
  cf.cond_br %late, ^report, ^fine
^report:
  // The buffer, from its parameter; the claim (host memory: system scope).
  // CHECK-NEXT: ld.param.u64 %rd[[BUF:[0-9]+]], [watchdog];
  // CHECK-NEXT: cvta.to.global.u64 %rd[[BUF]], %rd[[BUF]];
  // CHECK:      atom.relaxed.sys.global.cas.b32 %r[[OLD:[0-9]+]], [%rd[[BUF]]], 0, 1;
  %buf = nvgpu.watchdog_buffer
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %old = nvgpu.atomic_cas_sys %buf, %c0, %c1 : i32
  %won = arith.cmpi eq, %old, %c0 : i32
  cf.cond_br %won, ^win, ^lose
^win:
  // Stores at an offset of the buffer, constants as immediates; valid last,
  // released between two system fences; the trap.
  // CHECK:      st.relaxed.sys.global.u32 [%rd[[BUF]]+8], 5;
  // CHECK-NEXT: mov.u32 %r[[T:[0-9]+]], %tid.x;
  // CHECK:      st.relaxed.sys.global.u32 [%rd[[BUF]]+24], %r{{[0-9]+}};
  // CHECK-NEXT: st.relaxed.sys.global.u32 [%rd[[BUF]]+32], %r[[PAR]];
  // CHECK-NEXT: fence.sc.sys;
  // CHECK-NEXT: st.release.sys.global.u32 [%rd[[BUF]]+4], 2050621441;
  // CHECK-NEXT: fence.sc.sys;
  // CHECK-NEXT: trap;
  %id = arith.constant 5 : i32
  nvgpu.store_sys %id, %buf[8] : i32
  %t = nvgpu.thread_id
  %t32 = arith.index_cast %t : index to i32
  nvgpu.store_sys %t32, %buf[24] : i32
  nvgpu.store_sys %par, %buf[32] : i32
  nvgpu.fence_sc_sys
  %valid = arith.constant 2050621441 : i32
  nvgpu.store_sys %valid, %buf[4] release : i32
  nvgpu.fence_sc_sys
  nvgpu.trap
  cf.br ^fine
^lose:
  // A thread that lost the claim sleeps until the trap ends the grid.
  // CHECK:      [[PARK:\$park_[0-9]+]]:
  // CHECK-NEXT: nanosleep.u32 1000000;
  // CHECK-NEXT: bra [[PARK]];
  nvgpu.park 1000000
  cf.br ^fine
^fine:
  // The plain wait stays a two-instruction spin.
  // CHECK:      [[SPIN:\$wait_[0-9]+]]:
  // CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p[[OK2:[0-9]+]], [%r{{[0-9]+}}], %r{{[0-9]+}};
  // CHECK-NEXT: @!%p[[OK2]] bra [[SPIN]];
  nvgpu.mbarrier_wait_parity %b[%i], %i : !nvgpu.mbarrier<2>
  func.return
}

// A bounded wait not written out is no instruction the printer knows.
// UNEXPANDED: bounded_wait_unexpanded.mlir:3:3: error: the PTX printer does not support 'nvgpu.mbarrier_wait_parity': a bounded wait: run tawa-expand-bounded-waits first (tawa-hopper-pipeline does)
