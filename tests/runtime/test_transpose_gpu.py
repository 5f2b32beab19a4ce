"""The transpose kernels of examples/python/transpose.py on a Hopper GPU: tiles of blocked
layouts transposed through shared memory (`nvgpu.frag_transpose_shared`), launched on torch
tensors.  Fresh random inputs (the seed is printed on failure), outputs poisoned with NaN,
ragged shapes; transposes bit for bit, the column softmax against float32.

Run: `pytest -m gpu tests/runtime/test_transpose_gpu.py` on an H100.
"""

from __future__ import annotations

from functools import cache

import pytest

from tawa.torch.kernels import python_example

pytestmark = pytest.mark.gpu


@cache
def kernel(name: str, **constexprs: int):
    return getattr(python_example("transpose"), name).compile(**constexprs)


@pytest.mark.parametrize("name, M, N, BLOCK_M, BLOCK_N", [
    ("transpose", 100, 70, 64, 64), ("transpose", 1000, 4096, 64, 64), ("transpose", 37, 130, 32, 128),
    ("transpose", 5, 9, 16, 16), ("transpose_f32", 70, 100, 32, 64)])
def test_transpose(cuda, seed, name, M, N, BLOCK_M, BLOCK_N):
    import torch

    dtype = torch.float32 if name == "transpose_f32" else torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(seed)
    X = torch.randn(M, N, device="cuda", generator=g).to(dtype)
    Y = torch.full((N, M), float("nan"), device="cuda", dtype=dtype)
    kernel(name, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)(X, Y, M, N, grid=(-(-M // BLOCK_M), -(-N // BLOCK_N)))
    torch.cuda.synchronize()
    assert torch.equal(Y, X.T)


@pytest.mark.parametrize("M, N", [(50, 70), (64, 4096), (3, 5)])
def test_column_softmax(cuda, seed, M, N):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    X = torch.randn(M, N, device="cuda", generator=g).to(torch.bfloat16)
    Y = torch.full((N, M), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel("column_softmax")(X, Y, M, N, grid=(-(-N // 32),))
    torch.cuda.synchronize()
    torch.testing.assert_close(Y.float(), torch.softmax(X.float().T, 1), rtol=2**-7, atol=2**-12)
