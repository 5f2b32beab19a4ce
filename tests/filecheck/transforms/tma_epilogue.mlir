// The TMA-store epilogue (tawa/transforms/tma_epilogue.py, docs/passes.md "The TMA-store
// epilogue"): the consumers stage the converted accumulator in shared memory and one
// thread stores the tile with TMA.
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{epilogue=auto prepare=false}' > %t
// RUN: filecheck %s < %t
// RUN: tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile{epilogue=auto}' | filecheck %s --check-prefix=AUTO4
// RUN: not tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile{epilogue=tma}' 2>&1 | filecheck %s --check-prefix=SMEM
// RUN: tawa-opt %S/../../../examples/batched_gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile{epilogue=tma}' | filecheck %s --check-prefix=BATCHED
// RUN: sed '0,/tma_store_wait 0/{//d}' %t | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=NOWAIT
// RUN: sed '0,/named_barrier_sync 1, 256/{//d}' %t | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=NOBARRIER

// epilogue=auto takes the TMA store where its staging tile fits beside rings of at least
// 2 stages.  The 64 KiB staging tile is charged in the shared-memory plan: stages=0 picks 3 stages
// (3 x 48 KiB + barriers), and the tile follows the rings, 1024-byte aligned.
// CHECK:      #nvgpu.kernel<threads = 384, smem = 215040,
// CHECK:      nvgpu.smem_alloc offset(0) : !nvgpu.smem<3x128x64xbf16, swizzle = 128>
// CHECK:      %staging = nvgpu.smem_alloc offset(148480) : !nvgpu.smem<1x128x256xbf16, swizzle = 128>
// CHECK-NEXT: %tmap_C = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x256xbf16, swizzle = 128>
// The epilogue of each program: the first consumer thread (128) waits until its last
// store has read the tile, a barrier of the 256 consumer threads, each warp group writes
// its 64 rows, fence, barrier, and thread 128 stores the whole tile.
// CHECK:      %[[V:.*]] = nvgpu.frag_convert %acc_1 : !nvgpu.frag<64x256xf32, wgmma> -> !nvgpu.frag<64x256xbf16, wgmma>
// CHECK-NEXT: %[[T:.*]] = nvgpu.thread_id
// CHECK-NEXT: %[[C128:.*]] = arith.constant 128 : index
// CHECK-NEXT: %[[E:.*]] = arith.cmpi eq, %[[T]], %[[C128]] : index
// CHECK-NEXT: scf.if %[[E]] {
// CHECK-NEXT:   nvgpu.tma_store_wait 0
// CHECK-NEXT: }
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT: nvgpu.named_barrier_sync 1, 256
// CHECK-NEXT: nvgpu.frag_store_shared %[[V]], %staging[%[[Z]], %wg_row0] : !nvgpu.frag<64x256xbf16, wgmma>, !nvgpu.smem<1x128x256xbf16, swizzle = 128>
// CHECK-NEXT: nvgpu.fence_proxy_async
// CHECK-NEXT: nvgpu.named_barrier_sync 1, 256
// CHECK:      scf.if
// CHECK-NEXT:   nvgpu.tma_store %staging[%[[Z]]], %tmap_C[%m0_1, %n0_1] : !nvgpu.smem<1x128x256xbf16, swizzle = 128>, !nvgpu.tma_desc<128x256xbf16, swizzle = 128>
// CHECK-NEXT: }
// No wait after the store: it drains during the next program's main loop.
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }
// Once, after the program loop: the last store has read the tile before the CTA ends.
// CHECK:      scf.if
// CHECK-NEXT:   nvgpu.tma_store_wait 0
// CHECK-NEXT: }
// CHECK-NOT:  frag_store_global

// With 4 stages the tile does not fit: auto keeps the thread epilogue.
// AUTO4:     smem<4x128x64xbf16
// AUTO4-NOT: tma_store
// AUTO4:     nvgpu.frag_store %
// AUTO4-NOT: tma_store

// SMEM: gemm.mlir:7:1: error: tawa-lower-tile: epilogue=tma: the rings and the staging tiles of the TMA-store epilogue need 264192 bytes of shared memory, more than the 232448 a block may use; use fewer stages

// A batched (3-D) C: a box of one plane, three coordinates.
// BATCHED: nvgpu.tma_descriptor %C : memref<?x?x?xbf16> -> !nvgpu.tma_desc<1x128x256xbf16, swizzle = 128>
// BATCHED: nvgpu.tma_store %staging[%{{.*}}], %tmap_C[%{{.*}}, %{{.*}}, %{{.*}}] : !nvgpu.smem<1x128x256xbf16, swizzle = 128>, !nvgpu.tma_desc<1x128x256xbf16, swizzle = 128>

// tawa-verify-protocol proves the staging tile's reuse: without the wait before the
// next program's writes, or without the barrier that tells the other threads of it,
// a write may race with the previous store's read.
// NOWAIT:    error: tawa-verify-protocol: staging tile written during a TMA store in @gemm (K = 0, 2 programs per CTA): warp group 1 writes %staging[0] while a TMA store of warp group 1 may still read it
// NOBARRIER: error: tawa-verify-protocol: staging tile written during a TMA store in @gemm
