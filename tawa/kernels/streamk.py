"""Stream-K GEMM tile programs: the K-steps of all tiles shared evenly by one program per SM.

    config = GemmConfig(128, 256, 64, stream_k=True)
    text = gemm_source(config)                 # `@gemm_streamk`, this module's program
    gemm = tawa.runtime.splitk.gemm_kernel(config)
    gemm(A, B, C, M, N, K, grid=gemm_grid(config, M, N))   # grid (PROGRAMS,)

A grid of T tiles in waves of P programs leaves the last wave's SMs idle
where T is no multiple of P (3072³ in 128×256 tiles: 288 tiles, 2.2 waves
of 132), and a grid of fewer tiles than SMs leaves the rest idle
throughout.  Stream-K (Osama et al., PPoPP 2023) cuts the work at K-steps
instead of tiles: with I = ⌈K/BLOCK_K⌉ K-steps a tile, the T·I steps are
shared evenly by the P programs, so a program's range of steps may end
inside a tile that the next program finishes.  Here, as in the "hybrid"
schedule of that paper, only the last one to two waves' tiles are shared:

* the first `dp_tiles` = (⌊T/P⌋ − 1)·P tiles (none when T < 2P) are
  data-parallel, program p computing tiles p, p + P, ... whole;
* the S = T − dp_tiles tiles left (T itself below P, else between P and
  2P) give S·I steps, program p taking [p·w, (p+1)·w) of them, w =
  ⌈S·I/P⌉: a range crosses a tile's end where the tile does.

Each tile's C is stored by whoever completes it: a program whose range
covers a whole tile stores C itself; a part of a tile (a *segment*) is
stored as an f32 partial into the workspace W at slot 2p (the program's
first segment) or 2p + 1 (its last), and the program arrives at the tile's
counter (`tile.counter_arrive`) with the tile's number of contributors,
computed from w; the last to arrive sums the tile's partials in the order
of the programs that made them (so C does not depend on which came last),
in column chunks as split-K's last program does (`reduce_chunk`), and
stores C.  No program waits for another: any order of programs, and any
number resident, is correct.  W is (2P, BLOCK_M, BLOCK_N) f32 and the
counters 2P i32 (one per shared tile, zero before the first launch; each
goes back to 0 at its last arrival), whatever M, N and K.

Tiles are numbered in grouped order (`GROUP_M` rows of tiles sweep the
columns before the next rows), so the programs of a wave share A's and B's
tiles in L2 as the persistent GEMM's do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tawa.target.hopper import SM_COUNT

if TYPE_CHECKING:
    from tawa.kernels.gemm import GemmConfig

PROGRAMS = SM_COUNT
"""Programs of a stream-K launch: one per SM, all resident at once."""
GROUP_M = 8
"""Rows of tiles a group of the program order spans (the persistent GEMM's `group_m`)."""


def streamk_grid() -> tuple[int]:
    """The launch grid of a stream-K program: one axis of `PROGRAMS`."""
    return (PROGRAMS,)


def streamk_workspace_shape(config: GemmConfig) -> tuple[int, int, int]:
    """W of a stream-K program: two f32 partial tiles per program."""
    return (2 * PROGRAMS, config.block_m, config.block_n)


def streamk_counters_shape() -> tuple[int]:
    """The counters of a stream-K program: one i32 per shared tile (fewer than 2·PROGRAMS)."""
    return (2 * PROGRAMS,)


def streamk_source(config: GemmConfig, chunk: int, name: str | None = None) -> str:
    """The stream-K tile program of `config` (unbatched, no epilogue, bf16 /
    f16 / f32 C; `tawa.kernels.gemm.gemm_source` checks): kernel
    `@gemm_streamk` (`name` renames it) with arguments (A, B, C, W,
    Counters, M, N, K), launched on `streamk_grid()`; the last contributor
    of a shared tile sums its partials `chunk` columns at a time (module
    docstring)."""
    bm, bn, bk = config.tile
    a, b, c = config.a_dtype, config.b_dtype, config.c_dtype
    kn, km = config.b_layout == "kn", config.a_layout == "km"
    acc = f"tensor<{bm}x{bn}xf32>"
    part = f"tensor<{bm}x{chunk}xf32>"
    a_tile = f"tensor<{bk}x{bm}x{a}>" if km else f"tensor<{bm}x{bk}x{a}>"
    b_tile = f"tensor<{bk}x{bn}x{b}>" if kn else f"tensor<{bn}x{bk}x{b}>"
    a_index = "%k, %m0" if km else "%m0, %k"
    b_index = "%k, %n0" if kn else "%n0, %k"
    transposed_parts = ["lhs_transposed"] * km + ["rhs_transposed"] * (not kn)
    transposed = f" {{{', '.join(transposed_parts)}}}" if transposed_parts else ""

    def store(value: str, shape: str, cols: str, indent: str) -> str:
        """C's tile (or chunk) `value` of f32 `shape`, in C's type, at rows m0, columns `cols`."""
        if c == "f32":
            return f"{indent}tile.store {value}, %C[%m0, {cols}] : tensor<{shape}xf32>, memref<?x?xf32>\n"
        return (f"{indent}%c{value[1:]} = arith.truncf {value} : tensor<{shape}xf32> to tensor<{shape}x{c}>\n"
                f"{indent}tile.store %c{value[1:]}, %C[%m0, {cols}] : tensor<{shape}x{c}>, memref<?x?x{c}>\n")

    return (
        f"func.func @{name or config.kernel}(%A: memref<?x?x{a}>, %B: memref<?x?x{b}>, %C: memref<?x?x{c}>, "
        f"%W: memref<?x?x?xf32>, %Counters: memref<?xi32>,\n"
        f"    %M: index, %N: index, %K: index) {{\n"
        f"  // C = A{'ᵀ' if km else ''} · B{'' if kn else 'ᵀ'} ({config.id}), stream-K: the K-steps of the last "
        f"waves' tiles shared evenly by\n"
        f"  // the programs; W is 2P×{bm}×{bn} f32 (two partial tiles a program), Counters 2P i32, zero before "
        f"the first launch;\n"
        f"  // tawa.kernels.streamk, launch grid (P,).\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %c1 = arith.constant 1 : index\n"
        f"  %c2 = arith.constant 2 : index\n"
        f"  %block_m = arith.constant {bm} : index\n"
        f"  %block_n = arith.constant {bn} : index\n"
        f"  %block_k = arith.constant {bk} : index\n"
        f"  %group_m = arith.constant {GROUP_M} : index\n"
        f"  %chunk = arith.constant {chunk} : index\n"
        f"  %p = tile.program_id 0\n"
        f"  %programs = tile.num_programs 0\n"
        # Tiles and K-steps; a K of 0 still has one (empty) step, so C is stored as zeros.
        f"  %m_round = arith.addi %M, %block_m : index\n"
        f"  %m_up = arith.subi %m_round, %c1 : index\n"
        f"  %tiles_m = arith.divui %m_up, %block_m : index\n"
        f"  %n_round = arith.addi %N, %block_n : index\n"
        f"  %n_up = arith.subi %n_round, %c1 : index\n"
        f"  %tiles_n = arith.divui %n_up, %block_n : index\n"
        f"  %tiles = arith.muli %tiles_m, %tiles_n : index\n"
        f"  %k_round = arith.addi %K, %block_k : index\n"
        f"  %k_up = arith.subi %k_round, %c1 : index\n"
        f"  %k_steps = arith.divui %k_up, %block_k : index\n"
        f"  %iters = arith.maxui %k_steps, %c1 : index\n"
        # The data-parallel waves: all but the last one or two.
        f"  %waves = arith.divui %tiles, %programs : index\n"
        f"  %waves_1 = arith.maxui %waves, %c1 : index\n"
        f"  %dp_waves = arith.subi %waves_1, %c1 : index\n"
        f"  %dp_tiles = arith.muli %dp_waves, %programs : index\n"
        # The shared tiles' steps, w a program.
        f"  %sk_tiles = arith.subi %tiles, %dp_tiles : index\n"
        f"  %sk_steps = arith.muli %sk_tiles, %iters : index\n"
        f"  %sk_round = arith.addi %sk_steps, %programs : index\n"
        f"  %sk_up = arith.subi %sk_round, %c1 : index\n"
        f"  %share_0 = arith.divui %sk_up, %programs : index\n"
        f"  %share = arith.maxui %share_0, %c1 : index\n"
        f"  %start_0 = arith.muli %p, %share : index\n"
        f"  %start = arith.minui %start_0, %sk_steps : index\n"
        f"  %end_0 = arith.addi %start, %share : index\n"
        f"  %end = arith.minui %end_0, %sk_steps : index\n"
        f"  %u_first = arith.divui %start, %iters : index\n"
        f"  %end_round = arith.addi %end, %iters : index\n"
        f"  %end_up = arith.subi %end_round, %c1 : index\n"
        f"  %u_end = arith.divui %end_up, %iters : index\n"
        f"  %spans = arith.subi %u_end, %u_first : index\n"
        f"  %busy = arith.cmpi ult, %start, %end : index\n"
        f"  %segments = arith.select %busy, %spans, %c0 : index\n"
        f"  %jobs = arith.addi %dp_waves, %segments : index\n"
        f"  %p2 = arith.muli %p, %c2 : index\n"
        f"  scf.for %j = %c0 to %jobs step %c1 {{\n"
        # Job j: data-parallel tile p + j·P, or shared tile u = u_first + (j − dp_waves).
        f"    %dp = arith.cmpi ult, %j, %dp_waves : index\n"
        f"    %j_sk = arith.select %dp, %dp_waves, %j : index\n"
        f"    %j_u = arith.subi %j_sk, %dp_waves : index\n"
        f"    %u = arith.addi %u_first, %j_u : index\n"
        f"    %t_sk = arith.addi %dp_tiles, %u : index\n"
        f"    %j_wave = arith.muli %j, %programs : index\n"
        f"    %t_dp = arith.addi %p, %j_wave : index\n"
        f"    %t = arith.select %dp, %t_dp, %t_sk : index\n"
        f"    %base = arith.muli %u, %iters : index\n"
        f"    %base_end = arith.addi %base, %iters : index\n"
        f"    %lo_g = arith.maxui %start, %base : index\n"
        f"    %hi_g = arith.minui %end, %base_end : index\n"
        f"    %lo_sk = arith.subi %lo_g, %base : index\n"
        f"    %hi_sk = arith.subi %hi_g, %base : index\n"
        f"    %lo = arith.select %dp, %c0, %lo_sk : index\n"
        f"    %hi = arith.select %dp, %iters, %hi_sk : index\n"
        # Tile t in grouped order (tawa.transforms.utils.grouped_ids).
        f"    %per_group = arith.muli %group_m, %tiles_n : index\n"
        f"    %group = arith.divui %t, %per_group : index\n"
        f"    %first_m = arith.muli %group, %group_m : index\n"
        f"    %rows_left = arith.subi %tiles_m, %first_m : index\n"
        f"    %group_size = arith.minui %rows_left, %group_m : index\n"
        f"    %within = arith.remui %t, %per_group : index\n"
        f"    %row_in = arith.remui %within, %group_size : index\n"
        f"    %pid_m = arith.addi %first_m, %row_in : index\n"
        f"    %pid_n = arith.divui %within, %group_size : index\n"
        f"    %m0 = arith.muli %pid_m, %block_m : index\n"
        f"    %n0 = arith.muli %pid_n, %block_n : index\n"
        f"    %k_lo = arith.muli %lo, %block_k : index\n"
        f"    %k_hi_0 = arith.muli %hi, %block_k : index\n"
        f"    %k_hi = arith.minui %k_hi_0, %K : index\n"
        f"    %zero = tile.zeros : {acc}\n"
        f"    %acc = scf.for %k = %k_lo to %k_hi step %block_k iter_args(%acc_i = %zero) -> ({acc}) {{\n"
        f"      %a = tile.load %A[{a_index}] : memref<?x?x{a}> -> {a_tile}\n"
        f"      %bt = tile.load %B[{b_index}] : memref<?x?x{b}> -> {b_tile}\n"
        f"      %d = tile.dot %a, %bt, %acc_i{transposed} : {a_tile}, {b_tile} -> {acc}\n"
        f"      scf.yield %d : {acc}\n"
        f"    }}\n"
        f"    %from_0 = arith.cmpi eq, %lo, %c0 : index\n"
        f"    %to_end = arith.cmpi eq, %hi, %iters : index\n"
        f"    %whole = arith.andi %from_0, %to_end : i1\n"
        f"    scf.if %whole {{\n"
        + store("%acc", f"{bm}x{bn}", "%n0", "      ")
        + f"    }} else {{\n"
        # A segment: publish the partial, arrive with the tile's contributor count.
        f"      %later = arith.cmpi ne, %u, %u_first : index\n"
        f"      %which = arith.select %later, %c1, %c0 : index\n"
        f"      %slot = arith.addi %p2, %which : index\n"
        f"      tile.store %acc, %W[%slot, %c0, %c0] : {acc}, memref<?x?x?xf32>\n"
        f"      %q_first = arith.divui %base, %share : index\n"
        f"      %base_last = arith.subi %base_end, %c1 : index\n"
        f"      %q_last = arith.divui %base_last, %share : index\n"
        f"      %q_end = arith.addi %q_last, %c1 : index\n"
        f"      %arrivals = arith.subi %q_end, %q_first : index\n"
        f"      %last = tile.counter_arrive %Counters[%u] count %arrivals : memref<?xi32>\n"
        f"      scf.if %last {{\n"
        f"        scf.for %jc = %c0 to %block_n step %chunk {{\n"
        f"          %n1 = arith.addi %n0, %jc : index\n"
        f"          %sum0 = tile.zeros : {part}\n"
        f"          %sum = scf.for %q = %q_first to %q_end step %c1 iter_args(%sum_i = %sum0) -> ({part}) {{\n"
        # Program q's partial of this tile is its first segment's (slot 2q) where its range starts in it.
        f"            %q_start = arith.muli %q, %share : index\n"
        f"            %q_u = arith.divui %q_start, %iters : index\n"
        f"            %q_later = arith.cmpi ne, %u, %q_u : index\n"
        f"            %q_which = arith.select %q_later, %c1, %c0 : index\n"
        f"            %q2 = arith.muli %q, %c2 : index\n"
        f"            %q_slot = arith.addi %q2, %q_which : index\n"
        f"            %partial = tile.load %W[%q_slot, %c0, %jc] : memref<?x?x?xf32> -> {part}\n"
        f"            %sum_next = arith.addf %sum_i, %partial : {part}\n"
        f"            scf.yield %sum_next : {part}\n"
        f"          }}\n"
        + store("%sum", f"{bm}x{chunk}", "%n1", "          ")
        + "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "  func.return\n"
        "}\n"
    )


__all__ = ["GROUP_M", "PROGRAMS", "streamk_counters_shape", "streamk_grid", "streamk_source",
           "streamk_workspace_shape"]
