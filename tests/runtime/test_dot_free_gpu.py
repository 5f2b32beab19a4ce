"""Kernels without dots on a Hopper GPU (docs/passes.md, "Kernels without dots"):
tests/transforms/dot_free/'s elementwise and row-softmax kernels and the split-K GEMM's reduce
program, compiled by tawa and launched on torch tensors.

Fresh random inputs (the seed is printed on failure), outputs poisoned with NaN, checked
against float32/float64 references on ragged shapes; the outputs' elements outside the tiles
stay NaN.  The CPU simulator and ptxas do not show that these kernels run correctly on a
GPU; these tests run them on one.

Run: `pytest -m gpu tests/runtime/test_dot_free_gpu.py` on an H100.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import pytest

import tawa
from tawa.kernels.gemm import GemmConfig, gemm_reduce_source, reduce_grid

pytestmark = pytest.mark.gpu

KERNELS = Path(__file__).resolve().parents[1] / "transforms" / "dot_free"


@cache
def kernel(name: str) -> tawa.Kernel:
    return tawa.compile((KERNELS / f"{name}.mlir").read_text(), name)


@pytest.mark.parametrize("M, N", [(130, 200), (256, 384), (1, 8)])
def test_add_relu(cuda, seed, M, N):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A, B = (torch.randn(M, N, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    C = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    kernel("add_relu")(A, B, C, grid=(math.ceil(M / 128), math.ceil(N / 128)))
    torch.cuda.synchronize()
    ref = torch.relu(A.float() + B.float()).to(torch.bfloat16)
    assert torch.equal(C, ref), f"{int((C != ref).sum())} of {C.numel()} elements differ"


@pytest.mark.parametrize("M", [100, 64, 3])
def test_row_softmax(cuda, seed, M):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    X = torch.randn(M, 136, device="cuda", generator=g) * 4
    Y = torch.full((M, 136), float("nan"), device="cuda")
    kernel("row_softmax")(X, Y, grid=(math.ceil(M / 64),))
    torch.cuda.synchronize()
    x = X[:, :128].double()
    e = torch.exp2(x - x.max(1, keepdim=True).values)
    ref = e / e.sum(1, keepdim=True)
    err = ((Y[:, :128].double() - ref).abs().max()).item()
    assert err <= 1e-5, f"max abs error {err:.3g}"
    assert bool(torch.isnan(Y[:, 128:]).all()), "columns past the tile were written"


@pytest.mark.parametrize("config, M, N", [
    (GemmConfig(128, 128, 64, split_k=3), 130, 200),
    (GemmConfig(64, 128, 64, "f16", "f16", "f32", split_k=2), 70, 136),
    (GemmConfig(64, 256, 64, split_k=4), 65, 8192 - 24),  # the reduce tile is 64x128, not the GEMM's
], ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_split_k_reduce_program(cuda, seed, config, M, N):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    W = torch.randn(config.split_k, M, N, device="cuda", generator=g)
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[config.c_dtype]
    C = torch.full((M, N), float("nan"), dtype=dtype, device="cuda")
    reduce = tawa.compile(gemm_reduce_source(config), config.reduce_kernel)
    reduce(W, C, M, N, grid=reduce_grid(config, M, N))
    torch.cuda.synchronize()
    ref = W.sum(0)
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert not bool(torch.isnan(C).any()), "elements of C were not written"
    assert err <= (1e-6 if config.c_dtype == "f32" else 1e-2), f"relative error {err:.3g}"
