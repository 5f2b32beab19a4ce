"""The cost model's choices run on a Hopper GPU (tawa.analysis.gemm_cost,
`tawa.runtime.autotune.heuristic`): for ragged shapes whose choices span
the default space's tiles (128x256, 256x128 on 128-row warp groups,
128x192, 192x128, 128x128, 64x128, 64x64) and its splits of K, and for
shapes drawn as `bench gemm --random` draws them from the test's seed, bf16
and fp8, the heuristic's choice (unsplit, and with `split=True`) with the
device's parameters, and tiles of BLOCK_N cut to any multiple of 16 (also
of 192 rows, and in 2-CTA clusters), compiled and run on fresh
inputs with C (and a split's workspace) poisoned with NaN
and a sentinel after it, against a float32 reference (relative error ≤
1e-2).

Run: `pytest -m gpu tests/runtime/test_cost_model_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest
from gemm_poisoned import run_poisoned

from tawa.kernels.gemm import block_k_for
from tawa.runtime.autotune import Choice, GemmProblem, heuristic, machine_parameters

pytestmark = pytest.mark.gpu

SHAPES = (
    (1000, 1000, 1000),  # 64x128
    (3000, 3000, 520),  # 128x192
    (333, 1104, 2000),  # 64x64
    (6500, 600, 528),  # 256x128, two 128-row warp groups
    (12300, 2512, 512),  # 128x256 (bf16), 192x128 (fp8)
    (130, 13904, 1584),  # 192x128: one row of tiles over 130 rows
    (3064, 448, 816),  # 128x128
    (900, 4864, 4096),  # 128x192 (fp8)
    (400, 2808, 4088),  # split in 2 when asked (bf16)
    (64, 24, 4096),  # a tile wider than N; split in 8 when asked
    (100, 100, 30000),  # one program; split in 16 when asked
    (7, 304, 72),  # M far below a tile, K one step and a bit
)
"""M×N×K, ragged; N and K multiples of 8 (16-byte rows of bf16), the
heuristic's choice for bf16 noted."""
OPERANDS = {"bf16": "bf16", "fp8": "f8E4M3FN"}


def sms() -> int:
    import torch

    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def run_choices(M: int, N: int, K: int, dtype: str, seed: int) -> list[str]:
    """Runs the heuristic's choices (unsplit and split) for M×N×K; their ids."""
    import torch

    t = OPERANDS[dtype]
    problem = GemmProblem(M, N, K, t, t, "bf16")
    ran = []
    for split in (False, True):
        choice = heuristic(problem, sms(), split=split, params=machine_parameters())  # as tawa.torch chooses
        if choice.id in ran:
            continue
        run_poisoned(torch, choice, M, N, K, seed)
        ran.append(choice.id)
    return ran


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_models_choice_on_ragged_shapes(cuda, seed, dtype, shape):
    M, N, K = shape
    if dtype == "fp8" and (N % 16 or K % 16):
        pytest.skip("fp8 rows of N or K bytes must be 16-byte multiples (TMA strides)")
    print(run_choices(M, N, K, dtype, seed))


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_the_models_choice_on_random_shapes(cuda, seed, dtype):
    """Six shapes drawn with the test's seed over the benchmark's ranges."""
    from tawa.bench.gemm import random_shapes

    for M, N, K in random_shapes(6, seed, 16 if dtype == "fp8" else 8):
        print(M, N, K, run_choices(M, N, K, dtype, seed))


@pytest.mark.parametrize("tile", [(64, 16), (64, 48), (128, 48), (128, 80), (128, 112), (128, 144), (128, 176),
                                  (128, 208), (128, 240), (192, 64), (192, 144), (192, 192)],
                         ids=lambda t: f"{t[0]}x{t[1]}")
@pytest.mark.parametrize("dtype, b_layout", [("bf16", "nk"), ("bf16", "kn"), ("fp8", "nk")])
def test_tiles_of_any_block_n(cuda, seed, tile, dtype, b_layout):
    """BLOCK_N of any multiple of 16 (the default space's columns cut to the problem), on one, two
    and three warp groups of 64 rows: ragged
    M and N (a partial last tile of columns), K a few ring turns and a bit."""
    import torch

    t = OPERANDS[dtype]
    problem = GemmProblem(333, 1000, 1040, t, t, "bf16", b_layout)
    run_poisoned(torch, Choice(problem.config(*tile, block_k_for(t))), 333, 1000, 1040, seed)


@pytest.mark.parametrize("tile", [(192, 144), (192, 176), (128, 208)], ids=lambda t: f"{t[0]}x{t[1]}")
def test_tiles_in_two_cta_clusters(cuda, seed, tile):
    """The clustered tiles the H200's parameters choose for small-M problems with long rows (B
    multicast to two CTAs): an odd number of row tiles (the CTA past the last row runs it again)."""
    import torch

    problem = GemmProblem(368, 1000, 1048)
    run_poisoned(torch, Choice(problem.config(*tile, 64), cluster=2), 368, 1000, 1048, seed)
