// RUN: tawa-opt %s --parsing-diagnostics --split-input-file | filecheck %s
// RUN: tawa-opt %s --parsing-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// A case that parsed would print its module.
// EVERY-CASE-FAILS-NOT: builtin.module

// Errors of the nvgpu dialect raised while parsing: the verifiers of its types
// run as soon as a type is built (they are reported at the op that spells the
// type), and nvgpu.frag and nvgpu.wgmma_wait_group have hand-written parsers.

// --- shared-memory tile types (!nvgpu.smem, !nvgpu.tma_desc, !nvgpu.wgmma_desc)

func.func @smem_zero_rows() {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x0x64xbf16>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      nvgpu.smem needs positive static dims, got [4, 0, 64]

// -----

// A dynamic dimension is reported with xdsl's internal value for '?'.
func.func @smem_dynamic() {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<?x64xbf16>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      nvgpu.smem needs positive static dims, got [{{-[0-9]+}}, 64]

// -----

func.func @wgmma_desc_zero_rows(%d: !nvgpu.wgmma_desc<0x64xbf16>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.wgmma_desc needs positive static dims, got [0, 64]

// -----

func.func @smem_swizzle() {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x8xbf16, swizzle = 16>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      nvgpu.smem swizzle must be one of (0, 32, 64, 128) bytes, got 16

// -----

// 32 bf16 elements are 64 bytes, not 128.
func.func @smem_swizzle_rows() {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x32xbf16, swizzle = 128>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      nvgpu.smem: a 128B-swizzled tile needs rows of a multiple of 128 bytes, got 64

// -----

func.func @tma_desc_swizzle_rows(%A: memref<?x?xbf16>) {
  %t = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x48xbf16, swizzle = 64>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      nvgpu.tma_desc: a 64B-swizzled tile needs rows of a multiple of 64 bytes, got 96

// -----

func.func @smem_element_type() {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<64x64xf64>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      unsupported element type f64

// --- !nvgpu.mbarrier

// -----

func.func @mbarrier_count() {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<0>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:3
// CHECK:      nvgpu.mbarrier count must be positive, got 0

// --- !nvgpu.frag

// -----

func.func @frag_rows(%f: !nvgpu.frag<128x64xf32, wgmma_acc>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.frag of layout wgmma_acc must be 64xN with N a positive multiple of 8, got [128, 64]

// -----

func.func @frag_columns(%f: !nvgpu.frag<64x60xbf16, wgmma_a>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.frag of layout wgmma_a must be 64xN with N a positive multiple of 8, got [64, 60]

// -----

func.func @frag_accumulator_type(%f: !nvgpu.frag<64x64xbf16, wgmma_acc>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.frag wgmma_acc fragments hold f32

// -----

func.func @frag_operand_type(%f: !nvgpu.frag<64x64xf32, wgmma_a>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.frag wgmma_a fragments hold bf16 or f16

// -----

func.func @frag_layout(%f: !nvgpu.frag<64x64xbf16, wgmma_b>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:52
// CHECK:      unknown fragment layout 'wgmma_b'

// --- nvgpu.wgmma_wait_group

// -----

func.func @wait_group_types(%d: !nvgpu.frag<64x256xf32, wgmma_acc>, %e: !nvgpu.frag<64x256xf32, wgmma_acc>) {
  %d1, %e1 = nvgpu.wgmma_wait_group 1 (%d, %e) : !nvgpu.frag<64x256xf32, wgmma_acc>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:48
// CHECK:      nvgpu.wgmma_wait_group: 2 values but 1 types

// -----

func.func @frag_binary_kind(%a: !nvgpu.frag<64x256xf32, wgmma_acc>, %s: f32) {
  %0 = nvgpu.frag_binary powf %a, %s : !nvgpu.frag<64x256xf32, wgmma_acc>, f32
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:
// CHECK:      unknown nvgpu.frag_binary kind 'powf'

// -----

func.func @frag_row_shape(%a: !nvgpu.frag<128xf32, wgmma_row>) {
  func.return
}
// CHECK:      nvgpu.frag of layout wgmma_row must be 64xf32, got [128]

// -----

func.func @frag_cmpi_predicate(%a: !nvgpu.frag<64x128xi32, wgmma_acc>, %n: i32) {
  %0 = nvgpu.frag_cmpi lt, %a, %n : !nvgpu.frag<64x128xi32, wgmma_acc>, i32
  func.return
}
// CHECK:      unknown nvgpu.frag_cmpi predicate 'lt'

// -----

func.func @frag_cmpi_lhs(%a: i32, %n: i32) {
  %0 = nvgpu.frag_cmpi slt, %a, %n : i32, i32
  func.return
}
// CHECK:      nvgpu.frag_cmpi compares fragments, got i32
