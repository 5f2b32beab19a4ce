// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP

// nvgpu.load_global_scalar: every thread reads one 32-bit element where in_bounds holds.

func.func @load(%addr: index, %inside: i1) -> (i32, f32) {
  %e = nvgpu.load_global_scalar %addr, %inside : i32
  %s = nvgpu.load_global_scalar %addr, %inside : f32
  func.return %e, %s : i32, f32
}

// CHECK-LABEL: func.func @load(%addr: index, %inside: i1) -> (i32, f32) {
// CHECK-NEXT:    %e = nvgpu.load_global_scalar %addr, %inside : i32
// CHECK-NEXT:    %s = nvgpu.load_global_scalar %addr, %inside : f32
// CHECK-GENERIC: %e = "nvgpu.load_global_scalar"(%addr, %inside) : (index, i1) -> i32
