// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-persistent' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s --check-prefix=LOWERED

// Every partition loops over the logical programs, starting at its CTA id and
// striding by the CTAs launched; program ids come from the program index, in
// grouped order (order=auto: a GEMM's work does not grow with pid_0, so the
// kernel has no tawa.program_order attribute; see persistent_order.mlir).
// CHECK-LABEL: func.func @gemm
// CHECK-SAME:    attributes {nvgpu.kernel = #nvgpu.kernel<persistent>}
// CHECK:         %[[CTA:.*]] = nvgpu.block_id 0
// CHECK-NEXT:    %[[CTAS:.*]] = nvgpu.grid_dim 0
// CHECK-NEXT:    %[[GX:.*]] = nvgpu.launch_grid 0
// CHECK-NEXT:    %[[GY:.*]] = nvgpu.launch_grid 1
// CHECK-NEXT:    %[[PROGRAMS:.*]] = arith.muli %[[GX]], %[[GY]] : index
// CHECK-NEXT:    aref.warp_specialize partition producer
// CHECK-NEXT:      scf.for %[[P:.*]] = %[[CTA]] to %[[PROGRAMS]] step %[[CTAS]] {
// CHECK:             arith.constant 8 : i32
// CHECK:             %[[PX:pid_x]] = arith.index_cast
// CHECK:             %[[PY:pid_y]] = arith.index_cast
// CHECK-NOT:         tile.program_id
// CHECK:             arith.muli %[[PX]],
// CHECK:             aref.put
// CHECK:         } partition consumer
// CHECK-NEXT:      scf.for %{{.*}} = %[[CTA]] to %[[PROGRAMS]] step %[[CTAS]] {
// CHECK:             aref.get
// CHECK:             tile.store

// The aref counters run on across programs: they are carried by the program loop.
// LOWERED-LABEL: func.func @gemm
// LOWERED:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i32) {
// LOWERED:           nvgpu.tma_load
