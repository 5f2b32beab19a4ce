"""The GEMM C = A·Bᵀ (examples/gemm.mlir's program, from
`tawa.kernels.gemm_source`) for every operand and output type combination
wgmma has, shared by the CPU tests (tests/transforms/test_dot_dtypes.py) and
the GPU test (tests/runtime/test_dot_dtypes_gpu.py).

Each program steps through K in slices of 128 bytes (one 128B swizzle span:
64 bf16/f16, 128 fp8, 32 f32 elements); the C tile is 128×256, so the grid
is (⌈M/128⌉, ⌈N/256⌉).  C of f32 is the accumulator itself, other C types
are `arith.truncf` of it.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from tawa.kernels.gemm import GemmConfig, block_k_for, gemm_grid, gemm_source

BM, BN = 128, 256
SPAN = 128
"""Bytes of K per loop step."""
BYTES = {"bf16": 2, "f16": 2, "f8E4M3FN": 1, "f8E5M2": 1, "f32": 4}
NUMPY = {
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "f32": np.dtype(np.float32),
}

COMBOS: list[tuple[str, str, str]] = [
    # (A, B, C) element types; the ones examples/ and tests/backend already
    # cover (bf16 and f16 in and out, e4m3 with bf16 out) are left out.
    ("bf16", "bf16", "f32"),
    ("f16", "f16", "f32"),
    ("f8E5M2", "f8E5M2", "bf16"),
    ("f8E5M2", "f8E5M2", "f32"),
    ("f8E4M3FN", "f8E4M3FN", "f32"),
    ("f8E4M3FN", "f8E5M2", "bf16"),
    ("f8E5M2", "f8E4M3FN", "f32"),
    ("f32", "f32", "f32"),
    ("f32", "f32", "bf16"),
]
"""Every combination tile.dot has beyond the shipped examples."""


def combo_id(combo: tuple[str, str, str]) -> str:
    a, b, c = combo
    return f"{a}x{b}-{c}" if a != b else f"{a}-{c}"


def block_k(a: str) -> int:
    return block_k_for(a, SPAN)


def config(a: str, b: str, c: str) -> GemmConfig:
    return GemmConfig(BM, BN, block_k(a), a, b, c)


def gemm_text(a: str, b: str, c: str) -> str:
    """The kernel @gemm(A, B, C, M, N, K) for these element types."""
    return gemm_source(config(a, b, c))


def grid(m: int, n: int) -> tuple[int, ...]:
    return gemm_grid(GemmConfig(BM, BN), m, n)


def random_inputs(rng: np.random.Generator, a: str, b: str, m: int, n: int, k: int) -> tuple[Any, Any]:
    return (
        rng.standard_normal((m, k)).astype(NUMPY[a]),
        rng.standard_normal((n, k)).astype(NUMPY[b]),
    )
