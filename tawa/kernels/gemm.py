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

`unsupported(config)` says why a configuration is outside the space that
`tawa-hopper-pipeline` accepts (docs/passes.md, "Tile shapes"), or None.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import Any

from tawa.diagnostics import TawaError
from tawa.target.hopper import (
    MAX_TMA_BOX_DIM,
    REGISTER_ESTIMATE_ERROR,
    SCALAR_REGS_OVERHEAD,
    SWIZZLES,
    THREADS_PER_GROUP,
    WARPS_PER_GROUP,
    WGMMA_K_BYTES,
    WGMMA_M,
    WGMMA_MAX_N,
    WGMMA_N_STEP,
    WGMMA_OPERAND_TYPES,
    launch_register_cap,
)

OUTPUT_TYPES = ("bf16", "f16", "f32")
"""Element types of C: the f32 accumulator, or it truncated."""
B_LAYOUTS = ("nk", "kn")
A_LAYOUTS = ("mk", "km")
BLOCK_M_CHOICES = tuple(range(WGMMA_M, 4 * WGMMA_M + 1, WGMMA_M))
"""64..256: one consumer warp group per 64 rows, at most 4 (a TMA box dim ≤ 256)."""
BLOCK_N_STEP = 16
"""BLOCK_N in whole 32-byte rows of 16-bit elements: what a K×N B tile's TMA
rows need (wgmma's N itself takes any multiple of 8)."""
BLOCK_N_CHOICES = tuple(range(64, WGMMA_MAX_N + 1, BLOCK_N_STEP))
"""The BLOCK_N values a configuration space offers: every multiple of
`BLOCK_N_STEP` from 64 up to wgmma's widest N, so that a tile can be cut to
the problem (its columns in whole tiles, its tiles in whole waves of SMs).
Narrower tiles (valid, and faster by the cost model on problems of a few
dozen rows) measured slower there: the model's per-instruction cost was
fitted on N ≥ 64 (docs/perf.md, "Tiles of any BLOCK_N")."""
REDUCE_TILE = (128, 128)
"""The split-K reduce program's largest tile: each consumer thread holds
two 64×n f32 fragments (the running sum and the loaded partial), n
registers; at n = 256 that was ~282 with addresses, past the 256 a thread
may keep, and at 256 rows (four consumer warp groups of 112 registers) 128
columns need ~154."""
ROW_BYTES_CHOICES = (64, 128, 256)
"""Bytes of K per step the configuration space offers: slots of 64B-swizzled
rows, one 128B span, two 128B column chunks (32-byte rows, 32B swizzle, are
valid but read K in small steps)."""


ACTIVATIONS = ("gelu_tanh", "silu", "relu")
"""Activations an `Epilogue` applies (None: none)."""
SCALES = ("tensor", "row")
"""How an `Epilogue` scales the product by an operand's dequantization
scales (an fp8 GEMM's): "tensor", one f32 for the whole operand (a
1-element tensor, read by the kernel: no host read); "row", one f32 per row
of the operand (A's M rows: a factor per row of C; the N×K B's N rows: per
column of C)."""
GELU_TANH = (0.7978845608, 0.044715)
"""gelu(x) = x · (½ + ½·tanh(k0 · (x + k1·x³))): k0 = √(2/π), k1."""


@dataclass(frozen=True)
class Epilogue:
    """What the consumers compute from the f32 accumulator before the store:
    activation(acc + bias) + residual, or with `gated`
    activation(acc) · acc₂ + residual (module docstring)."""

    bias: bool = False
    """A bias vector of N elements (C's type) added to every row."""
    activation: str | None = None
    """One of `ACTIVATIONS`, or None."""
    residual: bool = False
    """An M×N tile of C's type added last."""
    gated: bool = False
    """A second B operand: the activation's output times its product."""
    save_pre: bool = False
    """A second output P shaped as C: acc + bias before the activation, in C's
    type; gated, a third, P2: acc₂ (the product the activation's output multiplies)."""
    scale_a: str | None = None
    """A's scales (`SCALES`), which multiply the accumulator first: ScaleA,
    f32, one element or M."""
    scale_b: str | None = None
    """B's scales (`SCALES`): ScaleB, f32, one element or N."""

    def __post_init__(self) -> None:
        for name in ("bias", "residual", "gated", "save_pre"):
            if not isinstance(getattr(self, name), bool):
                raise TawaError(f"{name}={getattr(self, name)!r}: expected a bool", "tawa.kernels.Epilogue")
        for name in ("scale_a", "scale_b"):
            if getattr(self, name) not in (None, *SCALES):
                raise TawaError(f"{name}={getattr(self, name)!r}: expected None or one of {', '.join(SCALES)}",
                                "tawa.kernels.Epilogue")
        if self.gated and (self.scale_a or self.scale_b):
            raise TawaError("a gated epilogue takes no scales (they would scale one product of two)",
                            "tawa.kernels.Epilogue")
        if self.activation is not None and self.activation not in ACTIVATIONS:
            raise TawaError(f"activation={self.activation!r}: expected None or one of {', '.join(ACTIVATIONS)}",
                            "tawa.kernels.Epilogue")
        if self.gated and self.bias:
            raise TawaError("a gated epilogue takes no bias (it would be one per product)", "tawa.kernels.Epilogue")
        if self.save_pre and self.activation is None:  # without one, P would be C less R
            raise TawaError("save_pre needs an activation (P is acc + bias before the activation)",
                            "tawa.kernels.Epilogue")

    @property
    def parts(self) -> tuple[str, ...]:
        """What it does, in order: the scales, gated, bias, save_pre, the
        activation, residual."""
        return tuple(p for p, on in ((f"scale_a_{self.scale_a}", self.scale_a is not None),
                                     (f"scale_b_{self.scale_b}", self.scale_b is not None),
                                     ("gated", self.gated), ("bias", self.bias), ("save_pre", self.save_pre),
                                     (self.activation or "", self.activation is not None),
                                     ("residual", self.residual)) if on)


NO_EPILOGUE = Epilogue()


@dataclass(frozen=True)
class GemmConfig:
    """One GEMM tile program: tile sizes, element types and layout."""

    block_m: int = 128
    block_n: int = 256
    block_k: int = 64
    a_dtype: str = "bf16"
    """Element type of A (MLIR spelling: bf16, f16, f8E4M3FN, f8E5M2, f32 read as tf32)."""
    b_dtype: str = "bf16"
    c_dtype: str = "bf16"
    b_layout: str = "nk"
    """"nk": B is N×K (C = A·Bᵀ); "kn": B is K×N (C = A·B)."""
    batched: bool = False
    split_k: int = 1
    """Slices of K computed by separate programs (1: no split; > 1: the
    last program of each tile adds the others' partials, module docstring)."""
    epilogue: Epilogue = field(default=NO_EPILOGUE)
    """Bias, activation, residual, a second B operand (module docstring)."""
    a_layout: str = "mk"
    """"mk": A is M×K; "km": A is K×M, read transposed in place (C = Aᵀ·B or Aᵀ·Bᵀ)."""
    transposed: bool = False
    """The program computes Cᵀ = B·Aᵀ: its tile's BLOCK_M rows are B's (C's
    columns), its BLOCK_N columns A's (C's rows), and it stores the tile
    transposed (`tile.trans`).  A tile's rows come in wgmma's 64, its
    columns (A's rows, loaded K-major) in wgmma's steps of 8: a small M fits
    the columns (module docstring)."""

    def __post_init__(self) -> None:
        if isinstance(self.epilogue, dict):  # from as_dict (a cache entry, `replace`)
            object.__setattr__(self, "epilogue", Epilogue(**self.epilogue))
        if not isinstance(self.epilogue, Epilogue):
            raise TawaError(f"epilogue={self.epilogue!r}: expected a tawa.kernels.gemm.Epilogue",
                            "tawa.kernels.GemmConfig")
        for name in ("a_dtype", "b_dtype"):
            if getattr(self, name) not in WGMMA_OPERAND_TYPES:
                raise TawaError(f"{name}={getattr(self, name)!r}: expected one of {', '.join(WGMMA_OPERAND_TYPES)}",
                                "tawa.kernels.GemmConfig")
        if self.c_dtype not in OUTPUT_TYPES:
            raise TawaError(f"c_dtype={self.c_dtype!r}: expected one of {', '.join(OUTPUT_TYPES)}",
                            "tawa.kernels.GemmConfig")
        if self.b_layout not in B_LAYOUTS:
            raise TawaError(f"b_layout={self.b_layout!r}: expected 'nk' (B is N×K) or 'kn' (B is K×N)",
                            "tawa.kernels.GemmConfig")
        if self.a_layout not in A_LAYOUTS:
            raise TawaError(f"a_layout={self.a_layout!r}: expected 'mk' (A is M×K) or 'km' (A is K×M)",
                            "tawa.kernels.GemmConfig")
        for name in ("block_m", "block_n", "block_k"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise TawaError(f"{name}={value!r}: expected a positive int", "tawa.kernels.GemmConfig")
        if not isinstance(self.split_k, int) or isinstance(self.split_k, bool):
            raise TawaError(f"split_k={self.split_k!r}: expected an int", "tawa.kernels.GemmConfig")
        if not isinstance(self.transposed, bool):
            raise TawaError(f"transposed={self.transposed!r}: expected a bool", "tawa.kernels.GemmConfig")

    @property
    def kernel(self) -> str:
        """The kernel's function name in `gemm_source(self)`."""
        if self.split_k > 1:
            return "gemm_splitk"
        base = "batched_gemm" if self.batched else "gemm"
        return "_".join((base, *self.epilogue.parts))

    @property
    def reduce_kernel(self) -> str:
        """The function name in `gemm_reduce_source(self)` (split-K only)."""
        return "gemm_splitk_reduce"

    @property
    def tile(self) -> tuple[int, int, int]:
        return (self.block_m, self.block_n, self.block_k)

    @property
    def id(self) -> str:
        """A short name: `128x256x64`, plus what differs from bf16 A·Bᵀ."""
        types = (self.a_dtype, self.b_dtype, self.c_dtype)
        parts = ["x".join(map(str, self.tile))]
        if types != ("bf16",) * 3:
            ab = self.a_dtype if self.a_dtype == self.b_dtype else f"{self.a_dtype}x{self.b_dtype}"
            parts.append(f"{ab}-{self.c_dtype}")
        if self.a_layout == "km":
            parts.append("a_km")
        if self.b_layout == "kn":
            parts.append("b_kn")
        if self.batched:
            parts.append("batched")
        if self.split_k != 1:
            parts.append(f"split{self.split_k}")
        if self.transposed:
            parts.append("t")
        parts.extend(self.epilogue.parts)
        return "-".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def replace(self, **changes: Any) -> GemmConfig:
        return dataclasses.replace(self, **changes)


def element_bytes(dtype: str) -> int:
    return WGMMA_OPERAND_TYPES[dtype].bytes


def block_k_for(dtype: str, row_bytes: int = 128) -> int:
    """BLOCK_K whose A rows span `row_bytes` (128: one 128B swizzle span,
    64 bf16, 128 fp8, 32 f32)."""
    return row_bytes // element_bytes(dtype)


def accumulator_registers(block_n: int) -> int:
    """Registers per thread of one warp group's 64×BLOCK_N f32 accumulator."""
    return WGMMA_M * block_n // THREADS_PER_GROUP


def consumer_registers(config: GemmConfig, group_rows: int = WGMMA_M) -> int:
    """Registers per consumer thread that `tawa-check-resources` estimates
    for `config` where most are live (the epilogue, or the K loop), each
    consumer warp group owning `group_rows` rows of the tile: its
    accumulators (two when gated), the residual tile and the bias vector in
    C's type (16-bit values packed in pairs; a bias of BLOCK_N columns is
    BLOCK_N/4 values a thread, whatever its rows), or, where more, a saved
    pre-activation's rounded tile (`save_pre`: stored while the
    accumulators are live, before the residual is loaded), plus
    `SCALAR_REGS_OVERHEAD`.  The activation's intermediates cost nothing
    more: ptxas computes the elementwise chain element by element
    (tawa/analysis/register_demand.py)."""
    ep = config.epilogue
    acc = accumulator_registers(config.block_n) * (group_rows // WGMMA_M)
    narrow = 2 if config.c_dtype == "f32" else 1  # 32-bit registers per pair of C's values
    residual = acc // 2 * narrow if ep.residual else 0
    bias = config.block_n // 8 * narrow if ep.bias else 0
    pre = acc // 2 * narrow if ep.save_pre else 0
    # B's scales per column of C: a column vector of f32 (as an f32 bias).
    scales = config.block_n // 4 if ep.scale_b == "row" else 0
    return acc * (1 + ep.gated) + max(residual + bias + scales, pre) + SCALAR_REGS_OVERHEAD


def consumer_budget(block_m: int, group_rows: int = WGMMA_M) -> int:
    """The `setmaxnreg` budget of a consumer warp group of a BLOCK_M-row
    tile, each owning `group_rows` rows (one producer warp group;
    `tawa-warp-specialize`'s derived budgets: 256, 232, 160, 112 for one to
    four consumer warp groups)."""
    from tawa.transforms.partition.warp_groups import register_budgets

    warps = block_m // group_rows * WARPS_PER_GROUP
    return register_budgets(None, WARPS_PER_GROUP, warps, None, None)[1]  # type: ignore[arg-type]


def unsupported(config: GemmConfig, group_rows: int = WGMMA_M) -> str | None:
    """Why `tawa-hopper-pipeline` rejects `config`, or None when it compiles
    (docs/passes.md, "Tile shapes"; `tawa-check-resources` is the compiler's
    own word, this is its rule written down, for pruning without compiling);
    `group_rows` are the rows each consumer warp group owns in what it
    compiles (`tawa.runtime.autotune.Choice`)."""
    if config.split_k < 1:
        return f"split_k = {config.split_k}: expected 1 (no split) or more slices of K"
    if config.split_k > 1 and config.epilogue != NO_EPILOGUE:
        return (f"split_k = {config.split_k} with an epilogue ({'-'.join(config.epilogue.parts)}): the epilogue "
                "needs the whole sum over K, which split programs do not have")
    if (config.epilogue.scale_a or config.epilogue.scale_b) and config.batched:
        return "scales with batched: an fp8 GEMM with scales is unbatched for now (one scale vector per operand)"
    if config.split_k > 1 and config.batched:
        return (f"split_k = {config.split_k} with batched: split-K is for unbatched GEMMs only for now "
                "(the third grid axis is the batch)")
    if (why := _transposed_problem(config)) is not None:
        return why
    a, b = WGMMA_OPERAND_TYPES[config.a_dtype], WGMMA_OPERAND_TYPES[config.b_dtype]
    if a.family != b.family:
        return f"wgmma takes no {config.a_dtype} × {config.b_dtype} product (one family: f16, bf16, tf32 or fp8)"
    if config.b_layout == "kn" and not b.mn_major:
        return f"a K×N B of {config.b_dtype} would be read MN-major, which wgmma allows only for 16-bit types"
    if config.a_layout == "km" and not a.mn_major:
        return f"a K×M A of {config.a_dtype} would be read MN-major, which wgmma allows only for 16-bit types"
    if config.block_m not in BLOCK_M_CHOICES:
        return f"BLOCK_M = {config.block_m}: expected one of {', '.join(map(str, BLOCK_M_CHOICES))}"
    if config.block_n % WGMMA_N_STEP or config.block_n > WGMMA_MAX_N:
        return f"BLOCK_N = {config.block_n}: expected a multiple of {WGMMA_N_STEP} up to {WGMMA_MAX_N} (wgmma N)"
    k_bytes = config.block_k * a.bytes
    if k_bytes % WGMMA_K_BYTES or config.block_k > MAX_TMA_BOX_DIM:
        return (f"BLOCK_K = {config.block_k} {config.a_dtype} spans {k_bytes} bytes: expected a multiple of "
                f"{WGMMA_K_BYTES} bytes (one wgmma), at most {MAX_TMA_BOX_DIM} elements (a TMA box)")
    if config.b_layout == "kn" and not any(s and config.block_n * b.bytes % s == 0 for s in SWIZZLES):
        return f"a K×N B tile's rows of BLOCK_N = {config.block_n} {config.b_dtype} are no multiple of 32 bytes"
    if config.block_m % group_rows:
        return f"BLOCK_M = {config.block_m}: not a whole number of warp groups of {group_rows} rows"
    groups = config.block_m // group_rows
    threads = THREADS_PER_GROUP * (1 + groups)
    need = accumulator_registers(config.block_n) * (group_rows // WGMMA_M) + SCALAR_REGS_OVERHEAD
    cap = launch_register_cap(threads)
    if need > cap:
        return (f"{config.block_m}x{config.block_n}: a {group_rows}x{config.block_n}xf32 wgmma needs ~{need} "
                f"registers but a CTA of {threads} threads starts with {cap} (tawa-check-resources)")
    need, budget = consumer_registers(config, group_rows), consumer_budget(config.block_m, group_rows)
    if need - REGISTER_ESTIMATE_ERROR > budget:
        ep = config.epilogue
        what = "two accumulators" if ep.gated else "the accumulator"
        extra = [n for n, on in (("a residual tile", ep.residual), ("a bias", ep.bias)) if on]
        if ep.save_pre and not extra:
            extra = ["a saved pre-activation tile"]
        return (f"{config.block_m}x{config.block_n} ({'-'.join(config.epilogue.parts) or 'no epilogue'}): "
                f"{' and '.join([', '.join([what, *extra[:-1]]), *extra[-1:]])} need ~{need} registers a "
                f"consumer thread but setmaxnreg gives {budget} (tawa-check-resources); use a smaller BLOCK_N")
    return None


def _operand(rows: str, cols: str, dtype: str, batched: bool) -> tuple[str, str]:
    """(memref type, load indices) of an operand."""
    dims = "?x?x?x" if batched else "?x?x"
    index = f"%b, {rows}, {cols}" if batched else f"{rows}, {cols}"
    return f"memref<{dims}{dtype}>", index


def _transposed_problem(config: GemmConfig) -> str | None:
    """Why `config` cannot be generated transposed, or None."""
    if config.transposed and (config.batched or config.epilogue != NO_EPILOGUE
                              or config.a_layout != "mk" or config.b_layout != "nk" or config.c_dtype == "f32"):
        return ("transposed: Cᵀ = B·Aᵀ is generated for an unbatched A·Bᵀ (A M×K, B N×K) without an "
                "epilogue into a bf16 or f16 C (its 16-bit tile is transposed in registers)")
    return None


def _check_generable(config: GemmConfig, where: str) -> None:
    """Configurations the generator cannot write at all (the rest are the
    compiler's to judge)."""
    if (config.split_k < 1 or (config.split_k > 1 and config.batched)
            or _transposed_problem(config)
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
                    store_chunk: str) -> str:
    """The ops after a split program's K loop: it publishes its f32
    accumulator in W at [%s, `row0`, `col0`] (W shaped as the tile's rows
    and columns: S×M×N, or S×N×M for a transposed tile) and arrives at its
    tile's counter (tile `pid_row`·(programs along axis 1) + `pid_col`); the
    last of the S to arrive sums the S partials of W, its own included, in
    slice order (the result does not depend on which program came last), in
    column chunks starting at `col1`, each stored by `store_chunk` (ops on
    the chunk's f32 sum %sum): the accumulator is dead after its store, and
    a chunk's sum and the partial being added fit where it was."""
    chunk = reduce_chunk(config)
    part = f"tensor<{config.block_m}x{chunk}xf32>"
    acc = f"tensor<{config.block_m}x{config.block_n}xf32>"
    return (
        f"  tile.store %acc, %W[%s, {row0}, {col0}] : {acc}, memref<?x?x?xf32>\n"
        f"  %tiles_n = tile.num_programs 1\n"
        f"  %tile_row = arith.muli {pid_row}, %tiles_n : index\n"
        f"  %tile = arith.addi %tile_row, {pid_col} : index\n"
        f"  %arrivals = arith.constant {config.split_k} : index\n"
        f"  %last = tile.counter_arrive %Counters[%tile] count %arrivals : memref<?xi32>\n"
        f"  scf.if %last {{\n"
        f"    %c1 = arith.constant 1 : index\n"
        f"    %split_k = arith.constant {config.split_k} : index\n"
        f"    %chunk = arith.constant {chunk} : index\n"
        f"    scf.for %j = %c0 to %block_n step %chunk {{\n"
        f"      {col1} = arith.addi {col0}, %j : index\n"
        f"      %sum0 = tile.zeros : {part}\n"
        f"      %sum = scf.for %r = %c0 to %split_k step %c1 iter_args(%sum_i = %sum0) -> ({part}) {{\n"
        f"        %partial = tile.load %W[%r, {row0}, {col1}] : memref<?x?x?xf32> -> {part}\n"
        f"        %sum_next = arith.addf %sum_i, %partial : {part}\n"
        f"        scf.yield %sum_next : {part}\n"
        f"      }}\n"
        + "".join("    " + line for line in store_chunk.splitlines(True))
        + "    }\n"
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
        chunk_config = config.replace(block_n=reduce_chunk(config), split_k=1)
        epilogue = _split_epilogue(config, "%m0", "%n0", "%pid_m", "%pid_n", "%n1",
                                   _epilogue(chunk_config, "%sum", "", c_chunk_type, c_chunk_index))
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
                                   store("%sum", reduce_chunk(config), "%m1"))
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
    """Columns of C the last program of a split tile sums at a time: the
    widest of at most half the tile's (at least a wgmma's 8) that divides
    BLOCK_N, so that the chunk's sum and the partial added to it hold no
    more registers than the accumulator did."""
    bn = config.block_n
    top = max(bn // 2 // WGMMA_N_STEP * WGMMA_N_STEP, WGMMA_N_STEP)
    return next(c for c in range(top, 0, -WGMMA_N_STEP) if bn % c == 0)


def reduce_tile(config: GemmConfig) -> tuple[int, int]:
    """The tile of the reduce program of a split `config`: the GEMM's tile,
    cut to at most `REDUCE_TILE`."""
    return min(config.block_m, REDUCE_TILE[0]), min(config.block_n, REDUCE_TILE[1])


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


def gemm_grid(config: GemmConfig, M: int, N: int, batch: int | None = None) -> tuple[int, ...]:
    """The launch grid of `gemm_source(config)`: (⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉)
    ((⌈N/BLOCK_M⌉, ⌈M/BLOCK_N⌉) when transposed), and the batch for a
    batched GEMM, or split_k for a split one."""
    grid = (-(-N // config.block_m), -(-M // config.block_n)) if config.transposed else (
        -(-M // config.block_m), -(-N // config.block_n))
    if config.split_k > 1:
        return (*grid, config.split_k)
    if config.batched:
        if batch is None:
            raise TawaError("a batched GEMM's grid needs the batch size", "tawa.kernels.gemm_grid")
        return (*grid, batch)
    return grid


def reduce_grid(config: GemmConfig, M: int, N: int) -> tuple[int, int]:
    """The launch grid of `gemm_reduce_source(config)`: (⌈M/bm⌉, ⌈N/bn⌉)
    for its tile (bm, bn) = `reduce_tile(config)`."""
    bm, bn = reduce_tile(config)
    return (-(-M // bm), -(-N // bn))


def workspace_shape(config: GemmConfig, M: int, N: int) -> tuple[int, int, int]:
    """The split program's workspace W: (split_k, M, N) f32, (split_k, N, M)
    when transposed (the partials of Cᵀ)."""
    return (config.split_k, N, M) if config.transposed else (config.split_k, M, N)


def counters_shape(config: GemmConfig, M: int, N: int) -> tuple[int]:
    """The split program's tile counters: one i32 per tile of C."""
    rows, cols = gemm_grid(config, M, N)[:2]
    return (rows * cols,)


__all__ = [
    "BLOCK_M_CHOICES",
    "BLOCK_N_CHOICES",
    "GemmConfig",
    "accumulator_registers",
    "block_k_for",
    "counters_shape",
    "gemm_grid",
    "gemm_reduce_source",
    "gemm_source",
    "reduce_chunk",
    "reduce_grid",
    "reduce_tile",
    "unsupported",
    "workspace_shape",
]
