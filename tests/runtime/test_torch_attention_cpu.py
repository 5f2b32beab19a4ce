"""`tawa.torch.attention` on layouts, grouped heads and a longer cache, without a GPU.

- The checks (no torch): grouped-query and multi-query heads, queries
  against a longer cache, one-line errors; which views a tensor map reads
  in place (`checks.tma_readable`); the output's strides.
- With torch (skipped, saying why, without it): the real implementation on
  CPU tensors with a stand-in kernel (what is passed to the kernel: the
  given views, not copies; the grid; the output's layout), the fake
  implementation's strides against the real one's, and a
  `torch.compile(fullgraph=True)` trace of a block that feeds a fused QKV
  projection's output to attention and attention's output to the next
  projection.
"""

from __future__ import annotations

import math
import types

import pytest

import tawa.torch as tt
from tawa.torch import checks, kernels
from tawa.torch.checks import TensorInfo

CUDA = "cuda:0"


def info(shape, strides=None, ptr=1 << 20, dtype="bfloat16"):
    """A TensorInfo; `strides` (elements) default to row-major."""
    if strides is None:
        strides, step = [], 1
        for d in reversed(shape):
            strides.append(step)
            step *= max(d, 1)
        strides = tuple(reversed(strides))
    return TensorInfo(tuple(shape), dtype, CUDA, tuple(strides), ptr)


def qkv_views(B, S, H, D, ptr=1 << 20):
    """q, k, v of `qkv.view(B, S, 3, H, D).permute(2, 0, 3, 1, 4)` as TensorInfos."""
    strides = (S * 3 * H * D, D, 3 * H * D, 1)
    return [info((B, H, S, D), strides, ptr + i * H * D * 2) for i in range(3)]


# --------------------------------------------------------------------------- checks (no torch)


@pytest.mark.parametrize(("H", "Hkv"), [(8, 8), (8, 2), (8, 1), (32, 8)])
def test_grouped_heads_and_a_longer_cache(H, Hkv):
    p = checks.check_attention(info([2, H, 70, 128]), info([2, Hkv, 300, 128]), info([2, Hkv, 300, 128]),
                               causal=True)
    assert (p.B, p.H, p.S, p.D, p.kv_heads, p.kv_len, p.group) == (2, H, 70, 128, Hkv, 300, H // Hkv)
    p = checks.check_attention(info([1, 2, 500, 64]), info([1, 2, 30, 64]), info([1, 2, 30, 64]))
    assert (p.S, p.kv_len) == (500, 30)  # more queries than keys: fine without a causal mask


@pytest.mark.parametrize(
    "q, k, causal, message",
    [
        (info([1, 6, 8, 64]), info([1, 4, 8, 64]), False,
         "q has 6 heads, k and v 4: the query heads must be a multiple of the key/value heads"),
        (info([1, 6, 8, 64]), info([1, 0, 8, 64]), False, "q has 6 heads, k and v 0"),
        (info([2, 2, 8, 64]), info([1, 2, 8, 64]), False,
         "q [2, 2, 8, 64] and k, v [1, 2, 8, 64] must have one batch and head dim"),
        (info([1, 2, 8, 64]), info([1, 2, 8, 128]), False, "must have one batch and head dim"),
        (info([1, 2, 80, 64]), info([1, 2, 40, 64]), True,
         "causal attention aligns the 80 queries with the last of the 40 keys (bottom-right): it needs at least"),
        (info([1, 2, 8, 64]), info([1, 2, 0, 64]), False, "k and v have no keys (shape [1, 2, 0, 64])"),
    ],
)
def test_attention_shape_errors(q, k, causal, message):
    with pytest.raises(ValueError) as err:
        checks.check_attention(q, k, k, causal=causal)
    text = str(err.value)
    assert text.startswith("tawa.torch.attention: ") and message in text and "\n" not in text, text


def test_k_and_v_must_agree():
    with pytest.raises(ValueError, match=r"^tawa.torch.attention: k and v must have one shape \[B, Hkv, Sk, D\]; "
                                         r"got k \[1, 2, 8, 64\], v \[1, 2, 9, 64\]$"):
        checks.check_attention(info([1, 2, 8, 64]), info([1, 2, 8, 64]), info([1, 2, 9, 64]))


def test_empty_problems_pass_the_checks():
    assert checks.check_attention(info([1, 2, 0, 64]), info([1, 2, 0, 64]), info([1, 2, 0, 64])).S == 0
    assert checks.check_attention(info([0, 2, 8, 64]), info([0, 2, 0, 64]), info([0, 2, 0, 64])).B == 0


@pytest.mark.parametrize(("t", "readable"), [
    (info([2, 4, 100, 64]), True),  # dense [B, H, S, D]
    (qkv_views(2, 100, 4, 64)[1], True),  # k of a fused QKV projection's output
    (info([2, 4, 100, 64], (100 * 4 * 64, 64, 4 * 64, 1)), True),  # [B, S, H, D] transposed
    (info([2, 4, 100, 64], (100 * 4 * 68, 68, 4 * 68, 1)), False),  # heads 136 bytes apart
    (info([2, 4, 100, 64], (4 * 100 * 64, 100 * 64, 1, 100)), False),  # rows not contiguous
    (info([2, 4, 100, 64], ptr=(1 << 20) + 8), False),  # misaligned base
    (info([2, 1, 1, 64], (64, 0, 0, 1)), True),  # size-1 dimensions: any stride
    (info([2, 4, 100, 64], (0, 100 * 64, 64, 1)), False),  # a batch broadcast (stride 0)
    (info([2, 4, 100, 64], (1 << 40, 100 * 64, 64, 1)), False),  # a stride TMA cannot hold
])
def test_what_a_tensor_map_reads_in_place(t, readable):
    assert checks.tma_readable(t) is readable


def test_output_takes_the_order_of_q():
    q = qkv_views(2, 100, 4, 64)[0]
    assert checks.seq_major(q.shape, q.strides)
    assert checks.attention_out_strides(q.shape, q.strides) == (100 * 4 * 64, 64, 4 * 64, 1)
    dense = info([2, 4, 100, 64])
    assert not checks.seq_major(dense.shape, dense.strides)
    assert checks.attention_out_strides(dense.shape, dense.strides) == (4 * 100 * 64, 100 * 64, 64, 1)
    for one in ([2, 1, 100, 64], [2, 4, 1, 64]):  # one head or one position: both orders are one layout
        assert checks.attention_out_strides(one, info(one).strides) == info(one).strides


def test_bf16_grid_has_a_batch_axis():
    assert checks.attention_grid(200, 16, "attention_fwd", 4) == (2, 16, 4)
    assert checks.attention_grid(200, 16, "attention_fwd_d64", 4) == (2, 16, 4)  # 192 rows a program
    assert checks.attention_grid(1, 8, "attention_fwd_causal", 1) == (1, 8, 1)
    assert checks.attention_grid(200, 6, "attention_fwd_fp8") == (2, 6)  # fp8: B·H on axis 1


# --------------------------------------------------------------------------- with torch


@pytest.fixture
def torch():
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


class StandIn:
    """What a 4-D attention kernel computes, in float32 on the CPU; records its calls."""

    def __init__(self, name, calls):
        self.name, self.calls = name, calls
        # tawa.Kernel.abi: the 80-key head-dim-256 kernels store O from their threads (with its strides).
        self.abi = types.SimpleNamespace(addressed=(3,) if "_n80" in name else ())

    def __call__(self, q, k, v, o, S, Sk, scale, group, grid):
        import torch

        self.calls.append((self.name, (q, k, v, o, S, Sk, scale, group), grid))
        o.copy_(reference(torch, q, k, v, scale, "_causal" in self.name))


def reference(torch, q, k, v, scale, causal):
    """float32 attention of q [B, H, S, D] over k, v [B, Hkv, Sk, D], causal bottom-right."""
    group = q.shape[1] // k.shape[1]
    k, v = (t.float().repeat_interleave(group, 1) for t in (k, v))
    s = q.float() @ k.transpose(-1, -2) * scale
    if causal:
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool).triu(m - n + 1), float("-inf"))
    return s.softmax(-1) @ v


@pytest.fixture
def stand_in(torch, monkeypatch):
    calls = []
    monkeypatch.setattr(checks, "check_devices", lambda *args: None)
    monkeypatch.setattr(kernels, "compiled", lambda name, dtype, **options: StandIn(name, calls))
    from tawa.torch import calls as calls_module

    calls_module.forget()  # calls remembered by earlier tests hold their stand-ins
    yield calls
    calls_module.forget()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("H", "Hkv"), [(4, 4), (8, 2), (8, 1)])
def test_grouped_heads_from_bshd_views(torch, stand_in, causal, H, Hkv):
    """q, k, v as [B, S, H, D] tensors transposed (a model's layout before
    attention), grouped heads, 40 queries against a cache of 100 keys: all
    read in place; O in [B, S, H, D] storage."""
    g = torch.Generator().manual_seed(H + Hkv)
    B, S, Sk, D = 2, 40, 100, 64
    q = torch.randn(B, S, H, D, generator=g).to(torch.bfloat16).transpose(1, 2)
    k, v = (torch.randn(B, Sk, Hkv, D, generator=g).to(torch.bfloat16).transpose(1, 2) for _ in range(2))
    o = tt.attention(q, k, v, causal=causal)
    ((name, args, grid),) = stand_in
    assert grid == (1, H, B) and args[4:] == (S, Sk, 1 / math.sqrt(D), H // Hkv)
    assert all(a is t for a, t in zip(args[:3], (q, k, v)))  # no copies
    assert args[3] is o and o.stride() == (S * H * D, D, H * D, 1)
    assert torch.allclose(o.float(), reference(torch, q, k, v, 1 / math.sqrt(D), causal), atol=2e-2)


def test_views_a_tensor_map_cannot_read_are_copied(torch, stand_in):
    """Rows not contiguous (k as the transpose of [B, H, D, S]) and heads
    not 16 bytes apart (v a slice of wider rows) are copied densely; q,
    dense, is read in place and O is dense."""
    g = torch.Generator().manual_seed(5)
    B, H, S, D = 1, 2, 30, 64
    q = torch.randn(B, H, S, D, generator=g).to(torch.bfloat16)
    k = torch.randn(B, H, D, S, generator=g).to(torch.bfloat16).transpose(2, 3)
    v = torch.randn(B, H, S, D + 4, generator=g).to(torch.bfloat16)[..., :D]
    o = tt.attention(q, k, v)
    ((_, args, _),) = stand_in
    assert args[0] is q and args[1].is_contiguous() and args[2].is_contiguous()
    assert args[1].data_ptr() != k.data_ptr() and args[2].data_ptr() != v.data_ptr()
    assert o.is_contiguous()
    assert torch.allclose(o.float(), reference(torch, q, k, v, 1 / math.sqrt(D), False), atol=2e-2)


def test_a_thread_stored_output_is_written_in_place(torch, stand_in, monkeypatch):
    """The 80-key head-dim-256 kernels store O from their threads, which
    take its strides (`KernelABI.addressed`): a seq-major output is written
    in place, no dense buffer, no copy."""
    from tawa.analysis.attention_cost import VARIANTS

    n80 = next(v for v in VARIANTS[(256, False)] if v.kernel == "attention_fwd_d256_n80")
    monkeypatch.setattr(checks, "attention_variant", lambda *args, **kwargs: n80)
    g = torch.Generator().manual_seed(6)
    B, S, H, D = 1, 20, 2, 256
    q, k, v = torch.randn(B, S, 3, H, D, generator=g).to(torch.bfloat16).permute(2, 0, 3, 1, 4)
    o = tt.attention(q, k, v)
    ((name, args, _),) = stand_in
    assert name == "attention_fwd_d256_n80"
    assert args[3] is o and o.stride() == (S * H * D, D, H * D, 1)


def test_no_keys_and_empty_problems(torch, stand_in):
    bf16 = torch.bfloat16
    o = tt.attention(*(torch.ones(2, 3, 0, 64, dtype=bf16) for _ in range(3)))
    assert o.shape == (2, 3, 0, 64) and stand_in == []
    with pytest.raises(ValueError, match="k and v have no keys"):
        tt.attention(torch.ones(1, 2, 4, 64, dtype=bf16), *(torch.ones(1, 2, 0, 64, dtype=bf16) for _ in range(2)))


@pytest.mark.parametrize("layout", ["dense", "qkv", "bshd"])
def test_fake_strides_are_the_real_ones(torch, stand_in, layout):
    """The fake implementation (meta tensors) returns the strides the real one does."""
    B, S, H, D = 2, 24, 4, 64

    def operands(device):
        if layout == "qkv":
            return tuple(torch.zeros(B, S, 3, H, D, dtype=torch.bfloat16, device=device).permute(2, 0, 3, 1, 4))
        if layout == "bshd":
            return tuple(torch.zeros(B, S, H, D, dtype=torch.bfloat16, device=device).transpose(1, 2)
                         for _ in range(3))
        return tuple(torch.zeros(B, H, S, D, dtype=torch.bfloat16, device=device) for _ in range(3))

    real = tt.attention(*operands("cpu"), causal=True)
    fake = tt.attention(*operands("meta"), causal=True)
    assert (fake.shape, fake.stride(), fake.dtype) == (real.shape, real.stride(), real.dtype)
    assert real.is_contiguous() == (layout == "dense")


def test_fake_checks_grouped_heads(torch):
    q = torch.empty(1, 6, 8, 64, dtype=torch.bfloat16, device="meta")
    k = torch.empty(1, 4, 8, 64, dtype=torch.bfloat16, device="meta")
    with pytest.raises(ValueError, match="the query heads must be a multiple of the key/value heads"):
        tt.attention(q, k, k)
    with pytest.raises(ValueError, match="it needs at least as many keys as queries"):
        tt.attention(q, q[:, :, :4], q[:, :, :4], causal=True)
    o = tt.attention(q, k[:, :2], k[:, :2])  # 6 query heads on 2
    assert o.shape == (1, 6, 8, 64)


def test_opcheck_grouped_heads(torch, stand_in):
    """torch.library.opcheck on grouped heads, a longer cache and the permuted QKV view."""
    g = torch.Generator().manual_seed(7)
    q = torch.randn(1, 4, 20, 64, generator=g).to(torch.bfloat16)
    kv = torch.randn(1, 1, 50, 64, generator=g).to(torch.bfloat16)
    torch.library.opcheck(torch.ops.tawa.attention.default, (q, kv, kv, True, None))
    qkv = torch.randn(2, 20, 3, 2, 64, generator=g).to(torch.bfloat16).permute(2, 0, 3, 1, 4)
    torch.library.opcheck(torch.ops.tawa.attention.default, (*qkv, False, 0.5))


def test_torch_compile_fullgraph_fused_qkv_block(torch):
    """A fused QKV projection's output (tawa.torch.matmul) viewed as q, k, v
    (grouped: 8 query heads, 2 key/value heads), attention, and O viewed
    back as [B, S, H·D] for the output projection: one graph, each operator
    one opaque call, the views traced as views (no copy between them)."""
    B, S, H, Hkv, D = 2, 16, 8, 2, 64

    def block(x, w_qkv, w_o):
        qkv = tt.matmul(x, w_qkv, transpose_b=True)
        q = qkv[..., : H * D].view(B, S, H, D).transpose(1, 2)
        k = qkv[..., H * D : (H + Hkv) * D].view(B, S, Hkv, D).transpose(1, 2)
        v = qkv[..., (H + Hkv) * D :].view(B, S, Hkv, D).transpose(1, 2)
        o = tt.attention(q, k, v, causal=True)
        return tt.matmul(o.transpose(1, 2).reshape(B, S, H * D), w_o, transpose_b=True)

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(block, backend=backend, fullgraph=True)
    meta = dict(dtype=torch.bfloat16, device="meta")
    x = torch.empty(B, S, 512, **meta)
    out = compiled(x, torch.empty((H + 2 * Hkv) * D, 512, **meta), torch.empty(512, H * D, **meta))
    assert out.shape == (B, S, 512)
    (graph,) = graphs
    targets = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    assert sum("tawa.attention" in t for t in targets) == 1 and sum("tawa.matmul" in t for t in targets) == 2
    assert not any("contiguous" in t or "clone" in t for t in targets), targets
    aot = torch.compile(block, backend="aot_eager", fullgraph=True)  # through the fake implementations
    assert aot(x, torch.empty((H + 2 * Hkv) * D, 512, **meta), torch.empty(512, H * D, **meta)).shape == (B, S, 512)
