"""Gradients through `tawa.torch`'s operators on a Hopper GPU (docs/runtime.md, "Autograd").

- attention: dq, dk, dv (and o) against torch autograd of float32 attention
  over the same bf16 inputs, head dims 64 and 128, causal (bottom-right)
  and not, 1 and 4 query heads per key/value head, ragged lengths (65, 200
  queries against 260 keys, 1000, and more queries than keys without a
  mask); q, k, v as views of [B, S, H, D] tensors; the gradient of
  `o.sum()` (a broadcast dO).
- linear (every activation, with and without bias and residual), matmul
  (B [N, K] and [K, N]) and gated_mlp: the gradients of x, w, bias,
  residual against float32 references, token counts and feature counts
  that are not multiples of 8 (padded reductions); the training forward
  `tawa::linear_save`'s two outputs (Y and the pre-activation the backward
  pass reads) and `tawa::gated_mlp_save`'s three (Y, G, U); the MLPs of
  the model benchmark: GPT-2's at widths 1024 and 2048, Llama-3-8B's.
- a block (QKV projection, attention, output projection with residual,
  gated MLP) trained one step under `torch.compile(fullgraph=True)`,
  against the same block in float32 torch.

Poisoned buffers: before each forward and backward the caching allocator's
pools are emptied and refilled with NaN-filled blocks that are then freed,
so every tensor the operators allocate (outputs, saved LSE, Delta,
gradients, copies) comes out of NaN memory unless written; every gradient
must be finite.  Relative Frobenius error ≤ 1e-2 per operator (bf16), 3e-2
through the block.

Run: `pytest -m gpu tests/runtime/test_autograd_gpu.py` on an H100.
"""

from __future__ import annotations

import math

import pytest
from test_linear_gpu import act

import tawa.torch as tt

pytestmark = pytest.mark.gpu
TOL = 1e-2
BLOCK_TOL = 3e-2
"""A block's gradients pass through several operators, each rounding to bf16."""


@pytest.fixture
def torch(cuda):
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


def poison_pools(torch, large_mib: int = 512, small_blocks: int = 256) -> None:
    """Fills the caching allocator's free memory with NaN: empties its cache,
    then allocates and frees one large NaN block (allocations above 1 MiB are
    carved from it) and many small ones (the small-allocation pool)."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    large = torch.full((large_mib << 19,), float("nan"), dtype=torch.bfloat16, device="cuda")
    small = [torch.full((1 << 18,), float("nan"), dtype=torch.bfloat16, device="cuda") for _ in range(small_blocks)]
    torch.cuda.synchronize()
    del large, small


def rel_err(got, want) -> float:
    return ((got.float() - want.float()).norm() / want.float().norm()).item()


def check_grad(torch, name, got, want, shape, tol=TOL):
    assert got is not None, f"{name}: no gradient"
    assert tuple(got.shape) == tuple(shape) and got.dtype in (torch.bfloat16, torch.float16), name
    bad = int((~torch.isfinite(got)).sum())
    assert bad == 0, f"{name}: {bad} of {got.numel()} gradient elements are not finite (not written?)"
    err = rel_err(got, want)
    assert err <= tol, f"{name}: relative error {err:.3g} > {tol}"


def randn(torch, g, *shape, scale=1.0, dtype=None):
    return (torch.randn(*shape, device="cuda", generator=g) * scale).to(dtype or torch.bfloat16)


def twins(torch, *tensors):
    """Each tensor as a leaf requiring grad, and a float32 twin."""
    low = [t.detach().clone().requires_grad_() for t in tensors]
    return low, [t.detach().float().requires_grad_() for t in low]


# --------------------------------------------------------------------------- attention


def attention_reference(torch, q, k, v, scale, causal):
    group = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(group, 1) for t in (k, v))
    s = q @ k.transpose(-1, -2) * scale
    if causal:  # aligned bottom-right: query i sees keys j <= i + Sk - S
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool, device=s.device).triu(m - n + 1), float("-inf"))
    return s.softmax(-1) @ v


def attention_step(torch, q, k, v, do, causal):
    """o and the gradients of q, k, v from tawa (pools poisoned) and from float32 torch."""
    (q, k, v), (qf, kf, vf) = twins(torch, q, k, v)
    poison_pools(torch)
    o = tt.attention(q, k, v, causal=causal)
    poison_pools(torch)
    o.backward(do)
    torch.cuda.synchronize()
    ref = attention_reference(torch, qf, kf, vf, 1 / math.sqrt(q.shape[-1]), causal)
    ref.backward(do.float())
    return (o, q.grad, k.grad, v.grad), (ref, qf.grad, kf.grad, vf.grad)


SHAPES = [  # B, H, Hkv, S, Sk
    (1, 4, 4, 200, 260),
    (1, 4, 1, 65, 260),  # 4 query heads per key/value head
    (2, 8, 2, 1000, 1000),
    (1, 2, 2, 1, 128),
]


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B, H, Hkv, S, SK", SHAPES, ids=lambda s: str(s))
def test_attention_gradients(torch, seed, D, causal, B, H, Hkv, S, SK):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = randn(torch, g, B, H, S, D), randn(torch, g, B, Hkv, SK, D), randn(torch, g, B, Hkv, SK, D)
    do = randn(torch, g, B, H, S, D)
    got, want = attention_step(torch, q, k, v, do, causal)
    assert rel_err(got[0].detach(), want[0].detach()) <= TOL, "O"
    for name, t, w, shape in zip(("dQ", "dK", "dV"), got[1:], want[1:], (q.shape, k.shape, v.shape)):
        check_grad(torch, f"{name} (D={D}, causal={causal}, {B}x{H}/{Hkv}x{S}x{SK})", t, w, shape)


@pytest.mark.parametrize("D", [64, 128])
def test_attention_more_queries_than_keys(torch, seed, D):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = randn(torch, g, 1, 2, 300, D), randn(torch, g, 1, 2, 100, D), randn(torch, g, 1, 2, 100, D)
    got, want = attention_step(torch, q, k, v, randn(torch, g, 1, 2, 300, D), False)
    for name, t, w in zip(("dQ", "dK", "dV"), got[1:], want[1:]):
        check_grad(torch, name, t, w, w.shape)


@pytest.mark.parametrize("Hkv", [4, 1])
def test_attention_on_bshd_views_and_a_broadcast_gradient(torch, seed, Hkv):
    """q, k, v as [B, S, H, D] tensors transposed (a model's layout, read in
    place); O in [B, S, H, D] storage; the loss o.sum(): dO a broadcast (copied)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    B, S, H, D = 2, 333, 4, 128
    q = randn(torch, g, B, S, H, D)
    k, v = (randn(torch, g, B, S, Hkv, D) for _ in range(2))
    (q, k, v), (qf, kf, vf) = twins(torch, q, k, v)
    poison_pools(torch)
    o = tt.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=True)
    assert o.transpose(1, 2).is_contiguous()
    poison_pools(torch)
    o.sum().backward()
    attention_reference(torch, qf.transpose(1, 2), kf.transpose(1, 2), vf.transpose(1, 2), D**-0.5,
                        True).sum().backward()
    for name, t, w in (("dQ", q, qf), ("dK", k, kf), ("dV", v, vf)):
        check_grad(torch, name, t.grad, w.grad, t.shape)


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_on_fused_qkv_views_reads_o_and_do_in_place(torch, seed, D, causal, monkeypatch):
    """A fused-QKV model's attention: q, k, v views of one [B, S, 3, H, D]
    projection, O in [B, S, H, D] storage, dO the seq-major gradient that
    flows back through `o.transpose(1, 2).reshape(B, S, H·D)`.  The
    preprocess addresses O and dO itself, with their strides: neither is
    copied (`dense_copy` is never called), and the gradients, in
    NaN-poisoned memory, match float32."""
    from tawa.torch import attention_grad

    copied = []
    real = attention_grad.dense_copy
    monkeypatch.setattr(attention_grad, "dense_copy", lambda t: copied.append(tuple(t.shape)) or real(t))
    g = torch.Generator(device="cuda").manual_seed(seed)
    B, S, H = 2, 333, 4
    qkv = randn(torch, g, B, S, 3, H, D)
    (qkv,), (qkv_f,) = twins(torch, qkv)
    dy = randn(torch, g, B, S, H * D)
    poison_pools(torch)
    o = tt.attention(*qkv.permute(2, 0, 3, 1, 4), causal=causal)
    assert o.stride() == (S * H * D, D, H * D, 1)
    out = o.transpose(1, 2).reshape(B, S, H * D)  # a view: the output projection's input
    poison_pools(torch)
    out.backward(dy)
    torch.cuda.synchronize()
    ref = attention_reference(torch, *qkv_f.permute(2, 0, 3, 1, 4), D**-0.5, causal)
    ref.transpose(1, 2).reshape(B, S, H * D).backward(dy.float())
    assert rel_err(out.detach(), ref.transpose(1, 2).reshape(B, S, H * D).detach()) <= TOL, "O"
    check_grad(torch, f"dQKV (D={D}, causal={causal})", qkv.grad, qkv_f.grad, qkv.shape)
    assert copied == [], f"copied: {copied}"


# --------------------------------------------------------------------------- linear, matmul, gated_mlp

ACTIVATIONS = [None, "gelu_tanh", "silu", "relu"]


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
@pytest.mark.parametrize("bias, residual", [(False, False), (True, True), (True, False)],
                         ids=["plain", "bias-residual", "bias"])
@pytest.mark.parametrize("lead, N, K", [((1000,), 264, 200), ((2, 100), 264, 200), ((17,), 100, 512),
                                        ((3, 333), 1032, 768)], ids=str)
def test_linear_gradients(torch, seed, activation, bias, residual, lead, N, K):
    g = torch.Generator(device="cuda").manual_seed(seed)
    tensors = [randn(torch, g, *lead, K), randn(torch, g, N, K, scale=K**-0.5)]
    tensors += [randn(torch, g, N)] if bias else []
    tensors += [randn(torch, g, *lead, N)] if residual else []
    low, ref = twins(torch, *tensors)

    def split(ts):
        x, w, *rest = ts
        return x, w, rest.pop(0) if bias else None, rest.pop(0) if residual else None

    x, w, b, r = split(low)
    xf, wf, bf, rf = split(ref)
    dy = randn(torch, g, *lead, N)
    poison_pools(torch)
    y = tt.linear(x, w, b, activation, r)
    poison_pools(torch)
    y.backward(dy)
    torch.cuda.synchronize()
    yf = xf @ wf.T
    yf = act(torch, activation, yf if bf is None else yf + bf)
    (yf if rf is None else yf + rf).backward(dy.float())
    for name, t, tf in zip(("dX", "dW", "dbias", "dresidual"), (x, w, b, r), (xf, wf, bf, rf)):
        if t is not None:
            check_grad(torch, f"{name} ({activation}, {lead}x{N}x{K})", t.grad, tf.grad, t.shape)


@pytest.mark.parametrize("activation", ["gelu_tanh", "silu", "relu"])
@pytest.mark.parametrize("lead, N, K, bias, residual", [
    ((1000,), 264, 200, True, True),
    ((17,), 100, 512, False, False),  # rows of 200 bytes: C and P through the thread epilogue
    ((2, 1024), 4096, 1024, True, False),  # GPT-2 medium's MLP up projection, 2048 tokens
], ids=str)
def test_linear_save_outputs(torch, seed, activation, lead, N, K, bias, residual):
    """tawa::linear_save, the training forward: Y and the pre-activation
    P = x·wᵀ + bias from one kernel, both in NaN-poisoned memory, against float32."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x, w = randn(torch, g, *lead, K), randn(torch, g, N, K, scale=K**-0.5)
    b = randn(torch, g, N) if bias else None
    r = randn(torch, g, *lead, N) if residual else None
    poison_pools(torch)
    y, pre = torch.ops.tawa.linear_save(x, w, b, activation, r)
    torch.cuda.synchronize()
    want_pre = x.float() @ w.float().T + (0 if b is None else b.float())
    want = act(torch, activation, want_pre) + (0 if r is None else r.float())
    for name, got, exp in (("Y", y, want), ("P", pre, want_pre)):
        assert got.shape == (*lead, N) and got.dtype == torch.bfloat16, name
        assert bool(torch.isfinite(got).all()), f"{name}: elements not written"
        assert rel_err(got, exp) <= TOL, f"{name}: relative error {rel_err(got, exp):.3g}"


@pytest.mark.parametrize("tokens, width", [(2048, 1024), (512, 2048)])
def test_model_mlp_gradients(torch, seed, tokens, width):
    """GPT-2's MLP (x·W_fcᵀ + b_fc, GELU, then W_proj with the residual) at
    tawa.bench's widths: the saved pre-activation's gradients against float32."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    hidden = 4 * width
    tensors = [randn(torch, g, tokens, width), randn(torch, g, hidden, width, scale=width**-0.5),
               randn(torch, g, hidden, scale=0.1), randn(torch, g, width, hidden, scale=hidden**-0.5)]
    (x, w_fc, b_fc, w_proj), (xf, w_fcf, b_fcf, w_projf) = twins(torch, *tensors)
    dy = randn(torch, g, tokens, width)
    poison_pools(torch)
    y = tt.linear(tt.linear(x, w_fc, b_fc, "gelu_tanh"), w_proj, residual=x)
    poison_pools(torch)
    y.backward(dy)
    torch.cuda.synchronize()
    h = act(torch, "gelu_tanh", xf @ w_fcf.T + b_fcf)
    (h @ w_projf.T + xf).backward(dy.float())
    for name, t, tf in (("dx", x, xf), ("dW_fc", w_fc, w_fcf), ("db_fc", b_fc, b_fcf), ("dW_proj", w_proj, w_projf)):
        check_grad(torch, name, t.grad, tf.grad, t.shape)


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("lead, N, K", [((2, 150), 688, 256), ((17,), 100, 64), ((1024,), 14336, 4096)], ids=str)
def test_gated_mlp_save_outputs(torch, seed, activation, lead, N, K):
    """tawa::gated_mlp_save, the gated MLP's training forward: Y and both
    products G and U from one kernel, in NaN-poisoned memory, against float32
    (N = 100: through the thread epilogue; 14336 x 4096: Llama-3-8B's MLP)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x, wg, wu = randn(torch, g, *lead, K), randn(torch, g, N, K, scale=K**-0.5), randn(torch, g, N, K, scale=K**-0.5)
    poison_pools(torch)
    y, gate, up = torch.ops.tawa.gated_mlp_save(x, wg, wu, activation)
    torch.cuda.synchronize()
    want_g, want_u = x.float() @ wg.float().T, x.float() @ wu.float().T
    for name, got, exp in (("Y", y, act(torch, activation, want_g) * want_u), ("G", gate, want_g), ("U", up, want_u)):
        assert got.shape == (*lead, N) and got.dtype == torch.bfloat16, name
        assert bool(torch.isfinite(got).all()), f"{name}: elements not written"
        assert rel_err(got, exp) <= TOL, f"{name}: relative error {rel_err(got, exp):.3g}"


def test_llama_mlp_gradients(torch, seed):
    """Llama-3-8B's MLP (SwiGLU, then W_down with the residual), 1024 tokens:
    the gradients from the saved G and U against float32."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    tokens, width, hidden = 1024, 4096, 14336
    tensors = [randn(torch, g, tokens, width), randn(torch, g, hidden, width, scale=width**-0.5),
               randn(torch, g, hidden, width, scale=width**-0.5), randn(torch, g, width, hidden, scale=hidden**-0.5)]
    (x, wg, wu, wd), (xf, wgf, wuf, wdf) = twins(torch, *tensors)
    dy = randn(torch, g, tokens, width)
    poison_pools(torch)
    y = tt.linear(tt.gated_mlp(x, wg, wu), wd, residual=x)
    poison_pools(torch)
    y.backward(dy)
    torch.cuda.synchronize()
    ((torch.nn.functional.silu(xf @ wgf.T) * (xf @ wuf.T)) @ wdf.T + xf).backward(dy.float())
    for name, t, tf in (("dx", x, xf), ("dW_gate", wg, wgf), ("dW_up", wu, wuf), ("dW_down", wd, wdf)):
        check_grad(torch, name, t.grad, tf.grad, t.shape)


@pytest.mark.parametrize("transpose_b", [True, False])
@pytest.mark.parametrize("M, N, K", [(777, 264, 200), (64, 1000, 4096)])
def test_matmul_gradients(torch, seed, transpose_b, M, N, K):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = randn(torch, g, M, K)
    b = randn(torch, g, *((N, K) if transpose_b else (K, N)), scale=K**-0.5)
    (a, b), (af, bf) = twins(torch, a, b)
    dc = randn(torch, g, M, N)
    poison_pools(torch)
    c = tt.matmul(a, b, transpose_b=transpose_b)
    poison_pools(torch)
    c.backward(dc)
    torch.cuda.synchronize()
    (af @ (bf.T if transpose_b else bf)).backward(dc.float())
    check_grad(torch, "dA", a.grad, af.grad, a.shape)
    check_grad(torch, "dB", b.grad, bf.grad, b.shape)


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("lead, N, K", [((2, 150), 688, 256), ((17,), 100, 64)], ids=str)
def test_gated_mlp_gradients(torch, seed, activation, lead, N, K):
    g = torch.Generator(device="cuda").manual_seed(seed)
    tensors = [randn(torch, g, *lead, K), randn(torch, g, N, K, scale=K**-0.5), randn(torch, g, N, K, scale=K**-0.5)]
    (x, wg, wu), (xf, wgf, wuf) = twins(torch, *tensors)
    dy = randn(torch, g, *lead, N)
    poison_pools(torch)
    y = tt.gated_mlp(x, wg, wu, activation)
    poison_pools(torch)
    y.backward(dy)
    torch.cuda.synchronize()
    (act(torch, activation, xf @ wgf.T) * (xf @ wuf.T)).backward(dy.float())
    for name, t, tf in (("dX", x, xf), ("dW_gate", wg, wgf), ("dW_up", wu, wuf)):
        check_grad(torch, name, t.grad, tf.grad, t.shape)


# --------------------------------------------------------------------------- a training step


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_block_training_step(torch, seed, compiled):
    """One pre-norm-free transformer block (fused QKV projection with bias,
    grouped-query causal attention on views of it, output projection with
    the residual, SwiGLU MLP with the residual) forward and backward,
    eager or under torch.compile(fullgraph=True), against float32 torch."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    B, S, H, Hkv, D, F = 2, 200, 8, 2, 64, 1024
    E = H * D
    W = (H + 2 * Hkv) * D
    tensors = [randn(torch, g, B, S, E), randn(torch, g, W, E, scale=E**-0.5), randn(torch, g, W, scale=0.1),
               randn(torch, g, E, E, scale=E**-0.5), randn(torch, g, F, E, scale=E**-0.5),
               randn(torch, g, F, E, scale=E**-0.5), randn(torch, g, E, F, scale=F**-0.5)]
    low, ref = twins(torch, *tensors)

    def make_block(ops):
        def block(x, w_qkv, b_qkv, w_o, w_gate, w_up, w_down):
            qkv = ops["linear"](x, w_qkv, b_qkv)
            q, k, v = qkv.split([H * D, Hkv * D, Hkv * D], dim=-1)
            q, k, v = (t.unflatten(-1, (-1, D)).transpose(1, 2) for t in (q, k, v))
            o = ops["attention"](q, k, v)
            h = ops["linear"](o.transpose(1, 2).reshape(B, S, E), w_o, None, None, x)
            return ops["linear"](ops["gated_mlp"](h, w_gate, w_up), w_down, None, None, h)

        return block

    def torch_linear(x, w, b=None, activation=None, residual=None):
        y = x @ w.T + (0 if b is None else b)
        return y + (0 if residual is None else residual)

    tawa_block = make_block({"linear": tt.linear, "attention": lambda q, k, v: tt.attention(q, k, v, causal=True),
                             "gated_mlp": tt.gated_mlp})
    torch_block = make_block({"linear": torch_linear,
                              "attention": lambda q, k, v: attention_reference(torch, q, k, v, D**-0.5, True),
                              "gated_mlp": lambda x, wg, wu: torch.nn.functional.silu(x @ wg.T) * (x @ wu.T)})
    run = torch.compile(tawa_block, fullgraph=True) if compiled else tawa_block
    dy = randn(torch, g, B, S, E)
    if compiled:  # a first call compiles (and loads the kernels) outside the poisoned run
        run(*[t.detach().clone().requires_grad_() for t in low]).backward(dy)
    poison_pools(torch)
    run(*low).backward(dy)
    torch.cuda.synchronize()
    torch_block(*ref).backward(dy.float())
    names = ("dx", "dW_qkv", "db_qkv", "dW_o", "dW_gate", "dW_up", "dW_down")
    for name, t, tf in zip(names, low, ref):
        check_grad(torch, name, t.grad, tf.grad, t.shape, tol=BLOCK_TOL)
