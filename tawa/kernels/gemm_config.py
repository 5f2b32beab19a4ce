"""GEMM configurations: what a GEMM tile program is (`GemmConfig`, its
`Epilogue`), whether `tawa-hopper-pipeline` accepts it (`unsupported`), and
how it is launched (`gemm_grid`, a split program's `workspace_shape` and
`counters_shape`).  `tawa.kernels.gemm` writes the program of a
configuration (and re-exports these names).

    config = GemmConfig(block_m=128, block_n=128, block_k=64)
    unsupported(config)                        # None: it compiles
    gemm_grid(config, M, N)                    # (⌈M/128⌉, ⌈N/128⌉)

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
    if (why := transposed_problem(config)) is not None:
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


def transposed_problem(config: GemmConfig) -> str | None:
    """Why `config` cannot be generated transposed, or None."""
    if config.transposed and (config.batched or config.epilogue != NO_EPILOGUE
                              or config.a_layout != "mk" or config.b_layout != "nk" or config.c_dtype == "f32"):
        return ("transposed: Cᵀ = B·Aᵀ is generated for an unbatched A·Bᵀ (A M×K, B N×K) without an "
                "epilogue into a bf16 or f16 C (its 16-bit tile is transposed in registers)")
    return None


def reduce_tile(config: GemmConfig) -> tuple[int, int]:
    """The tile of the reduce program of a split `config`: the GEMM's tile,
    cut to at most `REDUCE_TILE`."""
    return min(config.block_m, REDUCE_TILE[0]), min(config.block_n, REDUCE_TILE[1])


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
    "ACTIVATIONS",
    "A_LAYOUTS",
    "BLOCK_M_CHOICES",
    "BLOCK_N_CHOICES",
    "BLOCK_N_STEP",
    "B_LAYOUTS",
    "Epilogue",
    "GemmConfig",
    "NO_EPILOGUE",
    "OUTPUT_TYPES",
    "REDUCE_TILE",
    "ROW_BYTES_CHOICES",
    "SCALES",
    "accumulator_registers",
    "block_k_for",
    "consumer_budget",
    "consumer_registers",
    "counters_shape",
    "element_bytes",
    "gemm_grid",
    "reduce_grid",
    "reduce_tile",
    "transposed_problem",
    "unsupported",
    "workspace_shape",
]
