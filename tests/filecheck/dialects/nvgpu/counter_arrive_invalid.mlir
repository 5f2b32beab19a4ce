// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// EVERY-CASE-FAILS-NOT: builtin.module

func.func @no_arrivals(%addr: index, %leader: i1) {
  %none = arith.constant 0 : index
  %last = nvgpu.counter_arrive %addr, %leader count %none barrier 1 threads 128
  func.return
}
// CHECK: error: nvgpu.counter_arrive count must be in [1, 2^31), got 0

// -----

func.func @barrier_id(%addr: index, %leader: i1, %n: index) {
  %last = nvgpu.counter_arrive %addr, %leader count %n barrier 16 threads 128
  func.return
}
// CHECK: error: nvgpu.counter_arrive barrier id must be in [0, 15], got 16

// -----

func.func @part_of_a_warp(%addr: index, %leader: i1, %n: index) {
  %last = nvgpu.counter_arrive %addr, %leader count %n barrier 1 threads 100
  func.return
}
// CHECK: error: nvgpu.counter_arrive thread count must be a multiple of 32 in [32, 1024], got 100
