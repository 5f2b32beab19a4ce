"""examples/python/attention_bwd.py on a Hopper GPU, launched through
`kernel[grid](...)` on torch tensors: the forward pass with its log-sum-exp,
then Delta, dK/dV and dQ, each kernel reading what the previous ones wrote,
against torch autograd in float32 (fresh random data, outputs poisoned with
NaN, ragged lengths, causal aligned bottom-right).  Only the configurations
that compile today (docs/passes.md, "Attention backward"): the dK/dV kernel
at head dim 128 takes 64-key blocks.  The CPU simulator and ptxas do not
show that these kernels run correctly on a GPU; these tests run them on one.

Run: `pytest -m gpu tests/runtime/test_attention_bwd_gpu.py` on an H100.
"""

from __future__ import annotations

import math

import pytest

from tawa.torch.kernels import python_example

pytestmark = pytest.mark.gpu

TOL = 1e-2  # relative Frobenius error of bf16 outputs


def bwd():
    """The module of examples/python/attention_bwd.py (loaded once)."""
    return python_example("attention_bwd")


def rel_err(out, ref) -> float:
    return ((out.float() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B, H, S, SK", [(1, 2, 200, 260), (2, 3, 1024, 1024), (1, 1, 65, 65)])
def test_training_step(cuda, seed, D, causal, B, H, S, SK):
    import torch

    m = bwd()
    g = torch.Generator(device="cuda").manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, device="cuda", generator=g).to(torch.bfloat16)

    def poisoned(*shape, dtype=torch.bfloat16):
        return torch.full(shape, float("nan"), device="cuda", dtype=dtype)

    q, do, k, v = rand(B, H, S, D), rand(B, H, S, D), rand(B, H, SK, D), rand(B, H, SK, D)
    o, lse, delta = poisoned(B, H, S, D), poisoned(B, H, S, dtype=torch.float32), poisoned(B, H, S, dtype=torch.float32)
    dq, dk, dv = poisoned(B, H, S, D), poisoned(B, H, SK, D), poisoned(B, H, SK, D)
    scale = 1 / math.sqrt(D)
    dkdv_blocks = {"BLOCK_N": 64} if D == 128 else {}
    block_n = dkdv_blocks.get("BLOCK_N", 128)
    m.attention_fwd_lse[(math.ceil(S / 128), H, B)](q, k, v, o, lse, S, SK, scale, 1, HEAD_DIM=D, CAUSAL=causal)
    m.attention_bwd_preprocess[(math.ceil(S / 64), H, B)](o, do, delta, S, HEAD_DIM=D)
    m.attention_bwd_dkdv[(math.ceil(SK / block_n), H, B)](q, k, v, do, lse, delta, dk, dv, S, SK, scale,
                                                          HEAD_DIM=D, CAUSAL=causal, **dkdv_blocks)
    m.attention_bwd_dq[(math.ceil(S / 128), H, B)](q, k, v, do, lse, delta, dq, S, SK, scale, HEAD_DIM=D, CAUSAL=causal)
    torch.cuda.synchronize()

    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    s = torch.einsum("bhqd,bhkd->bhqk", qf, kf) * scale
    if causal:  # aligned bottom-right: query i sees keys j <= i + SK - S
        s = s.masked_fill(torch.ones(S, SK, dtype=torch.bool, device="cuda").triu(SK - S + 1), float("-inf"))
    ref_o = torch.softmax(s, -1) @ vf
    ref_o.backward(do.float())
    ref_lse = torch.logsumexp(s.detach(), -1) / math.log(2)
    for name, t in (("O", o), ("LSE", lse), ("Delta", delta), ("dQ", dq), ("dK", dk), ("dV", dv)):
        assert not torch.isnan(t.float()).any(), f"{name}: elements not written (or NaN)"
    assert rel_err(o, ref_o.detach()) <= TOL
    assert (lse - ref_lse).abs().max().item() <= 1e-3
    assert rel_err(delta, (do.float() * o.float()).sum(-1)) <= 1e-4
    for name, got, ref in (("dQ", dq, qf.grad), ("dK", dk, kf.grad), ("dV", dv, vf.grad)):
        err = rel_err(got, ref)
        assert err <= TOL, f"{name}: relative error {err:.3g} (D={D}, causal={causal}, {B}x{H}x{S}x{SK})"
