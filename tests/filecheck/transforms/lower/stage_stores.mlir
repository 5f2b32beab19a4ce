// RUN: tawa-opt %s -p tawa-stage-stores | filecheck %s
// RUN: tawa-opt %s -p 'tawa-stage-stores{staging=subtiled store-group=warpgroup}' | filecheck %s --check-prefix=SUBWG
// RUN: tawa-opt %s -p 'tawa-stage-stores{staging=single store-group=cta}' | filecheck %s --check-prefix=SINGLE
// RUN: tawa-opt %s -p 'tawa-stage-stores{epilogue=threads}' | filecheck %s --check-prefix=THREADS
// RUN: not tawa-opt %s -p 'tawa-stage-stores{epilogue=tma}' 2>&1 | filecheck %s --check-prefix=TMA
// RUN: not tawa-opt %s -p 'tawa-stage-stores{staging=half}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: tawa-opt %s -p 'tawa-stage-stores,tawa-lower-tile' | filecheck %s --check-prefix=LOWERED

// tawa-stage-stores on its own (aref-lowered IR): the consumer stores that
// take the TMA-store epilogue become nvgpu.staged_store, naming the staging
// buffer (allocated after the kernel's other shared memory) and the tensor
// map; the buffer's type says the staging and who stores.

// A 128x256 bf16 tile of two warp groups: the whole tile in one buffer where
// it fits (staging=auto), one store per CTA (no overlapped loop).
func.func @gemm(%C: memref<?x?xbf16>, %m0: index, %n0: index) {
  %ring = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %acc = tile.zeros : tensor<128x256xf32>
    %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
    tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
  }
  func.return
}
// CHECK-LABEL: func.func @gemm
// CHECK-SAME:    #nvgpu.kernel<smem = 99328>
// CHECK:         %staging = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<1x128x256xbf16, swizzle = 128>
// CHECK-NEXT:    %tmap_C = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x256xbf16, swizzle = 128>
// CHECK:         partition consumer
// CHECK:         nvgpu.staged_store %c, %C[%m0, %n0] via %staging, %tmap_C : tensor<128x256xbf16>, memref<?x?xbf16>, !nvgpu.smem<1x128x256xbf16, swizzle = 128>, !nvgpu.tma_desc<128x256xbf16, swizzle = 128>
// CHECK-NOT:     tile.store

// Subtiled (two 64-column buffers) and per warp group (each its own 64 rows and buffers: 2·2).
// SUBWG-LABEL: func.func @gemm
// SUBWG:         %staging = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<4x64x64xbf16, swizzle = 128>
// SUBWG-NEXT:    %tmap_C = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
// SUBWG:         nvgpu.staged_store %c, %C[%m0, %n0] via %staging, %tmap_C : {{.*}}, !nvgpu.smem<4x64x64xbf16, swizzle = 128>, !nvgpu.tma_desc<64x64xbf16, swizzle = 128>

// SINGLE-LABEL: func.func @gemm
// SINGLE:        %staging = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>

// THREADS-NOT:   nvgpu.staged_store
// THREADS-NOT:   nvgpu.smem_alloc offset(32768)

// The stores of an overlapped loop's partition: per warp group (store-group=auto).
func.func @rotated(%O: memref<?x?x?x?xbf16>, %b: index, %h: index, %m0: index, %n: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(232) {
    %c1 = arith.constant 1 : index
    scf.for %i = %m0 to %n step %c1 {
    } {tawa.overlapped}
    %acc = tile.zeros : tensor<128x128xf32>
    %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
    tile.store %o, %O[%b, %h, %m0, %m0] : tensor<128x128xbf16>, memref<?x?x?x?xbf16>
  }
  func.return
}
// CHECK-LABEL: func.func @rotated
// CHECK:         %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
// CHECK-NEXT:    %tmap_O = nvgpu.tma_descriptor %O : memref<?x?x?x?xbf16> -> !nvgpu.tma_desc<1x1x64x128xbf16, swizzle = 128>
// CHECK:         nvgpu.staged_store %o, %O[%b, %h, %m0, %m0] via %staging, %tmap_O
// SINGLE-LABEL: func.func @rotated
// SINGLE:        %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>

// Stores that tawa-defer-stores marks share one buffer (one map per memref and box).
func.func @shared(%C: memref<?x?xbf16>, %m0: index, %n0: index, %last: i1) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(4) regs(232) {
    %acc = tile.zeros : tensor<64x128xf32>
    %c = arith.truncf %acc : tensor<64x128xf32> to tensor<64x128xbf16>
    scf.if %last {
      tile.store %c, %C[%m0, %n0] {tawa.shared_staging} : tensor<64x128xbf16>, memref<?x?xbf16>
    } else {
      tile.store %c, %C[%n0, %m0] {tawa.shared_staging} : tensor<64x128xbf16>, memref<?x?xbf16>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @shared
// CHECK:         %staging = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x128xbf16, swizzle = 128>
// CHECK-NEXT:    %tmap_C = nvgpu.tma_descriptor
// CHECK-NOT:     nvgpu.smem_alloc
// CHECK:         nvgpu.staged_store %c, %C[%m0, %n0] via %staging, %tmap_C
// CHECK:         nvgpu.staged_store %c, %C[%n0, %m0] via %staging, %tmap_C

// 16-byte rows: no swizzle span to stage them in; `auto` keeps the thread
// epilogue, `tma` says why not, at the store.
func.func @narrow(%C: memref<?x?xbf16>, %m0: index) {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(4) regs(232) {
    %acc = tile.zeros : tensor<64x8xf32>
    %c = arith.truncf %acc : tensor<64x8xf32> to tensor<64x8xbf16>
    tile.store %c, %C[%m0, %m0] : tensor<64x8xbf16>, memref<?x?xbf16>
  }
  func.return
}
// CHECK-LABEL: func.func @narrow
// CHECK-NOT:     nvgpu.smem_alloc
// CHECK:         tile.store %c, %C[%m0, %m0]
// TMA: stage_stores.mlir:[[# @LINE - 7]]:5: error: tawa-stage-stores: epilogue=tma: this store cannot take the TMA-store epilogue: its 16-byte rows are not a multiple of a 32-byte swizzle span

// BAD: tawa-stage-stores: error: staging must be one of auto, full, subtiled, single, full-in-loops, got 'half'

// tawa-lower-tile writes a staged store out through the buffer and map it names.
// LOWERED-LABEL: func.func @gemm
// LOWERED:         nvgpu.frag_store_shared %{{.*}}, %staging[%{{.*}}, %wg_row0] : !nvgpu.frag<64x256xbf16, wgmma>, !nvgpu.smem<1x128x256xbf16, swizzle = 128>
// LOWERED:         nvgpu.tma_store %staging[%{{.*}}], %tmap_C[%m0, %n0]
// LOWERED-NOT:     nvgpu.staged_store
// LOWERED-LABEL: func.func @narrow
// LOWERED:         nvgpu.frag_store
