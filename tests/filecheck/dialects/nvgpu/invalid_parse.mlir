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

func.func @frag_rows(%f: !nvgpu.frag<96x64xf32, wgmma>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.frag: 96x64 is not a multiple of the tile 64x8

// -----

func.func @frag_columns(%f: !nvgpu.frag<64x60xbf16, wgmma>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.frag: 64x60 is not a multiple of the tile 64x8

// -----

func.func @frag_rank(%f: !nvgpu.frag<64xf32, wgmma>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.frag: a rank-2 layout cannot hold a 64 tile

// -----

func.func @frag_element_type(%f: !nvgpu.frag<64x64xf64, wgmma>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.frag elements must be f32, bf16, f16, f8E4M3FN, f8E5M2, i32 or i1, got f64

// -----

func.func @frag_threads(%f: !nvgpu.frag<64x64xf32, #nvgpu.tiled_layout<(64,8)(16,8)(8,8)(1,2), warps = [-8], lanes = [-4], vector = -1>>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:1
// CHECK:      nvgpu.frag: the layout spreads 64x64 over 4 warps x 8 lanes, not the 4 x 32 of a warp group

// -----

func.func @frag_layout(%f: !nvgpu.frag<64x64xbf16, wgmma_b>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:52
// CHECK:      unknown fragment layout 'wgmma_b' (named layouts: wgmma, wgmma_row, wgmma_col, wgmma_t)

// -----

func.func @frag_layout_attr(%f: !nvgpu.frag<64x64xbf16, #nvgpu.tiled_layout<(64,8)(16,8), warps = [-9], lanes = [-4, -3], vector = -1>>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:77
// CHECK:      invalid register layout: warp, lane and vector dims must be distinct indices in [-6, -1]

// -----

func.func @frag_layout_tiling(%f: !nvgpu.frag<64x64xbf16, #nvgpu.tiled_layout<(64,8)(16,3), warps = [-4], lanes = [-3], vector = -1>>) {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:79
// CHECK:      invalid register layout: tile (16, 3) does not divide the trailing dims of (64, 8)

// --- nvgpu.wgmma_wait_group

// -----

func.func @wait_group_types(%d: !nvgpu.frag<64x256xf32, wgmma>, %e: !nvgpu.frag<64x256xf32, wgmma>) {
  %d1, %e1 = nvgpu.wgmma_wait_group 1 (%d, %e) : !nvgpu.frag<64x256xf32, wgmma>
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:48
// CHECK:      nvgpu.wgmma_wait_group: 2 values but 1 types

// -----

func.func @frag_binary_kind(%a: !nvgpu.frag<64x256xf32, wgmma>, %s: f32) {
  %0 = nvgpu.frag_binary powf %a, %s : !nvgpu.frag<64x256xf32, wgmma>, f32
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:
// CHECK:      unknown nvgpu.frag_binary kind 'powf'

// -----

func.func @frag_row_shape(%a: !nvgpu.frag<96xf32, wgmma_row>) {
  func.return
}
// CHECK:      nvgpu.frag: 96 is not a multiple of the tile 64

// -----

func.func @frag_cmpi_predicate(%a: !nvgpu.frag<64x128xi32, wgmma>, %n: i32) {
  %0 = nvgpu.frag_cmpi lt, %a, %n : !nvgpu.frag<64x128xi32, wgmma>, i32
  func.return
}
// CHECK:      unknown nvgpu.frag_cmpi predicate 'lt'

// -----

func.func @frag_cmpi_lhs(%a: i32, %n: i32) {
  %0 = nvgpu.frag_cmpi slt, %a, %n : i32, i32
  func.return
}
// CHECK:      nvgpu.frag_cmpi compares fragments, got i32

// --- #nvgpu.kernel

// -----

func.func @kernel_threads() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 100>} {
  func.return
}
// CHECK:      #nvgpu.kernel threads must be whole warp groups of 128, at most 1024, got 100

// -----

func.func @kernel_regs() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 384, regs = [40, 240, 240]>} {
  func.return
}
// CHECK:      #nvgpu.kernel register budgets oversubscribe the registers the CTA holds at launch: 66560 > 64512

// -----

func.func @kernel_regs_per_group() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 256, regs = [40]>} {
  func.return
}
// CHECK:      #nvgpu.kernel needs one register budget per warp group: 2, got 1

// -----

func.func @kernel_regs_granule() attributes {nvgpu.kernel = #nvgpu.kernel<regs = [44]>} {
  func.return
}
// CHECK:      #nvgpu.kernel regs must be multiples of 8 in [24, 256], got [44]

// -----

func.func @kernel_smem() attributes {nvgpu.kernel = #nvgpu.kernel<smem = 300000>} {
  func.return
}
// CHECK:      #nvgpu.kernel smem = 300000 bytes is more than the 232448 a CTA may use

// -----

func.func @kernel_cluster() attributes {nvgpu.kernel = #nvgpu.kernel<cluster = 16>} {
  func.return
}
// CHECK:      #nvgpu.kernel cluster must be 1 to 8 CTAs, got 16

// -----

func.func @kernel_field() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, warps = 4>} {
  func.return
}
// CHECK:      invalid_parse.mlir:[[# @LINE - 3]]:83
// CHECK:      unknown #nvgpu.kernel field 'warps' (threads, smem, regs, maxnreg, ctas_per_sm, persistent, cluster)
