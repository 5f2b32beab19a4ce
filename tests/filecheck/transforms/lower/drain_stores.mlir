// RUN: tawa-opt %s -p tawa-drain-stores | filecheck %s

// tawa-drain-stores on its own (lowered IR): a consumer partition that issues
// TMA stores ends with a wait, by the thread that stores, until they have read
// shared memory.

// One store per CTA (the staging buffer holds the tile's 128 rows, each warp
// group writes 64): the partition's first thread, thread 128 (warp group 1).
func.func @per_cta(%C: memref<?x?xbf16>, %m0: index, %v: !nvgpu.frag<64x64xbf16, wgmma>) {
  %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  %tmap = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    nvgpu.frag_store_shared %v, %staging[%c0, %c0] : !nvgpu.frag<64x64xbf16, wgmma>, !nvgpu.smem<1x128x64xbf16, swizzle = 128>
    nvgpu.tma_store %staging[%c0], %tmap[%m0, %m0] : !nvgpu.smem<1x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  }
  func.return
}
// CHECK-LABEL: func.func @per_cta
// CHECK:         nvgpu.tma_store %staging[%c0], %tmap[%m0, %m0]
// CHECK-NEXT:    %[[T:.*]] = nvgpu.thread_id
// CHECK-NEXT:    %[[C:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[E:.*]] = arith.cmpi eq, %[[T]], %[[C]] : index
// CHECK-NEXT:    scf.if %[[E]] {
// CHECK-NEXT:      nvgpu.tma_store_wait 0
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// One store per warp group (its buffers hold 64 rows, as many as it writes):
// each warp group's first thread.
func.func @per_group(%C: memref<?x?xbf16>, %m0: index, %v: !nvgpu.frag<64x64xbf16, wgmma>) {
  %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %tmap = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    nvgpu.frag_store_shared %v, %staging[%c0, %c0] : !nvgpu.frag<64x64xbf16, wgmma>, !nvgpu.smem<2x64x64xbf16, swizzle = 128>
    nvgpu.tma_store %staging[%c0], %tmap[%m0, %m0] : !nvgpu.smem<2x64x64xbf16, swizzle = 128>, !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
  }
  func.return
}
// CHECK-LABEL: func.func @per_group
// CHECK:         nvgpu.tma_store %staging[%c0], %tmap[%m0, %m0]
// CHECK-NEXT:    %[[T:.*]] = nvgpu.thread_id
// CHECK-NEXT:    %[[C:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[L:.*]] = arith.remui %[[T]], %[[C]] : index
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[E:.*]] = arith.cmpi eq, %[[L]], %[[Z]] : index
// CHECK-NEXT:    scf.if %[[E]] {
// CHECK-NEXT:      nvgpu.tma_store_wait 0
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// No TMA store (the thread epilogue): nothing to wait for.
func.func @threads(%C: memref<?x?xbf16>, %m0: index, %v: !nvgpu.frag<64x64xbf16, wgmma>) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(4) regs(232) {
    nvgpu.frag_store %v, %C[%m0, %m0] : !nvgpu.frag<64x64xbf16, wgmma>, memref<?x?xbf16>
  }
  func.return
}
// CHECK-LABEL: func.func @threads
// CHECK-NOT:     nvgpu.tma_store_wait
// CHECK:         func.return
