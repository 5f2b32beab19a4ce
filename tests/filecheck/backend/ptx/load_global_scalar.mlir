// RUN: tawa-opt %s -t ptx | filecheck %s
// nvgpu.load_global_scalar (emit_memory.py): 0, then the element under the in-bounds predicate.

func.func @load(%T: memref<?xi32>, %S: memref<?xf32>, %i: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 0>} {
  %base = nvgpu.memref_base %T : memref<?xi32>
  %c0 = arith.constant 0 : index
  %n = memref.dim %T, %c0 : memref<?xi32>
  %inside = arith.cmpi ult, %i, %n : index
  %c4 = arith.constant 4 : index
  %off = arith.muli %i, %c4 : index
  %addr = arith.addi %base, %off : index
  %e = nvgpu.load_global_scalar %addr, %inside : i32
  %sbase = nvgpu.memref_base %S : memref<?xf32>
  %saddr = arith.addi %sbase, %off : index
  %s = nvgpu.load_global_scalar %saddr, %inside : f32
  func.return
}
// CHECK:      setp.lo.u64 %p[[IN:[0-9]+]],
// CHECK:      mov.b32 %r[[E:[0-9]+]], 0;
// CHECK-NEXT: @%p[[IN]] ld.global.b32 %r[[E]], [%rd{{[0-9]+}}];
// CHECK:      mov.f32 %f[[S:[0-9]+]], 0f00000000;
// CHECK-NEXT: @%p[[IN]] ld.global.f32 %f[[S]], [%rd{{[0-9]+}}];
