// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP
// RUN: tawa-opt %s --split-input-file | tawa-opt --split-input-file | filecheck %s

// Every op, type and attribute of the nvgpu dialect in custom syntax; checked
// after custom -> generic -> custom, custom -> custom, and in generic form.

// Shared-memory buffers with each swizzle (0 is printed as no swizzle), and an
// mbarrier array.  Offsets respect each buffer's alignment.
func.func @smem() {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  %sb = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<2x64x32xbf16, swizzle = 64>
  %sc = nvgpu.smem_alloc offset(98304) : !nvgpu.smem<1x64x16xbf16, swizzle = 32>
  %sd = nvgpu.smem_alloc offset(100352) : !nvgpu.smem<64x64xf32>
  %se = nvgpu.smem_alloc offset(116736) : !nvgpu.smem<2x64x128xf8E4M3FN, swizzle = 0>
  %full = nvgpu.smem_alloc offset(133120) : !nvgpu.mbarrier<4>
  func.return
}

// CHECK-LABEL: func.func @smem() {
// CHECK-NEXT:    %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %sb = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<2x64x32xbf16, swizzle = 64>
// CHECK-NEXT:    %sc = nvgpu.smem_alloc offset(98304) : !nvgpu.smem<1x64x16xbf16, swizzle = 32>
// CHECK-NEXT:    %sd = nvgpu.smem_alloc offset(100352) : !nvgpu.smem<64x64xf32>
// CHECK-NEXT:    %se = nvgpu.smem_alloc offset(116736) : !nvgpu.smem<2x64x128xf8E4M3FN>
// CHECK-NEXT:    %full = nvgpu.smem_alloc offset(133120) : !nvgpu.mbarrier<4>
// CHECK-NEXT:    func.return

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "smem"
// CHECK-GENERIC-NEXT:    %sa = "nvgpu.smem_alloc"() <{offset = 0 : i64}> : () -> !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    %sb = "nvgpu.smem_alloc"() <{offset = 65536 : i64}> : () -> !nvgpu.smem<2x64x32xbf16, swizzle = 64>
// CHECK-GENERIC-NEXT:    %sc = "nvgpu.smem_alloc"() <{offset = 98304 : i64}> : () -> !nvgpu.smem<1x64x16xbf16, swizzle = 32>
// CHECK-GENERIC-NEXT:    %sd = "nvgpu.smem_alloc"() <{offset = 100352 : i64}> : () -> !nvgpu.smem<64x64xf32>
// CHECK-GENERIC-NEXT:    %se = "nvgpu.smem_alloc"() <{offset = 116736 : i64}> : () -> !nvgpu.smem<2x64x128xf8E4M3FN>
// CHECK-GENERIC-NEXT:    %full = "nvgpu.smem_alloc"() <{offset = 133120 : i64}> : () -> !nvgpu.mbarrier<4>

// -----

// The mbarrier protocol.
func.func @mbarriers(%i: index, %ph: index) -> i1 {
  %full = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<4>
  nvgpu.mbarrier_init %full[%i], 1 : !nvgpu.mbarrier<4>
  nvgpu.fence_mbarrier_init
  nvgpu.mbarrier_arrive %full[%i] : !nvgpu.mbarrier<4>
  nvgpu.mbarrier_arrive_expect_tx %full[%i], 49152 : !nvgpu.mbarrier<4>
  %done = nvgpu.mbarrier_try_wait_parity %full[%i], %ph : !nvgpu.mbarrier<4>
  nvgpu.mbarrier_wait_parity %full[%i], %ph : !nvgpu.mbarrier<4>
  func.return %done : i1
}

// CHECK-LABEL: func.func @mbarriers(%i: index, %ph: index) -> i1 {
// CHECK-NEXT:    %full = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<4>
// CHECK-NEXT:    nvgpu.mbarrier_init %full[%i], 1 : !nvgpu.mbarrier<4>
// CHECK-NEXT:    nvgpu.fence_mbarrier_init
// CHECK-NEXT:    nvgpu.mbarrier_arrive %full[%i] : !nvgpu.mbarrier<4>
// CHECK-NEXT:    nvgpu.mbarrier_arrive_expect_tx %full[%i], 49152 : !nvgpu.mbarrier<4>
// CHECK-NEXT:    %done = nvgpu.mbarrier_try_wait_parity %full[%i], %ph : !nvgpu.mbarrier<4>
// CHECK-NEXT:    nvgpu.mbarrier_wait_parity %full[%i], %ph : !nvgpu.mbarrier<4>
// CHECK-NEXT:    func.return %done : i1

// The generic form lists the parity first: the ops declare it before the
// barrier operands that they inherit.
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "mbarriers"
// CHECK-GENERIC:         %full = "nvgpu.smem_alloc"() <{offset = 0 : i64}> : () -> !nvgpu.mbarrier<4>
// CHECK-GENERIC-NEXT:    "nvgpu.mbarrier_init"(%full, %i) <{count = 1 : i32}> : (!nvgpu.mbarrier<4>, index) -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.fence_mbarrier_init"() : () -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.mbarrier_arrive"(%full, %i) : (!nvgpu.mbarrier<4>, index) -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.mbarrier_arrive_expect_tx"(%full, %i) <{bytes = 49152 : i32}> : (!nvgpu.mbarrier<4>, index) -> ()
// CHECK-GENERIC-NEXT:    %done = "nvgpu.mbarrier_try_wait_parity"(%full, %i, %ph) : (!nvgpu.mbarrier<4>, index, index) -> i1
// CHECK-GENERIC-NEXT:    "nvgpu.mbarrier_wait_parity"(%full, %i, %ph) : (!nvgpu.mbarrier<4>, index, index) -> ()

// -----

// TMA: descriptors over a 2-D and a 3-D tensor (a 1x128x64 box fills a 128x64
// tile), loads into a staged buffer (one with an L2 eviction priority), a store
// and its waits.
func.func @tma(%A: memref<?x?xbf16>, %X: memref<?x?x?xbf16>, %m: index, %k: index, %s: index) {
  %ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  %tx = nvgpu.tma_descriptor %X : memref<?x?x?xbf16> -> !nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  %full = nvgpu.smem_alloc offset(131072) : !nvgpu.mbarrier<4>
  nvgpu.tma_load %ta[%m, %k], %sa[%s], %full[%s] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<4>
  nvgpu.tma_load %tx[%s, %m, %k], %sa[%s], %full[%s] : !nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<4>
  nvgpu.tma_load %ta[%m, %k], %sa[%s], %full[%s] l2 "evict_first" : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<4>
  nvgpu.fence_proxy_async
  nvgpu.fence_cta
  nvgpu.tma_store %sa[%s], %ta[%m, %k] : !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  nvgpu.tma_store_wait 0
  nvgpu.tma_store_wait 7
  func.return
}

// CHECK-LABEL: func.func @tma(%A: memref<?x?xbf16>, %X: memref<?x?x?xbf16>, %m: index, %k: index, %s: index) {
// CHECK-NEXT:    %ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %tx = nvgpu.tma_descriptor %X : memref<?x?x?xbf16> -> !nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %full = nvgpu.smem_alloc offset(131072) : !nvgpu.mbarrier<4>
// CHECK-NEXT:    nvgpu.tma_load %ta[%m, %k], %sa[%s], %full[%s] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<4>
// CHECK-NEXT:    nvgpu.tma_load %tx[%s, %m, %k], %sa[%s], %full[%s] : !nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<4>
// CHECK-NEXT:    nvgpu.tma_load %ta[%m, %k], %sa[%s], %full[%s] l2 "evict_first" : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<4>
// CHECK-NEXT:    nvgpu.fence_proxy_async
// CHECK-NEXT:    nvgpu.fence_cta
// CHECK-NEXT:    nvgpu.tma_store %sa[%s], %ta[%m, %k] : !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
// CHECK-NEXT:    nvgpu.tma_store_wait 0
// CHECK-NEXT:    nvgpu.tma_store_wait 7
// CHECK-NEXT:    func.return

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "tma"
// CHECK-GENERIC:         %ta = "nvgpu.tma_descriptor"(%A) : (memref<?x?xbf16>) -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    %tx = "nvgpu.tma_descriptor"(%X) : (memref<?x?x?xbf16>) -> !nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    %sa = "nvgpu.smem_alloc"() <{offset = 0 : i64}> : () -> !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    %full = "nvgpu.smem_alloc"() <{offset = 131072 : i64}> : () -> !nvgpu.mbarrier<4>
// CHECK-GENERIC-NEXT:    "nvgpu.tma_load"(%ta, %m, %k, %sa, %s, %full, %s) : (!nvgpu.tma_desc<128x64xbf16, swizzle = 128>, index, index, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, index, !nvgpu.mbarrier<4>, index) -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.tma_load"(%tx, %s, %m, %k, %sa, %s, %full, %s) : (!nvgpu.tma_desc<1x128x64xbf16, swizzle = 128>, index, index, index, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, index, !nvgpu.mbarrier<4>, index) -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.tma_load"(%ta, %m, %k, %sa, %s, %full, %s) <{l2 = "evict_first"}> : (!nvgpu.tma_desc<128x64xbf16, swizzle = 128>, index, index, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, index, !nvgpu.mbarrier<4>, index) -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.fence_proxy_async"() : () -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.fence_cta"() : () -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.tma_store"(%sa, %s, %ta, %m, %k) : (!nvgpu.smem<4x128x64xbf16, swizzle = 128>, index, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, index, index) -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.tma_store_wait"() <{pending = 0 : i32}> : () -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.tma_store_wait"() <{pending = 7 : i32}> : () -> ()

// -----

// wgmma: descriptors of row ranges of staged tiles, a K-major (rhs_transposed)
// product from shared memory, an MN-major one with a register lhs (wgmma
// fragment), an f8 product, the fence / commit / wait protocol (with and
// without fragments) and the epilogue store.
func.func @wgmma(%s: index, %row: index, %true: i1, %C: memref<?x?xbf16>, %m: index, %n: index,
                 %fa: !nvgpu.frag<64x64xbf16, wgmma>, %acc: !nvgpu.frag<64x256xf32, wgmma>,
                 %acc2: !nvgpu.frag<64x64xf32, wgmma>,
                 %e: !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, %acc3: !nvgpu.frag<64x64xf32, wgmma>) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  %sb = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<4x256x64xbf16, swizzle = 128>
  %sv = nvgpu.smem_alloc offset(196608) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %da = nvgpu.wgmma_descriptor %sa[%s, %row] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  %db = nvgpu.wgmma_descriptor %sb[%s, %row] : !nvgpu.smem<4x256x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>
  %dv = nvgpu.wgmma_descriptor %sv[%s, %row] : !nvgpu.smem<2x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  nvgpu.wgmma_fence
  %d = nvgpu.wgmma %da, %db, %acc, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>
  %o = nvgpu.wgmma %fa, %dv, %acc2, %true : !nvgpu.frag<64x64xbf16, wgmma>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  %f = nvgpu.wgmma %e, %e, %acc3, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
  nvgpu.wgmma_commit_group
  %d1, %o1 = nvgpu.wgmma_wait_group 1 (%d, %o) : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>
  nvgpu.wgmma_wait_group 0
  nvgpu.wgmma_wait_group 0 {note = "drain"}
  nvgpu.frag_store %d1, %C[%m, %n] : !nvgpu.frag<64x256xf32, wgmma>, memref<?x?xbf16>
  func.return
}

// CHECK-LABEL: func.func @wgmma(
// CHECK-SAME:      %fa: !nvgpu.frag<64x64xbf16, wgmma>, %acc: !nvgpu.frag<64x256xf32, wgmma>
// CHECK-NEXT:    %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %sb = nvgpu.smem_alloc offset(65536) : !nvgpu.smem<4x256x64xbf16, swizzle = 128>
// CHECK-NEXT:    %sv = nvgpu.smem_alloc offset(196608) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
// CHECK-NEXT:    %da = nvgpu.wgmma_descriptor %sa[%s, %row] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// CHECK-NEXT:    %db = nvgpu.wgmma_descriptor %sb[%s, %row] : !nvgpu.smem<4x256x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>
// CHECK-NEXT:    %dv = nvgpu.wgmma_descriptor %sv[%s, %row] : !nvgpu.smem<2x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// CHECK-NEXT:    nvgpu.wgmma_fence
// CHECK-NEXT:    %d = nvgpu.wgmma %da, %db, %acc, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>
// CHECK-NEXT:    %o = nvgpu.wgmma %fa, %dv, %acc2, %true : !nvgpu.frag<64x64xbf16, wgmma>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
// CHECK-NEXT:    %f = nvgpu.wgmma %e, %e, %acc3, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>
// CHECK-NEXT:    nvgpu.wgmma_commit_group
// CHECK-NEXT:    %d1, %o1 = nvgpu.wgmma_wait_group 1 (%d, %o) : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>
// CHECK-NEXT:    nvgpu.wgmma_wait_group 0{{$}}
// CHECK-NEXT:    nvgpu.wgmma_wait_group 0 {note = "drain"}{{$}}
// CHECK-NEXT:    nvgpu.frag_store %d1, %C[%m, %n] : !nvgpu.frag<64x256xf32, wgmma>, memref<?x?xbf16>
// CHECK-NEXT:    func.return

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "wgmma"
// CHECK-GENERIC:         %sa = "nvgpu.smem_alloc"() <{offset = 0 : i64}> : () -> !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    %sb = "nvgpu.smem_alloc"() <{offset = 65536 : i64}> : () -> !nvgpu.smem<4x256x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    %sv = "nvgpu.smem_alloc"() <{offset = 196608 : i64}> : () -> !nvgpu.smem<2x64x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    %da = "nvgpu.wgmma_descriptor"(%sa, %s, %row) : (!nvgpu.smem<4x128x64xbf16, swizzle = 128>, index, index) -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    %db = "nvgpu.wgmma_descriptor"(%sb, %s, %row) : (!nvgpu.smem<4x256x64xbf16, swizzle = 128>, index, index) -> !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    %dv = "nvgpu.wgmma_descriptor"(%sv, %s, %row) : (!nvgpu.smem<2x64x64xbf16, swizzle = 128>, index, index) -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
// CHECK-GENERIC-NEXT:    "nvgpu.wgmma_fence"() : () -> ()
// CHECK-GENERIC-NEXT:    %d = "nvgpu.wgmma"(%da, %db, %acc, %true) <{rhs_transposed}> : (!nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>, i1) -> !nvgpu.frag<64x256xf32, wgmma>
// CHECK-GENERIC-NEXT:    %o = "nvgpu.wgmma"(%fa, %dv, %acc2, %true) : (!nvgpu.frag<64x64xbf16, wgmma>, !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>, i1) -> !nvgpu.frag<64x64xf32, wgmma>
// CHECK-GENERIC-NEXT:    %f = "nvgpu.wgmma"(%e, %e, %acc3, %true) <{rhs_transposed}> : (!nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.wgmma_desc<64x128xf8E4M3FN, swizzle = 128>, !nvgpu.frag<64x64xf32, wgmma>, i1) -> !nvgpu.frag<64x64xf32, wgmma>
// CHECK-GENERIC-NEXT:    "nvgpu.wgmma_commit_group"() : () -> ()
// CHECK-GENERIC-NEXT:    %d1, %o1 = "nvgpu.wgmma_wait_group"(%d, %o) <{pending = 1 : i32}> : (!nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>) -> (!nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>)
// CHECK-GENERIC-NEXT:    "nvgpu.wgmma_wait_group"() <{pending = 0 : i32}> : () -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.wgmma_wait_group"() <{pending = 0 : i32}> {note = "drain"} : () -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.frag_store"(%d1, %C, %m, %n) : (!nvgpu.frag<64x256xf32, wgmma>, memref<?x?xbf16>, index, index) -> ()

// -----

// Register budgets (both actions), named barriers, fences and thread / CTA ids.
func.func @sync() -> (index, index, index, index, index, index, index, i1) {
  nvgpu.setmaxnreg inc 232
  nvgpu.setmaxnreg dec 40
  nvgpu.named_barrier_sync 0, 384
  nvgpu.named_barrier_arrive 1, 256
  %t = nvgpu.thread_id
  %l = nvgpu.lane_id
  %w = nvgpu.warp_id
  %g = nvgpu.warp_group_id
  %bx = nvgpu.block_id 0
  %by = nvgpu.block_id 1
  %bz = nvgpu.block_id 2
  %leader = nvgpu.elect_one
  func.return %t, %l, %w, %g, %bx, %by, %bz, %leader : index, index, index, index, index, index, index, i1
}

// CHECK-LABEL: func.func @sync() -> (index, index, index, index, index, index, index, i1) {
// CHECK-NEXT:    nvgpu.setmaxnreg inc 232
// CHECK-NEXT:    nvgpu.setmaxnreg dec 40
// CHECK-NEXT:    nvgpu.named_barrier_sync 0, 384
// CHECK-NEXT:    nvgpu.named_barrier_arrive 1, 256
// CHECK-NEXT:    %t = nvgpu.thread_id
// CHECK-NEXT:    %l = nvgpu.lane_id
// CHECK-NEXT:    %w = nvgpu.warp_id
// CHECK-NEXT:    %g = nvgpu.warp_group_id
// CHECK-NEXT:    %bx = nvgpu.block_id 0
// CHECK-NEXT:    %by = nvgpu.block_id 1
// CHECK-NEXT:    %bz = nvgpu.block_id 2
// CHECK-NEXT:    %leader = nvgpu.elect_one
// CHECK-NEXT:    func.return %t, %l, %w, %g, %bx, %by, %bz, %leader : index, index, index, index, index, index, index, i1

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "sync"
// CHECK-GENERIC-NEXT:    "nvgpu.setmaxnreg"() <{action = #nvgpu<reg_action inc>, count = 232 : i32}> : () -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.setmaxnreg"() <{action = #nvgpu<reg_action dec>, count = 40 : i32}> : () -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.named_barrier_sync"() <{barrier_id = 0 : i32, num_threads = 384 : i32}> : () -> ()
// CHECK-GENERIC-NEXT:    "nvgpu.named_barrier_arrive"() <{barrier_id = 1 : i32, num_threads = 256 : i32}> : () -> ()
// CHECK-GENERIC-NEXT:    %t = "nvgpu.thread_id"() : () -> index
// CHECK-GENERIC-NEXT:    %l = "nvgpu.lane_id"() : () -> index
// CHECK-GENERIC-NEXT:    %w = "nvgpu.warp_id"() : () -> index
// CHECK-GENERIC-NEXT:    %g = "nvgpu.warp_group_id"() : () -> index
// CHECK-GENERIC-NEXT:    %bx = "nvgpu.block_id"() <{axis = 0 : i64}> : () -> index
// CHECK-GENERIC-NEXT:    %by = "nvgpu.block_id"() <{axis = 1 : i64}> : () -> index
// CHECK-GENERIC-NEXT:    %bz = "nvgpu.block_id"() <{axis = 2 : i64}> : () -> index
// CHECK-GENERIC-NEXT:    %leader = "nvgpu.elect_one"() : () -> i1

// -----

// The enum attributes on their own, as discardable attributes.
func.func @enum_attributes() {
  nvgpu.wgmma_fence {layout = #nvgpu.tiled_layout<(64,8)(16,8)(8,8)(1,2), warps = [-8], lanes = [-4, -3], vector = -1>, row = #nvgpu.tiled_layout<(64)(16)(8)(1), warps = [-4], lanes = [-2, *4], vector = -1>, up = #nvgpu<reg_action inc>, down = #nvgpu<reg_action dec>}
  func.return
}

// CHECK-LABEL: func.func @enum_attributes() {
// CHECK-NEXT:    nvgpu.wgmma_fence {layout = #nvgpu.tiled_layout<(64,8)(16,8)(8,8)(1,2), warps = [-8], lanes = [-4, -3], vector = -1>, row = #nvgpu.tiled_layout<(64)(16)(8)(1), warps = [-4], lanes = [-2, *4], vector = -1>, up = #nvgpu<reg_action inc>, down = #nvgpu<reg_action dec>}

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "enum_attributes"
// CHECK-GENERIC-NEXT:    "nvgpu.wgmma_fence"() {layout = #nvgpu.tiled_layout<(64,8)(16,8)(8,8)(1,2), warps = [-8], lanes = [-4, -3], vector = -1>, row = #nvgpu.tiled_layout<(64)(16)(8)(1), warps = [-4], lanes = [-2, *4], vector = -1>, up = #nvgpu<reg_action inc>, down = #nvgpu<reg_action dec>} : () -> ()

// -----

// The bridge from aref slots to wgmma (nvgpu.smem_tile), zero and unwritten accumulators.
func.func @lowering_bridges(%s: index) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  %a = nvgpu.smem_tile %sa[%s] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> tensor<128x64xbf16>
  %z = nvgpu.frag_zeros : !nvgpu.frag<64x256xf32, wgmma>
  %u = nvgpu.frag_undef : !nvgpu.frag<64x256xf32, wgmma>
  func.return
}

// CHECK-LABEL: func.func @lowering_bridges(%s: index) {
// CHECK:         %a = nvgpu.smem_tile %sa[%s] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> tensor<128x64xbf16>
// CHECK-NEXT:    %z = nvgpu.frag_zeros : !nvgpu.frag<64x256xf32, wgmma>
// CHECK-NEXT:    %u = nvgpu.frag_undef : !nvgpu.frag<64x256xf32, wgmma>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "lowering_bridges"
// CHECK-GENERIC:         %a = "nvgpu.smem_tile"(%sa, %s) : (!nvgpu.smem<4x128x64xbf16, swizzle = 128>, index) -> tensor<128x64xbf16>
// CHECK-GENERIC-NEXT:    %z = "nvgpu.frag_zeros"() : () -> !nvgpu.frag<64x256xf32, wgmma>
// CHECK-GENERIC-NEXT:    %u = "nvgpu.frag_undef"() : () -> !nvgpu.frag<64x256xf32, wgmma>

// -----

func.func @grid_dims() {
  %nx = nvgpu.grid_dim 0
  %nz = nvgpu.grid_dim 2
  %gy = nvgpu.launch_grid 1
  func.return
}

// CHECK-LABEL: func.func @grid_dims() {
// CHECK-NEXT:    %nx = nvgpu.grid_dim 0
// CHECK-NEXT:    %nz = nvgpu.grid_dim 2
// CHECK-NEXT:    %gy = nvgpu.launch_grid 1

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "grid_dims"
// CHECK-GENERIC:         %nx = "nvgpu.grid_dim"() <{axis = 0 : i64}> : () -> index
// CHECK-GENERIC:         %gy = "nvgpu.launch_grid"() <{axis = 1 : i64}> : () -> index

// -----

// Elementwise math on fragments: with a fragment or an f32 scalar.
func.func @frag_math(%a: !nvgpu.frag<64x256xf32, wgmma>, %b: !nvgpu.frag<64x256xf32, wgmma>, %s: f32) {
  %0 = nvgpu.frag_binary addf %a, %b : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x256xf32, wgmma>
  %1 = nvgpu.frag_binary subf %0, %s : !nvgpu.frag<64x256xf32, wgmma>, f32
  %2 = nvgpu.frag_binary mulf %1, %s : !nvgpu.frag<64x256xf32, wgmma>, f32
  %3 = nvgpu.frag_binary divf %2, %b : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x256xf32, wgmma>
  %4 = nvgpu.frag_binary maximumf %3, %s : !nvgpu.frag<64x256xf32, wgmma>, f32
  %5 = nvgpu.frag_binary minimumf %4, %s : !nvgpu.frag<64x256xf32, wgmma>, f32
  %6 = nvgpu.frag_unary exp2 %5 : !nvgpu.frag<64x256xf32, wgmma>
  %7 = nvgpu.frag_unary negf %6 : !nvgpu.frag<64x256xf32, wgmma>
  func.return
}

// CHECK-LABEL: func.func @frag_math(
// CHECK-NEXT:    %0 = nvgpu.frag_binary addf %a, %b : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x256xf32, wgmma>
// CHECK-NEXT:    %1 = nvgpu.frag_binary subf %0, %s : !nvgpu.frag<64x256xf32, wgmma>, f32
// CHECK-NEXT:    %2 = nvgpu.frag_binary mulf %1, %s : !nvgpu.frag<64x256xf32, wgmma>, f32
// CHECK-NEXT:    %3 = nvgpu.frag_binary divf %2, %b
// CHECK-NEXT:    %4 = nvgpu.frag_binary maximumf %3, %s
// CHECK-NEXT:    %5 = nvgpu.frag_binary minimumf %4, %s
// CHECK-NEXT:    %6 = nvgpu.frag_unary exp2 %5 : !nvgpu.frag<64x256xf32, wgmma>
// CHECK-NEXT:    %7 = nvgpu.frag_unary negf %6 : !nvgpu.frag<64x256xf32, wgmma>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "frag_math"
// CHECK-GENERIC:         %1 = "nvgpu.frag_binary"(%0, %s) <{kind = #nvgpu<frag_binary_kind subf>}> : (!nvgpu.frag<64x256xf32, wgmma>, f32) -> !nvgpu.frag<64x256xf32, wgmma>
// CHECK-GENERIC:         %6 = "nvgpu.frag_unary"(%5) <{kind = #nvgpu<frag_unary_kind exp2>}> : (!nvgpu.frag<64x256xf32, wgmma>) -> !nvgpu.frag<64x256xf32, wgmma>

// -----

// Row reductions and broadcasts between accumulator and row fragments.
func.func @frag_rows(%a: !nvgpu.frag<64x128xf32, wgmma>, %s: f32) {
  %m0 = nvgpu.frag_splat %s : f32 -> !nvgpu.frag<64xf32, wgmma_row>
  %m = nvgpu.frag_reduce max %a : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64xf32, wgmma_row>
  %l = nvgpu.frag_reduce sum %a : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64xf32, wgmma_row>
  %mm = nvgpu.frag_binary maximumf %m0, %m : !nvgpu.frag<64xf32, wgmma_row>, !nvgpu.frag<64xf32, wgmma_row>
  %b = nvgpu.frag_broadcast %mm : !nvgpu.frag<64xf32, wgmma_row> -> !nvgpu.frag<64x128xf32, wgmma>
  func.return
}

// CHECK-LABEL: func.func @frag_rows(
// CHECK-NEXT:    %m0 = nvgpu.frag_splat %s : f32 -> !nvgpu.frag<64xf32, wgmma_row>
// CHECK-NEXT:    %m = nvgpu.frag_reduce max %a : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64xf32, wgmma_row>
// CHECK-NEXT:    %l = nvgpu.frag_reduce sum %a : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64xf32, wgmma_row>
// CHECK-NEXT:    %mm = nvgpu.frag_binary maximumf %m0, %m : !nvgpu.frag<64xf32, wgmma_row>, !nvgpu.frag<64xf32, wgmma_row>
// CHECK-NEXT:    %b = nvgpu.frag_broadcast %mm : !nvgpu.frag<64xf32, wgmma_row> -> !nvgpu.frag<64x128xf32, wgmma>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "frag_rows"
// CHECK-GENERIC:         %m0 = "nvgpu.frag_splat"(%s) : (f32) -> !nvgpu.frag<64xf32, wgmma_row>
// CHECK-GENERIC:         %m = "nvgpu.frag_reduce"(%a) <{kind = #tile<reduce_kind max>}> : (!nvgpu.frag<64x128xf32, wgmma>) -> !nvgpu.frag<64xf32, wgmma_row>
// CHECK-GENERIC:         %b = "nvgpu.frag_broadcast"(%mm) : (!nvgpu.frag<64xf32, wgmma_row>) -> !nvgpu.frag<64x128xf32, wgmma>

// -----

func.func @frag_convert(%a: !nvgpu.frag<64x128xf32, wgmma>) {
  %b = nvgpu.frag_convert %a : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>
  func.return
}

// CHECK-LABEL: func.func @frag_convert(
// CHECK-NEXT:    %b = nvgpu.frag_convert %a : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "frag_convert"
// CHECK-GENERIC:         %b = "nvgpu.frag_convert"(%a) : (!nvgpu.frag<64x128xf32, wgmma>) -> !nvgpu.frag<64x128xbf16, wgmma>

// -----

// A 16-bit accumulator's transpose, in registers (movmatrix per packed register): the wgmma_t layout.
func.func @frag_transpose(%a: !nvgpu.frag<64x40xbf16, wgmma>) {
  %t = nvgpu.frag_transpose %a : !nvgpu.frag<64x40xbf16, wgmma> -> !nvgpu.frag<40x64xbf16, wgmma_t>
  func.return
}

// CHECK-LABEL: func.func @frag_transpose(
// CHECK-NEXT:    %t = nvgpu.frag_transpose %a : !nvgpu.frag<64x40xbf16, wgmma> -> !nvgpu.frag<40x64xbf16, wgmma_t>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "frag_transpose"
// CHECK-GENERIC:         %t = "nvgpu.frag_transpose"(%a) : (!nvgpu.frag<64x40xbf16, wgmma>) -> !nvgpu.frag<40x64xbf16, wgmma_t>

// -----

// Masks: element coordinates, integer math, comparisons and selects on fragments.
func.func @frag_masks(%x: !nvgpu.frag<64x128xf32, wgmma>, %n: i32, %off: i32, %ninf: f32) {
  %rows = nvgpu.frag_index row : !nvgpu.frag<64x128xi32, wgmma>
  %cols = nvgpu.frag_index col : !nvgpu.frag<64x128xi32, wgmma>
  %q = nvgpu.frag_binary addi %rows, %off : !nvgpu.frag<64x128xi32, wgmma>, i32
  %in = nvgpu.frag_cmpi slt, %cols, %n : !nvgpu.frag<64x128xi32, wgmma>, i32
  %causal = nvgpu.frag_cmpi sle, %cols, %q : !nvgpu.frag<64x128xi32, wgmma>, !nvgpu.frag<64x128xi32, wgmma>
  %both = nvgpu.frag_binary andi %in, %causal : !nvgpu.frag<64x128xi1, wgmma>, !nvgpu.frag<64x128xi1, wgmma>
  %y = nvgpu.frag_select %both, %x, %ninf : !nvgpu.frag<64x128xi1, wgmma>, !nvgpu.frag<64x128xf32, wgmma>, f32
  func.return
}

// CHECK-LABEL: func.func @frag_masks(
// CHECK-NEXT:    %rows = nvgpu.frag_index row : !nvgpu.frag<64x128xi32, wgmma>
// CHECK-NEXT:    %cols = nvgpu.frag_index col : !nvgpu.frag<64x128xi32, wgmma>
// CHECK-NEXT:    %q = nvgpu.frag_binary addi %rows, %off : !nvgpu.frag<64x128xi32, wgmma>, i32
// CHECK-NEXT:    %in = nvgpu.frag_cmpi slt, %cols, %n : !nvgpu.frag<64x128xi32, wgmma>, i32
// CHECK-NEXT:    %causal = nvgpu.frag_cmpi sle, %cols, %q : !nvgpu.frag<64x128xi32, wgmma>, !nvgpu.frag<64x128xi32, wgmma>
// CHECK-NEXT:    %both = nvgpu.frag_binary andi %in, %causal : !nvgpu.frag<64x128xi1, wgmma>, !nvgpu.frag<64x128xi1, wgmma>
// CHECK-NEXT:    %y = nvgpu.frag_select %both, %x, %ninf : !nvgpu.frag<64x128xi1, wgmma>, !nvgpu.frag<64x128xf32, wgmma>, f32

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "frag_masks"
// CHECK-GENERIC:         %rows = "nvgpu.frag_index"() <{axis = #nvgpu<frag_index_axis row>}> : () -> !nvgpu.frag<64x128xi32, wgmma>
// CHECK-GENERIC:         %in = "nvgpu.frag_cmpi"(%cols, %n) <{predicate = #tile<cmpi_predicate slt>}> : (!nvgpu.frag<64x128xi32, wgmma>, i32) -> !nvgpu.frag<64x128xi1, wgmma>
// CHECK-GENERIC:         %y = "nvgpu.frag_select"(%both, %x, %ninf) : (!nvgpu.frag<64x128xi1, wgmma>, !nvgpu.frag<64x128xf32, wgmma>, f32) -> !nvgpu.frag<64x128xf32, wgmma>

// -----

// Masks of data: float comparisons of a fragment with a scalar and with a fragment.
func.func @frag_data_masks(%x: !nvgpu.frag<64x128xf32, wgmma>, %z: f32) {
  %pos = nvgpu.frag_cmpf ogt, %x, %z : !nvgpu.frag<64x128xf32, wgmma>, f32
  %nan = nvgpu.frag_cmpf une, %x, %x : !nvgpu.frag<64x128xf32, wgmma>, !nvgpu.frag<64x128xf32, wgmma>
  %y = nvgpu.frag_select %pos, %x, %z : !nvgpu.frag<64x128xi1, wgmma>, !nvgpu.frag<64x128xf32, wgmma>, f32
  func.return
}

// CHECK-LABEL: func.func @frag_data_masks(
// CHECK-NEXT:    %pos = nvgpu.frag_cmpf ogt, %x, %z : !nvgpu.frag<64x128xf32, wgmma>, f32
// CHECK-NEXT:    %nan = nvgpu.frag_cmpf une, %x, %x : !nvgpu.frag<64x128xf32, wgmma>, !nvgpu.frag<64x128xf32, wgmma>
// CHECK-NEXT:    %y = nvgpu.frag_select %pos, %x, %z : !nvgpu.frag<64x128xi1, wgmma>, !nvgpu.frag<64x128xf32, wgmma>, f32

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "frag_data_masks"
// CHECK-GENERIC:         %pos = "nvgpu.frag_cmpf"(%x, %z) <{predicate = #tile<cmpf_predicate ogt>}> : (!nvgpu.frag<64x128xf32, wgmma>, f32) -> !nvgpu.frag<64x128xi1, wgmma>

// -----

// A lowered kernel's launch facts; fields not decided yet are left out.
func.func @kernel_info() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 384, smem = 197696, regs = [40, 232, 232], persistent>} {
  func.return
}
func.func @kernel_info_partial() attributes {nvgpu.kernel = #nvgpu.kernel<smem = 1024>} {
  func.return
}

// CHECK-LABEL: func.func @kernel_info() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 384, smem = 197696, regs = [40, 232, 232], persistent>} {
// CHECK-LABEL: func.func @kernel_info_partial() attributes {nvgpu.kernel = #nvgpu.kernel<smem = 1024>} {
// CHECK-GENERIC: nvgpu.kernel = #nvgpu.kernel<threads = 384, smem = 197696, regs = [40, 232, 232], persistent>

// -----

// The ops the printer-preparation passes and the epilogue expansion produce.
func.func @prepared(%sa: !nvgpu.smem<4x128x64xbf16, swizzle = 128>, %acc: !nvgpu.frag<64x128xf32, wgmma>, %a: !nvgpu.frag<64x64xbf16, wgmma>, %t: i1, %C: memref<?x?xbf16>, %p: index, %m: !nvgpu.frag<64x128xi1, wgmma>, %v: !nvgpu.frag<64x128xbf16, wgmma>) {
  %addr = nvgpu.smem_address %sa : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  %d = nvgpu.wgmma_desc_encode %addr lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
  %d1 = nvgpu.wgmma_desc_advance %d, 32 : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
  %a1 = nvgpu.wgmma_k_slice %a[1] : !nvgpu.frag<64x64xbf16, wgmma> -> !nvgpu.frag<64x16xbf16, wgmma>
  %r = nvgpu.wgmma_mma_async %a1, %d1, %acc, %t {rhs_transposed} : !nvgpu.frag<64x16xbf16, wgmma>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
  %base = nvgpu.memref_base %C : memref<?x?xbf16>
  %stride = nvgpu.memref_stride %C, 0 : memref<?x?xbf16>
  nvgpu.frag_store_global %v, %base, %p : !nvgpu.frag<64x128xbf16, wgmma>
  nvgpu.frag_store_global %v, %base, %p mask %m : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.frag<64x128xi1, wgmma>
  nvgpu.frag_store_global %v, %base, %p mask %m {vector_mask} : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.frag<64x128xi1, wgmma>
  func.return
}

// CHECK-LABEL: func.func @prepared(
// CHECK-NEXT:    %addr = nvgpu.smem_address %sa : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %d = nvgpu.wgmma_desc_encode %addr lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %d1 = nvgpu.wgmma_desc_advance %d, 32 : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
// CHECK-NEXT:    %a1 = nvgpu.wgmma_k_slice %a[1] : !nvgpu.frag<64x64xbf16, wgmma> -> !nvgpu.frag<64x16xbf16, wgmma>
// CHECK-NEXT:    %r = nvgpu.wgmma_mma_async %a1, %d1, %acc, %t {rhs_transposed} : !nvgpu.frag<64x16xbf16, wgmma>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<64x128xf32, wgmma>
// CHECK-NEXT:    %base = nvgpu.memref_base %C : memref<?x?xbf16>
// CHECK-NEXT:    %stride = nvgpu.memref_stride %C, 0 : memref<?x?xbf16>
// CHECK-NEXT:    nvgpu.frag_store_global %v, %base, %p : !nvgpu.frag<64x128xbf16, wgmma>
// CHECK-NEXT:    nvgpu.frag_store_global %v, %base, %p mask %m : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.frag<64x128xi1, wgmma>
// CHECK-NEXT:    nvgpu.frag_store_global %v, %base, %p mask %m {vector_mask} : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.frag<64x128xi1, wgmma>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "prepared"
// CHECK-GENERIC: "nvgpu.smem_address"(%sa) : (!nvgpu.smem<4x128x64xbf16, swizzle = 128>) -> i32
// CHECK-GENERIC: "nvgpu.wgmma_desc_encode"(%addr) <{leading_byte_offset = 8192 : i64, stride_byte_offset = 1024 : i64, swizzle = 128 : i64}>
// CHECK-GENERIC: "nvgpu.wgmma_desc_advance"(%d) <{offset = 32 : i64}>
// CHECK-GENERIC: "nvgpu.wgmma_k_slice"(%a) <{index = 1 : i64}>
// CHECK-GENERIC: "nvgpu.wgmma_mma_async"(%a1, %d1, %acc, %t) <{rhs_transposed}>
// CHECK-GENERIC: "nvgpu.memref_base"(%C) : (memref<?x?xbf16>) -> index
// CHECK-GENERIC: "nvgpu.memref_stride"(%C) <{dim = 0 : i64}> : (memref<?x?xbf16>) -> index
// CHECK-GENERIC: "nvgpu.frag_store_global"(%v, %base, %p) : (!nvgpu.frag<64x128xbf16, wgmma>, index, index) -> ()
// CHECK-GENERIC: "nvgpu.frag_store_global"(%v, %base, %p, %m)
// CHECK-GENERIC: "nvgpu.frag_store_global"(%v, %base, %p, %m) <{vector_mask}>

// -----

// A warp group that owns 128 rows: one instruction per 64-row block of its accumulator.
func.func @row_blocks(%sa: !nvgpu.smem<4x256x64xbf16, swizzle = 128>, %db: !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, %acc: !nvgpu.frag<128x128xf32, wgmma>, %t: i1, %s: index, %row: index) {
  %da = nvgpu.wgmma_descriptor %sa[%s, %row] : !nvgpu.smem<4x256x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
  %w = nvgpu.wgmma %da, %db, %acc, %t {rhs_transposed} : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<128x128xf32, wgmma>
  %r0 = nvgpu.wgmma_mma_async %da, %db, %acc, %t {rhs_transposed} : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<128x128xf32, wgmma>
  %da1 = nvgpu.wgmma_desc_advance %da, 8192 : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
  %r1 = nvgpu.wgmma_mma_async %da1, %db, %r0, %t {rhs_transposed, row_block = 1 : i64} : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<128x128xf32, wgmma>
  func.return
}

// CHECK-LABEL: func.func @row_blocks(
// CHECK:         %w = nvgpu.wgmma %da, %db, %acc, %t {rhs_transposed} : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<128x128xf32, wgmma>
// CHECK:         %r0 = nvgpu.wgmma_mma_async %da, %db, %acc, %t {rhs_transposed} : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
// CHECK:         %r1 = nvgpu.wgmma_mma_async %da1, %db, %r0, %t {rhs_transposed, row_block = 1 : i64} : !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "row_blocks"
// CHECK-GENERIC: "nvgpu.wgmma_mma_async"(%da1, %db, %r0, %t) <{rhs_transposed, row_block = 1 : i64}>

// -----

// An fp8 wgmma A operand computed in registers goes through shared memory (operand_staging.py).
func.func @fp8_operand(%p: !nvgpu.frag<64x128xf32, wgmma>, %buf: !nvgpu.smem<2x64x128xf8E4M3FN, swizzle = 128>, %g: index, %c0: index) {
  %p8 = nvgpu.frag_convert %p : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xf8E4M3FN, wgmma>
  nvgpu.frag_store_shared %p8, %buf[%g, %c0] : !nvgpu.frag<64x128xf8E4M3FN, wgmma>, !nvgpu.smem<2x64x128xf8E4M3FN, swizzle = 128>
  func.return
}

// CHECK-LABEL: func.func @fp8_operand(
// CHECK-NEXT:    %p8 = nvgpu.frag_convert %p : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xf8E4M3FN, wgmma>
// CHECK-NEXT:    nvgpu.frag_store_shared %p8, %buf[%g, %c0] : !nvgpu.frag<64x128xf8E4M3FN, wgmma>, !nvgpu.smem<2x64x128xf8E4M3FN, swizzle = 128>

// -----

// Consumer-side operands: loads of a vector and a tile, a column broadcast,
// a widening conversion, tanh, the index of a vector, the expanded loads.
func.func @consumer_operands(%Bias: memref<?xbf16>, %C: memref<?x?xf32>, %n: index, %m: index, %a: index, %mask: !nvgpu.frag<256xi1, wgmma_col>, %slot: !nvgpu.smem<2x128x64xf16, swizzle = 128>) {
  %b = nvgpu.frag_load %Bias[%n] : memref<?xbf16> -> !nvgpu.frag<256xbf16, wgmma_col>
  %bf = nvgpu.frag_convert %b : !nvgpu.frag<256xbf16, wgmma_col> -> !nvgpu.frag<256xf32, wgmma_col>
  %bt = nvgpu.frag_broadcast %bf : !nvgpu.frag<256xf32, wgmma_col> -> !nvgpu.frag<64x256xf32, wgmma>
  %th = nvgpu.frag_unary tanh %bt : !nvgpu.frag<64x256xf32, wgmma>
  %c = nvgpu.frag_load %C[%m, %n] : memref<?x?xf32> -> !nvgpu.frag<64x256xf32, wgmma>
  %i = nvgpu.frag_index row : !nvgpu.frag<256xi32, wgmma_col>
  %g = nvgpu.frag_load_global %a, %a : !nvgpu.frag<256xbf16, wgmma_col>
  %gm = nvgpu.frag_load_global %a, %a mask %mask : !nvgpu.frag<256xbf16, wgmma_col>, !nvgpu.frag<256xi1, wgmma_col>
  %gv = nvgpu.frag_load_global %a, %a mask %mask {vector_mask} : !nvgpu.frag<256xbf16, wgmma_col>, !nvgpu.frag<256xi1, wgmma_col>
  %sh = nvgpu.frag_load_shared %slot[%a, %m] : !nvgpu.smem<2x128x64xf16, swizzle = 128> -> !nvgpu.frag<64x64xf16, wgmma>
  func.return
}

// CHECK-LABEL: func.func @consumer_operands(
// CHECK-NEXT:    %b = nvgpu.frag_load %Bias[%n] : memref<?xbf16> -> !nvgpu.frag<256xbf16, wgmma_col>
// CHECK-NEXT:    %bf = nvgpu.frag_convert %b : !nvgpu.frag<256xbf16, wgmma_col> -> !nvgpu.frag<256xf32, wgmma_col>
// CHECK-NEXT:    %bt = nvgpu.frag_broadcast %bf : !nvgpu.frag<256xf32, wgmma_col> -> !nvgpu.frag<64x256xf32, wgmma>
// CHECK-NEXT:    %th = nvgpu.frag_unary tanh %bt : !nvgpu.frag<64x256xf32, wgmma>
// CHECK-NEXT:    %c = nvgpu.frag_load %C[%m, %n] : memref<?x?xf32> -> !nvgpu.frag<64x256xf32, wgmma>
// CHECK-NEXT:    %i = nvgpu.frag_index row : !nvgpu.frag<256xi32, wgmma_col>
// CHECK-NEXT:    %g = nvgpu.frag_load_global %a, %a : !nvgpu.frag<256xbf16, wgmma_col>
// CHECK-NEXT:    %gm = nvgpu.frag_load_global %a, %a mask %mask : !nvgpu.frag<256xbf16, wgmma_col>, !nvgpu.frag<256xi1, wgmma_col>
// CHECK-NEXT:    %gv = nvgpu.frag_load_global %a, %a mask %mask {vector_mask} : !nvgpu.frag<256xbf16, wgmma_col>, !nvgpu.frag<256xi1, wgmma_col>
// CHECK-NEXT:    %sh = nvgpu.frag_load_shared %slot[%a, %m] : !nvgpu.smem<2x128x64xf16, swizzle = 128> -> !nvgpu.frag<64x64xf16, wgmma>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "consumer_operands"
// CHECK-GENERIC: "nvgpu.frag_load"(%Bias, %n) : (memref<?xbf16>, index) -> !nvgpu.frag<256xbf16, wgmma_col>
// CHECK-GENERIC: "nvgpu.frag_load_global"(%a, %a) : (index, index) -> !nvgpu.frag<256xbf16, wgmma_col>
// CHECK-GENERIC: "nvgpu.frag_load_shared"(%slot, %a, %m) : (!nvgpu.smem<2x128x64xf16, swizzle = 128>, index, index) -> !nvgpu.frag<64x64xf16, wgmma>

// -----

// Thread-block clusters: the rank, the cluster-wide barrier, a remote arrival
// and a multicast TMA load (tawa-cluster's ops), and the kernel's cluster size.
func.func @cluster(%A: memref<?x?xbf16>, %k: index, %s: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 384, smem = 33792, persistent, cluster = 2>} {
  %r = nvgpu.cluster_rank
  nvgpu.cluster_sync
  %ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  %full = nvgpu.smem_alloc offset(32768) : !nvgpu.mbarrier<2>
  nvgpu.tma_load %ta[%k, %k], %sa[%r], %full[%s] multicast 3 : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  nvgpu.tma_load %ta[%k, %k], %sa[%r], %full[%s] l2 "evict_first" multicast 2 : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  nvgpu.mbarrier_arrive %full[%s] cta(%r) : !nvgpu.mbarrier<2>
  func.return
}

// CHECK-LABEL: func.func @cluster(%A: memref<?x?xbf16>, %k: index, %s: index) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 384, smem = 33792, persistent, cluster = 2>} {
// CHECK-NEXT:    %r = nvgpu.cluster_rank
// CHECK-NEXT:    nvgpu.cluster_sync
// CHECK:         nvgpu.tma_load %ta[%k, %k], %sa[%r], %full[%s] multicast 3 : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
// CHECK-NEXT:    nvgpu.tma_load %ta[%k, %k], %sa[%r], %full[%s] l2 "evict_first" multicast 2 :
// CHECK-NEXT:    nvgpu.mbarrier_arrive %full[%s] cta(%r) : !nvgpu.mbarrier<2>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "cluster"
// CHECK-GENERIC:         %r = "nvgpu.cluster_rank"() : () -> index
// CHECK-GENERIC-NEXT:    "nvgpu.cluster_sync"() : () -> ()
// CHECK-GENERIC:         "nvgpu.tma_load"(%ta, %k, %k, %sa, %r, %full, %s) <{multicast = 3 : i16}>
// CHECK-GENERIC:         "nvgpu.mbarrier_arrive"(%full, %s, %r) : (!nvgpu.mbarrier<2>, index, index) -> ()

// -----

// Fragment loads and stores at addresses formed in IR (tawa-expand-shared-accesses):
// per vector, the address operand and the byte immediate.
func.func @shared_at(%u0: i32, %u1: i32) {
  %a = nvgpu.frag_load_shared_at [%u0, %u1] bases [0, 1, 0, 1] offsets [0, 0, 1024, 1024] : !nvgpu.frag<64x16xf16, wgmma>
  nvgpu.frag_store_shared_at %a, [%u1] bases [0, 0, 0, 0] offsets [0, 1024, 16, 1040] : !nvgpu.frag<64x16xf16, wgmma>
  func.return
}

// CHECK-LABEL: func.func @shared_at(
// CHECK-NEXT:    %a = nvgpu.frag_load_shared_at [%u0, %u1] bases [0, 1, 0, 1] offsets [0, 0, 1024, 1024] : !nvgpu.frag<64x16xf16, wgmma>
// CHECK-NEXT:    nvgpu.frag_store_shared_at %a, [%u1] bases [0, 0, 0, 0] offsets [0, 1024, 16, 1040] : !nvgpu.frag<64x16xf16, wgmma>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "shared_at"
// CHECK-GENERIC: "nvgpu.frag_load_shared_at"(%u0, %u1) <{bases = array<i64: 0, 1, 0, 1>, offsets = array<i64: 0, 0, 1024, 1024>}> : (i32, i32) -> !nvgpu.frag<64x16xf16, wgmma>
// CHECK-GENERIC: "nvgpu.frag_store_shared_at"(%a, %u1) <{bases = array<i64: 0, 0, 0, 0>, offsets = array<i64: 0, 1024, 16, 1040>}> : (!nvgpu.frag<64x16xf16, wgmma>, i32) -> ()

// -----

// A bounded wait written out (tawa-expand-bounded-waits): the timed spin, and
// the report's ops on the watchdog buffer.
func.func @watchdog(%i: index, %p: i32) {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  %late = nvgpu.mbarrier_timed_wait_parity %b[%i], %p, 2000000000 ns : !nvgpu.mbarrier<2>
  %buf = nvgpu.watchdog_buffer
  %old = nvgpu.atomic_cas_sys %buf, %p, %p : i32
  nvgpu.store_sys %old, %buf[8] : i32
  nvgpu.fence_sc_sys
  nvgpu.store_sys %p, %buf[4] release : i32
  nvgpu.trap
  nvgpu.park 1000000
  func.return
}

// CHECK-LABEL: func.func @watchdog(
// CHECK:         %late = nvgpu.mbarrier_timed_wait_parity %b[%i], %p, 2000000000 ns : !nvgpu.mbarrier<2>
// CHECK-NEXT:    %buf = nvgpu.watchdog_buffer
// CHECK-NEXT:    %old = nvgpu.atomic_cas_sys %buf, %p, %p : i32
// CHECK-NEXT:    nvgpu.store_sys %old, %buf[8] : i32
// CHECK-NEXT:    nvgpu.fence_sc_sys
// CHECK-NEXT:    nvgpu.store_sys %p, %buf[4] release : i32
// CHECK-NEXT:    nvgpu.trap
// CHECK-NEXT:    nvgpu.park 1000000

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "watchdog"
// CHECK-GENERIC: "nvgpu.mbarrier_timed_wait_parity"(%b, %i, %p) <{timeout_ns = 2000000000 : i64}> : (!nvgpu.mbarrier<2>, index, i32) -> i1
// CHECK-GENERIC: "nvgpu.watchdog_buffer"() : () -> i64
// CHECK-GENERIC: "nvgpu.atomic_cas_sys"(%buf, %p, %p) : (i64, i32, i32) -> i32
// CHECK-GENERIC: "nvgpu.store_sys"(%p, %buf) <{offset = 4 : i64, release}> : (i32, i64) -> ()
// CHECK-GENERIC: "nvgpu.park"() <{ns = 1000000 : i32}> : () -> ()

// -----

// TMA copies as one op per box (tawa-split-tma-chunks): a chunk's coordinates
// and its byte offset in the stage; a store's boxes closed by one commit.
func.func @tma_boxes(%A: memref<?x?xbf16>, %i: index) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x128xbf16, swizzle = 128>
  %bars = nvgpu.smem_alloc offset(32768) : !nvgpu.mbarrier<2>
  %ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  nvgpu.tma_load_box %ta[%i, %i], %sa[%i] offset 8192, %bars[%i] l2 "evict_first" multicast 1 : !nvgpu.tma_desc<64x128xbf16, swizzle = 128>, !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  nvgpu.tma_store_box %sa[%i] offset 0, %ta[%i, %i] : !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
  nvgpu.tma_store_commit
  func.return
}

// CHECK-LABEL: func.func @tma_boxes(
// CHECK:         nvgpu.tma_load_box %ta[%i, %i], %sa[%i] offset 8192, %bars[%i] l2 "evict_first" multicast 1 : !nvgpu.tma_desc<64x128xbf16, swizzle = 128>, !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
// CHECK-NEXT:    nvgpu.tma_store_box %sa[%i] offset 0, %ta[%i, %i] : !nvgpu.smem<2x64x128xbf16, swizzle = 128>, !nvgpu.tma_desc<64x128xbf16, swizzle = 128>
// CHECK-NEXT:    nvgpu.tma_store_commit

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "tma_boxes"
// CHECK-GENERIC: "nvgpu.tma_load_box"(%ta, %i, %i, %sa, %i, %bars, %i) <{offset = 8192 : i64, l2 = "evict_first", multicast = 1 : i16}>
// CHECK-GENERIC: "nvgpu.tma_store_box"(%sa, %i, %ta, %i, %i) <{offset = 0 : i64}>
// CHECK-GENERIC: "nvgpu.tma_store_commit"() : () -> ()

// -----

// TMA stores that add (tile.atomic_add through the TMA-store epilogue): cp.reduce.async.bulk.tensor.
func.func @tma_store_add(%A: memref<?x?xf32>, %i: index) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x64x32xf32, swizzle = 128>
  %ta = nvgpu.tma_descriptor %A : memref<?x?xf32> -> !nvgpu.tma_desc<64x32xf32, swizzle = 128>
  nvgpu.tma_store %sa[%i], %ta[%i, %i] add : !nvgpu.smem<1x64x32xf32, swizzle = 128>, !nvgpu.tma_desc<64x32xf32, swizzle = 128>
  nvgpu.tma_store_box %sa[%i] offset 0, %ta[%i, %i] add : !nvgpu.smem<1x64x32xf32, swizzle = 128>, !nvgpu.tma_desc<64x32xf32, swizzle = 128>
  func.return
}

// CHECK-LABEL: func.func @tma_store_add(
// CHECK:         nvgpu.tma_store %sa[%i], %ta[%i, %i] add : !nvgpu.smem<1x64x32xf32, swizzle = 128>, !nvgpu.tma_desc<64x32xf32, swizzle = 128>
// CHECK-NEXT:    nvgpu.tma_store_box %sa[%i] offset 0, %ta[%i, %i] add : !nvgpu.smem<1x64x32xf32, swizzle = 128>, !nvgpu.tma_desc<64x32xf32, swizzle = 128>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "tma_store_add"
// CHECK-GENERIC: "nvgpu.tma_store"(%sa, %i, %ta, %i, %i) <{add}>
// CHECK-GENERIC: "nvgpu.tma_store_box"(%sa, %i, %ta, %i, %i) <{offset = 0 : i64, add}>

// -----

// A transpose of a blocked tile through a shared scratch buffer, between syncs of named barrier
// 15: the 8x32 tile's values go to the buffer by their coordinates, the 32x8 tile's come back.
func.func @frag_transpose_shared(%x: !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128xf32>
  %t = nvgpu.frag_transpose_shared %x via %s barrier 15 : !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<2x128xf32> -> !nvgpu.frag<32x8xf32, #nvgpu.tiled_layout<(32,8)(16,8)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>
  func.return
}

// CHECK-LABEL: func.func @frag_transpose_shared(
// CHECK:         %t = nvgpu.frag_transpose_shared %x via %s barrier 15 : !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<2x128xf32> -> !nvgpu.frag<32x8xf32, #nvgpu.tiled_layout<(32,8)(16,8)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "frag_transpose_shared"
// CHECK-GENERIC: "nvgpu.frag_transpose_shared"(%x, %s) <{barrier = 15 : i64}>

// -----

// A reduction whose layout's warps split the reduced axis (one row of 4096 over 4 warps): the
// warps combine their partials through a shared scratch buffer, between syncs of named barrier 15.
func.func @frag_reduce_warps(%x: !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128xf32>
  %r = nvgpu.frag_reduce_warps sum %x, 1 via %s barrier 15 : !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<1x128xf32> -> !nvgpu.frag<1xf32, #nvgpu.tiled_layout<(1)(1)(1), warps = [-3, *4], lanes = [-2, *32], vector = -1>>
  func.return
}

// CHECK-LABEL: func.func @frag_reduce_warps(
// CHECK:         %r = nvgpu.frag_reduce_warps sum %x, 1 via %s barrier 15 : !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<1x128xf32> -> !nvgpu.frag<1xf32, #nvgpu.tiled_layout<(1)(1)(1), warps = [-3, *4], lanes = [-2, *32], vector = -1>>

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "frag_reduce_warps"
// CHECK-GENERIC: "nvgpu.frag_reduce_warps"(%x, %s) <{kind = #tile<reduce_kind sum>, axis = 1 : i64, barrier = 15 : i64}>
