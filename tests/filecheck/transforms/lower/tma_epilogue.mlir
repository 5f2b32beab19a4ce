// The TMA-store epilogue (tawa/transforms/lower/tma_epilogue.py, docs/passes.md "The TMA-store
// epilogue"): the consumers stage the converted accumulator in shared memory and one
// thread stores the tile with TMA.
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{epilogue=auto staging=full prepare=false}' > %t.full
// RUN: filecheck %s < %t.full
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{epilogue=auto staging=subtiled prepare=false}' > %t
// RUN: filecheck %s --check-prefix=SUB < %t
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase,tawa-lower-aref,tawa-stage-stores{epilogue=auto staging=full},tawa-lower-tile,tawa-drain-stores' | filecheck %s --check-prefix=FULL4
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase,tawa-lower-aref,tawa-stage-stores,tawa-lower-tile,tawa-drain-stores' | filecheck %s --check-prefix=AUTO4
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=4},tawa-assign-stage-phase,tawa-lower-aref,tawa-stage-stores{epilogue=tma staging=full}' 2>&1 | filecheck %s --check-prefix=SMEM
// RUN: tawa-opt %S/../../../../examples/batched_gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref,tawa-stage-stores{epilogue=tma},tawa-lower-tile,tawa-drain-stores' | filecheck %s --check-prefix=BATCHED
// RUN: sed '0,/tma_store_wait 0/{//d}' %t.full | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=NOWAIT
// RUN: sed '0,/named_barrier_sync 1, 256/{//d}' %t.full | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=NOBARRIER
// RUN: sed '0,/tma_store_wait 0/{s//tma_store_wait 1/}' %t.full | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=WEAK
// RUN: sed '0,/tma_store_wait 1/{s//tma_store_wait 2/}' %t | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=SUBWEAK
// RUN: sed '0,/tma_store_wait 0/{s//tma_store_wait 1/}' %t | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=NODRAIN

// staging=subtiled (stages=0): two 128x64 buffers (32 KiB) leave room for 4 ring stages
// (4 x 48 KiB + barriers + 32 KiB = 231424 bytes), where the full 64 KiB tile leaves room
// for 3, so staging=auto takes it (tawa/transforms/lower/tma_epilogue.py, AUTO_STAGINGS).
// SUB:      #nvgpu.kernel<threads = 384, smem = 231424,
// SUB:      nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// SUB:      %staging = nvgpu.smem_alloc offset(197632) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
// SUB-NEXT: %tmap_C = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
// Per 64-column chunk j: thread 128 waits until at most 1 store is pending (the one of
// the other buffer: buffer j mod 2 was last read by the store two chunks ago), barrier,
// each warp group writes columns [64j, 64j + 64) of its 64 rows (a column slice of its
// fragment: no data moves), fence, barrier, thread 128 stores the 128x64 box.
// SUB:      %[[V:.*]] = nvgpu.frag_convert %acc_1 : !nvgpu.frag<64x256xf32, wgmma> -> !nvgpu.frag<64x256xbf16, wgmma>
// SUB:      %[[E:.*]] = arith.cmpi eq
// SUB-NEXT: scf.if %[[E]] {
// SUB-NEXT:   nvgpu.tma_store_wait 1
// SUB-NEXT: }
// SUB-NEXT: %[[B0:.*]] = arith.constant 0 : index
// SUB-NEXT: %[[V0:.*]] = nvgpu.wgmma_k_slice %[[V]][0] : !nvgpu.frag<64x256xbf16, wgmma> -> !nvgpu.frag<64x64xbf16, wgmma>
// SUB-NEXT: nvgpu.named_barrier_sync 1, 256
// SUB-NEXT: nvgpu.frag_store_shared %[[V0]], %staging[%[[B0]], %wg_row0] : !nvgpu.frag<64x64xbf16, wgmma>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>
// SUB-NEXT: nvgpu.fence_proxy_async
// SUB-NEXT: nvgpu.named_barrier_sync 1, 256
// SUB-NEXT: scf.if %[[E]] {
// SUB-NEXT:   nvgpu.tma_store %staging[%[[B0]]], %tmap_C[%m0_1, %n0_1] : !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
// SUB-NEXT: }
// SUB-NEXT: scf.if %[[E]] {
// SUB-NEXT:   nvgpu.tma_store_wait 1
// SUB-NEXT: }
// SUB-NEXT: %[[B1:.*]] = arith.constant 1 : index
// SUB-NEXT: %[[V1:.*]] = nvgpu.wgmma_k_slice %[[V]][1]
// SUB-NEXT: nvgpu.named_barrier_sync 1, 256
// SUB-NEXT: nvgpu.frag_store_shared %[[V1]], %staging[%[[B1]], %wg_row0]
// SUB-NEXT: nvgpu.fence_proxy_async
// SUB-NEXT: nvgpu.named_barrier_sync 1, 256
// SUB-NEXT: %[[C64:.*]] = arith.constant 64 : index
// SUB-NEXT: %[[N1:.*]] = arith.addi %n0_1, %[[C64]] : index
// SUB-NEXT: scf.if %[[E]] {
// SUB-NEXT:   nvgpu.tma_store %staging[%[[B1]]], %tmap_C[%m0_1, %[[N1]]]
// SUB-NEXT: }
// SUB:      nvgpu.wgmma_k_slice %[[V]][2]
// SUB-NEXT: nvgpu.named_barrier_sync 1, 256
// SUB-NEXT: nvgpu.frag_store_shared %{{.*}}, %staging[%[[B2:.*]], %wg_row0]
// SUB:      arith.constant 128 : index
// SUB:      nvgpu.tma_store %staging[%[[B2]]]
// SUB:      tma_store_wait 1
// SUB:      nvgpu.wgmma_k_slice %[[V]][3]
// SUB:      arith.constant 192 : index
// SUB:      nvgpu.tma_store
// SUB-NEXT: }
// SUB-NEXT: scf.yield
// SUB-NEXT: }
// Once, after the program loop: wait 0, every store has read its buffer.
// SUB:      scf.if
// SUB-NEXT:   nvgpu.tma_store_wait 0
// SUB-NEXT: }
// SUB-NOT:  frag_store_global

// epilogue=auto takes the TMA store where its staging fits beside rings of at least 2
// stages; staging=auto takes the full tile: the whole tile in one buffer, charged in the
// shared-memory plan: stages=0 picks 3 stages (3 x 48 KiB + barriers), and the tile follows
// the rings, 1024-byte aligned.
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
// CHECK-NEXT: scf.if %[[E]] {
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

// With 4 stages the full tile does not fit: staging=full keeps the thread epilogue ...
// FULL4:     smem<4x128x64xbf16
// FULL4-NOT: tma_store
// FULL4:     nvgpu.frag_store %
// FULL4-NOT: tma_store
// ... and staging=auto takes the subtiled staging beside the 4 stages.
// AUTO4:     smem<4x128x64xbf16
// AUTO4:     %staging = nvgpu.smem_alloc offset(197632) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
// AUTO4:     nvgpu.tma_store
// AUTO4-NOT: nvgpu.frag_store %

// SMEM: gemm.mlir:7:1: error: tawa-stage-stores: epilogue=tma: the rings and the staging tiles of the TMA-store epilogue need 264192 bytes of shared memory, more than the 232448 a block may use; use fewer stages

// A batched (3-D) C: a box of one plane, three coordinates.
// BATCHED: nvgpu.tma_descriptor %C : memref<?x?x?xbf16> -> !nvgpu.tma_desc<1x128x256xbf16, swizzle = 128>
// BATCHED: nvgpu.tma_store %staging[%{{.*}}], %tmap_C[%{{.*}}, %{{.*}}, %{{.*}}] : !nvgpu.smem<1x128x256xbf16, swizzle = 128>, !nvgpu.tma_desc<1x128x256xbf16, swizzle = 128>

// tawa-verify-protocol proves the staging tile's reuse: without the wait before the
// next program's writes, or without the barrier that tells the other threads of it,
// a write may race with the previous store's read.
// NOWAIT:    error: tawa-verify-protocol: staging tile written during a TMA store in @gemm (K = 0, 2 programs per CTA): warp group 1 writes %staging[0] while a TMA store of warp group 1 may still read it
// NOBARRIER: error: tawa-verify-protocol: staging tile written during a TMA store in @gemm
// A wait that lets the store that read the buffer still be pending: wait 1 where the full
// tile's one store must have read it, wait 2 where the subtiled store of two chunks ago must.
// WEAK:      error: tawa-verify-protocol: staging tile written during a TMA store in @gemm (K = 0, 2 programs per CTA): warp group 1 writes %staging[0] while a TMA store of warp group 1 may still read it
// SUBWEAK:   error: tawa-verify-protocol: staging tile written during a TMA store in @gemm (K = 0, 2 programs per CTA): warp group 1 writes %staging[0] while a TMA store of warp group 1 may still read it
// The partition's final wait 0 made wait 1: the last store may outlive the CTA.
// NODRAIN:   error: tawa-verify-protocol: CTA ends during a TMA store in @gemm (K = 0, 1 program per CTA): warp group 1 ends while its TMA store of %staging[1] may still read shared memory (no nvgpu.tma_store_wait 0 after its last store)
