// tawa-cache-hints (tawa/transforms/pipeline/cache_hints.py): the producer loads of tiles that only
// one program reads are marked evict_first, and tawa-lower-aref gives their TMA loads
// that L2 eviction priority.
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-warp-specialize,tawa-cache-hints' | filecheck %s
// RUN: sed 's/tile.load %Q\[%b, %h, %m0, %c0\]/tile.load %Q[%b, %h, %c0, %c0]/' %S/../../../../examples/attention_fwd.mlir | tawa-opt -p 'tawa-warp-specialize,tawa-cache-hints' | filecheck %s --check-prefix=SHARED
// RUN: tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize,tawa-cache-hints' | filecheck %s --check-prefix=GEMM
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{prepare=false}' | filecheck %s --check-prefix=LOWERED
// RUN: tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{prepare=false cache-hints=false}' | filecheck %s --check-prefix=OFF

// Q: once per program, at offsets computed from every program id (%b, %h, %m0): no other
// program reads that box.  K and V: streamed in the loop, read by every query block.
// CHECK-LABEL: func.func @attention_fwd(
// CHECK:       %q = tile.load %Q[%b, %h, %m0, %c0] {tawa.l2 = "evict_first"} : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
// CHECK:       %k = tile.load %K[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
// CHECK:       %v = tile.load %V[%b, %hk, %n0, %c0] : memref<?x?x?x?xbf16> -> tensor<128x128xbf16>
// CHECK-LABEL: func.func @attention_fwd_causal(
// CHECK:       %q = tile.load %Q[%b, %h, %m0, %c0] {tawa.l2 = "evict_first"}

// A Q box that program id 0 does not reach is read by every query block of its head.
// SHARED-NOT: tawa.l2

// The GEMM loads A and B in its K loop: nothing to mark.
// GEMM-NOT: tawa.l2

// LOWERED:     nvgpu.tma_load %tmap_Q[%pid_z, %pid_y, %m0, %c0], %{{.*}}[%stage], %{{.*}}[%stage] l2 "evict_first" : !nvgpu.tma_desc<1x1x128x128xbf16, swizzle = 128>
// LOWERED:     nvgpu.tma_load %tmap_K[%pid_z, %hk, %n0, %c0], %{{.*}}[%stage_1], %{{.*}}[%stage_1] : !nvgpu.tma_desc
// OFF-NOT:     l2 "evict_first"
