// RUN: tawa-opt %s --split-input-file -p tawa-split-tma-chunks | filecheck %s

// A tile whose rows are wider than the swizzle span (128 bf16 columns, 128B:
// two chunks of 64) is two TMA boxes: chunk c at c · 64 · 128 bytes into the
// stage and c · 64 columns further in global memory; the load's L2 hint and
// multicast go to each box.  A tile of one chunk is one box at offset 0.
// CHECK-LABEL: func.func @load(
// CHECK:      nvgpu.tma_load_box %tq[%m, %k], %sq[%s] offset 0, %full[%s] l2 "evict_first" multicast 3 : !nvgpu.tma_desc<64x128xbf16, swizzle = 128>, !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
// CHECK-NEXT: %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT: %[[K64:.*]] = arith.addi %k, %[[C64]] : index
// CHECK-NEXT: nvgpu.tma_load_box %tq[%m, %[[K64]]], %sq[%s] offset 8192, %full[%s] l2 "evict_first" multicast 3
// CHECK-NEXT: nvgpu.tma_load_box %ta[%m, %k], %sa[%s] offset 0, %full[%s] : !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
// CHECK-NOT:  nvgpu.tma_load %
func.func @load(%Q: memref<?x?xbf16>, %m: index, %k: index, %s: index) {
  %sq = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
  %sa = nvgpu.smem_alloc offset(32768) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %full = nvgpu.smem_alloc offset(49152) : !nvgpu.mbarrier<2>
  %tq = nvgpu.tma_descriptor %Q : memref<?x?xbf16> -> !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  %ta = nvgpu.tma_descriptor %Q : memref<?x?xbf16> -> !nvgpu.tma_desc<64x64xbf16, swizzle = 128>
  nvgpu.tma_load %tq[%m, %k], %sq[%s], %full[%s] l2 "evict_first" multicast 3 : !nvgpu.tma_desc<64x128xbf16, swizzle = 128>, !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  nvgpu.tma_load %ta[%m, %k], %sa[%s], %full[%s] : !nvgpu.tma_desc<64x64xbf16, swizzle = 128>, !nvgpu.smem<2x64x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  func.return
}

// -----

// A store of four chunks (the GEMM's 128x256 staging tile): four boxes and one
// commit, so that the tile stays one bulk group for nvgpu.tma_store_wait.
// CHECK-LABEL: func.func @store(
// CHECK:      nvgpu.tma_store_box %sc[%c0] offset 0, %tc[%m, %n] : !nvgpu.smem<1x128x256xbf16, swizzle = 128>, !nvgpu.tma_desc<128x256xbf16, swizzle = 128>
// CHECK-NEXT: %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT: %[[N64:.*]] = arith.addi %n, %[[C64]] : index
// CHECK-NEXT: nvgpu.tma_store_box %sc[%c0] offset 16384, %tc[%m, %[[N64]]]
// CHECK:      nvgpu.tma_store_box %sc[%c0] offset 32768, %tc[%m, %{{.*}}]
// CHECK:      nvgpu.tma_store_box %sc[%c0] offset 49152, %tc[%m, %{{.*}}]
// CHECK-NEXT: nvgpu.tma_store_commit
// CHECK-NEXT: nvgpu.tma_store_wait 0
func.func @store(%C: memref<?x?xbf16>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %sc = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x256xbf16, swizzle = 128>
  %tc = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x256xbf16, swizzle = 128>
  nvgpu.tma_store %sc[%c0], %tc[%m, %n] : !nvgpu.smem<1x128x256xbf16, swizzle = 128>, !nvgpu.tma_desc<128x256xbf16, swizzle = 128>
  nvgpu.tma_store_wait 0
  func.return
}
