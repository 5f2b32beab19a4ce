// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-persistent{order=longest-first}' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-persistent' | filecheck %s --check-prefix=AUTO
// RUN: tawa-opt %S/../../../../examples/attention_fwd_d256.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-persistent' | filecheck %s --check-prefix=SHORT

// order=longest-first: program t of the gx x gy x gz grid (query blocks,
// heads, batches) is query block pid_0 = gx - 1 - t / (gy · gz), head
// pid_1 = r mod gy and batch pid_2 = r / gy of r = t mod (gy · gz), in every
// partition; the kernel records its order.
// CHECK-LABEL: func.func @attention_fwd(
// CHECK-SAME:    attributes {nvgpu.kernel = #nvgpu.kernel<persistent>, tawa.program_order = "longest-first"}
// CHECK:         %[[GX:.*]] = nvgpu.launch_grid 0
// CHECK-NEXT:    %[[GY:.*]] = nvgpu.launch_grid 1
// CHECK-NEXT:    %[[GZ:.*]] = nvgpu.launch_grid 2
// CHECK:         aref.warp_specialize partition producer
// CHECK-NEXT:      scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[T:.*]] = arith.index_cast %[[P]] : index to i32
// CHECK-NEXT:        %[[GX32:.*]] = arith.index_cast %[[GX]] : index to i32
// CHECK-NEXT:        %[[GY32:.*]] = arith.index_cast %[[GY]] : index to i32
// CHECK-NEXT:        %[[GZ32:.*]] = arith.index_cast %[[GZ]] : index to i32
// CHECK-NEXT:        %[[REST:.*]] = arith.muli %[[GY32]], %[[GZ32]] : i32
// CHECK-NEXT:        %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:        %[[LAST:.*]] = arith.subi %[[GX32]], %[[ONE]] : i32
// CHECK-NEXT:        %[[R:.*]] = arith.remui %[[T]], %[[REST]] : i32
// CHECK-NEXT:        %[[ROW:.*]] = arith.divui %[[T]], %[[REST]] : i32
// CHECK-NEXT:        %[[BLOCK:.*]] = arith.subi %[[LAST]], %[[ROW]] : i32
// CHECK-NEXT:        %[[HEAD:.*]] = arith.remui %[[R]], %[[GY32]] : i32
// CHECK-NEXT:        %[[BATCH:.*]] = arith.divui %[[R]], %[[GY32]] : i32
// CHECK-NEXT:        %pid_x = arith.index_cast %[[BLOCK]] : i32 to index
// CHECK-NEXT:        %pid_y = arith.index_cast %[[HEAD]] : i32 to index
// CHECK-NEXT:        %pid_z = arith.index_cast %[[BATCH]] : i32 to index
// CHECK-NOT:         tile.program_id
// CHECK:           } partition consumer
// CHECK-NEXT:      scf.for
// CHECK-NOT:         tile.program_id
// CHECK:             arith.divui
// CHECK-NEXT:        arith.subi
// CHECK-NEXT:        arith.remui
// CHECK-NEXT:        arith.divui
// CHECK-NEXT:        %pid_x_1 = arith.index_cast
// CHECK-LABEL: func.func @attention_fwd_causal(
// CHECK-SAME:    tawa.program_order = "longest-first"

// order=auto (the default) runs the non-causal kernel in column order: its
// K and V loads do not depend on pid_0, so the query blocks of one head run
// together (pid_0 = t mod gx, then pid_1 = (t / gx) mod gy, pid_2 = t / (gx · gy))
// and share them in L2.  The causal kernel, whose key loop grows with pid_0,
// runs in pairs: the loop is over ⌈gx/2⌉ · gy · gz pairs, each running query
// blocks gx - 1 - p and p of one head (p alone when they are the same block),
// one after the other.
// AUTO-LABEL: func.func @attention_fwd(
// AUTO-SAME:    tawa.program_order = "column"
// AUTO:         %[[CGX:.*]] = nvgpu.launch_grid 0
// AUTO-NEXT:    %[[CGY:.*]] = nvgpu.launch_grid 1
// AUTO:         aref.warp_specialize partition producer
// AUTO-NEXT:      scf.for %[[CP:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// AUTO-NEXT:        %[[CT:.*]] = arith.index_cast %[[CP]] : index to i32
// AUTO-NEXT:        %[[CGX32:.*]] = arith.index_cast %[[CGX]] : index to i32
// AUTO-NEXT:        %[[CGY32:.*]] = arith.index_cast %[[CGY]] : index to i32
// AUTO-NEXT:        arith.index_cast
// AUTO-NEXT:        %[[COLUMN:.*]] = arith.divui %[[CT]], %[[CGX32]] : i32
// AUTO-NEXT:        %[[BLOCK:.*]] = arith.remui %[[CT]], %[[CGX32]] : i32
// AUTO-NEXT:        %[[HEAD:.*]] = arith.remui %[[COLUMN]], %[[CGY32]] : i32
// AUTO-NEXT:        %[[BATCH:.*]] = arith.divui %[[COLUMN]], %[[CGY32]] : i32
// AUTO-NEXT:        %pid_x = arith.index_cast %[[BLOCK]] : i32 to index
// AUTO-NEXT:        %pid_y = arith.index_cast %[[HEAD]] : i32 to index
// AUTO-NEXT:        %pid_z = arith.index_cast %[[BATCH]] : i32 to index
// AUTO-NOT:         tile.program_id
// AUTO-LABEL: func.func @attention_fwd_causal(
// AUTO-SAME:    tawa.program_order = "paired"
// AUTO:         %[[GX:.*]] = nvgpu.launch_grid 0
// AUTO-NEXT:    %[[GY:.*]] = nvgpu.launch_grid 1
// AUTO-NEXT:    %[[GZ:.*]] = nvgpu.launch_grid 2
// AUTO:         %[[ODD:.*]] = arith.addi %[[GX]], %{{.*}} : index
// AUTO-NEXT:    %[[HALF:.*]] = arith.divui %[[ODD]], %{{.*}} : index
// AUTO-NEXT:    %[[HALFY:.*]] = arith.muli %[[HALF]], %[[GY]] : index
// AUTO-NEXT:    %[[PAIRS:.*]] = arith.muli %[[HALFY]], %[[GZ]] : index
// AUTO:         aref.warp_specialize partition producer
// AUTO-NEXT:      scf.for %[[Q:.*]] = %{{.*}} to %[[PAIRS]] step %{{.*}} {
// AUTO:             %[[ALONE:.*]] = arith.cmpi eq
// AUTO:             %[[MEMBERS:.*]] = arith.select %[[ALONE]], %{{.*}}, %{{.*}} : index
// AUTO:             scf.for %[[M:.*]] = %{{.*}} to %[[MEMBERS]] step %{{.*}} {
// AUTO:               %[[P:.*]] = arith.remui
// AUTO-NEXT:          %[[R:.*]] = arith.divui
// AUTO:               %[[LAST:.*]] = arith.subi
// AUTO-NEXT:          %[[HEAVY:.*]] = arith.subi %[[LAST]], %[[P]] : i32
// AUTO:               %[[FIRST:.*]] = arith.cmpi eq
// AUTO-NEXT:          %[[PID0:.*]] = arith.select %[[FIRST]], %[[HEAVY]], %[[P]] : i32
// AUTO-NEXT:          %[[HEAD:.*]] = arith.remui %[[R]], %{{.*}} : i32
// AUTO-NEXT:          %[[BATCH:.*]] = arith.divui %[[R]], %{{.*}} : i32
// AUTO-NEXT:          %pid_x = arith.index_cast %[[PID0]] : i32 to index
// AUTO-NEXT:          %pid_y = arith.index_cast %[[HEAD]] : i32 to index
// AUTO-NEXT:          %pid_z = arith.index_cast %[[BATCH]] : i32 to index
// AUTO-NOT:           tile.program_id
// AUTO:           } partition consumer
// AUTO-NEXT:      scf.for %{{.*}} = %{{.*}} to %[[PAIRS]] step

// A GEMM's K loop does not depend on pid_0: auto leaves it grouped, with no
// tawa.program_order attribute (persistent_gemm.mlir checks both).

// At head dim 256 a pair's long program streams 33 MiB through the L2 (over
// half of it) before its short one re-reads the first key blocks, so auto
// runs the short member first: the select takes p for member 0.
// SHORT-LABEL: func.func @attention_fwd_d256(
// SHORT-SAME:    tawa.program_order = "column"
// SHORT-LABEL: func.func @attention_fwd_d256_causal(
// SHORT-SAME:    tawa.program_order = "paired-short-first"
// SHORT:         aref.warp_specialize partition producer
// SHORT:             scf.for %member = %{{.*}} to %members step %{{.*}} {
// SHORT:               %[[P:.*]] = arith.remui
// SHORT:               %[[LAST:.*]] = arith.subi
// SHORT-NEXT:          %[[HEAVY:.*]] = arith.subi %[[LAST]], %[[P]] : i32
// SHORT:               %[[FIRST:.*]] = arith.cmpi eq
// SHORT-NEXT:          %[[PID0:.*]] = arith.select %[[FIRST]], %[[P]], %[[HEAVY]] : i32
// SHORT:               %pid_x = arith.index_cast %[[PID0]] : i32 to index
