// RUN: tawa-opt %S/../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-persistent{order=longest-first}' | filecheck %s
// RUN: tawa-opt %S/../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-persistent' | filecheck %s --check-prefix=AUTO

// order=longest-first: program t of the gx x gy grid is query block
// pid_0 = gx - 1 - t / gy and head pid_1 = t mod gy, in every partition; the
// kernel records its order.
// CHECK-LABEL: func.func @attention_fwd(
// CHECK-SAME:    attributes {nvgpu.kernel = #nvgpu.kernel<persistent>, tawa.program_order = "longest-first"}
// CHECK:         %[[GX:.*]] = nvgpu.launch_grid 0
// CHECK-NEXT:    %[[GY:.*]] = nvgpu.launch_grid 1
// CHECK:         aref.warp_specialize partition producer
// CHECK-NEXT:      scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[T:.*]] = arith.index_cast %[[P]] : index to i32
// CHECK-NEXT:        %[[GX32:.*]] = arith.index_cast %[[GX]] : index to i32
// CHECK-NEXT:        %[[GY32:.*]] = arith.index_cast %[[GY]] : index to i32
// CHECK-NEXT:        %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:        %[[LAST:.*]] = arith.subi %[[GX32]], %[[ONE]] : i32
// CHECK-NEXT:        %[[HEAD:.*]] = arith.remui %[[T]], %[[GY32]] : i32
// CHECK-NEXT:        %[[ROW:.*]] = arith.divui %[[T]], %[[GY32]] : i32
// CHECK-NEXT:        %[[BLOCK:.*]] = arith.subi %[[LAST]], %[[ROW]] : i32
// CHECK-NEXT:        %pid_x = arith.index_cast %[[BLOCK]] : i32 to index
// CHECK-NEXT:        %pid_y = arith.index_cast %[[HEAD]] : i32 to index
// CHECK-NOT:         tile.program_id
// CHECK:           } partition consumer
// CHECK-NEXT:      scf.for
// CHECK-NOT:         tile.program_id
// CHECK:             arith.divui
// CHECK-NEXT:        arith.subi
// CHECK-NEXT:        %pid_x_1 = arith.index_cast
// CHECK-LABEL: func.func @attention_fwd_causal(
// CHECK-SAME:    tawa.program_order = "longest-first"

// order=auto (the default) keeps every kernel grouped, the causal one too
// (longest-first measured slower at head dim 128; docs/passes.md): no
// tawa.program_order attribute, the grouped ids (group-m = 8).
// AUTO-LABEL: func.func @attention_fwd(
// AUTO-NOT:     tawa.program_order
// AUTO-SAME:    {
// AUTO:         arith.constant 8 : i32
// AUTO-LABEL: func.func @attention_fwd_causal(
// AUTO-NOT:     tawa.program_order
// AUTO-SAME:    {
// AUTO:         arith.constant 8 : i32

// A GEMM's K loop does not depend on pid_0: auto leaves it grouped, with no
// tawa.program_order attribute (persistent_gemm.mlir checks both).
