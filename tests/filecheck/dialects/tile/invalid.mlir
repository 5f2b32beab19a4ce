// RUN: TAWA_VERIFY_DIAG
// RUN: tawa-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=EVERY-CASE-FAILS
// A case that verified would print its module.
// EVERY-CASE-FAILS-NOT: builtin.module

// One verifier error of the tile dialect per chunk.  Errors raised while
// parsing are in invalid_parse.mlir.

func.func @program_id_axis() {
  %p = tile.program_id 3
  func.return
}
// CHECK: error: tile.program_id axis must be 0, 1 or 2, got 3

// -----

func.func @num_programs_axis() {
  %n = tile.num_programs -1
  func.return
}
// CHECK: error: tile.num_programs axis must be 0, 1 or 2, got -1

// -----

func.func @load_offsets(%A: memref<?x?xbf16>, %i: index) {
  %a = tile.load %A[%i] : memref<?x?xbf16> -> tensor<128x64xbf16>
  func.return
}
// CHECK: error: tile.load expects 2 offsets for a rank-2 memref, got 1

// -----

func.func @load_dynamic_tile(%A: memref<?x?xbf16>, %i: index) {
  %a = tile.load %A[%i, %i] : memref<?x?xbf16> -> tensor<?x64xbf16>
  func.return
}
// CHECK: error: tile.load tile must have a static shape, got tensor<?x64xbf16>

// -----

func.func @load_rank_0(%A: memref<?x?xbf16>, %i: index) {
  %a = tile.load %A[%i, %i] : memref<?x?xbf16> -> tensor<bf16>
  func.return
}
// CHECK: error: tile.load tile rank 0 must be between 1 and the memref rank 2

// -----

func.func @load_rank_too_high(%A: memref<?x?xbf16>, %i: index) {
  %a = tile.load %A[%i, %i] : memref<?x?xbf16> -> tensor<2x128x64xbf16>
  func.return
}
// CHECK: error: tile.load tile rank 3 must be between 1 and the memref rank 2

// -----

func.func @load_element_type(%A: memref<?x?xbf16>, %i: index) {
  %a = tile.load %A[%i, %i] : memref<?x?xbf16> -> tensor<128x64xf16>
  func.return
}
// CHECK: error: tile.load tile element type f16 differs from the memref element type bf16

// -----

func.func @store_offsets(%C: memref<?x?x?xf32>, %c: tensor<64x64xf32>, %i: index) {
  tile.store %c, %C[%i, %i] : tensor<64x64xf32>, memref<?x?x?xf32>
  func.return
}
// CHECK: error: tile.store expects 3 offsets for a rank-3 memref, got 2

// -----

func.func @store_dynamic_tile(%C: memref<?x?xf32>, %c: tensor<64x?xf32>, %i: index) {
  tile.store %c, %C[%i, %i] : tensor<64x?xf32>, memref<?x?xf32>
  func.return
}
// CHECK: error: tile.store tile must have a static shape, got tensor<64x?xf32>

// -----

func.func @store_rank(%C: memref<?xf32>, %c: tensor<64x64xf32>, %i: index) {
  tile.store %c, %C[%i] : tensor<64x64xf32>, memref<?xf32>
  func.return
}
// CHECK: error: tile.store tile rank 2 must be between 1 and the memref rank 1

// -----

func.func @store_element_type(%C: memref<?x?xbf16>, %c: tensor<64x64xf32>, %i: index) {
  tile.store %c, %C[%i, %i] : tensor<64x64xf32>, memref<?x?xbf16>
  func.return
}
// CHECK: error: tile.store tile element type f32 differs from the memref element type bf16

// -----

func.func @dot_dynamic(%a: tensor<?x64xbf16>, %b: tensor<64x64xbf16>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c : tensor<?x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot lhs must have a static shape, got tensor<?x64xbf16>

// -----

func.func @dot_rhs_rank(%a: tensor<64x64xbf16>, %b: tensor<64xbf16>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c : tensor<64x64xbf16>, tensor<64xbf16> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot rhs must be 2-D, got tensor<64xbf16>

// -----

func.func @dot_acc_rank(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>, %c: tensor<1x64x64xf32>) {
  %d = tile.dot %a, %b, %c : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<1x64x64xf32>
  func.return
}
// CHECK: error: tile.dot accumulator must be 2-D, got tensor<1x64x64xf32>

// -----

func.func @dot_f64_operands(%a: tensor<64x64xf64>, %b: tensor<64x64xf64>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<64x64xf64>, tensor<64x64xf64> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot operands must be bf16, f16, f8E4M3FN, f8E5M2 or f32 (tf32), got f64

// -----

func.func @dot_mixed_operands(%a: tensor<64x64xbf16>, %b: tensor<64x64xf16>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c : tensor<64x64xbf16>, tensor<64x64xf16> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot operand element types differ (bf16 vs f16)

// -----

func.func @dot_bf16_accumulator(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>, %c: tensor<64x64xbf16>) {
  %d = tile.dot %a, %b, %c : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  func.return
}
// CHECK: error: tile.dot accumulates in f32, got accumulator bf16

// -----

// Without rhs_transposed the rhs is K x N: 256x64 has K = 256.
func.func @dot_contraction(%a: tensor<128x64xbf16>, %b: tensor<256x64xbf16>, %c: tensor<128x256xf32>) {
  %d = tile.dot %a, %b, %c : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
  func.return
}
// CHECK: error: tile.dot contraction sizes differ: lhs has K=64, rhs has K=256

// -----

func.func @dot_accumulator_shape(%a: tensor<128x64xbf16>, %b: tensor<256x64xbf16>, %c: tensor<128x128xf32>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x128xf32>
  func.return
}
// CHECK: error: tile.dot accumulator must be 128x256, got tensor<128x128xf32>

// -----

func.func @dot_hardware_shape(%a: tensor<32x64xbf16>, %b: tensor<64x64xbf16>, %c: tensor<32x64xf32>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<32x64xbf16>, tensor<64x64xbf16> -> tensor<32x64xf32>
  func.return
}
// CHECK: error: tile.dot shape 32x64x64 (MxNxK) is not supported by the hardware: M must be a multiple of 64, N of 8, K of 16 for bf16

// -----

// f8 contracts in steps of 32.
func.func @dot_f8_k_granule(%a: tensor<64x48xf8E4M3FN>, %b: tensor<64x48xf8E4M3FN>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c {rhs_transposed} : tensor<64x48xf8E4M3FN>, tensor<64x48xf8E4M3FN> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot shape 64x64x48 (MxNxK) is not supported by the hardware: M must be a multiple of 64, N of 8, K of 32 for f8E4M3FN

// -----

func.func @dot_f8_mn_major(%a: tensor<64x64xf8E4M3FN>, %b: tensor<64x64xf8E4M3FN>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c : tensor<64x64xf8E4M3FN>, tensor<64x64xf8E4M3FN> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot with f8E4M3FN operands needs a K-major rhs (rhs_transposed)

// -----

func.func @zeros_dynamic() {
  %z = tile.zeros : tensor<?xf32>
  func.return
}
// CHECK: error: tile.zeros result must have a static shape, got tensor<?xf32>

// -----

func.func @splat_dynamic(%s: f32) {
  %t = tile.splat %s : f32 -> tensor<?x128xf32>
  func.return
}
// CHECK: error: tile.splat result must have a static shape, got tensor<?x128xf32>

// -----

func.func @splat_type(%s: f32) {
  %t = tile.splat %s : f32 -> tensor<128xbf16>
  func.return
}
// CHECK: error: tile.splat value type f32 differs from the result element type bf16

// -----

func.func @iota_dynamic() {
  %i = tile.iota : tensor<?xi32>
  func.return
}
// CHECK: error: tile.iota result must have a static shape, got tensor<?xi32>

// -----

func.func @iota_2d() {
  %i = tile.iota : tensor<8x8xi32>
  func.return
}
// CHECK: error: tile.iota result must be a 1-D integer tile, got tensor<8x8xi32>

// -----

func.func @iota_float() {
  %i = tile.iota : tensor<128xf32>
  func.return
}
// CHECK: error: tile.iota result must be a 1-D integer tile, got tensor<128xf32>

// -----

func.func @reduce_axis(%x: tensor<128x64xf32>) {
  %r = tile.reduce max %x, 2 : tensor<128x64xf32> -> tensor<128xf32>
  func.return
}
// CHECK: error: tile.reduce axis 2 out of range for a rank-2 tile

// -----

func.func @reduce_shape(%x: tensor<128x64xf32>) {
  %r = tile.reduce sum %x, 1 : tensor<128x64xf32> -> tensor<64xf32>
  func.return
}
// CHECK: error: tile.reduce result shape must be [128], got [64]

// -----

func.func @reduce_element_type(%x: tensor<128x64xf32>) {
  %r = tile.reduce sum %x, 1 : tensor<128x64xf32> -> tensor<128xf16>
  func.return
}
// CHECK: error: tile.reduce result element type differs from the input's

// -----

func.func @expand_dims_axis(%v: tensor<128xf32>) {
  %e = tile.expand_dims %v, 2 : tensor<128xf32> -> tensor<128x1xf32>
  func.return
}
// CHECK: error: tile.expand_dims axis 2 out of range for a rank-1 tile

// -----

func.func @expand_dims_result(%v: tensor<128xf32>) {
  %e = tile.expand_dims %v, 0 : tensor<128xf32> -> tensor<128x1xf32>
  func.return
}
// CHECK: error: tile.expand_dims result must be tensor<1x128xf32>, got tensor<128x1xf32>

// -----

func.func @broadcast_dynamic(%c: tensor<128x1xf32>) {
  %b = tile.broadcast %c : tensor<128x1xf32> -> tensor<128x?xf32>
  func.return
}
// CHECK: error: tile.broadcast result must have a static shape, got tensor<128x?xf32>

// -----

func.func @broadcast_element_type(%c: tensor<128x1xf32>) {
  %b = tile.broadcast %c : tensor<128x1xf32> -> tensor<128x64xbf16>
  func.return
}
// CHECK: error: tile.broadcast result element type differs from the input's

// -----

func.func @broadcast_shape(%c: tensor<128x2xf32>) {
  %b = tile.broadcast %c : tensor<128x2xf32> -> tensor<128x64xf32>
  func.return
}
// CHECK: error: tile.broadcast cannot broadcast shape [128, 2] to [128, 64]

// -----

func.func @broadcast_rank(%c: tensor<128xf32>) {
  %b = tile.broadcast %c : tensor<128xf32> -> tensor<128x64xf32>
  func.return
}
// CHECK: error: tile.broadcast cannot broadcast shape [128] to [128, 64]

// -----

func.func @trans_rank(%x: tensor<4x8x16xbf16>) {
  %t = tile.trans %x : tensor<4x8x16xbf16> -> tensor<16x8x4xbf16>
  func.return
}
// CHECK: error: tile.trans input must be 2-D, got tensor<4x8x16xbf16>

// -----

func.func @trans_result(%x: tensor<64x128xbf16>) {
  %t = tile.trans %x : tensor<64x128xbf16> -> tensor<64x128xbf16>
  func.return
}
// CHECK: error: tile.trans result must be tensor<128x64xbf16>, got tensor<64x128xbf16>

// -----

func.func @cmpi_float(%x: tensor<128xf32>) {
  %m = tile.cmpi slt, %x, %x : tensor<128xf32>
  func.return
}
// CHECK: error: tile.cmpi compares integer tiles, got tensor<128xf32>

// -----

func.func @cmpf_integer(%i: tensor<128xi32>) {
  %m = tile.cmpf olt, %i, %i : tensor<128xi32>
  func.return
}
// CHECK: error: tile.cmpf compares float tiles, got tensor<128xi32>

// -----

// The custom syntax always infers the i1 result; the generic form can get it wrong.
func.func @cmpi_result(%a: tensor<128xi32>) {
  %m = "tile.cmpi"(%a, %a) <{predicate = #tile<cmpi_predicate eq>}> : (tensor<128xi32>, tensor<128xi32>) -> tensor<128xi32>
  func.return
}
// CHECK: error: tile.cmpi result must be tensor<128xi1>, got tensor<128xi32>

// -----

func.func @select_mask(%m: tensor<128xi1>, %x: tensor<128x128xf32>) {
  %s = tile.select %m, %x, %x : tensor<128xi1>, tensor<128x128xf32>
  func.return
}
// CHECK: error: tile.select mask must be tensor<128x128xi1>, got tensor<128xi1>

// -----

// tile.dot_async shares tile.dot's verifier; its messages name tile.dot_async.
func.func @dot_async_contraction(%a: tensor<128x64xbf16>, %b: tensor<256x32xbf16>, %c: tensor<128x256xf32>) {
  %d = tile.dot_async %a, %b, %c {rhs_transposed} : tensor<128x64xbf16>, tensor<256x32xbf16> -> tensor<128x256xf32>
  func.return
}
// CHECK: error: tile.dot_async contraction sizes differ: lhs has K=64, rhs has K=32

// -----

func.func @dot_async_f8_mn_major(%a: tensor<64x64xf8E4M3FN>, %b: tensor<64x64xf8E4M3FN>, %c: tensor<64x64xf32>) {
  %d = tile.dot_async %a, %b, %c : tensor<64x64xf8E4M3FN>, tensor<64x64xf8E4M3FN> -> tensor<64x64xf32>
  func.return
}
// CHECK: error: tile.dot_async with f8E4M3FN operands needs a K-major rhs (rhs_transposed)

// -----

// The custom syntax rejects a negative count while parsing; the generic form does not.
func.func @dot_wait_negative() {
  "tile.dot_wait"() <{pending = -1 : i64}> : () -> ()
  func.return
}
// CHECK: error: tile.dot_wait pending must be non-negative

// -----

func.func @dot_wait_result_types(%d: tensor<128x256xf32>) {
  %w = "tile.dot_wait"(%d) <{pending = 0 : i64}> : (tensor<128x256xf32>) -> tensor<128x128xf32>
  func.return
}
// CHECK: error: tile.dot_wait results must have the types of its values
