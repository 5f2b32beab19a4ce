"""The TMA-store epilogue on a Hopper GPU (docs/passes.md, "The TMA-store
epilogue"): `epilogue="tma"`, with the full staging tile (3 ring stages)
and with the subtiled staging (two 128x64 buffers, 4 ring stages), against
`epilogue="threads"` on the same inputs, and the launch-time error for a C
a tensor map cannot describe.

Both epilogues store the same converted accumulators, so their outputs are
compared bit for bit (and against a float32 reference); C is poisoned with
NaN and followed by sentinels, so an element not written or written past
C's end shows.  Shapes: ragged in every dimension, smaller than one tile,
K = 0, K-tile counts around both ring depths, and enough tiles (512) that
every persistent CTA reuses its staging buffers for several programs.

Run: `pytest -m gpu tests/runtime/test_epilogue_tma_gpu.py` on an H100.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import tawa
from tawa.runtime import ArgumentError

pytestmark = pytest.mark.gpu

GEMM = (Path(__file__).resolve().parents[2] / "examples" / "gemm.mlir").read_text()
BM, BN = 128, 256
STAGES = {"full": 3, "subtiled": 4}  # the deepest ring that fits beside the staging buffers
TOL = 1e-2


def kernel(epilogue: str, staging: str = "full") -> tawa.Kernel:
    return tawa.compile(GEMM, "gemm", stages=STAGES[staging], epilogue=epilogue, staging=staging)


def run(k: tawa.Kernel, A, B, M: int, N: int, K: int, guard: int = 4096):
    import torch

    storage = torch.full((M * N + guard,), float("nan"), dtype=torch.bfloat16, device="cuda")
    storage[M * N:] = 7.0
    C = storage[: M * N].view(M, N)
    k(A, B, C, M, N, K, grid=(math.ceil(M / BM), math.ceil(N / BN)))
    torch.cuda.synchronize()
    assert bool((storage[M * N:] == 7.0).all()), f"written past the end of C ({M}x{N}x{K})"
    assert int(torch.isnan(C).sum()) == 0, f"elements of C not written ({M}x{N}x{K})"
    return C


@pytest.mark.parametrize(
    ("M", "N", "K"),
    [
        (200, 136, 200),  # nothing is a multiple of the tile
        (64, 8, 8),  # smaller than one tile in every dimension
        (130, 264, 3 * 64),  # K tiles = the ring depth
        (300, 520, 4 * 64 + 8),  # K tiles = depth + 1, the last one short (subtiled: = depth)
        (200, 392, 5 * 64 + 8),  # subtiled: K tiles = depth + 1; N: a chunk clipped mid-box
        (256, 512, 0),  # K = 0: C = 0
        (4096, 4096, 512),  # 512 programs: each persistent CTA reuses its staging tile
    ],
)
@pytest.mark.parametrize("staging", ["full", "subtiled"])
def test_tma_and_thread_epilogues_agree(cuda, seed, staging, M, N, K):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
    tma = kernel("tma", staging)
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in tma.ptx
    if staging == "subtiled":
        assert tma.ptx.count("cp.async.bulk.wait_group.read 1;") == 4
    got, want = run(tma, A, B, M, N, K), run(kernel("threads"), A, B, M, N, K)
    assert torch.equal(got, want), f"the epilogues differ ({staging}, {M}x{N}x{K})"
    if K == 0:
        assert bool((got == 0).all())
        return
    ref = A.float() @ B.float().T
    err = ((got.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} ({M}x{N}x{K})"


def test_tma_epilogue_needs_16_byte_aligned_rows(cuda):
    """C's tensor map needs rows of a multiple of 16 bytes: N = 100 bf16
    (200-byte rows) is a one-line ArgumentError under epilogue="tma"; the
    thread epilogue stores it."""
    import torch

    M, N, K = 128, 100, 64
    A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda").to(torch.bfloat16)
    C = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ArgumentError, match=r"%C.*not a multiple of 16") as info:
        kernel("tma")(A, B, C, M, N, K, grid=(1, 1))
    assert "\n" not in str(info.value)
    C = run(kernel("threads"), A, B, M, N, K)
    ref = A.float() @ B.float().T
    assert ((C.float() - ref).norm() / ref.norm()).item() <= TOL
