"""GEMM tile programs of any configuration, from one generator.

    config = GemmConfig(block_m=128, block_n=128, block_k=64)
    text = gemm_source(config)                 # the tile program (MLIR text)
    kernel = tawa.compile(text, config.kernel, stages=4)
    kernel(A, B, C, M, N, K, grid=gemm_grid(config, M, N))

The program is `examples/gemm.mlir`'s with the configuration substituted:
one program per BLOCK_M × BLOCK_N tile of C (row-major, M×N), K in BLOCK_K
steps, f32 accumulation, grid (⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉[, batch]).

* `b_layout="nk"`: C = A · Bᵀ with B N×K (`examples/gemm.mlir`, an
  `nn.Linear` weight); `"kn"`: C = A · B with B K×N, read MN-major
  (`examples/matmul.mlir`).
* `a_layout="mk"`: A is M×K (K-major); `"km"`: A is stored K×M and read
  MN-major in place (`tile.dot {lhs_transposed}`: a weight gradient dYᵀ·X
  with dY as stored), its tiles BLOCK_K × BLOCK_M (the TMA box).  Both
  layouts of A go with both of B: four programs from this one generator.
  Only 16-bit types are read MN-major (`unsupported`).
* `batched`: A, B and C gain a leading batch dimension, the batch is the
  third grid axis (`examples/batched_gemm.mlir`).
* A C of f32 is the accumulator itself; bf16 and f16 are `arith.truncf` of it.
* `split_k` = S > 1 (split-K, for grids too small to keep the SMs busy):
  `@gemm_splitk` (A, B, C, W, Counters, M, N, K), grid
  (⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉, S): program (m, n, s) sums the products of
  K-slice s, [s·Ks, min(K, (s+1)·Ks)) with Ks = ⌈⌈K/S⌉/BLOCK_K⌉·BLOCK_K
  (computed from %K), stores its f32 accumulator into the workspace W
  (S×M×N f32) at [s, m0, n0] (a slice past K is empty and stores zeros),
  and arrives at its tile's counter, Counters[m·⌈N/BLOCK_N⌉ + n]
  (`tile.counter_arrive`, one i32 per tile, zero before the first launch).
  The last of the S programs to arrive sums the tile's S partials from W
  in f32, in slice order (so C does not depend on which came last), in
  column chunks of `reduce_chunk` (the chunk's sum and one partial fit the
  registers the accumulator held), and stores C; its arrival set the
  counter back to 0 for the next launch.  No program waits for another
  (`tawa.runtime.splitk`, docs/runtime.md "Split-K").
  `gemm_reduce_source` is a separate reduce program `@gemm_splitk_reduce`
  (W, C, M, N), grid `reduce_grid`, C = Σₛ W[s] over a tile cut to at
  most 128×128 (`reduce_tile`): no longer what the runtime launches, kept
  as a dot-free kernel of the compiler's tests.

* `epilogue` (an `Epilogue`): what the consumer warp groups do to the f32
  accumulator before the store, C = activation(acc + bias) + residual, or
  with `gated` C = activation(acc) · acc₂ + residual, acc₂ the product of A
  and a second B operand (two dots per K step sharing the A tile: SwiGLU's
  silu(x·Wgᵀ) · (x·Wuᵀ)).  The kernel's arguments are then
  (A, B[, B2][, Bias][, R], C, M, N, K): B2 the second B (same type and
  layout as B), Bias a vector of N elements of C's type added to every row,
  R an M×N residual of C's type (batch×M×N when batched).  The activation
  is computed in f32 on the accumulator with ops the lowering has
  (`ACTIVATIONS`: GELU's tanh form, SiLU as x·(½ + ½·tanh(x/2)), the
  identity σ(x) = ½(1 + tanh(x/2)), and ReLU).  With `save_pre` (an
  activation) the consumers also store the pre-activation P = acc + bias,
  rounded to C's type, into a second output P shaped as C, before they
  apply the activation, and when gated the second product acc₂ into a
  third, P2: the arguments are then (A, B[, B2][, Bias][, R], C, P[, P2],
  M, N, K), and a training forward pass keeps them for the backward pass
  instead of recomputing the products.  With `scale_a` / `scale_b`
  (`SCALES`: an fp8 GEMM's dequantization, `tawa.torch.matmul_fp8`) the
  accumulator is first multiplied by ScaleA and ScaleB, f32, one element
  (read with `tile.load_scalar`) or one per row of the operand; the
  arguments are then (A, B, ScaleA, ScaleB, ..., C, M, N, K).
  The default (no epilogue) writes the program above, unchanged.

The configurations themselves (`GemmConfig`, `Epilogue`, `unsupported`,
the launch grid and a split program's workspace) are
`tawa.kernels.gemm_config`'s, re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable

from tawa.diagnostics import TawaError
from tawa.kernels.gemm_config import (
    A_LAYOUTS,
    ACTIVATIONS,
    B_LAYOUTS,
    BLOCK_M_CHOICES,
    BLOCK_N_CHOICES,
    BLOCK_N_STEP,
    NO_EPILOGUE,
    OUTPUT_TYPES,
    REDUCE_TILE,
    ROW_BYTES_CHOICES,
    SCALES,
    Epilogue,
    GemmConfig,
    accumulator_registers,
    block_k_for,
    consumer_budget,
    consumer_registers,
    counters_shape,
    element_bytes,
    gemm_grid,
    reduce_grid,
    reduce_tile,
    transposed_problem,
    unsupported,
    workspace_shape,
)
from tawa.target.hopper import REGISTER_ESTIMATE_ERROR, SCALAR_REGS_OVERHEAD, WGMMA_N_STEP

GELU_TANH = (0.7978845608, 0.044715)
"""gelu(x) = x · (½ + ½·tanh(k0 · (x + k1·x³))): k0 = √(2/π), k1."""


def _operand(rows: str, cols: str, dtype: str, batched: bool) -> tuple[str, str]:
    """(memref type, load indices) of an operand."""
    dims = "?x?x?x" if batched else "?x?x"
    index = f"%b, {rows}, {cols}" if batched else f"{rows}, {cols}"
    return f"memref<{dims}{dtype}>", index


def _check_generable(config: GemmConfig, where: str) -> None:
    """Configurations the generator cannot write at all (the rest are the
    compiler's to judge)."""
    if (config.split_k < 1 or (config.split_k > 1 and config.batched)
            or transposed_problem(config)
            or (config.split_k > 1 and config.epilogue != NO_EPILOGUE)
            or (config.batched and (config.epilogue.scale_a or config.epilogue.scale_b))):
        raise TawaError(str(unsupported(config)), where)


def _activation(kind: str, x: str, t: str) -> tuple[list[str], str]:
    """(lines, result) of activation `kind` of the f32 tile `x` of type `t`,
    with ops `tawa-lower-tile` lowers (arith on f32, `math.tanh`)."""
    if kind == "relu":
        return ["  %relu_zero = arith.constant 0.0 : f32\n",
                f"  %relu_zeros = tile.splat %relu_zero : f32 -> {t}\n",
                f"  %act = arith.maximumf {x}, %relu_zeros : {t}\n"], "%act"
    half = ["  %act_half = arith.constant 0.5 : f32\n",
            f"  %act_half_t = tile.splat %act_half : f32 -> {t}\n"]
    if kind == "silu":  # x·σ(x), σ(x) = ½ + ½·tanh(x/2): no exp, no division
        arg = [f"  %act_arg = arith.mulf {x}, %act_half_t : {t}\n"]
    else:  # gelu_tanh: x·(½ + ½·tanh(k0·(x + k1·x³)))
        k0, k1 = GELU_TANH
        arg = [f"  %gelu_k0 = arith.constant {k0} : f32\n",
               f"  %gelu_k1 = arith.constant {k1} : f32\n",
               f"  %gelu_k0_t = tile.splat %gelu_k0 : f32 -> {t}\n",
               f"  %gelu_k1_t = tile.splat %gelu_k1 : f32 -> {t}\n",
               f"  %gelu_x2 = arith.mulf {x}, {x} : {t}\n",
               f"  %gelu_x3 = arith.mulf %gelu_x2, {x} : {t}\n",
               f"  %gelu_cubic = arith.mulf %gelu_x3, %gelu_k1_t : {t}\n",
               f"  %gelu_inner = arith.addf {x}, %gelu_cubic : {t}\n",
               f"  %act_arg = arith.mulf %gelu_inner, %gelu_k0_t : {t}\n"]
    return [*half, *arg,
            f"  %act_tanh = math.tanh %act_arg : {t}\n",
            f"  %act_htanh = arith.mulf %act_tanh, %act_half_t : {t}\n",
            f"  %act_gate = arith.addf %act_htanh, %act_half_t : {t}\n",
            f"  %act = arith.mulf {x}, %act_gate : {t}\n"], "%act"


def _epilogue(config: GemmConfig, acc: str, acc2: str, c_type: str, c_index: str) -> str:
    """The ops after the K loop: `config.epilogue` on the f32 accumulator
    `acc` (and `acc2`, the second product, when gated), then the store."""
    bm, bn, c, ep = config.block_m, config.block_n, config.c_dtype, config.epilogue
    t = f"tensor<{bm}x{bn}xf32>"
    lines, x = [], acc
    for scale, operand, rows, axis, offset in (("scale_a", "%ScaleA", bm, 1, "%m0"), ("scale_b", "%ScaleB", bn, 0, "%n0")):
        kind, v = getattr(ep, scale), scale.replace("scale", "s")
        if kind == "tensor":  # one f32, read by the kernel (the scale stays on the device)
            lines += [f"  %{v} = tile.load_scalar {operand}[%c0] : memref<?xf32> -> f32\n",
                      f"  %{v}_t = tile.splat %{v} : f32 -> {t}\n"]
        elif kind == "row":  # one f32 per row of the operand, broadcast along C's other axis
            shape = f"{rows}x1" if axis == 1 else f"1x{rows}"
            lines += [f"  %{v} = tile.load {operand}[{offset}] : memref<?xf32> -> tensor<{rows}xf32>\n",
                      f"  %{v}_e = tile.expand_dims %{v}, {axis} : tensor<{rows}xf32> -> tensor<{shape}xf32>\n",
                      f"  %{v}_t = tile.broadcast %{v}_e : tensor<{shape}xf32> -> {t}\n"]
        if kind is not None:
            lines.append(f"  %{v}_scaled = arith.mulf {x}, %{v}_t : {t}\n")
            x = f"%{v}_scaled"

    def widened(value: str, shape: str, name: str) -> str:
        """`value` (a tensor<{shape}x{c}>) in f32."""
        if c == "f32":
            return value
        lines.append(f"  %{name}_f = arith.extf {value} : tensor<{shape}x{c}> to tensor<{shape}xf32>\n")
        return f"%{name}_f"

    if ep.bias:
        lines.append(f"  %bias = tile.load %Bias[%n0] : memref<?x{c}> -> tensor<{bn}x{c}>\n")
        bias = widened("%bias", f"{bn}", "bias")
        lines += [f"  %bias_row = tile.expand_dims {bias}, 0 : tensor<{bn}xf32> -> tensor<1x{bn}xf32>\n",
                  f"  %bias_t = tile.broadcast %bias_row : tensor<1x{bn}xf32> -> {t}\n",
                  f"  %biased = arith.addf {x}, %bias_t : {t}\n"]
        x = "%biased"
    # P (and P2, gated) stored before the activation: the rounded copies are dead before its temporaries.
    for value, out, name in ((x, "%P", "pre"), (acc2, "%P2", "pre2"))[: ep.save_pre * (1 + ep.gated)]:
        if c == "f32":
            lines.append(f"  tile.store {value}, {out}[{c_index}] : {t}, {c_type}\n")
        else:
            lines += [f"  %{name} = arith.truncf {value} : {t} to tensor<{bm}x{bn}x{c}>\n",
                      f"  tile.store %{name}, {out}[{c_index}] : tensor<{bm}x{bn}x{c}>, {c_type}\n"]
    if ep.activation is not None:
        act, x = _activation(ep.activation, x, t)
        lines += act
    if ep.gated:
        lines.append(f"  %gated = arith.mulf {x}, {acc2} : {t}\n")
        x = "%gated"
    if ep.residual:
        lines.append(f"  %res = tile.load %R[{c_index}] : {c_type} -> tensor<{bm}x{bn}x{c}>\n")
        res = widened("%res", f"{bm}x{bn}", "res")
        lines.append(f"  %with_res = arith.addf {x}, {res} : {t}\n")
        x = "%with_res"
    if c == "f32":
        lines.append(f"  tile.store {x}, %C[{c_index}] : {t}, {c_type}\n")
    else:
        lines += [f"  %c = arith.truncf {x} : {t} to tensor<{bm}x{bn}x{c}>\n",
                  f"  tile.store %c, %C[{c_index}] : tensor<{bm}x{bn}x{c}>, {c_type}\n"]
    return "".join(lines)


def _epilogue_doc(config: GemmConfig) -> str:
    """The program's comment line on its epilogue ('' without one)."""
    ep = config.epilogue
    if ep == NO_EPILOGUE:
        return ""
    scaled = "acc" + "".join(f" · {n}" for n, k in (("ScaleA", ep.scale_a), ("ScaleB", ep.scale_b)) if k)
    x = f"{scaled} + Bias" if ep.bias else scaled
    y = f"{ep.activation}({x})" if ep.activation else x
    if ep.gated:
        y = f"{y} · acc2 (acc2 = A{'ᵀ' if config.a_layout == 'km' else ''} · B2{'' if config.b_layout == 'kn' else 'ᵀ'}, B2 shaped as B)"
    operands = ([f"ScaleA {'one f32' if ep.scale_a == 'tensor' else 'M f32 (per row of C)'}"] * bool(ep.scale_a)
                + [f"ScaleB {'one f32' if ep.scale_b == 'tensor' else 'N f32 (per column of C)'}"] * bool(ep.scale_b)
                + [f"Bias a vector of N {config.c_dtype}"] * ep.bias + ["R shaped as C"] * ep.residual)
    saved = f"; P = {x}{', P2 = acc2' if ep.gated else ''} (before the activation), shaped as C" if ep.save_pre else ""
    return (f"  // Epilogue: C = {y}{' + R' if ep.residual else ''}{'; ' if operands else ''}{', '.join(operands)}"
            f"{saved}.\n")


def _split_k_range(config: GemmConfig) -> str:
    """The ops that give a split program its K-slice [%k_lo, %k_hi): slice
    s = program id 2 is [s·Ks, min(K, (s+1)·Ks)) with Ks = ⌈⌈K/S⌉/BLOCK_K⌉·BLOCK_K =
    ⌈K/(S·BLOCK_K)⌉·BLOCK_K, whole K-steps, so only the last non-empty slice
    ends ragged; both ends are clamped to K, so a slice past K is an empty
    loop (lb = ub) and stores zeros."""
    split, bk = config.split_k, config.block_k
    return (
        f"  %s = tile.program_id 2\n"
        f"  %split_block_k = arith.constant {split * bk} : index\n"
        f"  %split_round = arith.constant {split * bk - 1} : index\n"
        f"  %k_padded = arith.addi %K, %split_round : index\n"
        f"  %k_steps = arith.divui %k_padded, %split_block_k : index\n"
        f"  %k_slice = arith.muli %k_steps, %block_k : index\n"
        f"  %k_start = arith.muli %s, %k_slice : index\n"
        f"  %k_lo = arith.minui %k_start, %K : index\n"
        f"  %k_end = arith.addi %k_lo, %k_slice : index\n"
        f"  %k_hi = arith.minui %k_end, %K : index\n"
    )


def _split_epilogue(config: GemmConfig, row0: str, col0: str, pid_row: str, pid_col: str, col1: str,
                    store_chunk: Callable[[int], str]) -> str:
    """The ops after a split program's K loop: it publishes its f32
    accumulator in W at [%s, `row0`, `col0`] (W shaped as the tile's rows
    and columns: S×M×N, or S×N×M for a transposed tile) and arrives at its
    tile's counter (tile `pid_row`·(programs along axis 1) + `pid_col`); the
    last of the S to arrive sums the S partials of W, its own included, in
    slice order (the result does not depend on which program came last), in
    the column chunks of `reduce_chunks` starting at `col1`, each stored by
    `store_chunk(width)` (ops on the chunk's f32 sum %sum).  A chunk's S
    loads come first, then its S − 1 additions: the loads are independent,
    so they are in flight together and the chunk waits once (`reduce_chunk`
    sizes the chunks for those registers).  Chunks of one width are one
    loop; a last, narrower chunk is a loop of its own (its tiles are of
    another type)."""
    acc, split = f"tensor<{config.block_m}x{config.block_n}xf32>", config.split_k
    sums = [f"%sum{r}" for r in range(1, split - 1)] + ["%sum"]  # the running sum after partial 1, 2, ...
    loops = []
    for i, (first, end, width) in enumerate(reduce_chunks(config)):
        part = f"tensor<{config.block_m}x{width}xf32>"
        loads = ("".join(f"      %partial{r} = tile.load %W[%slice{r}, {row0}, {col1}] : memref<?x?x?xf32> -> {part}\n"
                         for r in range(split))
                 + "".join(f"      {total} = arith.addf {prev}, %partial{r} : {part}\n"
                           for r, prev, total in zip(range(1, split), ["%partial0", *sums], sums)))
        if (first, end) == (0, config.block_n):  # the whole tile in chunks of one width
            lo, hi, step = "%c0", "%block_n", "%chunk"
            bounds = f"    %chunk = arith.constant {width} : index\n"
        else:
            lo, hi, step = f"%chunks{i}_lo", f"%chunks{i}_hi", f"%chunks{i}_step"
            bounds = "".join(f"    {name} = arith.constant {value} : index\n"
                             for name, value in ((lo, first), (hi, end), (step, width)))
        loops.append(
            bounds
            + f"    scf.for %j = {lo} to {hi} step {step} {{\n"
            f"      {col1} = arith.addi {col0}, %j : index\n"
            + loads
            + "".join("    " + line for line in store_chunk(width).splitlines(True))
            + "    }\n")
    return (
        f"  tile.store %acc, %W[%s, {row0}, {col0}] : {acc}, memref<?x?x?xf32>\n"
        f"  %tiles_n = tile.num_programs 1\n"
        f"  %tile_row = arith.muli {pid_row}, %tiles_n : index\n"
        f"  %tile = arith.addi %tile_row, {pid_col} : index\n"
        f"  %arrivals = arith.constant {split} : index\n"
        f"  %last = tile.counter_arrive %Counters[%tile] count %arrivals : memref<?xi32>\n"
        f"  scf.if %last {{\n"
        + "".join(f"    %slice{r} = arith.constant {r} : index\n" for r in range(split))
        + "".join(loops)
        + "  }\n"
    )


def gemm_source(config: GemmConfig, name: str | None = None) -> str:
    """The tile program of `config`: kernel `config.kernel` (`@gemm`,
    `@batched_gemm` when batched, `@gemm_splitk` when split, a suffix per
    epilogue part: `@gemm_bias_gelu_tanh_residual`; `name` renames it) with
    arguments (A, B[, B2][, ScaleA][, ScaleB][, Bias][, R], C[, P[, P2]], M, N, K), or (A, B, C, W,
    Counters, M, N, K) when split (module docstring)."""
    _check_generable(config, "tawa.kernels.gemm_source")
    if config.transposed:
        return _transposed_source(config, name or config.kernel)
    bm, bn, bk = config.tile
    a, b, c = config.a_dtype, config.b_dtype, config.c_dtype
    batched, kn, split = config.batched, config.b_layout == "kn", config.split_k
    km = config.a_layout == "km"
    ep = config.epilogue
    gated = ep.gated
    name = name or config.kernel
    a_type, a_index = _operand("%k" if km else "%m0", "%m0" if km else "%k", a, batched)
    b_type, b_index = _operand("%k" if kn else "%n0", "%n0" if kn else "%k", b, batched)
    c_type, c_index = _operand("%m0", "%n0", c, batched)
    acc = f"tensor<{bm}x{bn}xf32>"
    a_tile = f"tensor<{bk}x{bm}x{a}>" if km else f"tensor<{bm}x{bk}x{a}>"
    b_tile = f"tensor<{bk}x{bn}x{b}>" if kn else f"tensor<{bn}x{bk}x{b}>"
    transposed_parts = ["lhs_transposed"] * km + ["rhs_transposed"] * (not kn)
    transposed = f" {{{', '.join(transposed_parts)}}}" if transposed_parts else ""
    b_form = "K×N" if kn else "N×K"
    a_form = "K×M" if km else "M×K"
    if split > 1:
        out = f"%C: {c_type}, %W: memref<?x?x?xf32>, %Counters: memref<?xi32>"
        c_chunk_type, c_chunk_index = _operand("%m0", "%n1", c, False)
        epilogue = _split_epilogue(config, "%m0", "%n0", "%pid_m", "%pid_n", "%n1", lambda width: _epilogue(
            config.replace(block_n=width, split_k=1), "%sum", "", c_chunk_type, c_chunk_index))
        c_doc = (f"C is M×N of {c}, W is {split}×M×N of f32 (the partial sums by K-slice), Counters one i32 "
                 f"per tile of C, zero before the first launch")
        grid = f"(⌈M/{bm}⌉, ⌈N/{bn}⌉, {split})"
        k_range = _split_k_range(config)
        lo, hi = "%k_lo", "%k_hi"
    else:
        out = f"%C: {c_type}" + f", %P: {c_type}" * ep.save_pre + f", %P2: {c_type}" * (ep.save_pre and gated)
        epilogue = _epilogue(config, "%acc#0" if gated else "%acc", "%acc#1", c_type, c_index)
        c_doc = f"C is {'batch×' * batched}M×N of {c}"
        grid = f"(⌈M/{bm}⌉, ⌈N/{bn}⌉{', batch' if batched else ''})"
        k_range = "  %b = tile.program_id 2\n" if batched else ""
        lo, hi = "%c0", "%K"
    operands = "".join((f", %B2: {b_type}" * gated, ", %ScaleA: memref<?xf32>" * bool(ep.scale_a),
                        ", %ScaleB: memref<?xf32>" * bool(ep.scale_b), f", %Bias: memref<?x{c}>" * ep.bias,
                        f", %R: {c_type}" * ep.residual))
    # One product per B operand (gated: two), all of the same A tile, each its own accumulator.
    products = [("B", "bt", "acc_i", "d")] + [("B2", "b2t", "acc2_i", "d2")] * gated
    types = ", ".join([acc] * len(products))
    loop = (
        f"  %acc{':2' * gated} = scf.for %k = {lo} to {hi} step %block_k "
        f"iter_args({', '.join(f'%{i} = %zero' for _, _, i, _ in products)}) -> ({types}) {{\n"
        f"    %a = tile.load %A[{a_index}] : {a_type} -> {a_tile}\n"
        + "".join(f"    %{t} = tile.load %{B}[{b_index}] : {b_type} -> {b_tile}\n" for B, t, _, _ in products)
        + "".join(f"    %{d} = tile.dot %a, %{t}, %{i}{transposed} : {a_tile}, {b_tile} -> {acc}\n"
                  for _, t, i, d in products)
        + f"    scf.yield {', '.join(f'%{d}' for *_, d in products)} : {types}\n"
    )
    # The function starts on line 1 (errors located at the kernel say 1:1).
    return (
        f"func.func @{name}(%A: {a_type}, %B: {b_type}{operands}, {out},\n"
        f"    %M: index, %N: index, %K: index) {{\n"
        f"  // C = A{'ᵀ' if km else ''} · B{'' if kn else 'ᵀ'} ({config.id}): A is {'batch×' * batched}{a_form} of {a}, "
        f"B is {'batch×' * batched}{b_form} of {b},\n"
        f"  // {c_doc}; tawa.kernels.gemm_source, launch grid {grid}.\n"
        f"{_epilogue_doc(config)}"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %block_k = arith.constant {bk} : index\n"
        f"  %block_m = arith.constant {bm} : index\n"
        f"  %block_n = arith.constant {bn} : index\n"
        f"  %pid_m = tile.program_id 0\n"
        f"  %pid_n = tile.program_id 1\n"
        f"{k_range}"
        f"  %m0 = arith.muli %pid_m, %block_m : index\n"
        f"  %n0 = arith.muli %pid_n, %block_n : index\n"
        f"  %zero = tile.zeros : {acc}\n"
        f"{loop}"
        f"  }}\n"
        f"{epilogue}"
        f"  func.return\n"
        f"}}\n"
    )


def _transposed_source(config: GemmConfig, name: str) -> str:
    """The program of a transposed `config` (`GemmConfig.transposed`): the
    tile of Cᵀ = B·Aᵀ at B's rows n0 (program id 0) and A's rows m0 (program
    id 1), stored transposed at C[m0, n0]; split (`split_k` > 1), its
    partials go through W shaped as Cᵀ (S×N×M: the f32 accumulator is stored
    as it is) and the last program stores each chunk of the sum transposed."""
    bm, bn, bk = config.tile
    a, b, c = config.a_dtype, config.b_dtype, config.c_dtype
    acc = f"tensor<{bm}x{bn}xf32>"
    lhs, rhs = f"tensor<{bm}x{bk}x{b}>", f"tensor<{bn}x{bk}x{a}>"

    def store(value: str, cols: int, m: str) -> str:
        """`value` (the f32 tile of Cᵀ, BLOCK_M × `cols`) rounded and stored transposed at C[`m`, n0]."""
        t = f"tensor<{bm}x{cols}x{c}>"
        return (f"  %ct = arith.truncf {value} : tensor<{bm}x{cols}xf32> to {t}\n"
                f"  %c = tile.trans %ct : {t} -> tensor<{cols}x{bm}x{c}>\n"
                f"  tile.store %c, %C[{m}, %n0] : tensor<{cols}x{bm}x{c}>, memref<?x?x{c}>\n")

    split = config.split_k
    if split > 1:
        out = f"%C: memref<?x?x{c}>, %W: memref<?x?x?xf32>, %Counters: memref<?xi32>"
        epilogue = _split_epilogue(config, "%n0", "%m0", "%pid_n", "%pid_m", "%m1",
                                   lambda width: store("%sum", width, "%m1"))
        doc = (f"C is M×N of {c}, W is {split}×N×M of f32 (the partial sums of Cᵀ by K-slice), Counters one "
               f"i32 per tile, zero before the first launch")
        grid, k_range, lo, hi = f"(⌈N/{bm}⌉, ⌈M/{bn}⌉, {split})", _split_k_range(config), "%k_lo", "%k_hi"
    else:
        out, epilogue, doc = f"%C: memref<?x?x{c}>", store("%acc", bn, "%m0"), f"C is M×N of {c}"
        grid, k_range, lo, hi = f"(⌈N/{bm}⌉, ⌈M/{bn}⌉)", "", "%c0", "%K"
    return (
        f"func.func @{name}(%A: memref<?x?x{a}>, %B: memref<?x?x{b}>, {out},\n"
        f"    %M: index, %N: index, %K: index) {{\n"
        f"  // C = A · Bᵀ ({config.id}) computed as Cᵀ = B · Aᵀ: A is M×K of {a}, B is N×K of {b}, {doc};\n"
        f"  // the tile's rows are B's, its columns A's; tawa.kernels.gemm_source, launch grid {grid}.\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %block_k = arith.constant {bk} : index\n"
        f"  %block_m = arith.constant {bm} : index\n"
        f"  %block_n = arith.constant {bn} : index\n"
        f"  %pid_n = tile.program_id 0\n"
        f"  %pid_m = tile.program_id 1\n"
        f"{k_range}"
        f"  %n0 = arith.muli %pid_n, %block_m : index\n"
        f"  %m0 = arith.muli %pid_m, %block_n : index\n"
        f"  %zero = tile.zeros : {acc}\n"
        f"  %acc = scf.for %k = {lo} to {hi} step %block_k iter_args(%acc_i = %zero) -> ({acc}) {{\n"
        f"    %bt = tile.load %B[%n0, %k] : memref<?x?x{b}> -> {lhs}\n"
        f"    %at = tile.load %A[%m0, %k] : memref<?x?x{a}> -> {rhs}\n"
        f"    %d = tile.dot %bt, %at, %acc_i {{rhs_transposed}} : {lhs}, {rhs} -> {acc}\n"
        f"    scf.yield %d : {acc}\n"
        f"  }}\n"
        f"{epilogue}"
        f"  func.return\n"
        f"}}\n"
    )


def reduce_chunk(config: GemmConfig) -> int:
    """Columns of C the last program of a split tile sums at a time.  It
    loads a chunk's S partials all at once (one wait for the S loads, not
    one each) and sums them in slice order, so the S partials and their sum
    must fit the registers a consumer thread has past its scalars
    (`consumer_budget` less `SCALAR_REGS_OVERHEAD` and the estimate's error
    `REGISTER_ESTIMATE_ERROR`; the accumulator is dead after its store):
    a 64-row f32 chunk of w columns is w/2 registers a thread.  The chunks
    are as few as that allows, of equal widths in multiples of a wgmma's 8
    (`reduce_chunks` adds a narrower last one where they do not divide
    BLOCK_N).  Example: 64×64 split 7, 256 registers: (256 − 34) · 2 / 8
    → at most 55 columns, so two chunks of 32."""
    free = consumer_budget(config.block_m) - SCALAR_REGS_OVERHEAD - REGISTER_ESTIMATE_ERROR
    widest = max(free * 2 // (config.split_k + 1) // WGMMA_N_STEP * WGMMA_N_STEP, WGMMA_N_STEP)
    chunks = -(-config.block_n // widest)
    return -(-config.block_n // chunks // WGMMA_N_STEP) * WGMMA_N_STEP


def reduce_chunks(config: GemmConfig) -> list[tuple[int, int, int]]:
    """The column chunks of a split tile's sum, as (first column, end,
    width) runs: chunks of `reduce_chunk`, then one of the rest (104
    columns in chunks of 40: 40, 40 and 24).  Each chunk waits once for its
    S partial loads, so fewer chunks are fewer waits."""
    bn, width = config.block_n, reduce_chunk(config)
    whole = bn // width * width
    return [(0, whole, width)] + ([(whole, bn, bn - whole)] if whole < bn else [])


def gemm_reduce_source(config: GemmConfig, name: str | None = None) -> str:
    """The reduce program of a split configuration: kernel
    `@gemm_splitk_reduce` (`name` renames it) with arguments (W, C, M, N),
    grid `reduce_grid(config, M, N)`, one program per `reduce_tile(config)`
    tile of C: C = Σₛ W[s] summed in f32 in order s = 0, 1, ..., then
    truncated to C's type: what the last program of a split tile computes
    (`gemm_source`).  `tawa-hopper-pipeline` compiles it (a dot-free kernel:
    every op is the consumers'); the runtime does not launch it."""
    _check_generable(config, "tawa.kernels.gemm_reduce_source")
    if config.split_k == 1 or config.transposed:
        why = "a transposed program's partials are Cᵀ's" if config.transposed else "it has no K split (split_k = 1)"
        raise TawaError(f"{config.id}: {why}, no reduce program", "tawa.kernels.gemm_reduce_source")
    (bm, bn), c = reduce_tile(config), config.c_dtype
    acc = f"tensor<{bm}x{bn}xf32>"
    c_type = f"memref<?x?x{c}>"
    if c == "f32":
        epilogue = f"  tile.store %acc, %C[%m0, %n0] : {acc}, {c_type}\n"
    else:
        epilogue = (f"  %c = arith.truncf %acc : {acc} to tensor<{bm}x{bn}x{c}>\n"
                    f"  tile.store %c, %C[%m0, %n0] : tensor<{bm}x{bn}x{c}>, {c_type}\n")
    return (
        f"func.func @{name or config.reduce_kernel}(%W: memref<?x?x?xf32>, %C: {c_type}, %M: index, %N: index) {{\n"
        f"  // C = Σₛ W[s] ({config.id}): W is {config.split_k}×M×N of f32, C is M×N of {c};\n"
        f"  // tawa.kernels.gemm_reduce_source, launch grid (⌈M/{bm}⌉, ⌈N/{bn}⌉).\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %c1 = arith.constant 1 : index\n"
        f"  %split_k = arith.constant {config.split_k} : index\n"
        f"  %block_m = arith.constant {bm} : index\n"
        f"  %block_n = arith.constant {bn} : index\n"
        f"  %pid_m = tile.program_id 0\n"
        f"  %pid_n = tile.program_id 1\n"
        f"  %m0 = arith.muli %pid_m, %block_m : index\n"
        f"  %n0 = arith.muli %pid_n, %block_n : index\n"
        f"  %zero = tile.zeros : {acc}\n"
        f"  %acc = scf.for %s = %c0 to %split_k step %c1 iter_args(%acc_i = %zero) -> ({acc}) {{\n"
        f"    %w = tile.load %W[%s, %m0, %n0] : memref<?x?x?xf32> -> {acc}\n"
        f"    %sum = arith.addf %acc_i, %w : {acc}\n"
        f"    scf.yield %sum : {acc}\n"
        f"  }}\n"
        f"{epilogue}"
        f"  func.return\n"
        f"}}\n"
    )


__all__ = [
    "A_LAYOUTS",
    "accumulator_registers",
    "ACTIVATIONS",
    "B_LAYOUTS",
    "block_k_for",
    "BLOCK_M_CHOICES",
    "BLOCK_N_CHOICES",
    "BLOCK_N_STEP",
    "consumer_budget",
    "consumer_registers",
    "counters_shape",
    "element_bytes",
    "Epilogue",
    "gemm_grid",
    "gemm_reduce_source",
    "gemm_source",
    "GemmConfig",
    "NO_EPILOGUE",
    "OUTPUT_TYPES",
    "reduce_chunk",
    "reduce_chunks",
    "reduce_grid",
    "REDUCE_TILE",
    "reduce_tile",
    "ROW_BYTES_CHOICES",
    "SCALES",
    "transposed_problem",
    "unsupported",
    "workspace_shape",
]
