"""`tawa.torch.attention` on a Hopper GPU: layouts read in place, grouped
heads, queries against a longer cache.

- Against a float32 reference (relative Frobenius error ≤ 1e-2) on ragged
  shapes (S = 1, 65, 200, 1000), query heads per key/value head 1, 4 and 8,
  head dims 64, 128 and 256, causal (aligned bottom-right) and not, with q,
  k, v dense, as the permuted [B, S, 3, H, D] output of a fused QKV
  projection, or as [B, S, H, D] tensors transposed.  The output is the
  operator's own allocation: the block the caching allocator hands it is
  filled with NaN first (the test checks it got that block), and every
  element must come out finite.
- No copy: a call on the permuted QKV view allocates the output and nothing
  else, and the output viewed as [B, S, H·D] (the next projection's input)
  is a view.
- A call captured in a CUDA graph replays on new inputs as eager runs do.

Run: `pytest -m gpu tests/runtime/test_torch_attention_gpu.py` (CuPy,
cuda-bindings, torch ≥ 2.5, an sm_90 GPU); elsewhere every test skips and
says why.
"""

from __future__ import annotations

import math

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


def reference(torch, q, k, v, scale, causal):
    """float32 attention of q [B, H, S, D] over k, v [B, Hkv, Sk, D]; causal
    aligned bottom-right (query i sees keys j <= i + Sk - S)."""
    group = q.shape[1] // k.shape[1]
    k, v = (t.float().repeat_interleave(group, 1) for t in (k, v))
    s = q.float() @ k.transpose(-1, -2) * scale
    if causal:
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool, device=s.device).triu(m - n + 1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def operands(torch, g, layout, B, H, Hkv, S, Sk, D):
    """q [B, H, S, D], k, v [B, Hkv, Sk, D] in `layout`: "dense"; "qkv", views
    of one [B, S, 3, H, D] (H = Hkv, S = Sk); "bshd", [B, S, H, D] tensors
    transposed."""
    bf16 = torch.bfloat16
    if layout == "qkv":
        assert H == Hkv and S == Sk
        return tuple(torch.randn(B, S, 3, H, D, device="cuda", generator=g).to(bf16).permute(2, 0, 3, 1, 4))
    if layout == "bshd":
        q = torch.randn(B, S, H, D, device="cuda", generator=g).to(bf16).transpose(1, 2)
        return (q, *(torch.randn(B, Sk, Hkv, D, device="cuda", generator=g).to(bf16).transpose(1, 2)
                     for _ in range(2)))
    q = torch.randn(B, H, S, D, device="cuda", generator=g).to(bf16)
    return (q, *(torch.randn(B, Hkv, Sk, D, device="cuda", generator=g).to(bf16) for _ in range(2)))


def poison_next(torch, numel, dtype) -> int:
    """Frees a NaN-filled block of `numel` elements: the caching allocator
    hands it to the next allocation of that size on this stream."""
    t = torch.full((numel,), float("nan"), dtype=dtype, device="cuda")
    ptr = t.data_ptr()
    del t
    return ptr


CASES = [  # B, H, Hkv, S, Sk, D, causal, layout
    (2, 4, 4, 200, 200, 64, True, "qkv"),
    (1, 4, 4, 1000, 1000, 128, False, "qkv"),
    (2, 2, 2, 65, 65, 256, True, "qkv"),
    (1, 3, 3, 1, 1, 64, True, "qkv"),
    (2, 8, 2, 200, 200, 128, True, "bshd"),  # 4 query heads per key/value head
    (1, 8, 1, 1000, 1000, 64, False, "bshd"),  # multi-query: 8 on 1
    (2, 16, 2, 65, 65, 256, False, "bshd"),  # 8 per key/value head
    (1, 8, 1, 1, 1, 128, True, "bshd"),
    (2, 4, 1, 65, 1000, 128, True, "bshd"),  # 65 queries against a cache of 1000 keys
    (1, 8, 2, 200, 1000, 64, True, "dense"),
    (1, 2, 2, 1, 200, 256, True, "dense"),  # one query, the last position
    (1, 4, 4, 1000, 65, 128, False, "dense"),  # more queries than keys (not causal)
    (2, 4, 1, 200, 200, 256, False, "dense"),
    (1, 2, 1, 16384, 16384, 256, False, "bshd"),  # the 80-key kernel: O stored by threads, through a copy
]


@pytest.mark.parametrize("B, H, Hkv, S, Sk, D, causal, layout", CASES)
def test_attention(torch, seed, B, H, Hkv, S, Sk, D, causal, layout):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = operands(torch, g, layout, B, H, Hkv, S, Sk, D)
    ptr = poison_next(torch, B * H * S * D, torch.bfloat16)
    o = tt.attention(q, k, v, causal=causal)
    assert o.shape == (B, H, S, D) and o.dtype == torch.bfloat16
    assert o.data_ptr() == ptr, "the output did not get the poisoned block: the test proves nothing"
    if layout != "dense" and H > 1 and S > 1:  # O in [B, S, H, D] storage, as q
        assert o.stride() == (S * H * D, D, H * D, 1)
    else:
        assert o.is_contiguous()
    torch.cuda.synchronize()
    bad = int((~torch.isfinite(o)).sum())
    assert bad == 0, f"{bad} of {o.numel()} output elements are not finite (not written?)"
    ref = reference(torch, q, k, v, 1 / math.sqrt(D), causal)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL} ({B=} {H=} {Hkv=} {S=} {Sk=} {D=} {causal=} {layout})"


def test_the_permuted_qkv_view_is_read_in_place(torch, seed):
    """A warm call on the permuted output of a fused QKV projection makes one
    allocation, the output; the output seen as [B, S, H·D] is a view."""
    B, S, H, D = 2, 512, 8, 64
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = operands(torch, g, "qkv", B, H, H, S, S, D)
    tt.attention(q, k, v, causal=True)  # compiles and loads the kernel
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    o = tt.attention(q, k, v, causal=True)
    after = torch.cuda.memory_stats()["allocation.all.allocated"]
    assert after - before == 1, f"{after - before} allocations: operands were copied"
    flat = o.transpose(1, 2).reshape(B, S, H * D)
    assert flat.data_ptr() == o.data_ptr() and flat.is_contiguous()
    ref = reference(torch, q, k, v, 1 / math.sqrt(D), True)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL}"


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_cuda_graph_replay(torch, seed, compiled, replays_match_eager):
    """Grouped heads (4 per key/value head) from [B, S, H, D] views, causal,
    captured in a CUDA graph: replays on new inputs equal eager runs bitwise."""

    def attend(q, k, v):
        return tt.attention(q, k, v, causal=True)

    fn = torch.compile(attend, fullgraph=True) if compiled else attend
    g = torch.Generator("cuda").manual_seed(seed)
    replays_match_eager(fn, [operands(torch, g, "bshd", 2, 8, 2, 300, 300, 128) for _ in range(3)])
