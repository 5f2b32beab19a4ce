// Each resource rule, broken once: one located line that says what to change.
// RUN: not tawa-opt %S/../transforms/Inputs/resources_gemm2.mlir -p 'tawa-hopper-pipeline{prepare=false},tawa-check-resources' 2>&1 | filecheck %s --check-prefix=GEMM2
// Beyond the estimate's error of 8: ~154 against 144.
// RUN: not tawa-opt %S/../../../examples/gemm.mlir -p 'tawa-hopper-pipeline{prepare=false consumer-regs=144},tawa-check-resources' 2>&1 | filecheck %s --check-prefix=BEYOND
// RUN: not tawa-opt %S/../transforms/Inputs/resources_registers.mlir -p tawa-check-resources 2>&1 | filecheck %s --check-prefix=REGS
// RUN: not tawa-opt %S/../transforms/Inputs/resources_kernel_cap.mlir -p tawa-check-resources 2>&1 | filecheck %s --check-prefix=CAP
// RUN: not tawa-opt %S/../transforms/Inputs/resources_blocked_tile.mlir -p tawa-hopper-pipeline 2>&1 | filecheck %s --check-prefix=TILE
// RUN: not tawa-opt %S/../transforms/Inputs/resources_blocked_copies.mlir -p tawa-hopper-pipeline 2>&1 | filecheck %s --check-prefix=COPIES
// RUN: not tawa-opt %S/../transforms/Inputs/resources_smem.mlir -p tawa-check-resources 2>&1 | filecheck %s --check-prefix=SMEM
// RUN: not tawa-opt %S/../transforms/Inputs/resources_smem_overlap.mlir -p tawa-check-resources 2>&1 | filecheck %s --check-prefix=OVERLAP
// RUN: not tawa-opt %S/../transforms/Inputs/resources_smem_kernel_info.mlir -p tawa-check-resources 2>&1 | filecheck %s --check-prefix=INFO
// RUN: not tawa-opt %S/../transforms/Inputs/resources_tma_rank.mlir -p tawa-check-resources 2>&1 | filecheck %s --check-prefix=RANK
// RUN: not tawa-opt %S/../transforms/Inputs/resources_tma_stride.mlir -p tawa-check-resources 2>&1 | filecheck %s --check-prefix=STRIDE
// wgmma legality is the op verifiers' (rejected when the input is read):
// RUN: not tawa-opt %S/../transforms/Inputs/resources_wgmma_n.mlir -p tawa-check-resources 2>&1 | filecheck %s --check-prefix=WGMMA-N
// RUN: not tawa-opt %S/../transforms/Inputs/resources_wgmma_f8.mlir -p tawa-check-resources 2>&1 | filecheck %s --check-prefix=WGMMA-F8

// Lowered ops carry no source location: the error names the kernel.
// GEMM2: resources_gemm2.mlir:3:1: error: tawa-check-resources: consumer warp group needs ~282 registers per thread (2 live 64x256xf32 fragments = 256, plus ~26 for addresses and indices) but setmaxnreg gives 232 (short by more than the estimate's error of 8): use BLOCK_N=128 {{.*}} or fewer live accumulators, or raise consumer-regs
// GEMM2-NOT: error
// BEYOND: gemm.mlir:7:1: error: tawa-check-resources: consumer warp group needs ~154 registers per thread {{.*}} but setmaxnreg gives 144 (short by more than the estimate's error of 8): {{.*}}raise consumer-regs (up to 232 with the other budgets unchanged)
// REGS: resources_registers.mlir:23:5: error: tawa-check-resources: consumer warp group needs ~282 registers per thread (2 live 64x256xf32 fragments = 256, plus ~26 for addresses and indices) but setmaxnreg gives 232
// CAP: resources_kernel_cap.mlir:5:3: error: tawa-check-resources: kernel needs ~154 registers per thread (1 live 64x256xf32 fragment = 128, plus ~26 {{.*}}) but 1024 threads per CTA allow 64 (short by more than the estimate{{.s}} error of 8): {{.*}}launch fewer threads per CTA
// A kernel without dots: its tile's size is the advice (no BLOCK_N=128 of a wgmma accumulator, and no
// fewer threads than its one warp group).
// TILE: resources_blocked_tile.mlir:29:5: error: tawa-check-resources: consumer warp group needs ~348 registers per thread (1 live 8x4096xf32 fragment {{.*}}) but 128 threads per CTA allow 248 (short by more than the estimate{{.s}} error of 8): use a smaller tile (the largest live value, a 8x4096xf32 tile, takes 256 registers a thread: fewer rows, BLOCK_M, or columns, BLOCK_N){{$}}
// A tile that its blocked layout spreads over few threads: its shape is the advice, not its size.
// COPIES: resources_blocked_copies.mlir:12:5: error: tawa-check-resources: consumer warp group needs ~{{[0-9]+}} registers per thread (1 live 1x1000xf32 fragment = 500, {{.*}}): the largest live value, a 1x1000xf32 tile, spreads over only 2 of a warp group's 128 threads {{.*}} each holding 500 registers of it: take BLOCK_N a multiple of 128 or a power of two, and BLOCK_M a power of two (mask the columns past the row){{$}}
// SMEM: resources_smem.mlir:6:3: error: tawa-check-resources: the shared-memory buffers need 246784 bytes (alignment slack of 1024 included), more than the 232448 a block may use; use fewer stages or smaller tiles
// OVERLAP: resources_smem_overlap.mlir:4:3: error: tawa-check-resources: this buffer at offset 65528 overlaps the !nvgpu.smem<4x128x64xbf16, swizzle = 128> buffer at [0, 65536): place it at 65536 or later
// INFO: resources_smem_kernel_info.mlir:2:1: error: tawa-check-resources: #nvgpu.kernel<smem = 65568> asks for less than the 66592 bytes the buffers need (alignment slack of 1024 included): record 66592
// RANK: resources_tma_rank.mlir:3:3: error: tawa-check-resources: a TMA tensor map has at most 5 dimensions, got 6
// STRIDE: resources_tma_stride.mlir:3:3: error: tawa-check-resources: TMA needs global strides of a multiple of 16 bytes, but dimension 0 of memref<?x100xbf16> steps 200 bytes: pad its rows to a multiple of 16 bytes
// WGMMA-N: resources_wgmma_n.mlir:3:3: error: nvgpu.wgmma N must be a multiple of 8 in [8, 256], got 264
// WGMMA-F8: resources_wgmma_f8.mlir:3:3: error: nvgpu.wgmma with f8E4M3FN operands needs a K-major rhs
