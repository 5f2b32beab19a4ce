// RUN: tawa-opt %s -p tawa-materialize-partitions | filecheck %s
// RUN: tawa-opt %s -p 'tawa-materialize-partitions{group-m=0}' | filecheck %s --check-prefix=PLAIN

// Partitions whose compute is already lowered (what tawa-lower-tile leaves)
// become branches on the warp-group id: the producer (warp group 0) lowers
// its budget and runs on one thread, the consumers (warp groups 1-2) raise
// theirs (the launch cap of 384 threads is 168 registers).  Program ids of a
// 2-D grid become grouped CTA ids.
func.func @k(%x: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    %p = tile.program_id 0
    %m = arith.muli %p, %x : index
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %q = tile.program_id 1
    %n = arith.muli %q, %x : index
    nvgpu.fence_proxy_async
  }
  func.return
}

// CHECK-LABEL: func.func @k(%x: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 384, regs = [40, 232, 232]>} {
// CHECK:         %[[G:.*]] = arith.constant 8 : i32
// CHECK:         %pid_x = arith.index_cast %{{.*}} : i32 to index
// CHECK:         %pid_y = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT:    %[[WG:.*]] = nvgpu.warp_group_id
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[IS_P:.*]] = arith.cmpi ult, %[[WG]], %[[ONE]] : index
// CHECK-NEXT:    scf.if %[[IS_P]] {
// CHECK-NEXT:      nvgpu.setmaxnreg dec 40
// CHECK-NEXT:      %[[T:.*]] = nvgpu.thread_id
// CHECK-NEXT:      %[[C128:.*]] = arith.constant 128 : index
// CHECK-NEXT:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[LANE:.*]] = arith.remui %[[T]], %[[C128]] : index
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %[[C0]] : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        %m = arith.muli %pid_x, %x : index
// CHECK-NEXT:        nvgpu.fence_proxy_async
// CHECK-NEXT:      }
// CHECK-NEXT:    } else {
// CHECK-NEXT:      nvgpu.setmaxnreg inc 232
// CHECK-NEXT:      %n = arith.muli %pid_y, %x : index
// CHECK-NEXT:      nvgpu.fence_proxy_async
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// With group-m=0 program ids are plain CTA ids.
// PLAIN-LABEL: func.func @k
// PLAIN-NEXT:    %[[X:.*]] = nvgpu.block_id 0
// PLAIN-NEXT:    %[[Y:.*]] = nvgpu.block_id 1
// PLAIN:         %m = arith.muli %[[X]], %x : index
// PLAIN:         %n = arith.muli %[[Y]], %x : index
