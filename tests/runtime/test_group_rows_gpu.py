"""Generated GEMMs whose consumer warp groups own 128 rows, on a Hopper GPU
(`Choice(config, group_rows=128)`: one wgmma per 64-row block and k-step;
what `tawa.runtime.autotune.WIDE_SPACE` tries): the cooperative 256x128
tile on two warp groups and a 128x128 tile on one; bf16, fp8, f16 → f32 C, B as K×N, batched and split-K, on
ragged shapes, one program, program counts around the SM count, K-tile
counts around the ring depth and K = 0, with C poisoned with NaN and a
sentinel after it, against a float32 reference; and bit for bit against the
same tile computed by 64-row warp groups.

Run: `pytest -m gpu tests/runtime/test_group_rows_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest
from gemm_poisoned import run_poisoned

from tawa.kernels.gemm import GemmConfig
from tawa.runtime.autotune import Choice

pytestmark = pytest.mark.gpu

CHOICES = [
    Choice(GemmConfig(256, 128, 64), group_rows=128),
    Choice(GemmConfig(256, 128, 64), group_rows=128, persistent=False),
    Choice(GemmConfig(256, 128, 128, "f8E4M3FN", "f8E4M3FN", "bf16"), group_rows=128),
    Choice(GemmConfig(256, 128, 64, "f16", "f16", "f32"), group_rows=128),
    Choice(GemmConfig(256, 128, 64, b_layout="kn"), group_rows=128),
    Choice(GemmConfig(256, 128, 64, batched=True), group_rows=128),
    Choice(GemmConfig(256, 128, 64, split_k=2), group_rows=128),
    Choice(GemmConfig(128, 128, 64), group_rows=128),
]
SHAPES = [
    (384, 304, 192),
    (200, 136, 208),  # ragged M and N, K not a multiple of BLOCK_K
    (40, 8, 16),  # one program
    (256 * 7 + 8, 128 * 3 + 8, 64 * 13 + 16),  # the ring wraps
    (128 * 133, 128, 64 * 3),  # 133 (or 67) programs on 132 CTAs
    (130, 264, 0),  # K = 0: C = 0
]
"""K a multiple of 16 (fp8 rows of 16 bytes)."""


@pytest.mark.parametrize("M, N, K", SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: c.id)
def test_group_rows_choice_poisoned(cuda, seed, choice, M, N, K):
    import torch

    run_poisoned(torch, choice, M, N, K, seed)


@pytest.mark.parametrize("k_steps", [1, 3, 4, 5, 9])  # around the ring depth of 4
def test_k_steps_around_the_ring_match_64_row_warp_groups(cuda, seed, k_steps):
    """The same 256x128 tile on two warp groups of 128 rows and on four of
    64 (f32 accumulation in the same order per element): equal bit for bit."""
    import torch

    config = GemmConfig(256, 128, 64)
    M, N, K = 256 * 5 + 8, 128 * 3, k_steps * config.block_k
    wide = Choice(config, stages=4, group_rows=128)
    A, B, C = run_poisoned(torch, wide, M, N, K, seed)
    narrow = Choice(config, stages=4)
    other = C.clone().fill_(float("nan"))
    narrow.compile()(A, B, other, M, N, K, grid=narrow.grid(M, N))
    torch.cuda.synchronize()
    assert torch.equal(other, C), "128-row warp groups differ from 64-row ones"
