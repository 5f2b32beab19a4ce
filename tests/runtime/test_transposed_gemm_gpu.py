"""Transposed GEMM configurations on a Hopper GPU (`GemmConfig.transposed`:
C = A·Bᵀ computed as Cᵀ = B·Aᵀ, each warp group's bf16 tile transposed in
registers by `movmatrix.trans` and stored by its threads): the movmatrix
semantics the layout `nvgpu.WGMMA_T` is derived from, checked where only the
hardware can; ragged M, N and K, one and two consumer warp groups, bf16 and
fp8 inputs, C poisoned with NaN and a sentinel after it, against a float32
reference; and `tawa.torch.matmul` on the small-M problems whose choice is
transposed.

Run: `pytest -m gpu tests/runtime/test_transposed_gemm_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest
from gemm_poisoned import run_poisoned

from tawa.kernels.gemm import GemmConfig
from tawa.runtime.autotune import Choice, GemmProblem, heuristic

pytestmark = pytest.mark.gpu

CONFIGS = [
    GemmConfig(64, 8, 64, transposed=True),  # columns in wgmma's steps of 8
    GemmConfig(64, 16, 64, transposed=True),
    GemmConfig(128, 136, 64, transposed=True),
    GemmConfig(128, 32, 64, transposed=True),
    GemmConfig(64, 80, 64, transposed=True),
    GemmConfig(128, 160, 64, transposed=True),
    GemmConfig(128, 256, 64, transposed=True),
    GemmConfig(128, 48, 128, "f8E4M3FN", "f8E4M3FN", "bf16", transposed=True),
    GemmConfig(64, 32, 64, "f16", "f16", "f16", transposed=True),
]
SHAPES = [
    (13, 133, 144),  # M below the tile's columns, N past one row tile, K past one step
    (80, 6344, 640),  # many row tiles of B
    (161, 64, 208),  # M over several column tiles
    (1, 300, 16),  # one row of C
    (40, 200, 0),  # K = 0: C = 0
]
"""K a multiple of 16 (fp8 rows of 16 bytes)."""


@pytest.mark.parametrize("M, N, K", SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.id)
def test_transposed_config_poisoned(cuda, seed, config, M, N, K):
    import torch

    run_poisoned(torch, Choice(config), M, N, K, seed)


@pytest.mark.parametrize("M, N, K", [(80, 6344, 6352), (24, 6616, 1952), (16, 4096, 4096), (48, 384, 1232)])
def test_matmul_takes_the_transposed_choice(cuda, seed, M, N, K):
    import torch

    import tawa.torch

    assert heuristic(GemmProblem(M, N, K), split=True).config.transposed
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    w = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
    out = tawa.torch.matmul(a, w.t())
    ref = a.float() @ w.float().t()
    assert out.shape == (M, N) and out.is_contiguous()
    assert ((out.float() - ref).norm() / ref.norm()).item() < 1e-2
