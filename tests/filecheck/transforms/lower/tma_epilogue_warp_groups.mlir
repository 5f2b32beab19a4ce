// The TMA-store epilogue, one store per warp group (tawa/transforms/lower/tma_epilogue.py,
// `store-group`): where the consumer warp groups ping-pong, each stages and stores its
// own 64 rows behind its own named barrier, so the program's end does not line them up.
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{prepare=false}' > %t
// RUN: filecheck %s < %t
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{prepare=false store-group=cta}' | filecheck %s --check-prefix=CTA
// RUN: tawa-opt %S/../../../../examples/attention_fwd_d64.mlir -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s --check-prefix=THREE
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s --check-prefix=GEMM
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{prepare=false store-group=warpgroup}' | filecheck %s --check-prefix=SUB
// RUN: sed '0,/named_barrier_sync 15, 128/{//d}' %t | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=NOBARRIER0
// RUN: sed '0,/named_barrier_sync 14, 128/{//d}' %t | not tawa-opt -p tawa-verify-protocol 2>&1 | filecheck %s --check-prefix=NOBARRIER1
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{store-group=warps}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-pipeline,tawa-assign-stage-phase,tawa-lower-aref,tawa-stage-stores{store-group=warps}' 2>&1 | filecheck %s --check-prefix=BADSTAGE

// attention_fwd (two consumer warp groups, ping-pong): the 128x128 staging tile's bytes
// as two 64-row buffers, and a tensor map with a 64-row box.
// CHECK-LABEL: func.func @attention_fwd(
// CHECK:      %staging = nvgpu.smem_alloc offset(197632) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
// CHECK-NEXT: %tmap_O = nvgpu.tma_descriptor %O : memref<?x?x?x?xbf16> -> !nvgpu.tma_desc<1x1x64x128xbf16, swizzle = 128>
// Each warp group's first thread stores (tid mod 128 == 0); warp group g (wg_index, its
// index in the partition) writes buffer g from its row 0, behind barrier 15 - g of 128
// threads, and stores the box at row m0 + wg_row0.
// CHECK:      = nvgpu.frag_convert %o : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>
// CHECK-NEXT: %[[TID:.*]] = nvgpu.thread_id
// CHECK-NEXT: %[[C128:.*]] = arith.constant 128 : index
// CHECK-NEXT: %[[LANE:.*]] = arith.remui %[[TID]], %[[C128]] : index
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[E:.*]] = arith.cmpi eq, %[[LANE]], %[[C0]] : index
// CHECK:      %[[G0:.*]] = arith.cmpi eq, %wg_index, %{{.*}} : index
// CHECK:      %my_row = arith.addi %m0_1, %wg_row0 : index
// CHECK-NEXT: %[[R0:.*]] = arith.constant 0 : index
// CHECK-NEXT: scf.if %[[E]] {
// CHECK-NEXT:   nvgpu.tma_store_wait 0
// CHECK-NEXT: }
// CHECK-NEXT: scf.if %[[G0]] {
// CHECK-NEXT:   nvgpu.named_barrier_sync 15, 128
// CHECK-NEXT: } else {
// CHECK-NEXT:   nvgpu.named_barrier_sync 14, 128
// CHECK-NEXT: }
// CHECK-NEXT: nvgpu.frag_store_shared %{{.*}}, %staging[%wg_index, %[[R0]]] : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.smem<2x64x128xbf16, swizzle = 128>
// CHECK-NEXT: nvgpu.fence_proxy_async
// CHECK-NEXT: scf.if %[[G0]] {
// CHECK-NEXT:   nvgpu.named_barrier_sync 15, 128
// CHECK-NEXT: } else {
// CHECK-NEXT:   nvgpu.named_barrier_sync 14, 128
// CHECK-NEXT: }
// CHECK-NEXT: scf.if %[[E]] {
// CHECK-NEXT:   nvgpu.tma_store %staging[%wg_index], %tmap_O[%pid_z_1, %pid_y_1, %my_row, %c0_1] : !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.tma_desc<1x1x64x128xbf16, swizzle = 128>
// CHECK-NEXT: }
// No barrier over both warp groups at the program's end; each drains its own store.
// CHECK-NOT:  named_barrier_sync 1, 256
// CHECK:      %[[TID2:.*]] = nvgpu.thread_id
// CHECK:      %[[LANE2:.*]] = arith.remui %[[TID2]], %{{.*}} : index
// CHECK:      scf.if %{{.*}} {
// CHECK-NEXT:   nvgpu.tma_store_wait 0
// CHECK-NEXT: }
// CHECK-LABEL: func.func @attention_fwd_causal(
// CHECK:      nvgpu.smem<2x64x128xbf16, swizzle = 128>
// CHECK-NOT:  named_barrier_sync 1, 256

// store-group=cta: one 128-row store by thread 128, barrier 1 over both warp groups.
// CTA:      %staging = nvgpu.smem_alloc offset(197632) : !nvgpu.smem<1x128x128xbf16, swizzle = 128>
// CTA-NEXT: %tmap_O = nvgpu.tma_descriptor %O : memref<?x?x?x?xbf16> -> !nvgpu.tma_desc<1x1x128x128xbf16, swizzle = 128>
// CTA:      nvgpu.named_barrier_sync 1, 256
// CTA-NEXT: nvgpu.frag_store_shared %{{.*}}, %staging[%{{.*}}, %wg_row0]
// CTA-NOT:  named_barrier_sync 15

// attention_fwd_d64 (192 rows: three warp groups take turns on barriers 2, 3, 4): three
// 64-row buffers, barriers 15, 14, 13.
// THREE-LABEL: func.func @attention_fwd_d64(
// THREE:      %staging = nvgpu.smem_alloc offset({{[0-9]+}}) : !nvgpu.smem<3x64x64xbf16, swizzle = 128>
// THREE:      nvgpu.named_barrier_arrive 4, 256
// THREE:      nvgpu.tma_store_wait 0
// THREE-NEXT: }
// THREE-NEXT: scf.if %{{.*}} {
// THREE-NEXT:   nvgpu.named_barrier_sync 15, 128
// THREE-NEXT: } else {
// THREE-NEXT:   scf.if %{{.*}} {
// THREE-NEXT:     nvgpu.named_barrier_sync 14, 128
// THREE-NEXT:   } else {
// THREE-NEXT:     nvgpu.named_barrier_sync 13, 128
// THREE-NEXT:   }
// THREE-NEXT: }
// THREE-NEXT: nvgpu.frag_store_shared %{{.*}}, %staging[%wg_index, %{{.*}}] : !nvgpu.frag<64x64xbf16, wgmma>

// The GEMM's cooperative warp groups move in lockstep: auto keeps one store per CTA.
// GEMM:     %staging = nvgpu.smem_alloc offset(197632) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
// GEMM:     nvgpu.named_barrier_sync 1, 256
// GEMM-NOT: named_barrier_sync 15

// store-group=warpgroup on the GEMM's subtiled staging: each warp group its two 64x64
// buffers (warp group g: buffers 2g and 2g + 1), a 64x64 box, chunk j in buffer 2g + j mod 2.
// SUB:      %staging = nvgpu.smem_alloc offset(197632) : !nvgpu.smem<4x64x64xbf16, swizzle = 128>
// SUB-NEXT: %tmap_C = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
// SUB:      %my_row = arith.addi %m0_1, %wg_row0 : index
// SUB:      %my_buffer = arith.muli %wg_index, %{{.*}} : index
// SUB:      nvgpu.tma_store_wait 1
// SUB:      nvgpu.frag_store_shared %{{.*}}, %staging[%my_buffer, %{{.*}}] : !nvgpu.frag<64x64xbf16, wgmma>
// SUB:      nvgpu.tma_store %staging[%my_buffer], %tmap_C[%my_row, %n0_1]
// SUB:      nvgpu.tma_store_wait 1
// SUB:      %[[B1:.*]] = arith.addi %my_buffer, %{{.*}} : index
// SUB:      nvgpu.frag_store_shared %{{.*}}, %staging[%[[B1]], %{{.*}}]
// SUB:      nvgpu.tma_store %staging[%[[B1]]], %tmap_C[%my_row, %{{.*}}]

// tawa-verify-protocol proves each warp group's reuse of its buffer: without its barrier
// after its elected thread's wait, its other threads may write while the store reads.
// NOBARRIER0: error: tawa-verify-protocol: staging tile written during a TMA store in @attention_fwd (kv_len = 0, 2 programs per CTA): warp group 1 writes %staging[0] while a TMA store of warp group 1 may still read it
// NOBARRIER1: error: tawa-verify-protocol: staging tile written during a TMA store in @attention_fwd (kv_len = 0, 2 programs per CTA): warp group 2 writes %staging[1] while a TMA store of warp group 2 may still read it

// BAD: tawa-hopper-pipeline: error: store-group must be one of auto, cta, warpgroup, got 'warps'
// BAD-NOT: Traceback
// BADSTAGE: tawa-stage-stores: error: store-group must be one of auto, cta, warpgroup, got 'warps'
