// RUN: tawa-opt %s --parsing-diagnostics --split-input-file | filecheck %s
// RUN: tawa-opt %s --parsing-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// A case that parsed would print its module.
// EVERY-CASE-FAILS-NOT: builtin.module

// Errors of the aref dialect raised while parsing: the !aref.ref type verifier
// runs as soon as the type is built, and aref.put, aref.get and
// aref.warp_specialize have hand-written parsers.

func.func @depth_zero() {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 0>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      aref depth must be at least 1, got 0

// -----

// The type is checked wherever it appears, here in a function signature.
func.func @empty_payload(%r: !aref.ref<[], depth = 2>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      aref payload must hold at least one type

// -----

func.func @scalar_payload() {
  %r = aref.create : !aref.ref<[f32], depth = 2>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      aref payload types must be statically shaped tensors, got f32

// -----

func.func @dynamic_payload() {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<?xf32>], depth = 2>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      aref payload types must be statically shaped tensors, got tensor<?xf32>

// -----

func.func @put_not_aref(%a: tensor<128x64xbf16>) {
  aref.put %a, %a : tensor<128x64xbf16>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:21
// CHECK:      aref.put expects an aref type, got tensor<128x64xbf16>

// -----

func.func @put_count(%a: tensor<128x64xbf16>) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<64xf32>], depth = 2>
  aref.put %r, %a : !aref.ref<[tensor<128x64xbf16>, tensor<64xf32>], depth = 2>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:21
// CHECK:      aref.put expects 2 values for !aref.ref<[tensor<128x64xbf16>, tensor<64xf32>], depth = 2>, got 1

// -----

func.func @get_not_aref(%a: tensor<128x64xbf16>) {
  %b = aref.get %a : tensor<128x64xbf16>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:22
// CHECK:      aref.get expects an aref type, got tensor<128x64xbf16>

// -----

func.func @no_partition() {
  aref.warp_specialize producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  }
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 5]]:24
// CHECK:      aref.warp_specialize expects at least one 'partition'

// -----

// Partition roles are a PartitionRole: producer or consumer.
func.func @unknown_role() {
  aref.warp_specialize partition solo warps(4) regs(40) {
  }
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 4]]:34
// CHECK:      unknown partition role 'solo' (expected producer or consumer)

// -----

func.func @generic_unknown_role() {
  "aref.warp_specialize"() <{roles = [#aref<role solo>], num_warps = array<i32: 4>, regs = array<i32: 40>}> ({
  }) : () -> ()
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 4]]
// CHECK:      solo
