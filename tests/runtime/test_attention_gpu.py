"""examples/attention_fwd.mlir (head dim 128), attention_fwd_d64.mlir,
attention_fwd_d256.mlir and attention_fwd_d256_n80.mlir ([B, H, S, D] q and
o, k and v with H / group heads), attention_fwd_bias.mlir (an additive bias
the consumers load themselves) and attention_fwd_fp8.mlir compiled by tawa
on the GPU, against a float32 softmax(Q·Kᵀ·scale)·V on fresh random data
with poisoned outputs (needs an sm_90 GPU with torch; skipped elsewhere).
Ring depths: the deepest that fits (`stages=0`)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import tawa
from tawa.bench.attention import FP8_TOLERANCE, query_rows

pytestmark = pytest.mark.gpu
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VARIANTS = {  # kernel -> (example, head dim)
    "attention_fwd": ("attention_fwd.mlir", 128),
    "attention_fwd_causal": ("attention_fwd.mlir", 128),
    "attention_fwd_d64": ("attention_fwd_d64.mlir", 64),
    "attention_fwd_d64_m128": ("attention_fwd_d64.mlir", 64),
    "attention_fwd_d64_causal": ("attention_fwd_d64.mlir", 64),
    "attention_fwd_d64_causal_m192": ("attention_fwd_d64.mlir", 64),
    "attention_fwd_d256": ("attention_fwd_d256.mlir", 256),
    "attention_fwd_d256_causal": ("attention_fwd_d256.mlir", 256),
    "attention_fwd_d256_n80": ("attention_fwd_d256_n80.mlir", 256),
    "attention_fwd_d256_n80_causal": ("attention_fwd_d256_n80.mlir", 256),
}
TOL = 1e-2


def reference(q, k, v, scale, causal):
    """float32 attention of [..., S, D] q over [..., Sk, D] k, v (one head
    each); causal aligned bottom-right: query i sees keys j <= i + Sk - S."""
    import torch

    s = q.float() @ k.float().transpose(-1, -2) * scale
    if causal:
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool, device=s.device).triu(m - n + 1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v.float()


def gqa_reference(q, k, v, scale, causal):
    """`reference` for q [B, H, S, D] over k, v [B, Hkv, Sk, D]."""
    group = q.shape[1] // k.shape[1]
    return reference(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), scale, causal)


def launch(kernel, kernel_name, q, k, v, o, scale):
    """Runs a 4-D attention kernel on q, o [B, H, S, D] and k, v [B, Hkv, Sk, D]."""
    B, H, S, _ = q.shape
    rows = query_rows((EXAMPLES / VARIANTS[kernel_name][0]).read_text(), kernel_name)
    kernel(q, k, v, o, S, k.shape[2], scale, H // k.shape[1], grid=(math.ceil(S / rows), H, B))


def inputs(B, H, HKV, S, D, seed, SK=None):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(B, H, S, D, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(B, HKV, SK or S, D, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    return q, k, v


@pytest.mark.parametrize("kernel_name", sorted(VARIANTS))
@pytest.mark.parametrize("B, H, HKV, S", [(1, 2, 2, 1024), (1, 3, 3, 200), (1, 1, 1, 128), (2, 1, 1, 384),
                                          (1, 2, 1, 1), (1, 1, 1, 65), (1, 4, 2, 193), (1, 8, 1, 576)])
def test_attention(cuda, seed, kernel_name, B, H, HKV, S):
    import torch

    file, D = VARIANTS[kernel_name]
    kernel = tawa.compile((EXAMPLES / file).read_text(), kernel_name)
    q, k, v = inputs(B, H, HKV, S, D, seed)
    o = torch.full_like(q, float("nan"))
    scale = 1 / math.sqrt(D)
    launch(kernel, kernel_name, q, k, v, o, scale)
    torch.cuda.synchronize()
    assert not torch.isnan(o.float()).any(), "some of O was not written (or is NaN)"
    ref = gqa_reference(q, k, v, scale, "causal" in kernel_name)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL} ({kernel_name}, B={B}, H={H}, Hkv={HKV}, S={S})"


@pytest.mark.parametrize("kernel_name", ["attention_fwd", "attention_fwd_causal", "attention_fwd_d64_m128",
                                         "attention_fwd_d64_causal", "attention_fwd_d256_causal"])
@pytest.mark.parametrize("B, H, S, SK", [(2, 3, 200, 200), (1, 4, 65, 1000), (2, 2, 1, 300)])
def test_attention_on_strided_views(cuda, seed, kernel_name, B, H, S, SK):
    """The kernels read any layout a tensor map describes: q, k, v as the
    permuted [B, S, 3, H, D] output of a fused QKV projection (S = Sk) or
    [B, S, H, D] tensors transposed (queries against a longer cache), and
    write O into [B, S, H, D] storage: the same bits as dense operands."""
    import torch

    _, D = VARIANTS[kernel_name]
    kernel = tawa.compile((EXAMPLES / VARIANTS[kernel_name][0]).read_text(), kernel_name)
    g = torch.Generator(device="cuda").manual_seed(seed)
    if S == SK:
        q, k, v = torch.randn(B, S, 3, H, D, device="cuda", generator=g).to(torch.bfloat16).permute(2, 0, 3, 1, 4)
    else:
        q = torch.randn(B, S, H, D, device="cuda", generator=g).to(torch.bfloat16).transpose(1, 2)
        k, v = (torch.randn(B, SK, H, D, device="cuda", generator=g).to(torch.bfloat16).transpose(1, 2)
                for _ in range(2))
    assert not k.is_contiguous()  # q of one row is contiguous in torch's sense
    o = torch.full((B, S, H, D), float("nan"), device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    scale = 1 / math.sqrt(D)
    launch(kernel, kernel_name, q, k, v, o, scale)
    dense = torch.full((B, H, S, D), float("nan"), device="cuda", dtype=torch.bfloat16)
    launch(kernel, kernel_name, *(t.contiguous() for t in (q, k, v)), dense, scale)
    torch.cuda.synchronize()
    assert not torch.isnan(o.float()).any(), "some of O was not written (or is NaN)"
    assert torch.equal(o, dense), f"strided operands differ from dense ones ({kernel_name})"
    ref = gqa_reference(q, k, v, scale, "causal" in kernel_name)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL} ({kernel_name}, B={B}, H={H}, S={S}, Sk={SK})"


@pytest.mark.parametrize("BH, S", [(2, 1024), (3, 200), (2, 1), (1, 65)])
def test_attention_bias(cuda, seed, BH, S):
    import torch

    kernel = tawa.compile((EXAMPLES / "attention_fwd_bias.mlir").read_text(), "attention_fwd_bias")
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(BH, S, 128, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
    bias = torch.randn(BH, S, S, device="cuda", generator=g).to(torch.bfloat16)
    o = torch.full((BH, S, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
    scale = 1 / math.sqrt(128)
    kernel(q, k, v, bias, o, S, scale, grid=(math.ceil(S / 128), BH))
    torch.cuda.synchronize()
    assert not torch.isnan(o.float()).any(), "some of O was not written (or is NaN)"
    s = torch.einsum("bqd,bkd->bqk", q.float(), k.float()) * scale + bias.float()
    ref = torch.einsum("bqk,bkd->bqd", torch.softmax(s, dim=-1), v.float())
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL} (BH={BH}, S={S})"


FP8_TOL = FP8_TOLERANCE
"""fp8 attention against the float32 reference of its e4m3 inputs: P is
rounded to e4m3 for P·V."""


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("BH, S", [(2, 1024), (3, 200), (1, 128), (2, 1), (1, 65), (1, 576)])
def test_attention_fp8(cuda, seed, causal, BH, S):
    """examples/attention_fwd_fp8.mlir: e4m3 Q, K and Vᵀ (its rows padded to
    16 bytes with zeros for the TMA; seq_len says which keys are real), a
    v_scale, bf16 O poisoned with NaN."""
    import torch

    name = "attention_fwd_fp8_causal" if causal else "attention_fwd_fp8"
    kernel = tawa.compile((EXAMPLES / "attention_fwd_fp8.mlir").read_text(), name)
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(BH, S, 128, device="cuda", generator=g).to(torch.float8_e4m3fn) for _ in range(3))
    padded = -(-S // 16) * 16
    vt = torch.zeros(BH, 128, padded, device="cuda", dtype=torch.float8_e4m3fn)
    vt[:, :, :S] = v.transpose(1, 2)
    o = torch.full((BH, S, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
    scale, v_scale = 1 / math.sqrt(128), 0.75
    kernel(q, k, vt, o, S, scale, v_scale, grid=(math.ceil(S / 128), BH))
    torch.cuda.synchronize()
    assert not torch.isnan(o.float()).any(), "some of O was not written (or is NaN)"
    ref = v_scale * reference(q, k, v, scale, causal)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err <= FP8_TOL, f"relative error {err:.3g} > {FP8_TOL} ({name}, BH={BH}, S={S})"


def outputs_of(kernels, kernel_name, BH, S, seed):
    """O of each kernel on the same fresh inputs, BH heads of one batch (each
    O poisoned with NaN first)."""
    import torch

    D = VARIANTS[kernel_name][1]
    q, k, v = inputs(1, BH, BH, S, D, seed)
    outs = []
    for kernel in kernels:
        o = torch.full_like(q, float("nan"))
        launch(kernel, kernel_name, q, k, v, o, 1 / math.sqrt(D))
        torch.cuda.synchronize()
        outs.append(o)
    return outs


def assert_same_bits(outs, what):
    import torch

    assert not torch.isnan(outs[-1].float()).any(), "some of O was not written (or is NaN)"
    for o in outs[1:]:
        assert torch.equal(outs[0], o), f"{what} differs"


@pytest.mark.parametrize(("kernel_name", "depths"), [
    ("attention_fwd", (3, 2)), ("attention_fwd_causal", (3, 2)), ("attention_fwd", (2, 3)),
    ("attention_fwd_d64", (5, 4)), ("attention_fwd_d64_causal", (4, 5)), ("attention_fwd_d64_m128", (3, 4)),
])
@pytest.mark.parametrize("BH, S", [(64, 1024), (150, 200), (300, 65), (40, 385), (1, 1)])
def test_ring_depths_match_the_default(cuda, seed, kernel_name, depths, BH, S):
    """K and V rings of their own depths (`ring_depths`, tawa-pipeline): the
    same bits as the default kernel, with more programs than SMs (the rings
    turn across programs, each by its own depth) and key-block counts
    around the depths."""
    source = (EXAMPLES / VARIANTS[kernel_name][0]).read_text()
    kernels = [tawa.compile(source, kernel_name), tawa.compile(source, kernel_name, ring_depths=depths)]
    assert kernels[0].ptx != kernels[1].ptx
    outs = outputs_of(kernels, kernel_name, BH, S, seed)
    assert_same_bits(outs, f"ring-depths={depths} ({kernel_name}, BH={BH}, S={S})")
