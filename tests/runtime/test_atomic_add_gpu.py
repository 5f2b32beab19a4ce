"""`tl.atomic_add` on a Hopper GPU, launched through `kernel[grid](...)` on
torch tensors: programs that add into the same elements at the same time
(every add must land once), ragged edges dropped, outputs' other elements
untouched.  The kernels are tests/transforms/test_atomic_add.py's (CPU
simulator and ptxas there): a split-K product of wgmma accumulators, and
overlapping boxes of blocked tiles.

Run: `pytest -m gpu tests/runtime/test_atomic_add_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest
from transforms_kernels import transforms_module

pytestmark = pytest.mark.gpu


def kernels():
    """The kernels of tests/transforms/test_atomic_add.py (whose helpers sit beside it)."""
    return transforms_module("test_atomic_add")


@pytest.mark.parametrize("M, N, K", [(200, 100, 304), (1024, 512, 4096), (64, 64, 128)])  # K: 16-byte rows (TMA), ragged in 128
def test_split_k_adds_every_slice(cuda, seed, M, N, K):
    import torch

    split_k = kernels()["split_k"]
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
    c = torch.randn(M, N, device="cuda", generator=g)
    want = c.double() + a.double() @ b.double().T
    # One program per 128x64 tile and 128-column K slice: K/128 programs add into each tile.
    split_k[(-(-M // 128), -(-N // 64), -(-K // 128))](a, b, c, K)
    torch.cuda.synchronize()
    err = ((c.double() - want).norm() / want.norm()).item()
    assert err <= 1e-5, f"relative error {err:.3g} ({M}x{N}x{K})"


def test_overlapping_boxes_and_edges(cuda, seed):
    import torch

    add_rows = kernels()["add_rows"]
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(200, 64, device="cuda", generator=g)
    y = torch.randn(2, 70, 60, device="cuda", generator=g)
    want = y.double().clone()
    for i in range(4):
        block = torch.zeros(64, 64, dtype=torch.float64, device="cuda")
        part = x[i * 64:(i + 1) * 64].double()
        block[:len(part)] = part
        lo, hi = i * 8, min(i * 8 + 64, 70)
        want[:, lo:hi] += 2 * block[:hi - lo, :60]
    add_rows[(4, 2, 1)](x, y, 200)
    torch.cuda.synchronize()
    torch.testing.assert_close(y.double(), want, rtol=1e-5, atol=1e-5)
