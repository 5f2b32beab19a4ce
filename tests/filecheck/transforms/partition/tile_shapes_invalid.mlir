// Tile shapes the Hopper lowering cannot take, and budgets that do not fit: one located line each.
// RUN: not tawa-opt %S/../Inputs/tile_shapes_two_row_counts.mlir -p tawa-warp-specialize 2>&1 | filecheck %s --check-prefix=ROWS
// RUN: not tawa-opt %S/../Inputs/tile_shapes_rows_320.mlir -p tawa-warp-specialize 2>&1 | filecheck %s --check-prefix=ROWS320
// RUN: not tawa-opt %S/../Inputs/tile_shapes_rows_80_bytes.mlir -p 'tawa-warp-specialize,tawa-pipeline{stages=2},tawa-assign-stage-phase,tawa-lower-aref' 2>&1 | filecheck %s --check-prefix=SLOT
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize{producer-regs=40 consumer-regs=240}' 2>&1 | filecheck %s --check-prefix=BUDGET
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-warp-specialize{consumer-warps=12}' 2>&1 | filecheck %s --check-prefix=SPLIT
// RUN: not tawa-opt %S/../../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{consumer-warps=4}' 2>&1 | filecheck %s --check-prefix=WIDE
// RUN: not tawa-opt %S/../../../../examples/attention_fwd.mlir -p 'tawa-hopper-pipeline{consumer-warps=4}' 2>&1 | filecheck %s --check-prefix=REGA

// The consumer's warp groups split the accumulator's rows: a kernel's accumulators agree.
// ROWS: tile_shapes_two_row_counts.mlir:12:3: error: tawa-warp-specialize: this dot's accumulator has 64 rows but the dot at {{.*}}tile_shapes_two_row_counts.mlir:7:3 has 128: the consumer's warp groups split the rows of the tile, so every accumulator of a kernel needs the same rows
// ROWS-NOT: error

// BLOCK_M = 320: above 256 the A tile is no TMA box (below 64 the tile.dot verifier objects).
// ROWS320: tile_shapes_rows_320.mlir:7:3: error: tawa-warp-specialize: a tensor<320x128xf32> accumulator is not supported: its rows (BLOCK_M) must be one of 64, 128, 192, 256, a multiple of the 64 rows of a wgmma

// A slot of 40 bf16 columns: 80-byte rows are no whole swizzle spans; the error names the tile type.
// SLOT: tile_shapes_rows_80_bytes.mlir:4:1: error: tawa-lower-aref: a tensor<64x40xbf16> slot is not supported: tiles must be 2-D with rows of a multiple of 32/64/128 bytes (a swizzle span), got 80-byte rows

// Explicit budgets beyond the pool a CTA of 384 threads holds at launch (168 x 384) would hang in
// setmaxnreg.inc: an error, not a kernel.
// BUDGET: gemm.mlir:7:1: error: tawa-warp-specialize: register budgets oversubscribe the register file: 32 x (4 x 40 + 8 x 240) = 66560 > 168 x 384 = 64512 (the registers a CTA of 384 threads holds at launch)

// Fewer warp groups than 64-row blocks own more rows each, but equal shares of whole wgmma blocks.
// SPLIT: gemm.mlir:7:1: error: tawa-warp-specialize: 3 consumer warp groups cannot split a 128-row tile: each needs a multiple of 64 rows (one wgmma per 64-row block)

// One warp group owning the whole 128x256 tile: its 256-register accumulator cannot fit (the
// error names the dot).
// WIDE: gemm.mlir:21:5: error: tawa-check-resources: a wgmma with a 128x256xf32 accumulator needs ~282 registers at once (256 for the accumulator, plus ~26) but a CTA of 256 threads starts with 248 per thread, and ptxas fits one instruction within that whatever setmaxnreg grants: use BLOCK_N ≤ 216, or more consumer warp groups, fewer rows each (leave consumer-warps out)

// A register A operand (attention's P) is one wgmma's 64 rows: a warp group of 128 rows cannot take it.
// REGA: attention_fwd.mlir:83:5: error: tawa-lower-tile: tile.dot lhs in registers needs warp groups of 64 rows, but each owns 128 here: a register A operand is one wgmma's 64 rows (give the consumer one warp group per 64 rows: leave consumer-warps out)
