"""Stream-K GEMMs on a Hopper GPU (`GemmConfig.stream_k`, `tawa.kernels.streamk`):
one program per SM, the last waves' K-steps shared, the last contributor of a
shared tile adding the partials.

* stream-K configurations (bf16, f16 → f32 C, B K×N, fp8) on shapes of
  under one wave, one to two waves, several waves (data-parallel then
  shared), ragged M, N and K, K = 0, and C rows a tensor map cannot hold
  (the thread-epilogue twin), with C and the workspace poisoned with NaN
  and a sentinel after C, against a float32 reference; the counters back
  at 0 after each launch (`tests/runtime/test_splitk_gpu.py`'s check);
* a stream-K choice through `tawa.torch.matmul` eagerly and replayed from
  a CUDA graph (bitwise the eager result).

Run: `pytest -m gpu tests/runtime/test_streamk_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest

from tawa.kernels.gemm import GemmConfig
from tests.runtime.test_splitk_gpu import run_poisoned

pytestmark = pytest.mark.gpu

CONFIGS = [
    GemmConfig(128, 256, 64, stream_k=True),
    GemmConfig(128, 128, 64, stream_k=True),
    GemmConfig(64, 128, 64, stream_k=True),
    GemmConfig(128, 128, 64, "f16", "f16", "f32", stream_k=True),
    GemmConfig(128, 128, 64, b_layout="kn", stream_k=True),
    GemmConfig(128, 256, 128, "f8E4M3FN", "f8E4M3FN", "bf16", stream_k=True),
]
SHAPES = [
    (100, 1000, 1008),  # under a wave: ranges inside tiles
    (3072, 3072, 3072),  # 2.2 waves of 128x256 tiles
    (1440, 520, 7424),  # 0.9 waves of 128x128, long K
    (4100, 4100, 1040),  # several waves: data-parallel, then shared; ragged M and N
    (67, 130, 528),  # C rows of 260 bytes: the thread-epilogue twin
    (65, 72, 0),  # K = 0: C = 0
]
"""K a multiple of 16 (fp8 rows of 16 bytes)."""


@pytest.mark.parametrize("M, N, K", SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.id)
def test_streamk_gemm_poisoned(cuda, seed, config, M, N, K):
    import torch

    if config.b_layout == "kn" and N % 8:
        pytest.skip("a K×N B needs 16-byte rows (N a multiple of 8)")
    run_poisoned(torch, config, M, N, K, seed)
