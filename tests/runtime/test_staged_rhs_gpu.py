"""A B operand computed in registers by two consumer warp groups and staged
in shared memory (two buffers alternating by a ring slot's parity), its
product added by TMA bulk reductions, on a Hopper GPU: the kernel of
tests/transforms/test_staged_rhs.py (CPU simulator and ptxas there) on torch
tensors, programs adding into the same elements at once, ragged edges,
against float64.

Run: `pytest -m gpu tests/runtime/test_staged_rhs_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest
from transforms_kernels import transforms_module

pytestmark = pytest.mark.gpu


def kernel():
    """`transposed_share` of tests/transforms/test_staged_rhs.py (whose helpers sit beside it)."""
    return transforms_module("test_staged_rhs")["transposed_share"]


@pytest.mark.parametrize("keys, n", [(3 * 128 - 20, 152), (1024, 4096), (128, 64)])  # n: 16-byte rows of f32
def test_every_program_adds_its_share(cuda, seed, keys, n):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    k = torch.randn(keys, 128, device="cuda", generator=g).to(torch.bfloat16)
    q = torch.randn(n, 128, device="cuda", generator=g).to(torch.bfloat16)
    out = torch.randn(128, n, device="cuda", generator=g)
    before = out.double().clone()
    want = before.clone()
    for p in range(-(-keys // 128)):  # each program: its keys' Kᵀ·(K·Qᵀ), dSᵀ rounded to bf16
        kb = k[p * 128:(p + 1) * 128].double()
        st = (kb @ q.double().T * 0.125).to(torch.bfloat16).double()
        want += kb.T @ st
    kernel()[(-(-keys // 128), 1, 1)](k, q, out, n)
    torch.cuda.synchronize()
    # What was added, against the shares (bf16 dSᵀ: a rounding flip here and there).
    err = ((out.double() - before) - (want - before)).norm() / (want - before).norm()
    assert not out.isnan().any()
    assert err.item() <= 1e-2, f"relative error {err.item():.3g} ({keys} keys, {n} queries)"
