// The composite pass is the same as its steps spelled out (which
// --print-between-passes can show one by one).
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{stages=4 epilogue=threads}' -t ptx > %t.composite.ptx
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-persistent,tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile,tawa-materialize-partitions,tawa-expand-fragment-stores,tawa-prepare-ptx' -t ptx | diff %t.composite.ptx -
// RUN: tawa-opt %S/../../../examples/gemm.mlir --print-between-passes -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-persistent,tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile,tawa-materialize-partitions,tawa-expand-fragment-stores' | filecheck %s

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
// CHECK: IR after tawa-lower-tile
// CHECK: partition consumer
// CHECK: nvgpu.wgmma
// CHECK: IR after tawa-materialize-partitions
// CHECK: nvgpu.frag_store
// The module printed at the end is the IR after tawa-expand-fragment-stores.
// CHECK: func.func @gemm
// CHECK: nvgpu.setmaxnreg dec 40
// CHECK-NOT: aref.
