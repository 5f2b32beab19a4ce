// RUN: TAWA_ROUNDTRIP
// RUN: TAWA_GENERIC_ROUNDTRIP
// RUN: tawa-opt %s --split-input-file | tawa-opt --split-input-file | filecheck %s

// Every op of the aref dialect, and the !aref.ref type, in custom syntax; checked
// after custom -> generic -> custom, custom -> custom, and in generic form.

// A two-type ring and a one-type ring, with and without discardable attributes
// (aref.put and aref.get have hand-written parsers).
func.func @ring(%a: tensor<128x64xbf16>, %b: tensor<256x64xbf16>) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
  %s = aref.create {tag = 1 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
  aref.put %r, %a, %b : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
  %x, %y = aref.get %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
  aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
  %z = tile.zeros : tensor<128xf32>
  aref.put %s, %z {stage = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
  %w = aref.get %s {stage = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
  aref.consumed %s {stage = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
  func.return
}

// CHECK-LABEL: func.func @ring(%a: tensor<128x64xbf16>, %b: tensor<256x64xbf16>) {
// CHECK-NEXT:    %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-NEXT:    %s = aref.create {tag = 1 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-NEXT:    aref.put %r, %a, %b : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-NEXT:    %x, %y = aref.get %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-NEXT:    aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-NEXT:    %z = tile.zeros : tensor<128xf32>
// CHECK-NEXT:    aref.put %s, %z {stage = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-NEXT:    %w = aref.get %s {stage = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-NEXT:    aref.consumed %s {stage = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-NEXT:    func.return

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "ring"
// CHECK-GENERIC:         %r = "aref.create"() : () -> !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-GENERIC-NEXT:    %s = "aref.create"() {tag = 1 : i32} : () -> !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-GENERIC-NEXT:    "aref.put"(%r, %a, %b) : (!aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> ()
// CHECK-GENERIC-NEXT:    %x, %y = "aref.get"(%r) : (!aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>) -> (tensor<128x64xbf16>, tensor<256x64xbf16>)
// CHECK-GENERIC-NEXT:    "aref.consumed"(%r) : (!aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>) -> ()
// CHECK-GENERIC-NEXT:    %z = "tile.zeros"() : () -> tensor<128xf32>
// CHECK-GENERIC-NEXT:    "aref.put"(%s, %z) {stage = 0 : i32} : (!aref.ref<[tensor<128xf32>], depth = 1>, tensor<128xf32>) -> ()
// CHECK-GENERIC-NEXT:    %w = "aref.get"(%s) {stage = 0 : i32} : (!aref.ref<[tensor<128xf32>], depth = 1>) -> tensor<128xf32>
// CHECK-GENERIC-NEXT:    "aref.consumed"(%s) {stage = 0 : i32} : (!aref.ref<[tensor<128xf32>], depth = 1>) -> ()

// -----

// A producer / consumer split, a one-partition op with extra attributes, and
// roles that are not bare identifiers (printed as string literals).
func.func @warp_specialize(%A: memref<?x?xbf16>, %m: index) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 2>
  aref.warp_specialize
    partition producer warps(4) regs(40) {
      %a = tile.load %A[%m, %m] : memref<?x?xbf16> -> tensor<128x64xbf16>
      aref.put %r, %a : !aref.ref<[tensor<128x64xbf16>], depth = 2>
    }
    partition consumer warps(8) regs(232) {
      %b = aref.get %r : !aref.ref<[tensor<128x64xbf16>], depth = 2>
      aref.consumed %r : !aref.ref<[tensor<128x64xbf16>], depth = 2>
    }
  aref.warp_specialize partition solo warps(4) regs(24) {
    nvgpu.setmaxnreg dec 24
  } attributes {kernel = "k"}
  aref.warp_specialize partition "consumer-0" warps(4) regs(240) {
    nvgpu.fence_proxy_async
  } partition "consumer 1" warps(4) regs(240) {
    nvgpu.fence_proxy_async
  }
  func.return
}

// CHECK-LABEL: func.func @warp_specialize(%A: memref<?x?xbf16>, %m: index) {
// CHECK-NEXT:    %r = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 2>
// CHECK-NEXT:    aref.warp_specialize partition producer warps(4) regs(40) {
// CHECK-NEXT:      %a = tile.load %A[%m, %m] : memref<?x?xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:      aref.put %r, %a : !aref.ref<[tensor<128x64xbf16>], depth = 2>
// CHECK-NEXT:    } partition consumer warps(8) regs(232) {
// CHECK-NEXT:      %b = aref.get %r : !aref.ref<[tensor<128x64xbf16>], depth = 2>
// CHECK-NEXT:      aref.consumed %r : !aref.ref<[tensor<128x64xbf16>], depth = 2>
// CHECK-NEXT:    }
// CHECK-NEXT:    aref.warp_specialize partition solo warps(4) regs(24) {
// CHECK-NEXT:      nvgpu.setmaxnreg dec 24
// CHECK-NEXT:    } attributes {kernel = "k"}
// CHECK-NEXT:    aref.warp_specialize partition "consumer-0" warps(4) regs(240) {
// CHECK-NEXT:      nvgpu.fence_proxy_async
// CHECK-NEXT:    } partition "consumer 1" warps(4) regs(240) {
// CHECK-NEXT:      nvgpu.fence_proxy_async
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "warp_specialize"
// CHECK-GENERIC:         %r = "aref.create"() : () -> !aref.ref<[tensor<128x64xbf16>], depth = 2>
// CHECK-GENERIC-NEXT:    "aref.warp_specialize"() <{roles = ["producer", "consumer"], num_warps = array<i32: 4, 8>, regs = array<i32: 40, 232>}> ({
// CHECK-GENERIC-NEXT:      %a = "tile.load"(%A, %m, %m) : (memref<?x?xbf16>, index, index) -> tensor<128x64xbf16>
// CHECK-GENERIC-NEXT:      "aref.put"(%r, %a) : (!aref.ref<[tensor<128x64xbf16>], depth = 2>, tensor<128x64xbf16>) -> ()
// CHECK-GENERIC-NEXT:    }, {
// CHECK-GENERIC-NEXT:      %b = "aref.get"(%r) : (!aref.ref<[tensor<128x64xbf16>], depth = 2>) -> tensor<128x64xbf16>
// CHECK-GENERIC-NEXT:      "aref.consumed"(%r) : (!aref.ref<[tensor<128x64xbf16>], depth = 2>) -> ()
// CHECK-GENERIC-NEXT:    }) : () -> ()
// CHECK-GENERIC-NEXT:    "aref.warp_specialize"() <{roles = ["solo"], num_warps = array<i32: 4>, regs = array<i32: 24>}> ({
// CHECK-GENERIC-NEXT:      "nvgpu.setmaxnreg"() <{action = #nvgpu<reg_action dec>, count = 24 : i32}> : () -> ()
// CHECK-GENERIC-NEXT:    }) {kernel = "k"} : () -> ()
// CHECK-GENERIC-NEXT:    "aref.warp_specialize"() <{roles = ["consumer-0", "consumer 1"], num_warps = array<i32: 4, 4>, regs = array<i32: 240, 240>}> ({
// CHECK-GENERIC-NEXT:      "nvgpu.fence_proxy_async"() : () -> ()
// CHECK-GENERIC-NEXT:    }, {
// CHECK-GENERIC-NEXT:      "nvgpu.fence_proxy_async"() : () -> ()
// CHECK-GENERIC-NEXT:    }) : () -> ()
