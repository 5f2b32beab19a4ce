"""The fp8 kernels of examples/python/quantize.py on a Hopper GPU: bf16 rows scaled into
float8 e4m3 with a factor per row, and back, launched on torch tensors.

Fresh random inputs (the seed is printed on failure), outputs poisoned with NaN, ragged shapes
(rows of a few columns to wider than a warp group's vectors, a row of zeros); checked against
float32 in torch: the factors exactly (the kernel's divisions by 448 within a unit in the last
place), the e4m3 values within a step of torch's rounding of the same quotient, and the
quantized rows within e4m3's precision of the input; dequantized rows bit for bit (Q · S
rounded once to bf16; NaN stays NaN).

Run: `pytest -m gpu tests/runtime/test_quantize_gpu.py` on an H100.
"""

from __future__ import annotations

from functools import cache

import pytest

from tawa.torch.kernels import python_example

pytestmark = pytest.mark.gpu


@cache
def kernel(name: str, BLOCK_M: int, BLOCK_N: int):
    return getattr(python_example("quantize"), name).compile(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)


@pytest.mark.parametrize("M, N, BLOCK_M, BLOCK_N", [(37, 700, 4, 1024), (256, 1024, 4, 1024), (5, 3000, 1, 4096),
                                                    (9, 8, 2, 8), (300, 4096, 1, 4096)])
def test_quantize_rows(cuda, seed, M, N, BLOCK_M, BLOCK_N):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    X = (torch.randn(M, N, device="cuda", generator=g) * 10).to(torch.bfloat16)
    X[min(1, M - 1)] = 0
    Q = torch.full((M, N), float("nan"), device="cuda").to(torch.float8_e4m3fn)
    S = torch.full((M,), float("nan"), device="cuda")
    kernel("quantize_rows", BLOCK_M, BLOCK_N)(X, Q, S, M, N, grid=(-(-M // BLOCK_M),))
    torch.cuda.synchronize()
    x = X.float()
    s = x.abs().amax(1).clamp_min(1e-12) / 448
    torch.testing.assert_close(S, s, rtol=2**-23, atol=0)
    q = Q.float()
    assert not q.isnan().any()
    ref = (x / s[:, None]).to(torch.float8_e4m3fn).float()
    assert ((q - ref).abs() <= ref.abs() * 2**-2 + 2**-9).all()
    assert ((q * S[:, None] - x).abs() <= x.abs() * 2**-4 + S[:, None] * 2**-9).all()


@pytest.mark.parametrize("M, N, BLOCK_M, BLOCK_N", [(37, 700, 8, 512), (64, 4096, 8, 512), (5, 30, 2, 16),
                                                    (9, 1000, 1, 1024)])
def test_dequantize_rows(cuda, seed, M, N, BLOCK_M, BLOCK_N):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    Q = (torch.randn(M, N, device="cuda", generator=g) * 50).to(torch.float8_e4m3fn)
    Q.view(torch.uint8)[0, :3] = torch.tensor([0x7F, 0x01, 0x80], dtype=torch.uint8)  # NaN, a subnormal, -0
    S = torch.rand(M, device="cuda", generator=g) * 10 + 0.01
    Y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel("dequantize_rows", BLOCK_M, BLOCK_N)(Q, S, Y, M, N, grid=(-(-M // BLOCK_M), -(-N // BLOCK_N)))
    torch.cuda.synchronize()
    ref = (Q.float() * S[:, None]).to(torch.bfloat16)
    torch.testing.assert_close(Y, ref, rtol=0, atol=0, equal_nan=True)
    assert Y[0, 0].isnan() and not Y[1:].isnan().any()
