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
  aref.put %s, %z {tag = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
  %w = aref.get %s {tag = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
  aref.consumed %s {tag = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
  func.return
}

// CHECK-LABEL: func.func @ring(%a: tensor<128x64xbf16>, %b: tensor<256x64xbf16>) {
// CHECK-NEXT:    %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-NEXT:    %s = aref.create {tag = 1 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-NEXT:    aref.put %r, %a, %b : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-NEXT:    %x, %y = aref.get %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-NEXT:    aref.consumed %r : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-NEXT:    %z = tile.zeros : tensor<128xf32>
// CHECK-NEXT:    aref.put %s, %z {tag = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-NEXT:    %w = aref.get %s {tag = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-NEXT:    aref.consumed %s {tag = 0 : i32} : !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-NEXT:    func.return

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "ring"
// CHECK-GENERIC:         %r = "aref.create"() : () -> !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>
// CHECK-GENERIC-NEXT:    %s = "aref.create"() {tag = 1 : i32} : () -> !aref.ref<[tensor<128xf32>], depth = 1>
// CHECK-GENERIC-NEXT:    "aref.put"(%r, %a, %b) <{operandSegmentSizes = array<i32: 1, 2, 0, 0>}> : (!aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> ()
// CHECK-GENERIC-NEXT:    %x, %y = "aref.get"(%r) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>) -> (tensor<128x64xbf16>, tensor<256x64xbf16>)
// CHECK-GENERIC-NEXT:    "aref.consumed"(%r) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>) -> ()
// CHECK-GENERIC-NEXT:    %z = "tile.zeros"() : () -> tensor<128xf32>
// CHECK-GENERIC-NEXT:    "aref.put"(%s, %z) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> {tag = 0 : i32} : (!aref.ref<[tensor<128xf32>], depth = 1>, tensor<128xf32>) -> ()
// CHECK-GENERIC-NEXT:    %w = "aref.get"(%s) <{operandSegmentSizes = array<i32: 1, 0, 0>}> {tag = 0 : i32} : (!aref.ref<[tensor<128xf32>], depth = 1>) -> tensor<128xf32>
// CHECK-GENERIC-NEXT:    "aref.consumed"(%s) <{operandSegmentSizes = array<i32: 1, 0, 0>}> {tag = 0 : i32} : (!aref.ref<[tensor<128xf32>], depth = 1>) -> ()

// -----

// A producer / consumer split and a one-partition op with extra attributes.
// Roles are `#aref<role producer>` / `#aref<role consumer>` in generic form.
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
  aref.warp_specialize partition consumer warps(4) regs(24) {
    nvgpu.setmaxnreg dec 24
  } attributes {kernel = "k"}
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
// CHECK-NEXT:    aref.warp_specialize partition consumer warps(4) regs(24) {
// CHECK-NEXT:      nvgpu.setmaxnreg dec 24
// CHECK-NEXT:    } attributes {kernel = "k"}
// CHECK-NEXT:    func.return

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "warp_specialize"
// CHECK-GENERIC:         %r = "aref.create"() : () -> !aref.ref<[tensor<128x64xbf16>], depth = 2>
// CHECK-GENERIC-NEXT:    "aref.warp_specialize"() <{roles = [#aref<role producer>, #aref<role consumer>], num_warps = array<i32: 4, 8>, regs = array<i32: 40, 232>}> ({
// CHECK-GENERIC-NEXT:      %a = "tile.load"(%A, %m, %m) : (memref<?x?xbf16>, index, index) -> tensor<128x64xbf16>
// CHECK-GENERIC-NEXT:      "aref.put"(%r, %a) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (!aref.ref<[tensor<128x64xbf16>], depth = 2>, tensor<128x64xbf16>) -> ()
// CHECK-GENERIC-NEXT:    }, {
// CHECK-GENERIC-NEXT:      %b = "aref.get"(%r) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!aref.ref<[tensor<128x64xbf16>], depth = 2>) -> tensor<128x64xbf16>
// CHECK-GENERIC-NEXT:      "aref.consumed"(%r) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!aref.ref<[tensor<128x64xbf16>], depth = 2>) -> ()
// CHECK-GENERIC-NEXT:    }) : () -> ()
// CHECK-GENERIC-NEXT:    "aref.warp_specialize"() <{roles = [#aref<role consumer>], num_warps = array<i32: 4>, regs = array<i32: 24>}> ({
// CHECK-GENERIC-NEXT:      "nvgpu.setmaxnreg"() <{action = #nvgpu<reg_action dec>, count = 24 : i32}> : () -> ()
// CHECK-GENERIC-NEXT:    }) {kernel = "k"} : () -> ()

// -----

// Arefs with explicit slots, as tawa-assign-stage-phase leaves them.
func.func @slots(%a: tensor<128x64xbf16>, %s: index, %p: index) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 4>
  aref.put %r[%s, %p], %a : !aref.ref<[tensor<128x64xbf16>], depth = 4>
  %x = aref.get %r[%s, %p] {tag = 1 : i32} : !aref.ref<[tensor<128x64xbf16>], depth = 4>
  aref.consumed %r[%s, %p] : !aref.ref<[tensor<128x64xbf16>], depth = 4>
  func.return
}

// CHECK-LABEL: func.func @slots(%a: tensor<128x64xbf16>, %s: index, %p: index) {
// CHECK-NEXT:    %r = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 4>
// CHECK-NEXT:    aref.put %r[%s, %p], %a : !aref.ref<[tensor<128x64xbf16>], depth = 4>
// CHECK-NEXT:    %x = aref.get %r[%s, %p] {tag = 1 : i32} : !aref.ref<[tensor<128x64xbf16>], depth = 4>
// CHECK-NEXT:    aref.consumed %r[%s, %p] : !aref.ref<[tensor<128x64xbf16>], depth = 4>
// CHECK-NEXT:    func.return

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "slots"
// CHECK-GENERIC:         "aref.put"(%r, %a, %s, %p) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}>
// CHECK-GENERIC-NEXT:    %x = "aref.get"(%r, %s, %p) <{operandSegmentSizes = array<i32: 1, 1, 1>}> {tag = 1 : i32}
// CHECK-GENERIC-NEXT:    "aref.consumed"(%r, %s, %p) <{operandSegmentSizes = array<i32: 1, 1, 1>}>
