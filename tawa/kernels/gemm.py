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
* `batched`: A, B and C gain a leading batch dimension, the batch is the
  third grid axis (`examples/batched_gemm.mlir`).
* A C of f32 is the accumulator itself; bf16 and f16 are `arith.truncf` of it.

`unsupported(config)` says why a configuration is outside the space that
`tawa-hopper-pipeline` accepts (docs/passes.md, "Tile shapes"), or None.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tawa.diagnostics import TawaError
from tawa.target.hopper import (
    MAX_TMA_BOX_DIM,
    SCALAR_REGS_OVERHEAD,
    SWIZZLES,
    THREADS_PER_GROUP,
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
BLOCK_M_CHOICES = tuple(range(WGMMA_M, 4 * WGMMA_M + 1, WGMMA_M))
"""64..256: one consumer warp group per 64 rows, at most 4 (a TMA box dim ≤ 256)."""
BLOCK_N_CHOICES = (64, 96, 128, 192, 256)
"""The BLOCK_N values of docs/passes.md's table (any multiple of 8 up to 256 is valid)."""
ROW_BYTES_CHOICES = (64, 128, 256)
"""Bytes of K per step the configuration space offers: slots of 64B-swizzled
rows, one 128B span, two 128B column chunks (32-byte rows, 32B swizzle, are
valid but read K in small steps)."""


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

    def __post_init__(self) -> None:
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
        for name in ("block_m", "block_n", "block_k"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise TawaError(f"{name}={value!r}: expected a positive int", "tawa.kernels.GemmConfig")

    @property
    def kernel(self) -> str:
        """The kernel's function name in `gemm_source(self)`."""
        return "batched_gemm" if self.batched else "gemm"

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
        if self.b_layout == "kn":
            parts.append("b_kn")
        if self.batched:
            parts.append("batched")
        return "-".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def replace(self, **changes: Any) -> GemmConfig:
        return GemmConfig(**{**asdict(self), **changes})


def element_bytes(dtype: str) -> int:
    return WGMMA_OPERAND_TYPES[dtype].bytes


def block_k_for(dtype: str, row_bytes: int = 128) -> int:
    """BLOCK_K whose A rows span `row_bytes` (128: one 128B swizzle span,
    64 bf16, 128 fp8, 32 f32)."""
    return row_bytes // element_bytes(dtype)


def accumulator_registers(block_n: int) -> int:
    """Registers per thread of one warp group's 64×BLOCK_N f32 accumulator."""
    return WGMMA_M * block_n // THREADS_PER_GROUP


def unsupported(config: GemmConfig) -> str | None:
    """Why `tawa-hopper-pipeline` rejects `config`, or None when it compiles
    (docs/passes.md, "Tile shapes"; `tawa-check-resources` is the compiler's
    own word, this is its rule written down, for pruning without compiling)."""
    a, b = WGMMA_OPERAND_TYPES[config.a_dtype], WGMMA_OPERAND_TYPES[config.b_dtype]
    if a.family != b.family:
        return f"wgmma takes no {config.a_dtype} × {config.b_dtype} product (one family: f16, bf16, tf32 or fp8)"
    if config.b_layout == "kn" and not b.mn_major:
        return f"a K×N B of {config.b_dtype} would be read MN-major, which wgmma allows only for 16-bit types"
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
    groups = config.block_m // WGMMA_M
    threads = THREADS_PER_GROUP * (1 + groups)
    need = accumulator_registers(config.block_n) + SCALAR_REGS_OVERHEAD
    cap = launch_register_cap(threads)
    if need > cap:
        return (f"{config.block_m}x{config.block_n}: a 64x{config.block_n}xf32 wgmma needs ~{need} registers "
                f"but a CTA of {threads} threads starts with {cap} (tawa-check-resources)")
    return None


def _operand(rows: str, cols: str, dtype: str, batched: bool) -> tuple[str, str]:
    """(memref type, load indices) of an operand."""
    dims = "?x?x?x" if batched else "?x?x"
    index = f"%b, {rows}, {cols}" if batched else f"{rows}, {cols}"
    return f"memref<{dims}{dtype}>", index


def gemm_source(config: GemmConfig, name: str | None = None) -> str:
    """The tile program of `config`: kernel `@gemm` (`@batched_gemm` when
    batched; `name` renames it) with arguments (A, B, C, M, N, K)."""
    bm, bn, bk = config.tile
    a, b, c = config.a_dtype, config.b_dtype, config.c_dtype
    batched, kn = config.batched, config.b_layout == "kn"
    name = name or config.kernel
    a_type, a_index = _operand("%m0", "%k", a, batched)
    b_type, b_index = _operand("%k" if kn else "%n0", "%n0" if kn else "%k", b, batched)
    c_type, c_index = _operand("%m0", "%n0", c, batched)
    acc = f"tensor<{bm}x{bn}xf32>"
    a_tile = f"tensor<{bm}x{bk}x{a}>"
    b_tile = f"tensor<{bk}x{bn}x{b}>" if kn else f"tensor<{bn}x{bk}x{b}>"
    transposed = "" if kn else " {rhs_transposed}"
    b_form = "K×N" if kn else "N×K"
    if c == "f32":
        epilogue = f"  tile.store %acc, %C[{c_index}] : {acc}, {c_type}\n"
    else:
        epilogue = (f"  %c = arith.truncf %acc : {acc} to tensor<{bm}x{bn}x{c}>\n"
                    f"  tile.store %c, %C[{c_index}] : tensor<{bm}x{bn}x{c}>, {c_type}\n")
    batch = "  %b = tile.program_id 2\n" if batched else ""
    grid = f"(⌈M/{bm}⌉, ⌈N/{bn}⌉{', batch' if batched else ''})"
    # The function starts on line 1 (errors located at the kernel say 1:1).
    return (
        f"func.func @{name}(%A: {a_type}, %B: {b_type}, %C: {c_type},\n"
        f"    %M: index, %N: index, %K: index) {{\n"
        f"  // C = A · B{'' if kn else 'ᵀ'} ({config.id}): A is {'batch×' * batched}M×K of {a}, "
        f"B is {'batch×' * batched}{b_form} of {b},\n"
        f"  // C is {'batch×' * batched}M×N of {c}; tawa.kernels.gemm_source, launch grid {grid}.\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %block_k = arith.constant {bk} : index\n"
        f"  %block_m = arith.constant {bm} : index\n"
        f"  %block_n = arith.constant {bn} : index\n"
        f"  %pid_m = tile.program_id 0\n"
        f"  %pid_n = tile.program_id 1\n"
        f"{batch}"
        f"  %m0 = arith.muli %pid_m, %block_m : index\n"
        f"  %n0 = arith.muli %pid_n, %block_n : index\n"
        f"  %zero = tile.zeros : {acc}\n"
        f"  %acc = scf.for %k = %c0 to %K step %block_k iter_args(%acc_i = %zero) -> ({acc}) {{\n"
        f"    %a = tile.load %A[{a_index}] : {a_type} -> {a_tile}\n"
        f"    %bt = tile.load %B[{b_index}] : {b_type} -> {b_tile}\n"
        f"    %d = tile.dot %a, %bt, %acc_i{transposed} : {a_tile}, {b_tile} -> {acc}\n"
        f"    scf.yield %d : {acc}\n"
        f"  }}\n"
        f"{epilogue}"
        f"  func.return\n"
        f"}}\n"
    )


def gemm_grid(config: GemmConfig, M: int, N: int, batch: int | None = None) -> tuple[int, ...]:
    """The launch grid: (⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉), and the batch for a batched GEMM."""
    grid = (-(-M // config.block_m), -(-N // config.block_n))
    if config.batched:
        if batch is None:
            raise TawaError("a batched GEMM's grid needs the batch size", "tawa.kernels.gemm_grid")
        return (*grid, batch)
    return grid


__all__ = [
    "BLOCK_M_CHOICES",
    "BLOCK_N_CHOICES",
    "GemmConfig",
    "accumulator_registers",
    "block_k_for",
    "gemm_grid",
    "gemm_source",
    "unsupported",
]
