// RUN: tawa-opt %s -p tawa-expand-bounded-waits | filecheck %s
// RUN: tawa-opt %s -p tawa-expand-bounded-waits,convert-scf-to-cf -t ptx | filecheck %s --check-prefix=PTX

// A bounded wait (tawa-bound-waits) becomes its timed spin and, past the
// timeout, the report: claim the watchdog buffer (its claim word, offset 0,
// 0 -> 1), and the winner writes the record of abi.WATCHDOG_FIELDS (wait id
// at 8, %ctaid.x/y/z at 12-20, %tid.x at 24, the barrier index at 28, the
// parity at 32), then valid (0x7A3A0001) at 4, released between two system
// fences, and traps; a thread that lost the claim parks until the trap ends
// the grid.  A plain wait is left alone.
// CHECK-LABEL: func.func @bounded(
// CHECK:      %parity = arith.index_cast %ph : index to i32
// CHECK-NEXT: %late = nvgpu.mbarrier_timed_wait_parity %b[%i], %parity, 750000000 ns : !nvgpu.mbarrier<2>
// CHECK-NEXT: scf.if %late {
// CHECK-NEXT:   %watchdog = nvgpu.watchdog_buffer
// CHECK-NEXT:   %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:   %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:   %[[OLD:.*]] = nvgpu.atomic_cas_sys %watchdog, %[[ZERO]], %[[ONE]] : i32
// CHECK-NEXT:   %[[WON:.*]] = arith.cmpi eq, %[[OLD]], %[[ZERO]] : i32
// CHECK-NEXT:   scf.if %[[WON]] {
// CHECK-NEXT:     %[[ID:.*]] = arith.constant 5 : i32
// CHECK-NEXT:     nvgpu.store_sys %[[ID]], %watchdog[8] : i32
// CHECK-NEXT:     %[[X:.*]] = nvgpu.block_id 0
// CHECK-NEXT:     %[[X32:.*]] = arith.index_cast %[[X]] : index to i32
// CHECK-NEXT:     nvgpu.store_sys %[[X32]], %watchdog[12] : i32
// CHECK:          nvgpu.store_sys %{{.*}}, %watchdog[20] : i32
// CHECK-NEXT:     %[[T:.*]] = nvgpu.thread_id
// CHECK-NEXT:     %[[T32:.*]] = arith.index_cast %[[T]] : index to i32
// CHECK-NEXT:     nvgpu.store_sys %[[T32]], %watchdog[24] : i32
// CHECK-NEXT:     %[[I32:.*]] = arith.index_cast %i : index to i32
// CHECK-NEXT:     nvgpu.store_sys %[[I32]], %watchdog[28] : i32
// CHECK-NEXT:     nvgpu.store_sys %parity, %watchdog[32] : i32
// CHECK-NEXT:     nvgpu.fence_sc_sys
// CHECK-NEXT:     %[[VALID:.*]] = arith.constant 2050621441 : i32
// CHECK-NEXT:     nvgpu.store_sys %[[VALID]], %watchdog[4] release : i32
// CHECK-NEXT:     nvgpu.fence_sc_sys
// CHECK-NEXT:     nvgpu.trap
// CHECK-NEXT:   } else {
// CHECK-NEXT:     nvgpu.park 1000000
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: nvgpu.mbarrier_wait_parity %b[%i], %ph : !nvgpu.mbarrier<2>
// CHECK-NOT:  watchdog(

// The same printed: the spin reads %globaltimer only after a first failed try.
// PTX:      mov.pred %p[[LATE:[0-9]+]], 0;
// PTX-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p[[OK:[0-9]+]], [%r{{[0-9]+}}], %r{{[0-9]+}};
// PTX-NEXT: @%p[[OK]] bra [[DONE:\$wait_done_[0-9]+]];
// PTX-NEXT: mov.u64 %rd[[START:[0-9]+]], %globaltimer;
// PTX-NEXT: [[AGAIN:\$wait_[0-9]+]]:
// PTX-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p[[OK]], [%r{{[0-9]+}}], %r{{[0-9]+}};
// PTX-NEXT: @%p[[OK]] bra [[DONE]];
// PTX-NEXT: mov.u64 %rd[[NOW:[0-9]+]], %globaltimer;
// PTX-NEXT: sub.u64 %rd[[NOW]], %rd[[NOW]], %rd[[START]];
// PTX-NEXT: setp.ge.u64 %p[[LATE]], %rd[[NOW]], 750000000;
// PTX-NEXT: @!%p[[LATE]] bra [[AGAIN]];
// PTX-NEXT: [[DONE]]:
// PTX:      atom.relaxed.sys.global.cas.b32 %r{{[0-9]+}}, [%rd[[BUF:[0-9]+]]], 0, 1;
// PTX:      st.relaxed.sys.global.u32 [%rd[[BUF]]+8], 5;
// PTX:      st.release.sys.global.u32 [%rd[[BUF]]+4], 2050621441;
// PTX-NEXT: fence.sc.sys;
// PTX-NEXT: trap;
// PTX:      [[PARK:\$park_[0-9]+]]:
// PTX-NEXT: nanosleep.u32 1000000;
// PTX-NEXT: bra [[PARK]];
func.func @bounded(%i: index, %ph: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024, waits = [["bounded.mlir:1:1", "consumer", "mbarrier<2> at shared offset 0"]]>} {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  nvgpu.mbarrier_wait_parity %b[%i], %ph watchdog(5, 750000000 ns) : !nvgpu.mbarrier<2>
  nvgpu.mbarrier_wait_parity %b[%i], %ph : !nvgpu.mbarrier<2>
  func.return
}
