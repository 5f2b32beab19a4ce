"""The four Python examples (examples/python/) launched through `kernel[grid](...)`
on the GPU, against float32 references on fresh random data with poisoned
(NaN-filled) outputs and ragged shapes (needs an sm_90 GPU with torch;
skipped elsewhere, saying why)."""

from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.gpu
TOL = 1e-2


def rel_err(out, ref) -> float:
    return ((out.float() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("name", ["gemm", "gemm_scale_relu", "gemm_bias_gelu"])
@pytest.mark.parametrize("M, N, K", [(1024, 1024, 512), (200, 264, 72), (130, 776, 392), (64, 8, 8)])
def test_gemm_examples(cuda, seed, example, name, M, N, K):
    import torch

    kernel = getattr(example(name), name)
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    ref = a.float() @ b.float().T
    inputs, extra = [a, b], []
    if name == "gemm_scale_relu":
        extra = [0.5]
        ref = torch.relu(0.5 * ref)
    if name == "gemm_bias_gelu":
        bias = torch.randn(N, device="cuda", generator=g).to(torch.bfloat16)
        inputs.append(bias)
        ref = torch.nn.functional.gelu(ref + bias.float(), approximate="tanh")
    kernel[(math.ceil(M / 128), math.ceil(N / 256))](*inputs, c, M, N, K, *extra)
    torch.cuda.synchronize()
    assert not torch.isnan(c.float()).any(), "some of C was not written (or is NaN)"
    assert rel_err(c, ref) <= TOL, f"relative error {rel_err(c, ref):.3g} ({name}, {M}x{N}x{K})"


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("BH, S", [(2, 1024), (3, 200), (1, 65)])
def test_attention_example(cuda, seed, example, causal, BH, S):
    import torch

    kernel = example("attention_fwd").attention_fwd
    D = 128
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(1, BH, S, D, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
    o = torch.full((1, BH, S, D), float("nan"), device="cuda", dtype=torch.bfloat16)
    scale = 1 / math.sqrt(D)
    kernel[(math.ceil(S / 128), BH, 1)](q, k, v, o, S, S, scale, 1, CAUSAL=causal)
    torch.cuda.synchronize()
    assert not torch.isnan(o.float()).any(), "some of O was not written (or is NaN)"
    s = torch.einsum("bhqd,bhkd->bhqk", q.float(), k.float()) * scale
    if causal:
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    ref = torch.einsum("bhqk,bhkd->bhqd", torch.softmax(s, dim=-1), v.float())
    assert rel_err(o, ref) <= TOL, f"relative error {rel_err(o, ref):.3g} (causal={causal}, BH={BH}, S={S})"
