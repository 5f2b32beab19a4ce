// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP

// The ops of the TMA-store epilogue (tawa/transforms/lower/tma_epilogue.py): a fragment
// written into a swizzled staging tile, a proxy fence and a named barrier, the
// TMA store of the tile (+ commit_group), and the wait before the tile is reused.

func.func @tma_epilogue(%C: memref<?x?xbf16>, %v: !nvgpu.frag<64x256xbf16, wgmma>, %f: !nvgpu.frag<64x64xf32, wgmma>, %i: index) {
  %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x256xbf16, swizzle = 128>
  %s32 = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<1x64x64xf32, swizzle = 128>
  %tmap = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x256xbf16, swizzle = 128>
  nvgpu.tma_store_wait 0
  nvgpu.named_barrier_sync 1, 256
  nvgpu.frag_store_shared %v, %staging[%i, %i] : !nvgpu.frag<64x256xbf16, wgmma>, !nvgpu.smem<1x128x256xbf16, swizzle = 128>
  nvgpu.frag_store_shared %f, %s32[%i, %i] : !nvgpu.frag<64x64xf32, wgmma>, !nvgpu.smem<1x64x64xf32, swizzle = 128>
  nvgpu.fence_proxy_async
  nvgpu.named_barrier_sync 1, 256
  nvgpu.tma_store %staging[%i], %tmap[%i, %i] : !nvgpu.smem<1x128x256xbf16, swizzle = 128>, !nvgpu.tma_desc<128x256xbf16, swizzle = 128>
  func.return
}

// CHECK-LABEL: func.func @tma_epilogue
// CHECK:      nvgpu.tma_store_wait 0
// CHECK-NEXT: nvgpu.named_barrier_sync 1, 256
// CHECK-NEXT: nvgpu.frag_store_shared %v, %staging[%i, %i] : !nvgpu.frag<64x256xbf16, wgmma>, !nvgpu.smem<1x128x256xbf16, swizzle = 128>
// CHECK-NEXT: nvgpu.frag_store_shared %f, %s32[%i, %i] : !nvgpu.frag<64x64xf32, wgmma>, !nvgpu.smem<1x64x64xf32, swizzle = 128>
// CHECK-NEXT: nvgpu.fence_proxy_async
// CHECK-NEXT: nvgpu.named_barrier_sync 1, 256
// CHECK-NEXT: nvgpu.tma_store %staging[%i], %tmap[%i, %i] : !nvgpu.smem<1x128x256xbf16, swizzle = 128>, !nvgpu.tma_desc<128x256xbf16, swizzle = 128>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "tma_epilogue"
// CHECK-GENERIC: "nvgpu.tma_store_wait"() <{pending = 0 : i32}> : () -> ()
// CHECK-GENERIC: "nvgpu.frag_store_shared"(%v, %staging, %i, %i) : (!nvgpu.frag<64x256xbf16, wgmma>, !nvgpu.smem<1x128x256xbf16, swizzle = 128>, index, index) -> ()
// CHECK-GENERIC: "nvgpu.fence_proxy_async"() : () -> ()
// CHECK-GENERIC: "nvgpu.tma_store"(%staging, %i, %tmap, %i, %i) : (!nvgpu.smem<1x128x256xbf16, swizzle = 128>, index, !nvgpu.tma_desc<128x256xbf16, swizzle = 128>, index, index) -> ()
