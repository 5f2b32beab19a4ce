"""The host path of tawa.torch's operators on a Hopper GPU (`tawa.torch.calls`):
calls on new tensors of layouts seen before go through a launch template
that writes the new addresses into parameters packed once.

- Many calls, each on other operands (a rotation of tensors, some of them
  views at other offsets) and a new output poisoned with NaN, against float32
  references: every address written where the kernel reads it.
- The template patches the tensor maps' address words (none re-encoded) on
  this driver.
- Misaligned views take the copying path; a stream context and a CUDA graph
  capture see the launch on the current stream.
- Attention on new q, k, v each call (fused-QKV views, [B, S, H, D]
  transposed, grouped heads, a longer cache, O through a dense buffer).

Run: `pytest -m gpu tests/runtime/test_torch_calls_gpu.py`.
"""

from __future__ import annotations

import pytest

import tawa.torch as tt

pytestmark = pytest.mark.gpu
TOL = 1e-2


@pytest.fixture
def torch(cuda):
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


def rel_err(x, ref) -> float:
    return ((x.float() - ref).norm() / ref.norm()).item()


def poison_next(torch, shape, dtype) -> int:
    t = torch.full(shape, float("nan"), dtype=dtype, device="cuda")
    ptr = t.data_ptr()
    del t
    return ptr


@pytest.mark.parametrize("M, N, K, transpose_b, batch", [
    (200, 136, 72, True, None), (257, 264, 128, False, None), (1, 64, 64, True, None), (100, 96, 64, True, 3),
])  # fmt: skip
def test_fresh_tensors_every_call_match_the_reference(torch, seed, M, N, K, transpose_b, batch):
    from tawa.torch import calls

    g = torch.Generator(device="cuda").manual_seed(seed)
    bf16 = torch.bfloat16
    lead = (batch,) if batch else ()
    # A pool of operands of one layout at different addresses: separate tensors
    # and slices of one big buffer at 16-byte-aligned offsets.
    big = torch.randn(8 * (M * K + 64), device="cuda", generator=g).to(bf16)
    xs = [torch.randn(*lead, M, K, device="cuda", generator=g).to(bf16) for _ in range(3)]
    xs += [big[i * (M * K + 64):][: (batch or 1) * M * K].view(*lead, M, K) for i in range(3)]
    b_shape = (N, K) if transpose_b else (K, N)
    ws = [torch.randn(*b_shape, device="cuda", generator=g).to(bf16) for _ in range(3)]
    calls._MATMUL.clear()
    for i in range(12):
        x, w = xs[i % len(xs)], ws[i % len(ws)]
        ptr = poison_next(torch, (*lead, M, N), bf16)
        out = tt.matmul(x, w, transpose_b=transpose_b)
        assert out.data_ptr() == ptr, "the output did not get the poisoned block: the test proves nothing"
        ref = x.float() @ (w.float().T if transpose_b else w.float())
        assert rel_err(out, ref) <= TOL, (i, rel_err(out, ref))
    (call,) = calls._MATMUL.values()
    assert call.bound is not None, "no launch template: every call took the checked path"
    assert not call.bound.template.remap, "the driver's tensor maps were re-encoded (address word not found)"


def test_misaligned_views_are_copied_and_correct(torch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    bf16 = torch.bfloat16
    base = torch.randn(130 * 64 + 8, device="cuda", generator=g).to(bf16)
    w = torch.randn(96, 64, device="cuda", generator=g).to(bf16)
    for offset in (0, 1, 8, 0, 1):  # aligned and 2-byte / 16-byte offsets, in turn
        x = base[offset:][: 130 * 64].view(130, 64)
        out = tt.matmul(x, w, transpose_b=True)
        assert rel_err(out, x.float() @ w.float().T) <= TOL, offset


def test_calls_follow_the_current_stream_and_graph_capture(torch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    bf16 = torch.bfloat16
    x = torch.randn(256, 128, device="cuda", generator=g).to(bf16)
    w = torch.randn(192, 128, device="cuda", generator=g).to(bf16)
    for _ in range(3):  # the template exists after the second call
        tt.matmul(x.clone(), w, transpose_b=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x2 = x.clone()
        out = tt.matmul(x2, w, transpose_b=True)
    torch.cuda.current_stream().wait_stream(side)
    assert rel_err(out, x.float() @ w.float().T) <= TOL
    static_x = x.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = tt.matmul(static_x, w, transpose_b=True)
    for _ in range(2):
        static_x.copy_(torch.randn(256, 128, device="cuda", generator=g).to(bf16))
        graph.replay()
        assert rel_err(static_out, static_x.float() @ w.float().T) <= TOL


@pytest.mark.parametrize("B, H, Hkv, S, Sk, D, causal, layout", [
    (2, 4, 4, 200, 200, 64, True, "qkv"),    # permuted views of a fused QKV projection
    (1, 8, 2, 65, 300, 128, True, "bshd"),   # grouped heads against a longer cache, [B, S, H, D] transposed
    (2, 2, 2, 130, 130, 128, False, "dense"),
    (1, 4, 4, 100, 100, 256, False, "bshd"),  # head dim 256: O through a dense buffer where stored by threads
])  # fmt: skip
def test_attention_on_fresh_tensors_every_call(torch, seed, B, H, Hkv, S, Sk, D, causal, layout):
    """Eager attention calls on new q, k, v (and a new output) each time, of
    one layout: the second call on launches through the template, every
    output written in full and right against a float32 reference."""
    from tawa.torch import calls

    g = torch.Generator(device="cuda").manual_seed(seed)
    bf16 = torch.bfloat16

    def operands():
        if layout == "qkv":
            return torch.randn(B, S, 3, H, D, device="cuda", generator=g).to(bf16).permute(2, 0, 3, 1, 4)
        if layout == "bshd":
            q = torch.randn(B, S, H, D, device="cuda", generator=g).to(bf16).transpose(1, 2)
            return (q, *(torch.randn(B, Sk, Hkv, D, device="cuda", generator=g).to(bf16).transpose(1, 2)
                         for _ in range(2)))
        return (torch.randn(B, H, S, D, device="cuda", generator=g).to(bf16),
                *(torch.randn(B, Hkv, Sk, D, device="cuda", generator=g).to(bf16) for _ in range(2)))

    calls._ATTENTION.clear()
    for i in range(5):
        q, k, v = operands()
        poison_next(torch, (B, H, S, D), bf16)
        out = tt.attention(q, k, v, causal=causal)
        assert not torch.isnan(out.float()).any(), f"call {i}: some of O was not written"
        group = H // Hkv
        kf, vf = (t.float().repeat_interleave(group, 1) for t in (k, v))
        mask = torch.ones(S, Sk, dtype=torch.bool, device="cuda").tril(Sk - S) if causal else None
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), kf, vf, attn_mask=mask)
        assert rel_err(out, ref) <= TOL, (i, rel_err(out, ref))
    (call,) = calls._ATTENTION.values()
    assert call.bound is not None and call.launches == 1, "calls after the first took the checked path"
    assert not call.bound.template.remap, "the driver's tensor maps were re-encoded (address word not found)"
