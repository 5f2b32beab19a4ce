"""Transposed GEMM configurations (`GemmConfig.transposed`: C = A·Bᵀ computed
as Cᵀ = B·Aᵀ, the tile stored through `nvgpu.frag_transpose`) on the CTA
simulator, which moves each packed register among the lanes of its warp as
`movmatrix.trans` does: against NumPy on ragged shapes (M not a multiple of
the tile's columns, N not of its rows, K not of BLOCK_K), C poisoned with
NaN so that an element no CTA writes shows, one and two consumer warp
groups, under two schedules."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from example_cases import BF16, lowered_gemm
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.dialects import nvgpu
from tawa.interpreters.schedule import Schedule
from tawa.kernels.gemm import GemmConfig, gemm_grid, gemm_source


@cache
def lowered(block_m: int, block_n: int) -> ModuleOp:
    return lowered_gemm(gemm_source(GemmConfig(block_m, block_n, 64, transposed=True), "gemm"))


@pytest.mark.parametrize("block_m, block_n, m, n, k", [
    (64, 16, 13, 133, 130), (128, 32, 29, 261, 64), (64, 80, 161, 64, 200),
    (64, 8, 5, 70, 64), (64, 24, 20, 130, 96),  # columns in steps of wgmma's 8
])
@pytest.mark.parametrize("policy", ["producer-first", "random"])
def test_transposed_gemm_matches_numpy(block_m, block_n, m, n, k, policy):
    module = lowered(block_m, block_n)
    assert any(isinstance(o, nvgpu.FragmentTransposeOp) for o in module.walk())
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(BF16)
    b = rng.standard_normal((n, k)).astype(BF16)
    c = np.full((m, n), np.nan, BF16)
    config = GemmConfig(block_m, block_n, 64, transposed=True)
    tawa.interpret(module, "gemm", gemm_grid(config, m, n), a, b, c, m, n, k,
                   schedule=Schedule(policy, seed=5), ctas=3)
    got, ref = c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32).T
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written"
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-2  # bf16 rounding of C: about 2e-3


def test_the_tile_program_matches_numpy():
    """The tile program itself (tile.trans before the store), in the tile interpreter."""
    config = GemmConfig(64, 48, 64, transposed=True)
    m, n, k = 37, 100, 70
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(BF16)
    b = rng.standard_normal((n, k)).astype(BF16)
    c = np.full((m, n), np.nan, BF16)
    tawa.interpret(tawa.parse(gemm_source(config), "t.mlir"), "gemm", gemm_grid(config, m, n), a, b, c, m, n, k)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    assert np.linalg.norm(c.astype(np.float32) - ref) / np.linalg.norm(ref) < 1e-2
