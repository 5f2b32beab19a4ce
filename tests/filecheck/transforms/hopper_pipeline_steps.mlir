// The composite pass is the same as its steps spelled out (which
// --print-between-passes can show one by one): the thread epilogue, and the
// TMA-store epilogue the GEMM takes by default (subtiled at 4 stages).
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=4 epilogue=threads}' -t ptx > %t.composite.ptx
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-persistent,tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile,tawa-materialize-partitions,tawa-expand-fragment-stores,tawa-prepare-ptx' -t ptx | diff %t.composite.ptx -
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=4}' -t ptx > %t.tma.ptx
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-persistent,tawa-assign-stage-phase,tawa-lower-aref,tawa-stage-stores{staging=subtiled},tawa-stage-operands,tawa-lower-tile,tawa-pingpong,tawa-drain-stores,tawa-materialize-partitions,tawa-expand-fragment-stores,tawa-prepare-ptx' -t ptx | diff %t.tma.ptx -
// RUN: tawa-opt %S/../../../examples/gemm.mlir --print-between-passes -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-persistent,tawa-assign-stage-phase,tawa-lower-aref,tawa-stage-stores,tawa-stage-operands,tawa-lower-tile,tawa-pingpong,tawa-drain-stores,tawa-materialize-partitions,tawa-expand-fragment-stores' | filecheck %s

// CHECK: IR after tawa-warp-specialize
// CHECK: aref.warp_specialize partition producer
// CHECK: IR after tawa-pipeline
// CHECK: depth = 4
// CHECK: IR after tawa-persistent
// CHECK: nvgpu.launch_grid
// CHECK: IR after tawa-assign-stage-phase
// CHECK: aref.put %{{.*}}[%stage, %phase]
// CHECK: IR after tawa-lower-aref
// CHECK: nvgpu.tma_load
// CHECK: partition consumer
// CHECK: tile.dot_async
// CHECK: IR after tawa-stage-stores
// CHECK: %staging = nvgpu.smem_alloc
// CHECK: nvgpu.staged_store %{{.*}} via %staging, %tmap_C
// CHECK: IR after tawa-stage-operands
// CHECK: IR after tawa-lower-tile
// CHECK: partition consumer
// CHECK: nvgpu.wgmma
// CHECK: nvgpu.tma_store %staging
// CHECK-NOT: nvgpu.staged_store
// CHECK: IR after tawa-pingpong
// CHECK: IR after tawa-drain-stores
// CHECK: nvgpu.tma_store_wait 0
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK: IR after tawa-materialize-partitions
// CHECK: nvgpu.setmaxnreg
// The module printed at the end is the IR after tawa-expand-fragment-stores.
// CHECK: func.func @gemm
// CHECK: nvgpu.setmaxnreg dec 40
// CHECK-NOT: aref.
