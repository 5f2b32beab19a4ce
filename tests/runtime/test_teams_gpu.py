"""Generated GEMMs with two teams of consumers on a Hopper GPU
(`Choice(config, teams=2)`: ping-pong, each team one warp group of 64-row
programs taking turns over the programs of its CTA; what
`tawa.runtime.autotune.WIDE_SPACE` tries): bf16, fp8, f16 → f32 C, B as K×N,
batched and split-K, on ragged shapes, one program, program counts that
leave the two teams of a CTA an equal or unequal share, K-tile counts around
the ring depth and K = 0, with C poisoned with NaN and a sentinel after it,
against a float32 reference; and bit for bit against one team (the same
programs one after another), twice.

Run: `pytest -m gpu tests/runtime/test_teams_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest
from gemm_poisoned import run_poisoned

from tawa.kernels.gemm import GemmConfig
from tawa.runtime.autotune import Choice

pytestmark = pytest.mark.gpu

CONFIGS = [
    GemmConfig(64, 256, 64),
    GemmConfig(64, 256, 128, "f8E4M3FN", "f8E4M3FN", "bf16"),
    GemmConfig(64, 128, 64, "f16", "f16", "f32"),
    GemmConfig(64, 128, 64, b_layout="kn"),
    GemmConfig(64, 256, 64, batched=True),
    GemmConfig(64, 256, 64, split_k=2),
]
SHAPES = [
    (384, 304, 192),  # 6 x 2 programs
    (200, 136, 208),  # ragged M and N, K not a multiple of BLOCK_K
    (40, 8, 16),  # one program: team 1 only hands over and skips
    (64 * 7 + 8, 256 * 3 + 8, 64 * 13 + 16),  # 32 programs, the ring wraps
    (64 * 133, 256, 64 * 3),  # 133 programs on 132 CTAs: one CTA runs 2, one per team
    (64 * 265 + 8, 512, 64 * 8),  # 532 programs: 4 or 5 per CTA, the teams' shares equal or not
    (130, 264, 0),  # K = 0: C = 0
]
"""K a multiple of 16 (fp8 rows of 16 bytes)."""


@pytest.mark.parametrize("M, N, K", SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.id)
def test_teams_config_poisoned(cuda, seed, config, M, N, K):
    import torch

    run_poisoned(torch, Choice(config, teams=2), M, N, K, seed)


@pytest.mark.parametrize("k_steps", [1, 3, 4, 5, 9])  # around the ring depth of 4
@pytest.mark.parametrize("M", [64 * 264, 64 * 265])  # 2 programs per CTA (one per team), or 2 and some 3
def test_teams_k_steps_around_the_ring_match_one_team(cuda, seed, k_steps, M):
    import torch

    config = GemmConfig(64, 256, 64)
    teams = Choice(config, stages=4, teams=2)
    A, B, C = run_poisoned(torch, teams, M, 256, k_steps * config.block_k, seed)
    one = Choice(config, stages=4)
    alone = C.clone().fill_(float("nan"))
    K = k_steps * config.block_k
    one.compile()(A, B, alone, M, 256, K, grid=one.grid(M, 256))
    again = C.clone().fill_(float("nan"))
    teams.compile()(A, B, again, M, 256, K, grid=teams.grid(M, 256))
    torch.cuda.synchronize()
    assert torch.equal(alone, C), "two teams differ from one"
    assert torch.equal(again, C), "two runs on the same inputs differ"
