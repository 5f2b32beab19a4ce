"""Generated GEMMs in 2-CTA clusters on a Hopper GPU (`Choice(config,
cluster=2)`, what `tawa.runtime.autotune.WIDE_SPACE` tries): bf16, fp8,
f16 → f32 C, 64-row tiles, batched and split-K, on ragged shapes with an odd
number of row tiles (the last cluster's second CTA repeats the last row
tile), K-tile counts around the ring depth and K = 0, with C poisoned with
NaN and a sentinel after it, against a float32 reference; a B layout the
CTAs cannot share is a one-line compile error, which autotuning skips.

Run: `pytest -m gpu tests/runtime/test_cluster_configs_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest
from gemm_poisoned import run_poisoned

from tawa.diagnostics import TawaError
from tawa.kernels.gemm import GemmConfig
from tawa.runtime.autotune import Choice, GemmProblem, Space, autotune

pytestmark = pytest.mark.gpu

CONFIGS = [
    GemmConfig(128, 256, 64),
    GemmConfig(128, 256, 128, "f8E4M3FN", "f8E4M3FN", "bf16"),
    GemmConfig(128, 128, 64, "f16", "f16", "f32"),
    GemmConfig(64, 256, 64),
    GemmConfig(128, 256, 64, batched=True),
    GemmConfig(128, 256, 64, split_k=2),
]
SHAPES = [
    (384, 304, 192),  # 3 row tiles of 128 (odd), ragged N
    (200, 136, 208),  # ragged M and N, K not a multiple of BLOCK_K
    (100, 8, 16),  # one row tile: both CTAs of the one cluster run it
    (128 * 7 + 8, 256 * 3 + 8, 64 * 13 + 16),  # 8 row tiles, the ring wraps
    (130, 264, 0),  # K = 0: C = 0
]
"""K a multiple of 16 (fp8 rows of 16 bytes)."""


@pytest.mark.parametrize("M, N, K", SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.id)
def test_clustered_config_poisoned(cuda, seed, config, M, N, K):
    import torch

    run_poisoned(torch, Choice(config, cluster=2), M, N, K, seed)


@pytest.mark.parametrize("k_steps", [1, 4, 5, 9])  # around the ring depth of 4
def test_clustered_config_k_steps_around_the_ring(cuda, seed, k_steps):
    import torch

    config = GemmConfig(128, 256, 128, "f8E4M3FN", "f8E4M3FN", "bf16")
    run_poisoned(torch, Choice(config, cluster=2), 640, 512, k_steps * config.block_k, seed)


def test_a_b_tile_the_ctas_cannot_share_is_a_compile_error(cuda):
    """B as K×N: its tile's rows run along K, and the CTAs of a cluster
    (neighbouring row tiles) do not share them in bands; one line."""
    with pytest.raises(TawaError, match="tawa-cluster: @gemm loads no tile that the CTAs of a cluster share"):
        Choice(GemmConfig(128, 128, 64, b_layout="kn"), cluster=2).compile()


def test_autotuning_with_clusters_picks_a_working_kernel(cuda, seed, tmp_path, monkeypatch):
    """A space with cluster (1, 2): clustered candidates are built and timed
    (the K×N one skipped), and the winner computes the right C."""
    import torch

    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    problem = GemmProblem(1024, 1024, 1024)
    space = Space(tiles=((128, 256), (128, 128)), split_k=(1,), cluster=(1, 2))
    timed = []
    choice = autotune(problem, space=space, log=timed.append)
    assert any("cluster=2" in line and " ms" in line for line in timed), timed
    kernel = choice.compile()
    A = torch.randn(1024, 1024, device="cuda").bfloat16()
    B = torch.randn(1024, 1024, device="cuda").bfloat16()
    C = torch.full((1024, 1024), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel(A, B, C, 1024, 1024, 1024, grid=choice.grid(1024, 1024))
    torch.cuda.synchronize()
    ref = A.float() @ B.float().T
    assert ((C.float() - ref).norm() / ref.norm()).item() <= 1e-2
