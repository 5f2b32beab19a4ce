"""tawa.torch.linear and tawa.torch.gated_mlp on a Hopper GPU.

- Each activation × bias × residual, and gated with each activation,
  against a float32 reference on ragged shapes: M = 1, 17, 200 (x 3-D,
  [2, 100, K]) and 1000, N and K multiples of 8 but not of the tile, on the
  small problems' tile and on a large problem's (the heuristic's largest,
  smaller where the epilogue's live tiles need it); f16; x 1-D.  The output
  is the operator's own allocation: the block the caching allocator hands it
  is filled with NaN first (the test checks it got that block), and every
  element must come out finite; relative Frobenius error ≤ 1e-2 and each
  element within 2e-2 of the reference's scale.
- Layouts: x a column slice (read in place), w given as the `.t()` of a
  [K, N] matrix (read as [K, N] in place), a strided bias and a transposed
  residual (copied), a column slice as the residual (read in place, with its
  row stride), the gate and up weights as halves of one fused weight.
- A CUDA graph of each operator: replays on new inputs equal eager runs
  bitwise; an MLP block under `torch.compile(fullgraph=True)`.

Run: `pytest -m gpu tests/runtime/test_linear_gpu.py` (CuPy, cuda-bindings,
torch ≥ 2.5, an sm_90 GPU); elsewhere every test skips and says why.
"""

from __future__ import annotations

import itertools
import math

import pytest

import tawa.torch as tt

pytestmark = pytest.mark.gpu
TOL = 1e-2
ACTIVATIONS = [None, "gelu_tanh", "silu", "relu"]
LEADS = [(1,), (17,), (2, 100), (1000,)]
"""x's leading dimensions: M = 1, 17, 200 (x 3-D) and 1000."""
N, K = 264, 200
"""Multiples of 8, not of any tile."""
LARGE = ((1000,), 4104, 520)
"""Enough tiles of the largest sizes to fill the SMs (128×256 or 256×128 by the heuristic)."""


@pytest.fixture
def torch(cuda):
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


def act(torch, kind, y):
    """The activation in float32 (torch's definitions)."""
    F = torch.nn.functional
    if kind == "gelu_tanh":
        return F.gelu(y, approximate="tanh")
    if kind == "silu":
        return F.silu(y)
    return torch.relu(y) if kind == "relu" else y


def poison_next(torch, shape, dtype) -> int:
    """Frees a NaN-filled block of `shape`: the caching allocator hands it to
    the next allocation of that size on this stream.  Returns its address."""
    t = torch.full(shape, float("nan"), dtype=dtype, device="cuda")
    ptr = t.data_ptr()
    del t
    return ptr


def check(torch, run, ref_of, out_shape, dtype, what):
    """`run()` after a warm-up call (which compiles and loads the kernel),
    its output in a poisoned block, against `ref_of()` in float32."""
    del_me = run()
    del del_me
    ptr = poison_next(torch, out_shape, dtype)
    y = run()
    assert y.shape == out_shape and y.dtype == dtype and y.is_contiguous()
    assert y.data_ptr() == ptr, "the output did not get the poisoned block: the test proves nothing"
    torch.cuda.synchronize()
    bad = int((~torch.isfinite(y)).sum())
    assert bad == 0, f"{what}: {bad} of {y.numel()} output elements are not finite (not written?)"
    ref = ref_of()
    err = ((y.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"{what}: relative error {err:.3g} > {TOL}"
    worst = ((y.float() - ref).abs().max() / ref.abs().max()).item()
    assert worst <= 2 * TOL, f"{what}: an element off by {worst:.3g} of the reference's largest"


def inputs(torch, seed, lead, n, k, dtype, bias, residual, gated=False):
    g = torch.Generator(device="cuda").manual_seed(seed)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=g) * scale).to(dtype)

    x = randn(*lead, k)
    ws = [randn(n, k, scale=k**-0.5) for _ in range(1 + gated)]  # products of unit scale: the activations bend
    b = randn(n) if bias else None
    r = randn(*lead, n) if residual else None
    return x, ws, b, r


def linear_reference(torch, x, w, b, activation, r):
    y = x.float() @ w.float().T
    if b is not None:
        y = y + b.float()
    y = act(torch, activation, y)
    return y if r is None else y + r.float()


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
@pytest.mark.parametrize("bias, residual", list(itertools.product([False, True], repeat=2)),
                         ids=["plain", "residual", "bias", "bias-residual"])
def test_linear(torch, seed, activation, bias, residual):
    for lead in LEADS:
        x, (w,), b, r = inputs(torch, seed, lead, N, K, torch.bfloat16, bias, residual)
        check(torch, lambda: tt.linear(x, w, b, activation, r), lambda: linear_reference(torch, x, w, b, activation, r),
              (*lead, N), torch.bfloat16, f"{lead}x{N}x{K}")


@pytest.mark.parametrize("activation, bias, residual", [
    (None, False, False), ("gelu_tanh", True, True), ("silu", False, True), ("relu", True, False)])
def test_linear_large_tile(torch, seed, activation, bias, residual):
    lead, n, k = LARGE
    x, (w,), b, r = inputs(torch, seed, lead, n, k, torch.bfloat16, bias, residual)
    check(torch, lambda: tt.linear(x, w, b, activation, r), lambda: linear_reference(torch, x, w, b, activation, r),
          (*lead, n), torch.bfloat16, f"{lead}x{n}x{k}")


CLUSTERED = ((1024,), 1536, 1000)
"""Rows of x not whole L2 sectors apart (K·2 = 2000 bytes): the cost model
with the H100's parameters takes a 2-CTA cluster (B multicast) for these
epilogue kernels (another GPU's may not: the test asks for the H100's)."""


@pytest.mark.parametrize("gated", [False, True], ids=["linear", "gated_mlp"])
def test_clustered_epilogue_kernels(torch, seed, gated, monkeypatch, request):
    from tawa.analysis.gemm_cost import FITTED
    from tawa.kernels.gemm import Epilogue
    from tawa.runtime import autotune
    from tawa.torch import linear_kernels
    from tawa.torch.linear_kernels import epilogue_choice

    monkeypatch.setattr(autotune, "machine_parameters", lambda: FITTED)
    linear_kernels.clear_cache()
    request.addfinalizer(linear_kernels.clear_cache)  # no clustered kernel remembered for later tests
    lead, n, k = CLUSTERED
    epilogue = Epilogue(activation="silu", gated=True) if gated else Epilogue(bias=True, activation="gelu_tanh",
                                                                               residual=True)
    assert epilogue_choice("nk", "bfloat16", lead[0], n, k, epilogue).cluster == 2
    x, ws, b, r = inputs(torch, seed, lead, n, k, torch.bfloat16, not gated, not gated, gated=gated)
    if gated:
        check(torch, lambda: tt.gated_mlp(x, *ws), lambda: gated_reference(torch, x, *ws, "silu"),
              (*lead, n), torch.bfloat16, "clustered gated_mlp")
    else:
        check(torch, lambda: tt.linear(x, ws[0], b, "gelu_tanh", r),
              lambda: linear_reference(torch, x, ws[0], b, "gelu_tanh", r), (*lead, n), torch.bfloat16,
              "clustered linear")


def gated_reference(torch, x, wg, wu, activation):
    return act(torch, activation, x.float() @ wg.float().T) * (x.float() @ wu.float().T)


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh", "relu"])
def test_gated_mlp(torch, seed, activation):
    for lead in LEADS:
        x, (wg, wu), _, _ = inputs(torch, seed, lead, N, K, torch.bfloat16, False, False, gated=True)
        check(torch, lambda: tt.gated_mlp(x, wg, wu, activation), lambda: gated_reference(torch, x, wg, wu, activation),
              (*lead, N), torch.bfloat16, f"{lead}x{N}x{K}")


def test_gated_mlp_large_tile(torch, seed):
    lead, n, k = LARGE
    x, (wg, wu), _, _ = inputs(torch, seed, lead, n, k, torch.bfloat16, False, False, gated=True)
    check(torch, lambda: tt.gated_mlp(x, wg, wu), lambda: gated_reference(torch, x, wg, wu, "silu"),
          (*lead, n), torch.bfloat16, f"{lead}x{n}x{k}")


def test_f16_and_1d_x(torch, seed):
    x, (w,), b, r = inputs(torch, seed, (3, 70), N, K, torch.float16, True, True)
    check(torch, lambda: tt.linear(x, w, b, "silu", r), lambda: linear_reference(torch, x, w, b, "silu", r),
          (3, 70, N), torch.float16, "f16 linear")
    x, (wg, wu), _, _ = inputs(torch, seed, (200,), N, K, torch.float16, False, False, gated=True)
    check(torch, lambda: tt.gated_mlp(x, wg, wu), lambda: gated_reference(torch, x, wg, wu, "silu"),
          (200, N), torch.float16, "f16 gated_mlp")
    x, (w,), b, r = inputs(torch, seed, (), N, K, torch.bfloat16, True, True)  # x [K] → [N], as nn.Linear
    check(torch, lambda: tt.linear(x, w, b, "relu", r), lambda: linear_reference(torch, x, w, b, "relu", r),
          (N,), torch.bfloat16, "1-D x")


def test_layouts(torch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    bf = torch.bfloat16

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=g) * scale).to(bf)

    M = 300
    x = randn(M, 2 * K)[:, :K]  # rows of 800 bytes: read in place
    w = randn(K, N, scale=K**-0.5).t()  # read as [K, N] in place
    b = randn(2 * N)[::2]  # strided: copied
    r = randn(N, M).t()  # transposed: copied
    check(torch, lambda: tt.linear(x, w, b, "gelu_tanh", r), lambda: linear_reference(torch, x, w, b, "gelu_tanh", r),
          (M, N), bf, "strided operands")
    w_odd = randn(K, 2 * N, scale=K**-0.5)[:, ::2].t()  # no tensor map reads it: copied to [N, K]
    check(torch, lambda: tt.linear(x, w_odd), lambda: linear_reference(torch, x, w_odd, None, None, None),
          (M, N), bf, "copied weight")
    wgu = randn(2 * N, K, scale=K**-0.5)  # one fused gate-up weight: its halves read in place
    check(torch, lambda: tt.gated_mlp(x, wgu[:N], wgu[N:]), lambda: gated_reference(torch, x, wgu[:N], wgu[N:], "silu"),
          (M, N), bf, "fused gate-up weight")
    wg_kn, wu_kn = randn(K, N, scale=K**-0.5), randn(K, N, scale=K**-0.5)  # both read as [K, N]
    check(torch, lambda: tt.gated_mlp(x, wg_kn.t(), wu_kn.t()),
          lambda: gated_reference(torch, x, wg_kn.t(), wu_kn.t(), "silu"), (M, N), bf, "gated [K, N] weights")
    r_slice = randn(M, 3 * N)[:, N : 2 * N]  # the consumer threads take its row stride: read in place
    check(torch, lambda: tt.linear(x, w, b, "gelu_tanh", r_slice),
          lambda: linear_reference(torch, x, w, b, "gelu_tanh", r_slice), (M, N), bf, "a column slice as the residual")


def test_degenerate_sizes_and_errors(torch):
    bf = torch.bfloat16
    w = torch.randn(N, K, device="cuda").to(bf)
    assert tt.linear(torch.ones(0, K, dtype=bf, device="cuda"), w).shape == (0, N)
    bias = torch.randn(N, device="cuda").to(bf)
    y = tt.linear(torch.ones(5, 0, dtype=bf, device="cuda"), torch.ones(N, 0, dtype=bf, device="cuda"), bias, "relu")
    assert torch.equal(y, torch.relu(bias.float()).to(bf).expand(5, N))
    with pytest.raises(TypeError, match="tawa.torch.linear: x is float32"):
        tt.linear(torch.ones(4, K, device="cuda"), w)
    with pytest.raises(ValueError, match="tawa.torch.linear: residual must have the output's shape"):
        tt.linear(torch.ones(4, K, dtype=bf, device="cuda"), w, residual=torch.ones(4, N + 8, dtype=bf, device="cuda"))
    with pytest.raises(ValueError, match="unknown activation 'gelu'"):
        tt.linear(torch.ones(4, K, dtype=bf, device="cuda"), w, activation="gelu")
    with pytest.raises(ValueError, match="tawa.torch.gated_mlp: w_up is on cpu"):
        tt.gated_mlp(torch.ones(4, K, dtype=bf, device="cuda"), w, w.cpu())


@pytest.mark.parametrize("op", ["linear", "gated_mlp"])
def test_cuda_graph_replay(torch, seed, op, replays_match_eager):
    """Captured in a CUDA graph: replays on new inputs equal eager runs bitwise."""
    bf = torch.bfloat16
    if op == "linear":
        def fn(x, w, b, r):
            return tt.linear(x, w, b, "gelu_tanh", r)
        make = [inputs(torch, seed + i, (2, 100), N, K, bf, True, True) for i in range(3)]
        args = [(x, w, b, r) for x, (w,), b, r in make]
    else:
        def fn(x, wg, wu):
            return tt.gated_mlp(x, wg, wu)
        make = [inputs(torch, seed + i, (2, 100), N, K, bf, False, False, gated=True) for i in range(3)]
        args = [(x, wg, wu) for x, (wg, wu), _, _ in make]
    replays_match_eager(fn, args)


def test_mlp_block_under_torch_compile(torch, seed):
    """A GPT-2 MLP (GELU-tanh, residual) and a Llama MLP (SwiGLU, residual),
    each linear layer one tawa operator, compiled with fullgraph=True,
    against eager PyTorch."""
    F = torch.nn.functional
    bf, d, h = torch.bfloat16, 256, 1024
    g = torch.Generator(device="cuda").manual_seed(seed)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=g) * scale).to(bf)

    x = randn(2, 100, d)
    w1, b1, w2, b2 = randn(h, d, scale=d**-0.5), randn(h), randn(d, h, scale=h**-0.5), randn(d)
    wg, wu, wd = randn(h, d, scale=d**-0.5), randn(h, d, scale=d**-0.5), randn(d, h, scale=h**-0.5)

    def tawa_block(x):
        y = tt.linear(tt.linear(x, w1, b1, "gelu_tanh"), w2, b2, residual=x)
        return tt.linear(tt.gated_mlp(y, wg, wu), wd, residual=y)

    def torch_block(x):
        x = x.float()
        y = F.linear(F.gelu(F.linear(x, w1.float(), b1.float()), approximate="tanh"), w2.float(), b2.float()) + x
        return F.linear(F.silu(F.linear(y, wg.float())) * F.linear(y, wu.float()), wd.float()) + y

    got = torch.compile(tawa_block, fullgraph=True)(x)
    ref = torch_block(x)
    err = ((got.float() - ref).norm() / ref.norm()).item()
    assert math.isfinite(err) and err <= 2 * TOL, f"relative error {err:.3g}"
