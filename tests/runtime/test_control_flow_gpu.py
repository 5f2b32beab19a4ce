"""The control-flow programs of tests/transforms/control_flow/ on a Hopper GPU
(docs/passes.md, "Control flow"): two K loops in sequence, a loop around the
K loop, a load after the K loop, software prefetch by hand.

Fresh random inputs (the seed is printed on failure), C poisoned with NaN,
float32 reference, relative Frobenius error ≤ 1e-2 (bf16 output rounding
alone is about 2e-3); every element of C written.  Ragged shapes: M, N and K
not multiples of the tiles, K-slice counts of 0, 1, around the ring depth and
past it.

Run: `pytest -m gpu tests/runtime/test_control_flow_gpu.py` on a machine with
an H100, CuPy, cuda-bindings and torch; elsewhere every test skips and says why.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import pytest

import tawa

pytestmark = pytest.mark.gpu

PROGRAMS = Path(__file__).resolve().parents[1] / "transforms" / "control_flow"
TOL = 1e-2
SHAPES = [(200, 136, 200), (130, 264, 72), (64, 8, 8), (300, 296, 64 * 9 + 8)]  # N, K: rows of 16 bytes (TMA; C: the TMA-store epilogue)
"""(M, N, K): nothing a multiple of the tile; a little past one tile; smaller
than a tile; more K slices than the deepest ring (4) twice over."""


@cache
def kernel(name: str) -> tawa.Kernel:
    return tawa.compile((PROGRAMS / f"{name}.mlir").read_text(), name)


def randn(*shape: int, g):
    import torch

    return torch.randn(*shape, device="cuda", generator=g).to(torch.bfloat16)


def poisoned(M: int, N: int):
    import torch

    return torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")


def mm(a, b):
    return a.float() @ b.float().T


def check(C, ref, what: str) -> None:
    import torch

    torch.cuda.synchronize()
    nans = int(torch.isnan(C).sum())
    assert nans == 0, f"{what}: {nans} of {C.numel()} elements of C were not written"
    if ref.norm() == 0:
        assert bool((C == 0).all()), what
        return
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"{what}: relative error {err:.3g} > {TOL}"


def grid(M: int, N: int, bn: int = 128) -> tuple[int, int]:
    return (math.ceil(M / 128), math.ceil(N / bn))


@pytest.mark.parametrize("name", ["prefetch", "prefetch_tail", "nested_loops"])
@pytest.mark.parametrize("M, N, K", [*SHAPES, (256, 256, 0)])
def test_one_loop(cuda, seed, name, M, N, K):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A, B, C = randn(M, K, g=g), randn(N, K, g=g), poisoned(M, N)
    kernel(name)(A, B, C, M, N, K, grid=grid(M, N, 256 if name == "nested_loops" else 128))
    check(C, mm(A, B), f"{name} {M}x{N}x{K}")


@pytest.mark.parametrize("name", ["two_loops_chain", "two_loops_sum"])
@pytest.mark.parametrize("M, N, K1, K2", [(200, 136, 200, 72), (130, 264, 0, 304), (300, 300, 584, 0), (64, 8, 8, 8)])
def test_two_loops(cuda, seed, name, M, N, K1, K2):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A1, B1, A2, B2 = randn(M, K1, g=g), randn(N, K1, g=g), randn(M, K2, g=g), randn(N, K2, g=g)
    C = poisoned(M, N)
    kernel(name)(A1, B1, A2, B2, C, M, N, K1, K2, grid=grid(M, N))
    check(C, mm(A1, B1) + mm(A2, B2), f"{name} {M}x{N}x({K1}, {K2})")


@pytest.mark.parametrize("M, N, K, R", [(200, 136, 200, 40), (130, 264, 0, 64), (300, 300, 584, 8)])
def test_low_rank_update(cuda, seed, M, N, K, R):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A, B, U, V = randn(M, K, g=g), randn(N, K, g=g), randn(M, R, g=g), randn(N, R, g=g)
    C = poisoned(M, N)
    kernel("low_rank_update")(A, B, U, V, C, M, N, K, R, grid=grid(M, N))
    check(C, mm(A, B) + mm(U, V), f"low_rank_update {M}x{N}x{K} rank {R}")
