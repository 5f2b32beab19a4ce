// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// A case that verified would print its module.
// EVERY-CASE-FAILS-NOT: builtin.module

// One verifier error of the aref dialect per chunk.  Errors raised while
// parsing (including those of the !aref.ref type) are in invalid_parse.mlir.

// The custom syntax types the values from the aref; the generic form can disagree.
func.func @put_values(%a: tensor<128x64xbf16>) {
  %r = aref.create : !aref.ref<[tensor<128x64xf16>], depth = 2>
  "aref.put"(%r, %a) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (!aref.ref<[tensor<128x64xf16>], depth = 2>, tensor<128x64xbf16>) -> ()
  func.return
}
// CHECK: error: aref.put values (tensor<128x64xbf16>) do not match the aref payload (tensor<128x64xf16>)

// -----

func.func @put_count(%a: tensor<128x64xbf16>) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<64xf32>], depth = 2>
  "aref.put"(%r, %a) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (!aref.ref<[tensor<128x64xbf16>, tensor<64xf32>], depth = 2>, tensor<128x64xbf16>) -> ()
  func.return
}
// CHECK: error: aref.put values (tensor<128x64xbf16>) do not match the aref payload (tensor<128x64xbf16>, tensor<64xf32>)

// -----

func.func @get_results() {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>, tensor<64xf32>], depth = 2>
  %a, %b = "aref.get"(%r) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!aref.ref<[tensor<128x64xbf16>, tensor<64xf32>], depth = 2>) -> (tensor<64xf32>, tensor<128x64xbf16>)
  func.return
}
// CHECK: error: aref.get results (tensor<64xf32>, tensor<128x64xbf16>) do not match the aref payload (tensor<128x64xbf16>, tensor<64xf32>)

// -----

// Only the generic form can spell an op with no partitions.
func.func @no_partitions() {
  "aref.warp_specialize"() <{roles = [], num_warps = array<i32>, regs = array<i32>}> : () -> ()
  func.return
}
// CHECK: error: aref.warp_specialize needs at least one partition

// -----

func.func @partition_specs() {
  "aref.warp_specialize"() <{roles = [#aref<role producer>, #aref<role consumer>], num_warps = array<i32: 4>, regs = array<i32: 40, 232>}> ({
    nvgpu.fence_proxy_async
  }, {
    nvgpu.fence_proxy_async
  }) : () -> ()
  func.return
}
// CHECK: error: aref.warp_specialize needs one role, warp count and register budget per partition (2 partitions)

// -----

func.func @duplicate_roles() {
  aref.warp_specialize partition consumer warps(4) regs(232) {
    nvgpu.fence_proxy_async
  } partition consumer warps(4) regs(232) {
    nvgpu.fence_proxy_async
  }
  func.return
}
// CHECK: error: aref.warp_specialize roles must be unique, got ['consumer', 'consumer']

// -----

func.func @partial_warp_group() {
  aref.warp_specialize partition producer warps(2) regs(40) {
    nvgpu.fence_proxy_async
  }
  func.return
}
// CHECK: error: 'aref.warp_specialize' partition producer: warps(2) must be a positive multiple of 4 (whole warp groups)

// -----

func.func @negative_warps() {
  aref.warp_specialize partition producer warps(-4) regs(40) {
    nvgpu.fence_proxy_async
  }
  func.return
}
// CHECK: error: 'aref.warp_specialize' partition producer: warps(-4) must be a positive multiple of 4 (whole warp groups)

// -----

func.func @regs_granule() {
  aref.warp_specialize partition consumer warps(4) regs(100) {
    nvgpu.fence_proxy_async
  }
  func.return
}
// CHECK: error: 'aref.warp_specialize' partition consumer: regs(100) must be a multiple of 8 in [24, 256]

// -----

func.func @regs_range() {
  aref.warp_specialize partition producer warps(4) regs(16) {
    nvgpu.fence_proxy_async
  }
  func.return
}
// CHECK: error: 'aref.warp_specialize' partition producer: regs(16) must be a multiple of 8 in [24, 256]

// -----

// 4 x 32 x 40 + 8 x 32 x 240 = 66560 registers, more than the 168 x 384 = 64512
// a CTA of 384 threads holds at launch.
func.func @oversubscribed() {
  aref.warp_specialize partition producer warps(4) regs(40) {
    nvgpu.fence_proxy_async
  } partition consumer warps(8) regs(240) {
    nvgpu.fence_proxy_async
  }
  func.return
}
// CHECK: error: 'aref.warp_specialize' register budgets oversubscribe the registers a CTA of 384 threads holds at launch: 66560 > 64512 (sum of warps x 32 x regs; setmaxnreg.inc would wait for ever)

// -----

// A slot is a stage and a phase (see tawa-assign-stage-phase), never one alone.
func.func @stage_without_phase(%s: index) {
  %r = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 2>
  "aref.consumed"(%r, %s) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!aref.ref<[tensor<128x64xbf16>], depth = 2>, index) -> ()
  func.return
}
// CHECK: error: aref.consumed needs both a stage and a phase, or neither
