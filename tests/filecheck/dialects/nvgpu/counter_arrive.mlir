// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP

// nvgpu.counter_arrive: a CTA's threads arrive at a global counter together.

// The count is a value: a constant, or computed (programs that share a tile, per tile).
func.func @arrive(%addr: index, %leader: i1, %n: index) -> i1 {
  %last = nvgpu.counter_arrive %addr, %leader count %n barrier 1 threads 256
  func.return %last : i1
}

// CHECK-LABEL: func.func @arrive(%addr: index, %leader: i1, %n: index) -> i1 {
// CHECK-NEXT:    %last = nvgpu.counter_arrive %addr, %leader count %n barrier 1 threads 256
// CHECK-GENERIC: %last = "nvgpu.counter_arrive"(%addr, %leader, %n) <{barrier_id = 1 : i32, num_threads = 256 : i32}> : (index, i1, index) -> i1
