// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// A case that verified would print its module.
// EVERY-CASE-FAILS-NOT: builtin.module

// One verifier error of the nvgpu dialect per chunk.  Errors raised while
// parsing (all of the type verifiers, and nvgpu.wgmma_wait_group's parser) are
// in invalid_parse.mlir.

// --- shared memory

// 128B-swizzled buffers start at multiples of 1024 bytes.
func.func @smem_alignment() {
  %a = nvgpu.smem_alloc offset(512) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.smem_alloc offset 512 must be a non-negative multiple of 1024 for !nvgpu.smem<4x128x64xbf16, swizzle = 128>

// -----

func.func @smem_negative_offset() {
  %b = nvgpu.smem_alloc offset(-8) : !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: nvgpu.smem_alloc offset -8 must be a non-negative multiple of 8 for !nvgpu.mbarrier<2>

// -----

// --- mbarriers

func.func @mbarrier_init_count(%i: index) {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  nvgpu.mbarrier_init %b[%i], 0 : !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: 'nvgpu.mbarrier_init' mbarrier_init count must be in [1, 1048575], got 0

// -----

func.func @expect_tx_bytes(%i: index) {
  %b = nvgpu.smem_alloc offset(0) : !nvgpu.mbarrier<2>
  nvgpu.mbarrier_arrive_expect_tx %b[%i], 1048576 : !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: 'nvgpu.mbarrier_arrive_expect_tx' expect_tx bytes must be in [1, 1048575], got 1048576

// -----

// --- TMA

func.func @tma_descriptor_rank(%X: memref<?x?x?xbf16>) {
  %t = nvgpu.tma_descriptor %X : memref<?x?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_descriptor box rank 2 differs from the memref rank 3

// -----

func.func @tma_descriptor_element_type(%A: memref<?x?xf16>) {
  %t = nvgpu.tma_descriptor %A : memref<?x?xf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_descriptor element type bf16 differs from the memref's f16

// -----

func.func @tma_descriptor_box_size(%A: memref<?x?xbf16>) {
  %t = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<512x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_descriptor box dims must be at most 256, got [512, 64]

// -----

// 4 bf16 elements are 8 bytes.
func.func @tma_descriptor_inner_bytes(%A: memref<?x?xbf16>) {
  %t = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<64x4xbf16>
  func.return
}
// CHECK: error: nvgpu.tma_descriptor inner box dimension must span a multiple of 16 bytes

// -----

func.func @tma_load_coordinates(%t: !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  %b = nvgpu.smem_alloc offset(65536) : !nvgpu.mbarrier<2>
  nvgpu.tma_load %t[%i], %s[%i], %b[%i] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: nvgpu.tma_load expects 2 coordinates, got 1

// -----

func.func @tma_load_box(%t: !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %b = nvgpu.smem_alloc offset(32768) : !nvgpu.mbarrier<2>
  nvgpu.tma_load %t[%i, %i], %s[%i], %b[%i] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x64x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: nvgpu.tma_load: box [128, 64] does not match the shared-memory tile [64, 64]

// -----

func.func @tma_load_swizzle(%t: !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16>
  %b = nvgpu.smem_alloc offset(65536) : !nvgpu.mbarrier<2>
  nvgpu.tma_load %t[%i, %i], %s[%i], %b[%i] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16>, !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: nvgpu.tma_load: element type and swizzle of !nvgpu.tma_desc<128x64xbf16, swizzle = 128> and !nvgpu.smem<2x128x64xbf16> differ

// -----

func.func @tma_load_l2(%t: !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  %b = nvgpu.smem_alloc offset(65536) : !nvgpu.mbarrier<2>
  nvgpu.tma_load %t[%i, %i], %s[%i], %b[%i] l2 "keep" : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: nvgpu.tma_load l2 must be one of evict_first, evict_last, got 'keep'

// -----

func.func @tma_load_multicast(%t: !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
  %b = nvgpu.smem_alloc offset(32768) : !nvgpu.mbarrier<2>
  // expected-error@+1 {{nvgpu.tma_load multicast must be a non-empty mask of the 8 CTA ranks a cluster may have, got 0}}
  nvgpu.tma_load %t[%i, %i], %s[%i], %b[%i] multicast 0 : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<2>
  func.return
}
// CHECK: error: nvgpu.tma_load multicast must be a non-empty mask of the 8 CTA ranks a cluster may have, got 0

// -----

func.func @tma_store_coordinates(%t: !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  nvgpu.tma_store %s[%i], %t[%i, %i, %i] : !nvgpu.smem<1x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_store expects 2 coordinates, got 3

// -----

func.func @tma_store_box(%t: !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<128x64xbf16, swizzle = 128>
  nvgpu.tma_store %s[%i], %t[%i, %i] : !nvgpu.smem<128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_store: box [128, 64] does not match the shared-memory tile [64]

// -----

func.func @tma_store_element_type(%t: !nvgpu.tma_desc<128x64xf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  nvgpu.tma_store %s[%i], %t[%i, %i] : !nvgpu.smem<1x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_store: element type and swizzle of !nvgpu.tma_desc<128x64xf16, swizzle = 128> and !nvgpu.smem<1x128x64xbf16, swizzle = 128> differ

// -----

// A TMA store that adds (tile.atomic_add's) adds f32 elements only.
func.func @tma_store_add_bf16(%t: !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  nvgpu.tma_store %s[%i], %t[%i, %i] add : !nvgpu.smem<1x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_store add adds f32 elements, got bf16

// -----

func.func @tma_store_box_add_bf16(%t: !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, %i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<1x128x64xbf16, swizzle = 128>
  nvgpu.tma_store_box %s[%i] offset 0, %t[%i, %i] add : !nvgpu.smem<1x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.tma_store_box add adds f32 elements, got bf16

// -----

func.func @tma_store_wait_pending() {
  nvgpu.tma_store_wait 8
  func.return
}
// CHECK: error: nvgpu.tma_store_wait pending must be in [0, 7], got 8

// -----

// --- wgmma

func.func @wgmma_descriptor_source(%i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<128x64xbf16, swizzle = 128>
  %d = nvgpu.wgmma_descriptor %s[%i, %i] : !nvgpu.smem<128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.wgmma_descriptor source must be stages x rows x cols, got !nvgpu.smem<128x64xbf16, swizzle = 128>

// -----

func.func @wgmma_descriptor_rows(%i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %d = nvgpu.wgmma_descriptor %s[%i, %i] : !nvgpu.smem<2x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.wgmma_descriptor: !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128> is not a row range of the 64x64 tiles of !nvgpu.smem<2x64x64xbf16, swizzle = 128>

// -----

func.func @wgmma_descriptor_rank(%i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %d = nvgpu.wgmma_descriptor %s[%i, %i] : !nvgpu.smem<2x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<1x64x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.wgmma_descriptor: !nvgpu.wgmma_desc<1x64x64xbf16, swizzle = 128> is not a row range of the 64x64 tiles of !nvgpu.smem<2x64x64xbf16, swizzle = 128>

// -----

func.func @wgmma_descriptor_swizzle(%i: index) {
  %s = nvgpu.smem_alloc offset(0) : !nvgpu.smem<2x64x64xbf16, swizzle = 128>
  %d = nvgpu.wgmma_descriptor %s[%i, %i] : !nvgpu.smem<2x64x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16>
  func.return
}
// CHECK: error: nvgpu.wgmma_descriptor: element type and swizzle must match the source

// -----

func.func @wgmma_accumulator_layout(%a: !nvgpu.wgmma_desc<64x64xbf16>, %b: !nvgpu.wgmma_desc<64x64xbf16>, %c: !nvgpu.frag<64x64xbf16, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t : !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.frag<64x64xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma accumulator must be an f32 fragment of the wgmma layout

// -----

func.func @wgmma_register_lhs_layout(%a: !nvgpu.frag<64x64xbf16, #nvgpu.tiled_layout<(64,8)(16,8)(8,8)(1,2), warps = [-8], lanes = [-3, -4], vector = -1>>, %b: !nvgpu.wgmma_desc<64x64xbf16>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t : !nvgpu.frag<64x64xbf16, #nvgpu.tiled_layout<(64,8)(16,8)(8,8)(1,2), warps = [-8], lanes = [-3, -4], vector = -1>>, !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma register lhs must be a fragment of the wgmma layout

// -----

func.func @wgmma_i8_operands(%a: !nvgpu.wgmma_desc<64x32xi8>, %b: !nvgpu.wgmma_desc<64x32xi8>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x32xi8>, !nvgpu.wgmma_desc<64x32xi8>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma operands must both be bf16, f16, f8E4M3FN, f8E5M2 or f32 (tf32) (fp8 formats may mix), got i8 and i8

// -----

func.func @wgmma_mixed_operands(%a: !nvgpu.wgmma_desc<64x64xbf16>, %b: !nvgpu.wgmma_desc<64x64xf16>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.wgmma_desc<64x64xf16>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma operands must both be bf16, f16, f8E4M3FN, f8E5M2 or f32 (tf32) (fp8 formats may mix), got bf16 and f16

// -----

func.func @wgmma_rank(%a: !nvgpu.wgmma_desc<1x64x64xbf16>, %b: !nvgpu.wgmma_desc<64x64xbf16>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<1x64x64xbf16>, !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma operands must be 2-D

// -----

func.func @wgmma_lhs_rows(%a: !nvgpu.wgmma_desc<96x64xbf16>, %b: !nvgpu.wgmma_desc<64x64xbf16>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<96x64xbf16>, !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma lhs must have 64 rows or a multiple of 64, got 96

// -----

func.func @wgmma_acc_rows(%a: !nvgpu.wgmma_desc<128x64xbf16>, %b: !nvgpu.wgmma_desc<64x64xbf16>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<128x64xbf16>, !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma accumulator must be 128x64, got !nvgpu.frag<64x64xf32, wgmma>

// -----

func.func @wgmma_register_lhs_rows(%a: !nvgpu.frag<128x64xbf16, wgmma>, %b: !nvgpu.wgmma_desc<64x64xbf16>, %c: !nvgpu.frag<128x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.frag<128x64xbf16, wgmma>, !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.frag<128x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma lhs must have 64 rows, got 128

// -----

func.func @mma_async_row_block(%a: !nvgpu.wgmma_desc<128x64xbf16>, %b: !nvgpu.wgmma_desc<64x64xbf16>, %c: !nvgpu.frag<128x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma_mma_async %a, %b, %c, %t {rhs_transposed, row_block = 2 : i64} : !nvgpu.wgmma_desc<128x64xbf16>, !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.frag<128x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma_mma_async row_block 2 is outside the 2 row blocks of !nvgpu.frag<128x64xf32, wgmma>

// -----

func.func @wgmma_contraction(%a: !nvgpu.wgmma_desc<64x64xbf16>, %b: !nvgpu.wgmma_desc<64x32xbf16>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.wgmma_desc<64x32xbf16>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma contraction sizes must agree and be a multiple of 16: lhs K=64, rhs K=32

// -----

func.func @wgmma_k_granule(%a: !nvgpu.wgmma_desc<64x48xf8E4M3FN>, %b: !nvgpu.wgmma_desc<64x48xf8E4M3FN>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x48xf8E4M3FN>, !nvgpu.wgmma_desc<64x48xf8E4M3FN>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma contraction sizes must agree and be a multiple of 32: lhs K=48, rhs K=48

// -----

func.func @wgmma_n(%a: !nvgpu.wgmma_desc<64x64xbf16>, %b: !nvgpu.wgmma_desc<512x64xbf16>, %c: !nvgpu.frag<64x512xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.wgmma_desc<512x64xbf16>, !nvgpu.frag<64x512xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma N must be a multiple of 8 in [8, 256], got 512

// -----

func.func @wgmma_n_granule(%a: !nvgpu.wgmma_desc<64x64xbf16>, %b: !nvgpu.wgmma_desc<12x64xbf16>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.wgmma_desc<12x64xbf16>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma N must be a multiple of 8 in [8, 256], got 12

// -----

func.func @wgmma_accumulator_shape(%a: !nvgpu.wgmma_desc<64x64xbf16>, %b: !nvgpu.wgmma_desc<256x64xbf16>, %c: !nvgpu.frag<64x128xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16>, !nvgpu.wgmma_desc<256x64xbf16>, !nvgpu.frag<64x128xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma accumulator must be 64x256, got !nvgpu.frag<64x128xf32, wgmma>

// -----

func.func @wgmma_f8_mn_major(%a: !nvgpu.wgmma_desc<64x64xf8E4M3FN>, %b: !nvgpu.wgmma_desc<64x64xf8E4M3FN>, %c: !nvgpu.frag<64x64xf32, wgmma>, %t: i1) {
  %d = nvgpu.wgmma %a, %b, %c, %t : !nvgpu.wgmma_desc<64x64xf8E4M3FN>, !nvgpu.wgmma_desc<64x64xf8E4M3FN>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma with f8E4M3FN operands needs a K-major rhs

// -----

func.func @wgmma_wait_group_pending() {
  nvgpu.wgmma_wait_group 8
  func.return
}
// CHECK: error: nvgpu.wgmma_wait_group pending must be in [0, 7], got 8

// -----

// The custom syntax types the results from the fragments; the generic form can disagree.
func.func @wgmma_wait_group_results(%d: !nvgpu.frag<64x256xf32, wgmma>) {
  %e = "nvgpu.wgmma_wait_group"(%d) <{pending = 0 : i32}> : (!nvgpu.frag<64x256xf32, wgmma>) -> !nvgpu.frag<64x128xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma_wait_group results must have the fragments' types

// -----

func.func @frag_store_offsets(%d: !nvgpu.frag<64x256xf32, wgmma>, %C: memref<?x?xbf16>, %i: index) {
  nvgpu.frag_store %d, %C[%i] : !nvgpu.frag<64x256xf32, wgmma>, memref<?x?xbf16>
  func.return
}
// CHECK: error: nvgpu.frag_store expects 2 offsets, got 1

// -----

func.func @frag_store_element_type(%d: !nvgpu.frag<64x256xf32, wgmma>, %C: memref<?x?xf64>, %i: index) {
  nvgpu.frag_store %d, %C[%i, %i] : !nvgpu.frag<64x256xf32, wgmma>, memref<?x?xf64>
  func.return
}
// CHECK: error: 'nvgpu.frag_store' unsupported element type f64

// -----

// --- registers, barriers, ids

func.func @setmaxnreg_granule() {
  nvgpu.setmaxnreg inc 100
  func.return
}
// CHECK: error: nvgpu.setmaxnreg count must be a multiple of 8 in [24, 256], got 100

// -----

func.func @setmaxnreg_range() {
  nvgpu.setmaxnreg dec 16
  func.return
}
// CHECK: error: nvgpu.setmaxnreg count must be a multiple of 8 in [24, 256], got 16

// -----

func.func @named_barrier_sync_id() {
  nvgpu.named_barrier_sync 16, 128
  func.return
}
// CHECK: error: nvgpu.named_barrier_sync barrier id must be in [0, 15], got 16

// -----

func.func @named_barrier_sync_threads() {
  nvgpu.named_barrier_sync 1, 2048
  func.return
}
// CHECK: error: nvgpu.named_barrier_sync thread count must be a multiple of 32 in [32, 1024], got 2048

// -----

func.func @named_barrier_arrive_id() {
  nvgpu.named_barrier_arrive -1, 128
  func.return
}
// CHECK: error: nvgpu.named_barrier_arrive barrier id must be in [0, 15], got -1

// -----

func.func @named_barrier_arrive_threads() {
  nvgpu.named_barrier_arrive 1, 48
  func.return
}
// CHECK: error: nvgpu.named_barrier_arrive thread count must be a multiple of 32 in [32, 1024], got 48

// -----

func.func @block_id_axis() {
  %b = nvgpu.block_id 3
  func.return
}
// CHECK: error: nvgpu.block_id axis must be 0, 1 or 2, got 3

// -----

func.func @smem_tile_shape(%s: index) {
  %sa = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>
  %a = nvgpu.smem_tile %sa[%s] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> tensor<64x64xbf16>
  func.return
}
// CHECK: error: nvgpu.smem_tile result must be one stage of !nvgpu.smem<4x128x64xbf16, swizzle = 128>, got tensor<64x64xbf16>

// -----

func.func @grid_dim_axis() {
  %n = nvgpu.grid_dim 3
  func.return
}
// CHECK: error: nvgpu.grid_dim axis must be 0, 1 or 2, got 3

// -----

func.func @launch_grid_axis() {
  %n = nvgpu.launch_grid -1
  func.return
}
// CHECK: error: nvgpu.launch_grid axis must be 0, 1 or 2, got -1

// -----

func.func @frag_binary_types(%a: !nvgpu.frag<64x256xf32, wgmma>, %b: !nvgpu.frag<64x128xf32, wgmma>) {
  %0 = nvgpu.frag_binary addf %a, %b : !nvgpu.frag<64x256xf32, wgmma>, !nvgpu.frag<64x128xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_binary operands must be fragments of one type (or a scalar of its element type), got !nvgpu.frag<64x256xf32, wgmma> and !nvgpu.frag<64x128xf32, wgmma>

// -----

func.func @frag_binary_element(%a: !nvgpu.frag<64x256xbf16, wgmma>, %s: f32) {
  %0 = nvgpu.frag_binary mulf %a, %s : !nvgpu.frag<64x256xbf16, wgmma>, f32
  func.return
}
// CHECK: error: nvgpu.frag_binary works on f32 fragments, got !nvgpu.frag<64x256xbf16, wgmma>

// -----

func.func @frag_unary_element(%a: !nvgpu.frag<64x256xbf16, wgmma>) {
  %0 = nvgpu.frag_unary exp2 %a : !nvgpu.frag<64x256xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_unary works on f32 fragments, got !nvgpu.frag<64x256xbf16, wgmma>

// -----

func.func @frag_splat_element(%s: f32) {
  %a = nvgpu.frag_splat %s : f32 -> !nvgpu.frag<64x64xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_splat makes f32 fragments, got !nvgpu.frag<64x64xbf16, wgmma>

// -----

func.func @frag_reduce_layouts(%a: !nvgpu.frag<64xf32, wgmma_row>) {
  %m = nvgpu.frag_reduce max %a : !nvgpu.frag<64xf32, wgmma_row> -> !nvgpu.frag<64xf32, wgmma_row>
  func.return
}
// CHECK: error: nvgpu.frag_reduce reduces the last axis of a 2-D fragment, got !nvgpu.frag<64xf32, wgmma_row>

// -----

func.func @frag_broadcast_layouts(%a: !nvgpu.frag<64x128xf32, wgmma>) {
  %b = nvgpu.frag_broadcast %a : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_broadcast: !nvgpu.frag<64x128xf32, wgmma> repeats a fragment of its layout reduced along one of its axes, got !nvgpu.frag<64x128xf32, wgmma>

// -----

func.func @frag_convert_shape(%a: !nvgpu.frag<64x128xf32, wgmma>) {
  %b = nvgpu.frag_convert %a : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x64xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_convert turns an f32 fragment into a bf16, f16 or fp8 one, or one of those into f32, of the same shape and layout, got !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x64xbf16, wgmma>

// -----

// fp8 widens to f32 only (through f16 in the PTX), not to another narrow type.
func.func @frag_convert_fp8_to_bf16(%a: !nvgpu.frag<64x128xf8E4M3FN, wgmma>) {
  %b = nvgpu.frag_convert %a : !nvgpu.frag<64x128xf8E4M3FN, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_convert turns an f32 fragment into a bf16, f16 or fp8 one, or one of those into f32, of the same shape and layout, got !nvgpu.frag<64x128xf8E4M3FN, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>

// -----

// movmatrix moves 16-bit pairs: an f32 accumulator is converted first.
func.func @frag_transpose_f32(%a: !nvgpu.frag<64x32xf32, wgmma>) {
  %t = nvgpu.frag_transpose %a : !nvgpu.frag<64x32xf32, wgmma> -> !nvgpu.frag<32x64xf32, wgmma_t>
  func.return
}
// CHECK: error: nvgpu.frag_transpose transposes a 64xN bf16 or f16 fragment in the wgmma layout, got !nvgpu.frag<64x32xf32, wgmma>

// -----

func.func @frag_transpose_result(%a: !nvgpu.frag<64x32xbf16, wgmma>) {
  %t = nvgpu.frag_transpose %a : !nvgpu.frag<64x32xbf16, wgmma> -> !nvgpu.frag<32x64xf16, wgmma_t>
  func.return
}
// CHECK: error: nvgpu.frag_transpose of !nvgpu.frag<64x32xbf16, wgmma> gives !nvgpu.frag<32x64xbf16, wgmma_t>, got !nvgpu.frag<32x64xf16, wgmma_t>

// -----

// A row vector holds one value per thread register: fp8 needs packed pairs.
func.func @frag_convert_fp8_unpacked(%a: !nvgpu.frag<64xf32, wgmma_row>) {
  %b = nvgpu.frag_convert %a : !nvgpu.frag<64xf32, wgmma_row> -> !nvgpu.frag<64xf8E4M3FN, wgmma_row>
  func.return
}
// CHECK: error: nvgpu.frag_convert of fp8 needs vectors of 2 (a packed pair), got !nvgpu.frag<64xf8E4M3FN, wgmma_row>

// -----

func.func @frag_reduce_result(%a: !nvgpu.frag<64x128xf32, wgmma>) {
  %m = nvgpu.frag_reduce max %a : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64xf32, wgmma_col>
  func.return
}
// CHECK: error: nvgpu.frag_reduce of !nvgpu.frag<64x128xf32, wgmma> gives !nvgpu.frag<64xf32, wgmma_row>, got !nvgpu.frag<64xf32, wgmma_col>

// -----

func.func @frag_index_type() {
  %r = nvgpu.frag_index row : !nvgpu.frag<64x128xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_index gives a 1-D or 2-D i32 fragment, got !nvgpu.frag<64x128xf32, wgmma>

// -----

func.func @frag_binary_int_kind(%a: !nvgpu.frag<64x128xf32, wgmma>, %b: !nvgpu.frag<64x128xf32, wgmma>) {
  %0 = nvgpu.frag_binary addi %a, %b : !nvgpu.frag<64x128xf32, wgmma>, !nvgpu.frag<64x128xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_binary addi needs i32 (or i1) fragments, got !nvgpu.frag<64x128xf32, wgmma>

// -----

func.func @frag_cmpi_type(%a: !nvgpu.frag<64x128xf32, wgmma>, %n: i32) {
  %0 = nvgpu.frag_cmpi slt, %a, %n : !nvgpu.frag<64x128xf32, wgmma>, i32
  func.return
}
// CHECK: error: nvgpu.frag_cmpi compares i32 fragments, got !nvgpu.frag<64x128xf32, wgmma>

// -----

func.func @frag_cmpi_rhs(%a: !nvgpu.frag<64x128xi32, wgmma>, %n: i64) {
  %0 = nvgpu.frag_cmpi slt, %a, %n : !nvgpu.frag<64x128xi32, wgmma>, i64
  func.return
}
// CHECK: error: nvgpu.frag_cmpi rhs must be !nvgpu.frag<64x128xi32, wgmma> or an i32 scalar, got i64

// -----

func.func @frag_cmpf_type(%a: !nvgpu.frag<64x128xi32, wgmma>, %n: f32) {
  %0 = nvgpu.frag_cmpf olt, %a, %n : !nvgpu.frag<64x128xi32, wgmma>, f32
  func.return
}
// CHECK: error: nvgpu.frag_cmpf compares f32 fragments, got !nvgpu.frag<64x128xi32, wgmma>

// -----

func.func @frag_cmpf_rhs(%a: !nvgpu.frag<64x128xf32, wgmma>, %n: i32) {
  %0 = nvgpu.frag_cmpf olt, %a, %n : !nvgpu.frag<64x128xf32, wgmma>, i32
  func.return
}
// CHECK: error: nvgpu.frag_cmpf rhs must be !nvgpu.frag<64x128xf32, wgmma> or an f32 scalar, got i32

// -----

func.func @frag_select_mask(%m: !nvgpu.frag<64x64xi1, wgmma>, %x: !nvgpu.frag<64x128xf32, wgmma>, %f: f32) {
  %0 = nvgpu.frag_select %m, %x, %f : !nvgpu.frag<64x64xi1, wgmma>, !nvgpu.frag<64x128xf32, wgmma>, f32
  func.return
}
// CHECK: error: nvgpu.frag_select mask must be the i1 fragment of !nvgpu.frag<64x128xf32, wgmma>, got !nvgpu.frag<64x64xi1, wgmma>

// -----

func.func @frag_select_false(%m: !nvgpu.frag<64x128xi1, wgmma>, %x: !nvgpu.frag<64x128xf32, wgmma>, %f: !nvgpu.frag<64x64xf32, wgmma>) {
  %0 = nvgpu.frag_select %m, %x, %f : !nvgpu.frag<64x128xi1, wgmma>, !nvgpu.frag<64x128xf32, wgmma>, !nvgpu.frag<64x64xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_select false value must be !nvgpu.frag<64x128xf32, wgmma> or a scalar f32, got !nvgpu.frag<64x64xf32, wgmma>

// -----

func.func @desc_advance_unit(%d: !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>) {
  %d1 = nvgpu.wgmma_desc_advance %d, 8 : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.wgmma_desc_advance offset must be a non-negative multiple of 16, got 8

// -----

func.func @desc_encode_swizzle(%a: i32) {
  %d = nvgpu.wgmma_desc_encode %a lbo(8192) sbo(1024) swizzle(64) : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.wgmma_desc_encode swizzle 64 differs from the type's 128

// -----

func.func @desc_encode_offset(%a: i32) {
  %d = nvgpu.wgmma_desc_encode %a lbo(8) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>
  func.return
}
// CHECK: error: nvgpu.wgmma_desc_encode lbo must be a multiple of 16 below 262144, got 8

// -----

func.func @k_slice_outside(%a: !nvgpu.frag<64x64xbf16, wgmma>) {
  %s = nvgpu.wgmma_k_slice %a[4] : !nvgpu.frag<64x64xbf16, wgmma> -> !nvgpu.frag<64x16xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma_k_slice 4 of !nvgpu.frag<64x16xbf16, wgmma> is outside !nvgpu.frag<64x64xbf16, wgmma>

// -----

func.func @mma_async_k(%a: !nvgpu.frag<64x32xbf16, wgmma>, %b: !nvgpu.wgmma_desc<128x32xbf16, swizzle = 0>, %acc: !nvgpu.frag<64x128xf32, wgmma>, %t: i1) {
  %r = nvgpu.wgmma_mma_async %a, %b, %acc, %t {rhs_transposed} : !nvgpu.frag<64x32xbf16, wgmma>, !nvgpu.wgmma_desc<128x32xbf16, swizzle = 0>, !nvgpu.frag<64x128xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.wgmma_mma_async register lhs must be 64x16, got !nvgpu.frag<64x32xbf16, wgmma>

// -----

func.func @store_global_mask(%v: !nvgpu.frag<64x128xbf16, wgmma>, %a: index, %m: !nvgpu.frag<64x64xi1, wgmma>) {
  nvgpu.frag_store_global %v, %a, %a mask %m : !nvgpu.frag<64x128xbf16, wgmma>, !nvgpu.frag<64x64xi1, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_store_global mask must be !nvgpu.frag<64x128xi1, wgmma>, got !nvgpu.frag<64x64xi1, wgmma>

// -----

func.func @store_global_rank(%v: !nvgpu.frag<4x8x8xf32, #nvgpu.tiled_layout<(4,8,8)(1,1,2), warps = [-6], lanes = [-5, -4], vector = -1>>, %a: index) {
  nvgpu.frag_store_global %v, %a, %a : !nvgpu.frag<4x8x8xf32, #nvgpu.tiled_layout<(4,8,8)(1,1,2), warps = [-6], lanes = [-5, -4], vector = -1>>
  func.return
}
// CHECK: error: nvgpu.frag_store_global stores 1-D or 2-D fragments, got !nvgpu.frag<4x8x8xf32, #nvgpu.tiled_layout<(4,8,8)(1,1,2), warps = [-6], lanes = [-5, -4], vector = -1>>

// -----

func.func @frag_load_element(%v: memref<?xbf16>, %n: index) {
  %b = nvgpu.frag_load %v[%n] : memref<?xbf16> -> !nvgpu.frag<256xf32, wgmma_col>
  func.return
}
// CHECK: error: nvgpu.frag_load: a !nvgpu.frag<256xf32, wgmma_col> cannot hold the elements of memref<?xbf16>

// -----

func.func @frag_load_rank(%v: memref<?xf32>, %n: index) {
  %b = nvgpu.frag_load %v[%n] : memref<?xf32> -> !nvgpu.frag<64x256xf32, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_load: a !nvgpu.frag<64x256xf32, wgmma> has more dimensions than memref<?xf32>

// -----

func.func @frag_load_global_mask(%a: index, %m: !nvgpu.frag<64xi1, wgmma_row>) {
  %b = nvgpu.frag_load_global %a, %a mask %m : !nvgpu.frag<256xf32, wgmma_col>, !nvgpu.frag<64xi1, wgmma_row>
  func.return
}
// CHECK: error: nvgpu.frag_load_global mask must be !nvgpu.frag<256xi1, wgmma_col>, got !nvgpu.frag<64xi1, wgmma_row>

// -----

func.func @frag_load_global_vector_mask(%a: index) {
  %b = nvgpu.frag_load_global %a, %a {vector_mask} : !nvgpu.frag<256xf32, wgmma_col>
  func.return
}
// CHECK: error: nvgpu.frag_load_global: vector_mask needs a mask

// -----

func.func @frag_store_global_vector_mask(%v: !nvgpu.frag<64x128xbf16, wgmma>, %a: index) {
  nvgpu.frag_store_global %v, %a, %a {vector_mask} : !nvgpu.frag<64x128xbf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_store_global: vector_mask needs a mask

// -----

func.func @frag_index_col_of_vector() {
  %r = nvgpu.frag_index col : !nvgpu.frag<256xi32, wgmma_col>
  func.return
}
// CHECK: error: nvgpu.frag_index: a 1-D fragment has no axis 'col', got !nvgpu.frag<256xi32, wgmma_col>

// -----

func.func @frag_load_shared_columns(%slot: !nvgpu.smem<2x128x64xf16, swizzle = 128>, %i: index) {
  %a = nvgpu.frag_load_shared %slot[%i, %i] : !nvgpu.smem<2x128x64xf16, swizzle = 128> -> !nvgpu.frag<64x128xf16, wgmma>
  func.return
}
// CHECK: error: nvgpu.frag_load_shared reads whole rows of one stage of !nvgpu.smem<2x128x64xf16, swizzle = 128> into a fragment of its element type, got !nvgpu.frag<64x128xf16, wgmma>

// -----

// An unwritten accumulator is only ever the accumulator of a wgmma.
func.func @undef_read(%y: f32) {
  %u = nvgpu.frag_undef : !nvgpu.frag<64x64xf32, wgmma>
  %b = nvgpu.frag_binary mulf %u, %y : !nvgpu.frag<64x64xf32, wgmma>, f32
  func.return
}
// CHECK: error: nvgpu.frag_undef may only be a wgmma's accumulator, not an operand of nvgpu.frag_binary

// -----

// The warps of a 16x1024 blocked tile lie along its rows: its row sums need no shared memory.
func.func @reduce_warps_within(%x: !nvgpu.frag<16x1024xf32, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, %s: !nvgpu.smem<4x128xf32>) {
  %r = nvgpu.frag_reduce_warps sum %x, 1 via %s barrier 15 : !nvgpu.frag<16x1024xf32, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<4x128xf32> -> !nvgpu.frag<16xf32, #nvgpu.tiled_layout<(4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1>>
  func.return
}
// CHECK: error: nvgpu.frag_reduce_warps: the warps of !nvgpu.frag<16x1024xf32, #nvgpu.tiled_layout<(4,256)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>> do not split axis 1 (a reduction within warps is nvgpu.frag_reduce)

// -----

func.func @reduce_warps_result(%x: !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, %s: !nvgpu.smem<1x128xf32>) {
  %r = nvgpu.frag_reduce_warps sum %x, 1 via %s barrier 15 : !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<1x128xf32> -> !nvgpu.frag<4xf32, #nvgpu.tiled_layout<(4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1>>
  func.return
}
// CHECK: error: nvgpu.frag_reduce_warps of !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>> along axis 1 gives !nvgpu.frag<1xf32, #nvgpu.tiled_layout<(1)(1)(1), warps = [-3, *4], lanes = [-2, *32], vector = -1>>, got !nvgpu.frag<4xf32, #nvgpu.tiled_layout<(4)(1)(1), warps = [-3, *1], lanes = [-2, *32], vector = -1>>

// -----

func.func @reduce_warps_scratch(%x: !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, %s: !nvgpu.smem<1x64xf32>) {
  %r = nvgpu.frag_reduce_warps sum %x, 1 via %s barrier 15 : !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<1x64xf32> -> !nvgpu.frag<1xf32, #nvgpu.tiled_layout<(1)(1)(1), warps = [-3, *4], lanes = [-2, *32], vector = -1>>
  func.return
}
// CHECK: error: nvgpu.frag_reduce_warps needs an unswizzled f32 scratch of at least 128 elements (128 threads x 1 values), got !nvgpu.smem<1x64xf32>

// -----

func.func @reduce_warps_barrier(%x: !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, %s: !nvgpu.smem<1x128xf32>) {
  %r = nvgpu.frag_reduce_warps sum %x, 1 via %s barrier 0 : !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<(1,1024)(1,256)(1,8), warps = [-6, -5], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<1x128xf32> -> !nvgpu.frag<1xf32, #nvgpu.tiled_layout<(1)(1)(1), warps = [-3, *4], lanes = [-2, *32], vector = -1>>
  func.return
}
// CHECK: error: nvgpu.frag_reduce_warps barrier must be a named barrier 1..15 (0 is the CTA's), got 0

// -----

// The transposed shape: 32x8, not 8x32.
func.func @transpose_shared_shape(%x: !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>, %s: !nvgpu.smem<2x128xf32>) {
  %t = nvgpu.frag_transpose_shared %x via %s barrier 15 : !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<2x128xf32> -> !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>
  func.return
}
// CHECK: error: nvgpu.frag_transpose_shared transposes a 2-D f32 fragment into one of the transposed shape, got !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>> -> !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>

// -----

// The whole tile goes through the buffer: 256 elements.
func.func @transpose_shared_scratch(%x: !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>, %s: !nvgpu.smem<1x128xf32>) {
  %t = nvgpu.frag_transpose_shared %x via %s barrier 15 : !nvgpu.frag<8x32xf32, #nvgpu.tiled_layout<(8,32)(4,32)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>, !nvgpu.smem<1x128xf32> -> !nvgpu.frag<32x8xf32, #nvgpu.tiled_layout<(32,8)(16,8)(1,4), warps = [-6, -5, *2], lanes = [-4, -3], vector = -1>>
  func.return
}
// CHECK: error: nvgpu.frag_transpose_shared needs an unswizzled f32 scratch of at least 256 elements, got !nvgpu.smem<1x128xf32>
