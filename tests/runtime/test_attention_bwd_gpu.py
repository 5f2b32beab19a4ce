"""examples/python/attention_bwd.py on a Hopper GPU, launched as
`tawa.torch.attention_bwd_kernels` compiles them (its tiles and grids) on
torch tensors: the forward pass with its log-sum-exp, then Delta and the
gradients on each dQ path — "kernel" (dK/dV, then the dQ kernel) and
"atomic" (dK/dV with dQᵀ added atomically into a zeroed f32 buffer by
TMA bulk reductions, then its transposing conversion) — each kernel reading what the previous ones wrote,
against torch autograd in float32 (fresh random data, outputs poisoned
with NaN, ragged lengths, causal aligned bottom-right, grouped-query heads
read in place).  A path whose kernels do not compile yet is skipped, naming
the compiler's error (`attention_bwd_kernels.unavailable`).  The CPU
simulator and ptxas do not show that these kernels run correctly on a GPU;
these tests run them on one.

Run: `pytest -m gpu tests/runtime/test_attention_bwd_gpu.py` on an H100.
"""

from __future__ import annotations

import math

import pytest

from tawa.torch import attention_bwd_kernels as abk

pytestmark = pytest.mark.gpu

TOL = 1e-2  # relative Frobenius error of bf16 outputs


def rel_err(out, ref) -> float:
    return ((out.float() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("path", abk.DQ_PATHS)
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B, H, HKV, S, SK", [(1, 2, 2, 200, 260), (2, 3, 3, 1024, 1024), (1, 1, 1, 65, 65),
                                              (1, 8, 2, 300, 300)])
def test_training_step(cuda, seed, path, D, causal, B, H, HKV, S, SK):
    import torch

    reason = abk.unavailable(path, D)
    if reason is not None:
        pytest.skip(f"the {path} dQ path does not compile at head dim {D}: {reason}")
    g = torch.Generator(device="cuda").manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, device="cuda", generator=g).to(torch.bfloat16)

    def poisoned(*shape, dtype=torch.bfloat16):
        return torch.full(shape, float("nan"), device="cuda", dtype=dtype)

    q, do, k, v = rand(B, H, S, D), rand(B, H, S, D), rand(B, HKV, SK, D), rand(B, HKV, SK, D)
    o, lse, delta = poisoned(B, H, S, D), poisoned(B, H, S, dtype=torch.float32), poisoned(B, H, S, dtype=torch.float32)
    dq, dk, dv = poisoned(B, H, S, D), poisoned(B, HKV, SK, D), poisoned(B, HKV, SK, D)
    scale, group = 1 / math.sqrt(D), H // HKV

    def launch(name, *args):
        heads = HKV if name in abk.KEY_BLOCK_KERNELS else H
        abk.kernel(name, D, causal)(*args, grid=abk.grid(name, D, S, SK, heads, B))

    launch(abk.FWD, q, k, v, o, lse, S, SK, scale, group)
    launch(abk.PRE, o, do, delta, S)
    if path == "kernel":
        launch(abk.DKDV, q, k, v, do, lse, delta, dk, dv, S, SK, scale, group)
        launch(abk.DQ, q, k, v, do, lse, delta, dq, S, SK, scale, group)
    else:
        # dQᵀ's sum [B, H, D, S], rows padded to 16 bytes (a tensor map's pitch), poisoned past S.
        padded = -(-S // 4) * 4
        dqt_sum = torch.full((B, H, D, padded), float("nan"), device="cuda", dtype=torch.float32)
        dqt_sum[..., :S] = 0
        launch(abk.DKDVDQ, q, k, v, do, lse, delta, dk, dv, dqt_sum[..., :S], S, SK, scale, group)
        launch(abk.CONVERT, dqt_sum[..., :S], dq, scale)
    torch.cuda.synchronize()

    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    s = torch.einsum("bhqd,bhkd->bhqk", qf, kf.repeat_interleave(group, 1)) * scale
    if causal:  # aligned bottom-right: query i sees keys j <= i + SK - S
        s = s.masked_fill(torch.ones(S, SK, dtype=torch.bool, device="cuda").triu(SK - S + 1), float("-inf"))
    ref_o = torch.softmax(s, -1) @ vf.repeat_interleave(group, 1)
    ref_o.backward(do.float())
    ref_lse = torch.logsumexp(s.detach(), -1) / math.log(2)
    for name, t in (("O", o), ("LSE", lse), ("Delta", delta), ("dQ", dq), ("dK", dk), ("dV", dv)):
        assert not torch.isnan(t.float()).any(), f"{name}: elements not written (or NaN)"
    assert rel_err(o, ref_o.detach()) <= TOL
    assert (lse - ref_lse).abs().max().item() <= 1e-3
    assert rel_err(delta, (do.float() * o.float()).sum(-1)) <= 1e-4
    for name, got, ref in (("dQ", dq, qf.grad), ("dK", dk, kf.grad), ("dV", dv, vf.grad)):
        err = rel_err(got, ref)
        assert err <= TOL, f"{name}: relative error {err:.3g} ({path}, D={D}, causal={causal}, {B}x{H}/{HKV}x{S}x{SK})"
