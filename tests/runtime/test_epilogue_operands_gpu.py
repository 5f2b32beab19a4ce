"""GEMMs beyond the plain one, on a Hopper GPU: epilogues that read their own
operands — examples/gemm_bias_gelu.mlir (a bias per column, then GELU),
examples/gemm_alpha_beta.mlir (C = α·A·Bᵀ + β·C),
examples/gemm_fp8_scaled.mlir (fp8 with per-row and per-column scales) —
examples/batched_gemm.mlir (a 3-D grid) and examples/gemm_a_prologue.mlir
(A scaled and rounded in registers: RS wgmmas).

Fresh random inputs (the seed is printed on failure), outputs poisoned with
NaN (except C of α·A·Bᵀ + β·C, which is read), float32 references, relative
Frobenius error ≤ 1e-2.  Shapes: ragged in M, N and K (edge paths of the
consumers' loads and stores) and large enough for whole tiles (fast paths),
with K-tile counts around the ring depth.

Run: `pytest -m gpu tests/runtime/test_epilogue_operands_gpu.py`.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import tawa

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOL = 1e-2
SHAPES = [(200, 136, 200), (1024, 768, 5 * 64), (520, 600, 9 * 64 + 24)]


def _grid(M: int, N: int) -> tuple[int, int]:
    return (math.ceil(M / 128), math.ceil(N / 256))


def _kernel(name: str) -> tawa.Kernel:
    return tawa.compile((EXAMPLES / f"{name}.mlir").read_text(), name)


def _check(C, ref) -> None:
    import torch

    torch.cuda.synchronize()
    assert not torch.isnan(C.float()).any(), "some of C was not written"
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL}"


@pytest.mark.parametrize("M, N, K", SHAPES)
def test_bias_gelu(cuda, seed, M, N, K):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).bfloat16()
    B = torch.randn(N, K, device="cuda", generator=g).bfloat16()
    bias = torch.randn(N, device="cuda", generator=g).bfloat16()
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    _kernel("gemm_bias_gelu")(A, B, bias, C, M, N, K, grid=_grid(M, N))
    x = A.float() @ B.float().T + bias.float()
    _check(C, torch.nn.functional.gelu(x, approximate="tanh"))


@pytest.mark.parametrize("M, N, K", SHAPES)
def test_alpha_beta(cuda, seed, M, N, K):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).bfloat16()
    B = torch.randn(N, K, device="cuda", generator=g).bfloat16()
    C = torch.randn(M, N, device="cuda", generator=g).bfloat16()
    ref = 0.75 * (A.float() @ B.float().T) - 1.5 * C.float()
    _kernel("gemm_alpha_beta")(A, B, C, M, N, K, 0.75, -1.5, grid=_grid(M, N))
    _check(C, ref)


@pytest.mark.parametrize("M, N, K", [(200, 136, 208), (1024, 768, 5 * 128), (520, 600, 9 * 128 + 48)])
def test_fp8_scaled(cuda, seed, M, N, K):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    B = torch.randn(N, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    sa = torch.rand(M, device="cuda", generator=g) + 0.5
    sb = torch.rand(N, device="cuda", generator=g) + 0.5
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    _kernel("gemm_fp8_scaled")(A, B, sa, sb, C, M, N, K, grid=_grid(M, N))
    _check(C, sa[:, None] * sb[None, :] * (A.float() @ B.float().T))


def test_bias_of_an_offset_view(cuda, seed):
    """A bias that starts mid-allocation (2 bytes past an aligned address):
    the consumers' loads take the element-wise path instead of misaligned
    vectors, and the result is right."""
    import torch

    M, N, K = 256, 512, 128
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).bfloat16()
    B = torch.randn(N, K, device="cuda", generator=g).bfloat16()
    bias = torch.randn(N + 1, device="cuda", generator=g).bfloat16()[1:]
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    _kernel("gemm_bias_gelu")(A, B, bias, C, M, N, K, grid=_grid(M, N))
    x = A.float() @ B.float().T + bias.float()
    _check(C, torch.nn.functional.gelu(x, approximate="tanh"))


@pytest.mark.parametrize("batch, M, N, K", [(3, 200, 136, 200), (4, 1024, 768, 9 * 64 + 24)])
@pytest.mark.parametrize("persistent", [True, False])
def test_batched(cuda, seed, batch, M, N, K, persistent):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(batch, M, K, device="cuda", generator=g).bfloat16()
    B = torch.randn(batch, N, K, device="cuda", generator=g).bfloat16()
    C = torch.full((batch, M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel = tawa.compile((EXAMPLES / "batched_gemm.mlir").read_text(), "batched_gemm", persistent=persistent)
    kernel(A, B, C, M, N, K, grid=(*_grid(M, N), batch))
    _check(C, torch.einsum("bmk,bnk->bmn", A.float(), B.float()))


@pytest.mark.parametrize("M, N, K", SHAPES)
def test_a_prologue(cuda, seed, M, N, K):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).half()
    B = torch.randn(N, K, device="cuda", generator=g).bfloat16()
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    _kernel("gemm_a_prologue")(A, B, C, M, N, K, 0.5, grid=_grid(M, N))
    _check(C, (0.5 * A.float()).bfloat16().float() @ B.float().T)
