"""tawa.torch.rms_norm, layer_norm and add_rms_norm on a Hopper GPU.

- Against torch in float32 on ragged shapes: M = 1, 37 and 3×333 rows, N =
  64, 700 (not a power of two), 1024, 4096, 8192, 16384, 16684 and 20480
  (each tile the operator chooses; the widest rows, and LayerNorm's at
  16384, loop over chunks of one row, which the consumers load themselves),
  inputs of mean 0.5 (LayerNorm's centring matters).  Outputs are
  the operator's own allocations in blocks filled with NaN first; every
  element must come out finite, within 3e-2 of the reference (bf16 outputs).
- Layouts: a transposed x (copied), x a row slice of a wider matrix (not
  dense: copied), a residual from a permuted view.
- The gated MLP's elementwise gradient (`tawa::swiglu_grad`) on the same
  shapes and Llama-3-8B's MLP width.
- The rotary embedding of a fused QKV projection's q and k heads (head dims
  64, 128, 256; S = 100, 7, 1) against a rotate-half reference.
- A CUDA graph of each operator: replays on new inputs equal eager runs
  bitwise; the three under `torch.compile(fullgraph=True)`.

Run: `pytest -m gpu tests/runtime/test_norm_ops_gpu.py` (CuPy, cuda-bindings,
torch ≥ 2.5, an sm_90 GPU); elsewhere every test skips and says why.
"""

from __future__ import annotations

import pytest

import tawa.torch as tt

pytestmark = pytest.mark.gpu
TOL = 3e-2
EPS = 1e-5
SHAPES = [((1,), 64), ((37,), 700), ((3, 333), 1024), ((37,), 4096), ((5,), 8192), ((3,), 16384), ((9,), 16684),
          ((33,), 20480)]


@pytest.fixture
def torch(cuda):
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


def rand(torch, g, *shape, mean=0.0):
    return (torch.randn(*shape, device="cuda", generator=g) + mean).to(torch.bfloat16)


def poisoned_run(torch, run, shape, outputs=1):
    """`run()` after a warm-up (compiles, loads), its outputs in NaN-filled blocks."""
    del_me = run()
    del del_me
    blocks = [torch.full(shape, float("nan"), dtype=torch.bfloat16, device="cuda") for _ in range(outputs)]
    ptrs = [b.data_ptr() for b in blocks]
    del blocks
    out = run()
    out = out if isinstance(out, tuple) else (out,)
    assert sorted(o.data_ptr() for o in out) == sorted(ptrs), "the outputs did not get the poisoned blocks"
    torch.cuda.synchronize()
    for o in out:
        assert o.shape == shape and o.dtype == torch.bfloat16 and o.is_contiguous()
        assert bool(torch.isfinite(o).all()), "output elements not finite (not written?)"
    return out


def close(torch, got, want, what):
    diff = (got.float() - want.float()).abs()
    err = diff.max().item()
    scale = max(1.0, want.float().abs().max().item())
    if err > TOL * scale:  # where, to tell a wrong program from a stray write
        bad = (diff > TOL * scale).nonzero()
        first = tuple(bad[0].tolist())
        raise AssertionError(f"{what}: {bad.shape[0]} elements off, the worst by {err:.3g} (scale {scale:.3g}); "
                             f"first at {first} of {tuple(got.shape)}: got {got[first].item():.4g}, "
                             f"want {want[first].item():.4g}")


@pytest.mark.parametrize("lead, n", SHAPES, ids=lambda v: str(v))
def test_norms(torch, seed, lead, n):
    F = torch.nn.functional
    g = torch.Generator(device="cuda").manual_seed(seed)
    x, r = rand(torch, g, *lead, n, mean=0.5), rand(torch, g, *lead, n)
    w, b = rand(torch, g, n, mean=1.0), rand(torch, g, n)
    shape = (*lead, n)
    (y,) = poisoned_run(torch, lambda: tt.rms_norm(x, w, EPS), shape)
    close(torch, y, F.rms_norm(x.float(), (n,), w.float(), EPS), f"rms_norm {shape}")
    (y,) = poisoned_run(torch, lambda: tt.layer_norm(x, w, b, EPS), shape)
    close(torch, y, F.layer_norm(x.float(), (n,), w.float(), b.float(), EPS), f"layer_norm {shape}")
    y, s = poisoned_run(torch, lambda: tt.add_rms_norm(x, r, w, EPS), shape, outputs=2)
    assert torch.equal(s, x + r), "the new residual stream is x + residual in bf16"
    close(torch, y, F.rms_norm(s.float(), (n,), w.float(), EPS), f"add_rms_norm {shape}")


@pytest.mark.parametrize("lead, n", SHAPES + [((8192,), 14336)], ids=lambda v: str(v))
def test_swiglu_grad(torch, seed, lead, n):
    """dG and dU of silu(G)·U (the gated MLP's backward pass) against torch
    autograd in float32; both outputs in NaN-filled blocks."""
    from tawa.torch import norm_ops

    g = torch.Generator(device="cuda").manual_seed(seed)
    dy, G, U = (rand(torch, g, *lead, n) for _ in range(3))
    shape = (*lead, n)
    dg, du = poisoned_run(torch, lambda: norm_ops.swiglu_grad(dy, G, U), shape, outputs=2)
    gf, uf = G.float().requires_grad_(), U.float().requires_grad_()
    (torch.nn.functional.silu(gf) * uf).backward(dy.float())
    close(torch, dg, gf.grad, f"dG {shape}")
    close(torch, du, uf.grad, f"dU {shape}")


def test_strided_views_are_copied(torch, seed):
    F = torch.nn.functional
    g = torch.Generator(device="cuda").manual_seed(seed)
    wide = rand(torch, g, 50, 1536)
    x = wide[:, 256:1280]  # rows of a wider matrix
    xt = rand(torch, g, 1024, 50).t()  # transposed
    r = rand(torch, g, 1024, 50).permute(1, 0)
    w = rand(torch, g, 1024, mean=1.0)
    close(torch, tt.rms_norm(x, w, EPS), F.rms_norm(x.float(), (1024,), w.float(), EPS), "row slice")
    close(torch, tt.rms_norm(xt, w, EPS), F.rms_norm(xt.float(), (1024,), w.float(), EPS), "transposed")
    y, s = tt.add_rms_norm(x, r, w, EPS)
    assert torch.equal(s, x + r)
    close(torch, y, F.rms_norm(s.float(), (1024,), w.float(), EPS), "add_rms_norm of views")


@pytest.mark.parametrize("B, S, H, Hkv, D", [(2, 100, 32, 8, 128), (3, 7, 4, 4, 64), (1, 1, 2, 1, 256)])
def test_rotary_of_a_fused_projection(torch, seed, B, S, H, Hkv, D):
    """q's and k's heads of a fused QKV projection rotated side by side
    (ragged S: S = 100 takes programs of 4 positions, S = 7 of one)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    qkv = rand(torch, g, B, S, (H + 2 * Hkv) * D)
    angles = torch.randn(S, D // 2, device="cuda", generator=g).repeat(1, 2) * 3
    cos, sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)
    (y,) = poisoned_run(torch, lambda: tt.rotary(qkv, cos, sin, H + Hkv), (B, S, (H + Hkv) * D))
    heads = qkv[..., : (H + Hkv) * D].unflatten(-1, (H + Hkv, D)).float()
    first, second = heads.chunk(2, dim=-1)
    want = heads * cos[:, None].float() + torch.cat((-second, first), dim=-1) * sin[:, None].float()
    close(torch, y, want.flatten(-2), f"rotary {B}x{S}x{H}+{Hkv}x{D}")


@pytest.mark.parametrize("op", ["rms_norm", "layer_norm", "add_rms_norm", "rotary"])
def test_cuda_graph_replay(torch, seed, op, replays_match_eager):
    """Captured in a CUDA graph: replays on new inputs equal eager runs bitwise."""
    n = 1024
    g = torch.Generator(device="cuda").manual_seed(seed)
    w, b = rand(torch, g, n, mean=1.0), rand(torch, g, n)
    angles = torch.randn(100, 32, device="cuda", generator=g).repeat(1, 2)
    cos, sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)
    fn = {"rotary": lambda x, r: tt.rotary(x, cos, sin, 8),
          "rms_norm": lambda x, r: tt.rms_norm(x, w, EPS),
          "layer_norm": lambda x, r: tt.layer_norm(x, w, b, EPS),
          "add_rms_norm": lambda x, r: tt.add_rms_norm(x, r, w, EPS)}[op]
    args = [(rand(torch, g, 2, 100, n), rand(torch, g, 2, 100, n)) for _ in range(3)]
    replays_match_eager(fn, args)


def test_under_torch_compile(torch, seed):
    F = torch.nn.functional
    n = 2048
    g = torch.Generator(device="cuda").manual_seed(seed)
    x, r = rand(torch, g, 4, 64, n), rand(torch, g, 4, 64, n)
    w, b = rand(torch, g, n, mean=1.0), rand(torch, g, n)

    def block(x, r):
        y, s = tt.add_rms_norm(x, r, w, EPS)
        return tt.layer_norm(y, w, b, EPS) + s

    def reference(x, r):
        s = x + r
        y = F.rms_norm(s.float(), (n,), w.float(), EPS).to(torch.bfloat16)
        return F.layer_norm(y.float(), (n,), w.float(), b.float(), EPS) + s.float()

    got = torch.compile(block, fullgraph=True)(x, r)
    close(torch, got, reference(x, r), "compiled block")


@pytest.mark.parametrize("B, S, n", [(2, 333, 1024), (1, 77, 700)], ids=str)
def test_norms_of_column_slices_read_in_place(torch, seed, monkeypatch, B, S, n):
    """x and the residual as column slices of fused projections [B, S, 3·n]:
    the kernels take their row stride, so neither is copied (`dense_copy`
    never called); outputs in NaN-filled blocks match float32."""
    from tawa.torch import norm_ops

    F = torch.nn.functional
    copied = []
    real = norm_ops.dense_copy
    monkeypatch.setattr(norm_ops, "dense_copy", lambda t: copied.append(tuple(t.shape)) or real(t))
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = rand(torch, g, B, S, 3 * n, mean=0.5)[..., n : 2 * n]
    r = rand(torch, g, B, S, 3 * n)[..., 2 * n :]
    w = rand(torch, g, n, mean=1.0)
    shape = (B, S, n)
    (y,) = poisoned_run(torch, lambda: tt.rms_norm(x, w, EPS), shape)
    close(torch, y, F.rms_norm(x.float(), (n,), w.float(), EPS), f"rms_norm of a column slice {shape}")
    y, s = poisoned_run(torch, lambda: tt.add_rms_norm(x, r, w, EPS), shape, outputs=2)
    assert torch.equal(s, x + r), "the new residual stream is x + residual in bf16"
    close(torch, y, F.rms_norm(s.float(), (n,), w.float(), EPS), f"add_rms_norm of column slices {shape}")
    assert copied == [], f"copied: {copied}"
