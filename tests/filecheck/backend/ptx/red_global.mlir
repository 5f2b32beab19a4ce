// RUN: tawa-opt %s -t ptx | filecheck %s
// nvgpu.frag_red_global (emit_atomics.py): one relaxed GPU-scope red.add.f32 per value of the
// thread, at the store's addresses; masked, each under its value's predicate.

func.func @red(%y: f32, %n: i32, %a: index, %p: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 0>} {
  %v = nvgpu.frag_splat %y : f32 -> !nvgpu.frag<64x16xf32, wgmma>
  %cols = nvgpu.frag_index col : !nvgpu.frag<64x16xi32, wgmma>
  %m = nvgpu.frag_cmpi slt, %cols, %n : !nvgpu.frag<64x16xi32, wgmma>, i32
  nvgpu.frag_red_global %v, %a, %p : !nvgpu.frag<64x16xf32, wgmma>
  nvgpu.frag_red_global %v, %a, %p mask %m : !nvgpu.frag<64x16xf32, wgmma>, !nvgpu.frag<64x16xi1, wgmma>
  func.return
}
// Values 0-1 at row 0, 2-3 at row 8 (pitch · 8 from the first), then the next 8 columns.
// CHECK:      red.relaxed.gpu.global.add.f32 [%rd[[A:[0-9]+]]+0], %f{{[0-9]+}};
// CHECK-NEXT: red.relaxed.gpu.global.add.f32 [%rd[[A]]+4], %f{{[0-9]+}};
// CHECK-NEXT: red.relaxed.gpu.global.add.f32 [%rd[[B:[0-9]+]]+0], %f{{[0-9]+}};
// CHECK-NEXT: red.relaxed.gpu.global.add.f32 [%rd[[B]]+4], %f{{[0-9]+}};
// CHECK-NEXT: red.relaxed.gpu.global.add.f32 [%rd[[A]]+32], %f{{[0-9]+}};
// CHECK:      @%p{{[0-9]+}} red.relaxed.gpu.global.add.f32 [%rd[[A]]+0], %f{{[0-9]+}};
// CHECK-COUNT-7: @%p{{[0-9]+}} red.relaxed.gpu.global.add.f32
// CHECK-NOT:  st.global
// CHECK:      ret;
