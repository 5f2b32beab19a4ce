// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=4 persistent=false prepare=false epilogue=threads}' | filecheck %s
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{group-m=0 persistent=false prepare=false}' | filecheck %s --check-prefix=PLAIN

// PLAIN-LABEL: func.func @gemm
// PLAIN-NOT:     nvgpu.grid_dim
// PLAIN:         nvgpu.block_id 0
// PLAIN-NEXT:    nvgpu.block_id 1

// CHECK-LABEL: func.func @gemm
// CHECK-SAME:    nvgpu.kernel = #nvgpu.kernel<threads = 384, smem = {{[0-9]+}}, regs = [40, 232, 232]>
// Program ids come from the CTA id in grouped order (8 row tiles per group).
// CHECK-NEXT:    %[[X:.*]] = nvgpu.block_id 0
// CHECK-NEXT:    %[[Y:.*]] = nvgpu.block_id 1
// CHECK-NEXT:    %[[NX:.*]] = nvgpu.grid_dim 0
// CHECK-NEXT:    %[[NY:.*]] = nvgpu.grid_dim 1
// CHECK:         %[[PID0:pid_x]] = arith.index_cast
// CHECK:         %[[PID1:pid_y]] = arith.index_cast
// Warp group 0 is the producer: fewer registers, one thread issues the TMA loads.
// CHECK:         %[[WG:.*]] = nvgpu.warp_group_id
// CHECK:         %[[IS_P:.*]] = arith.cmpi ult, %[[WG]], %{{.*}} : index
// CHECK-NEXT:    scf.if %[[IS_P]] {
// CHECK-NEXT:      nvgpu.setmaxnreg dec 40
// CHECK:           scf.if
// CHECK:             arith.muli %[[PID0]],
// CHECK:             nvgpu.tma_load
// Warp groups 1 and 2 are consumers: 64 accumulator rows each.
// CHECK:         } else {
// CHECK-NEXT:      nvgpu.setmaxnreg inc 232
// CHECK:           %[[ROW0:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK:           %[[Z:.*]] = nvgpu.frag_zeros : !nvgpu.frag<64x256xf32, wgmma>
// CHECK:           scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[Z]], {{.*}}) -> (!nvgpu.frag<64x256xf32, wgmma>, i32, i32) {
// CHECK:             %[[DA:.*]] = nvgpu.wgmma_descriptor %{{.*}}[%{{.*}}, %[[ROW0]]] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// CHECK-NEXT:        %[[DB:.*]] = nvgpu.wgmma_descriptor %{{.*}} : !nvgpu.smem<4x256x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>
// CHECK:             nvgpu.wgmma_fence
// CHECK-NEXT:        %[[D:.*]] = nvgpu.wgmma %[[DA]], %[[DB]], %[[ACC]], %{{.*}} {rhs_transposed}
// CHECK-NEXT:        nvgpu.wgmma_commit_group
// CHECK-NEXT:        nvgpu.wgmma_wait_group 1
// CHECK:             scf.yield %[[D]],
// CHECK:           %[[DONE:.*]] = nvgpu.wgmma_wait_group 0 (%{{.*}}) : !nvgpu.frag<64x256xf32, wgmma>
// CHECK:           %[[ROW:.*]] = arith.addi %{{.*}}, %[[ROW0]] : index
// CHECK-NEXT:      %[[V:.*]] = nvgpu.frag_convert %[[DONE]] : !nvgpu.frag<64x256xf32, wgmma> -> !nvgpu.frag<64x256xbf16, wgmma>
// CHECK:           nvgpu.frag_store_global %[[V]], %{{.*}}, %{{.*}} : !nvgpu.frag<64x256xbf16, wgmma>
// No tile or aref op survives.
// CHECK-NOT:     tile.
// CHECK-NOT:     aref.
