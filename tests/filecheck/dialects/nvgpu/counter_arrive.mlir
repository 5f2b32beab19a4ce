// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP

// nvgpu.counter_arrive: a CTA's threads arrive at a global counter together.

func.func @arrive(%addr: index, %leader: i1) -> i1 {
  %last = nvgpu.counter_arrive %addr, %leader count 3 barrier 1 threads 256
  func.return %last : i1
}

// CHECK-LABEL: func.func @arrive(%addr: index, %leader: i1) -> i1 {
// CHECK-NEXT:    %last = nvgpu.counter_arrive %addr, %leader count 3 barrier 1 threads 256
// CHECK-GENERIC: %last = "nvgpu.counter_arrive"(%addr, %leader) <{count = 3 : i64, barrier_id = 1 : i32, num_threads = 256 : i32}> : (index, i1) -> i1
