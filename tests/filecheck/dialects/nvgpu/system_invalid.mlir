// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

// The verifier messages of the watchdog's ops: the timed spin and those of
// tawa/dialects/nvgpu/system.py.

func.func @timed_wait_timeout(%i: index, %p: i32) {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  %late = nvgpu.mbarrier_timed_wait_parity %b[%i], %p, 0 ns : !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: nvgpu.mbarrier_timed_wait_parity timeout_ns must be positive, got 0

// -----

// Stores of 32-bit words, at word offsets.
func.func @store_offset(%v: i32, %buf: i64) {
  nvgpu.store_sys %v, %buf[6] : i32
  func.return
}
// CHECK: error: nvgpu.store_sys offset must be a non-negative multiple of 4, got 6

// -----

func.func @park_ns() {
  nvgpu.park 0
  func.return
}
// CHECK: error: nvgpu.park ns must be positive, got 0
