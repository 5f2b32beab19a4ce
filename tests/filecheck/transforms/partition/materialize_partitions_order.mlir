// RUN: tawa-opt %s -p 'tawa-materialize-partitions{order=longest-first}' | filecheck %s
// RUN: tawa-opt %s -p 'tawa-materialize-partitions{order=grouped}' | filecheck %s --check-prefix=GROUPED
// RUN: tawa-opt %s -p tawa-materialize-partitions | filecheck %s --check-prefix=GROUPED

// Without tawa-persistent, CTA (x, y[, z]) is program number
// L = x + y*nx (+ z*nx*ny) in the kernel's program order.  order=longest-first:
// pid_0 = nx - 1 - L / ny, pid_1 = L mod ny.  order=auto keeps every kernel
// grouped (docs/passes.md says why), like order=grouped.
func.func @causal(%n: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %p = tile.program_id 0
    %q = tile.program_id 1
    %m = arith.muli %p, %c64 : index
    %diag = arith.addi %m, %c64 : index
    %hi = arith.minui %diag, %n : index
    scf.for %i = %c0 to %hi step %c64 {
      %j = arith.addi %i, %q : index
    }
  } partition consumer warps(4) regs(232) {
    nvgpu.fence_proxy_async
  }
  func.return
}

// CHECK-LABEL: func.func @causal(%n: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 256, regs = [40, 232]>, tawa.program_order = "longest-first"} {
// CHECK-NEXT:    %[[X:.*]] = nvgpu.block_id 0
// CHECK-NEXT:    %[[Y:.*]] = nvgpu.block_id 1
// CHECK-NEXT:    %[[NX:.*]] = nvgpu.grid_dim 0
// CHECK-NEXT:    %[[NY:.*]] = nvgpu.grid_dim 1
// CHECK-NEXT:    %[[YX:.*]] = arith.muli %[[Y]], %[[NX]] : index
// CHECK-NEXT:    %[[L:.*]] = arith.addi %[[X]], %[[YX]] : index
// CHECK-NEXT:    %[[L32:.*]] = arith.index_cast %[[L]] : index to i32
// CHECK-NEXT:    %[[NX32:.*]] = arith.index_cast %[[NX]] : index to i32
// CHECK-NEXT:    %[[NY32:.*]] = arith.index_cast %[[NY]] : index to i32
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[LAST:.*]] = arith.subi %[[NX32]], %[[ONE]] : i32
// CHECK-NEXT:    %[[P1:.*]] = arith.remui %[[L32]], %[[NY32]] : i32
// CHECK-NEXT:    %[[ROW:.*]] = arith.divui %[[L32]], %[[NY32]] : i32
// CHECK-NEXT:    %[[P0:.*]] = arith.subi %[[LAST]], %[[ROW]] : i32
// CHECK-NEXT:    %pid_x = arith.index_cast %[[P0]] : i32 to index
// CHECK-NEXT:    %pid_y = arith.index_cast %[[P1]] : i32 to index
// CHECK-NOT:     tile.program_id
// CHECK:         arith.muli %pid_x, %{{.*}} : index

// GROUPED-LABEL: func.func @causal(%n: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 256, regs = [40, 232]>} {
// GROUPED:         arith.constant 8 : i32

// A loop whose bound shrinks as pid_0 grows (n - pid_0 * 64): longest-first
// when asked, whatever the work (work_grows_with_pid0 would not pick it).
func.func @shrinking(%n: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %p = tile.program_id 0
    %q = tile.program_id 1
    %m = arith.muli %p, %c64 : index
    %hi = arith.subi %n, %m : index
    scf.for %i = %c0 to %hi step %c64 {
      %j = arith.addi %i, %q : index
    }
  } partition consumer warps(4) regs(232) {
    nvgpu.fence_proxy_async
  }
  func.return
}

// CHECK-LABEL: func.func @shrinking(
// CHECK-SAME:    tawa.program_order = "longest-first"
// GROUPED-LABEL: func.func @shrinking(%n: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 256, regs = [40, 232]>} {
// GROUPED:         arith.constant 8 : i32

// A 3-D grid: pid_0 = nx - 1 - L / (ny * nz), r = L mod (ny * nz),
// pid_1 = r mod ny, pid_2 = r / ny.
func.func @batched(%n: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %p = tile.program_id 0
    %q = tile.program_id 1
    %b = tile.program_id 2
    %hi = arith.addi %p, %c1 : index
    scf.for %i = %c0 to %hi step %c1 {
      %j = arith.addi %q, %b : index
    }
  } partition consumer warps(4) regs(232) {
    nvgpu.fence_proxy_async
  }
  func.return
}

// CHECK-LABEL: func.func @batched(
// CHECK-SAME:    tawa.program_order = "longest-first"
// CHECK-NEXT:    %[[X:.*]] = nvgpu.block_id 0
// CHECK-NEXT:    %[[Y:.*]] = nvgpu.block_id 1
// CHECK-NEXT:    %[[Z:.*]] = nvgpu.block_id 2
// CHECK-NEXT:    %[[NX:.*]] = nvgpu.grid_dim 0
// CHECK-NEXT:    %[[NY:.*]] = nvgpu.grid_dim 1
// CHECK-NEXT:    %[[NZ:.*]] = nvgpu.grid_dim 2
// CHECK-NEXT:    %[[YX:.*]] = arith.muli %[[Y]], %[[NX]] : index
// CHECK-NEXT:    %[[LXY:.*]] = arith.addi %[[X]], %[[YX]] : index
// CHECK-NEXT:    %[[PLANE:.*]] = arith.muli %[[NX]], %[[NY]] : index
// CHECK-NEXT:    %[[ZP:.*]] = arith.muli %[[Z]], %[[PLANE]] : index
// CHECK-NEXT:    %[[L:.*]] = arith.addi %[[LXY]], %[[ZP]] : index
// CHECK-NEXT:    %[[L32:.*]] = arith.index_cast %[[L]] : index to i32
// CHECK-NEXT:    %[[NX32:.*]] = arith.index_cast %[[NX]] : index to i32
// CHECK-NEXT:    %[[NY32:.*]] = arith.index_cast %[[NY]] : index to i32
// CHECK-NEXT:    %[[NZ32:.*]] = arith.index_cast %[[NZ]] : index to i32
// CHECK-NEXT:    %[[REST:.*]] = arith.muli %[[NY32]], %[[NZ32]] : i32
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[LAST:.*]] = arith.subi %[[NX32]], %[[ONE]] : i32
// CHECK-NEXT:    %[[R:.*]] = arith.remui %[[L32]], %[[REST]] : i32
// CHECK-NEXT:    %[[ROW:.*]] = arith.divui %[[L32]], %[[REST]] : i32
// CHECK-NEXT:    %[[P0:.*]] = arith.subi %[[LAST]], %[[ROW]] : i32
// CHECK-NEXT:    %[[P1:.*]] = arith.remui %[[R]], %[[NY32]] : i32
// CHECK-NEXT:    %[[P2:.*]] = arith.divui %[[R]], %[[NY32]] : i32
// CHECK-NEXT:    %pid_x = arith.index_cast %[[P0]] : i32 to index
// CHECK-NEXT:    %pid_y = arith.index_cast %[[P1]] : i32 to index
// CHECK-NEXT:    %pid_z = arith.index_cast %[[P2]] : i32 to index
