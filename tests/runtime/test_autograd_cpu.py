"""Autograd through `tawa.torch`'s operators without a GPU (docs/runtime.md, "Autograd").

The backward passes' glue — which kernels run on which operands (views
read in place, copies, zero padding of unaligned reductions), their grids,
the recomputed pre-activations, the grouped heads' sums — on CPU tensors
against torch autograd of float32 references:

- attention: the kernels are the tile programs of
  examples/python/attention_bwd.py themselves, run by tawa's CPU
  interpreter (the forward that stores the log-sum-exp, Delta, dK/dV, dQ);
- matmul, linear, gated_mlp: stand-in kernels computing in float32 what the
  generated GEMMs compute (tests/runtime/test_torch_cpu.py's and
  tests/runtime/test_linear_cpu.py's).

Skipped, saying why, without torch.
"""

from __future__ import annotations

import math
import types

import ml_dtypes
import pytest
from test_linear_cpu import StandIn as LinearStandIn
from test_norm_ops_cpu import Interpreted as NormInterpreted
from test_torch_cpu import StandIn as KernelStandIn

import tawa.torch as tt
from tawa.torch import attention_bwd_kernels as abk
from tawa.torch import checks, kernels, linear_kernels, norm_kernels

BF16 = ml_dtypes.bfloat16
TOL = 2e-2  # relative Frobenius error of bf16 gradients


@pytest.fixture
def torch():
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


class Interpreted:
    """Kernel `name` of examples/python/attention_bwd.py with its constexprs,
    run by the CPU interpreter on the torch CPU tensors a launch passes
    (arrays shared, written in place); records the launch."""

    ADDRESSED = {abk.FWD: (4,), abk.PRE: (0, 1, 2), abk.DKDV: (4, 5), abk.DQ: (4, 5)}
    """The arguments each compiled kernel's threads address (`KernelABI.addressed`):
    the preprocess's O, dO and Delta; the others' LSE and Delta. The rest are
    read or written through tensor maps."""

    def __init__(self, name, values, launches):
        self.name, self.values, self.launches = name, values, launches
        self.abi = types.SimpleNamespace(addressed=self.ADDRESSED.get(name, ()))

    def __call__(self, *args, grid):
        import torch

        self.launches.append((self.name, self.values, grid, args))
        arrays = []
        for a in args:
            if isinstance(a, torch.Tensor):
                a = a.view(torch.int16).numpy().view(BF16) if a.dtype == torch.bfloat16 else a.numpy()
            arrays.append(a)
        getattr(abk.module(), self.name).interpret(grid, *arrays, **self.values)


@pytest.fixture
def kernels_on_cpu(torch, monkeypatch):
    """Real implementations on CPU tensors: attention's training kernels run
    by the interpreter, the GEMMs by stand-ins, the elementwise kernels by
    the interpreter.  Yields the launches:
    {"attention": [...], "matmul": [...], "linear": [...], "norms": [...]}."""
    from tawa.torch import calls as calls_module

    launches = {"attention": [], "matmul": [], "linear": [], "norms": []}
    monkeypatch.setattr(checks, "check_devices", lambda *args: None)
    monkeypatch.setattr(abk, "_compile", lambda name, **values: Interpreted(name, values, launches["attention"]))
    monkeypatch.setattr(kernels, "compiled",
                        lambda name, dtype=None, **options: KernelStandIn(name, dtype, launches["matmul"]))
    monkeypatch.setattr(linear_kernels, "build", lambda choice: LinearStandIn(choice, launches["linear"]))
    monkeypatch.setattr(norm_kernels, "_compile", lambda name, **tile: NormInterpreted(name, tile, launches["norms"]))
    calls_module.forget()  # calls remembered by earlier tests hold their stand-ins
    linear_kernels.clear_cache()
    kernels.clear_cache()
    norm_kernels.clear_cache()
    yield launches
    calls_module.forget()
    linear_kernels.clear_cache()
    kernels.clear_cache()
    norm_kernels.clear_cache()


def rel(torch, got, want) -> float:
    assert got is not None and not got.isnan().any()
    return ((got.float() - want.float()).norm() / want.float().norm()).item()


def close(torch, got, want, what=""):
    err = rel(torch, got, want)
    assert err <= TOL, f"{what}: relative error {err:.3g}"


def leaves(torch, *tensors):
    """bf16 leaves requiring grad, and their float32 twins."""
    low = [t.to(torch.bfloat16).requires_grad_() for t in tensors]
    return low, [t.detach().float().requires_grad_() for t in low]


# --------------------------------------------------------------------------- registration


def test_operators_with_a_backward(torch):
    assert str(torch.ops.tawa.attention_fwd_lse.default._schema) == (
        "tawa::attention_fwd_lse(Tensor q, Tensor k, Tensor v, bool causal, float? scale) -> (Tensor, Tensor)")
    assert str(torch.ops.tawa.attention_bwd.default._schema) == (
        "tawa::attention_bwd(Tensor do, Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, bool causal, "
        "float scale) -> (Tensor, Tensor, Tensor)")


@pytest.mark.slow
@pytest.mark.parametrize("name", [abk.DKDV, abk.DQ])
@pytest.mark.parametrize("D", [64, 128])
def test_key_blocks_are_the_largest_that_fit(D, name):
    """Decided by compiling: the largest key block whose causal and plain
    kernels the resource check accepts; every larger one it refuses."""
    from tawa.diagnostics import TawaError

    abk.clear_cache()
    chosen = abk.tile(name, D)
    assert chosen["BLOCK_N"] in abk.KEY_BLOCKS[name] and chosen["BLOCK_M"] == abk.QUERY_BLOCKS[name]
    for larger in (n for n in abk.KEY_BLOCKS[name] if n > chosen["BLOCK_N"]):
        with pytest.raises(TawaError, match="tawa-check-resources"):
            for causal in (False, True):
                abk._compile(name, BLOCK_M=chosen["BLOCK_M"], BLOCK_N=larger, HEAD_DIM=D, CAUSAL=causal)


def test_training_tiles_and_grids(monkeypatch):
    monkeypatch.setattr(abk, "_key_block",
                        lambda name, D: {"BLOCK_M": abk.QUERY_BLOCKS[name], "BLOCK_N": 128 if D == 64 else 64})
    assert abk.constexprs(abk.PRE, 128, True) == {"BLOCK_M": 64, "HEAD_DIM": 128}  # no CAUSAL
    assert abk.grid(abk.DKDV, 128, 70, 300, 4, 2) == (5, 4, 2)
    assert abk.grid(abk.DQ, 128, 70, 300, 4, 2) == (1, 4, 2)
    assert abk.grid(abk.PRE, 64, 70, 300, 4, 2) == (2, 4, 2)
    assert abk.unsupported(128) is None and "head dim D = 256 has no backward kernels" in abk.unsupported(256)


# --------------------------------------------------------------------------- attention


def attention_reference(torch, q, k, v, scale, causal):
    """float32 attention, grouped heads by repetition, causal bottom-right."""
    group = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(group, 1) for t in (k, v))
    s = q @ k.transpose(-1, -2) * scale
    if causal:
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool).triu(m - n + 1), float("-inf"))
    return s.softmax(-1) @ v


def _attention_case(D, causal, H, Hkv, S, SK, slow=False):
    label = f"d{D}-{'causal' if causal else 'full'}-{H}on{Hkv}-{S}x{SK}"
    return pytest.param(D, causal, H, Hkv, S, SK, id=label, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("D, causal, H, Hkv, S, SK", [
    _attention_case(64, True, 2, 2, 70, 100),
    _attention_case(64, False, 4, 1, 70, 100),  # grouped heads, 4 query heads per key/value head
    _attention_case(64, False, 2, 2, 90, 40, slow=True),  # more queries than keys (no mask)
    _attention_case(128, True, 4, 2, 65, 130, slow=True),
    _attention_case(128, False, 1, 1, 20, 150, slow=True),
])
def test_attention_gradients(torch, kernels_on_cpu, seed, D, causal, H, Hkv, S, SK):
    g = torch.Generator().manual_seed(seed)
    B = 1
    (q, k, v), (qf, kf, vf) = leaves(torch, *(torch.randn(B, h, n, D, generator=g)
                                              for h, n in ((H, S), (Hkv, SK), (Hkv, SK))))
    do = torch.randn(B, H, S, D, generator=g).to(torch.bfloat16)
    o = tt.attention(q, k, v, causal=causal)
    o.backward(do)
    scale = 1 / math.sqrt(D)
    ref = attention_reference(torch, qf, kf, vf, scale, causal)
    ref.backward(do.float())
    close(torch, o.detach(), ref.detach(), "O")
    for name, got, want in (("dQ", q.grad, qf.grad), ("dK", k.grad, kf.grad), ("dV", v.grad, vf.grad)):
        assert got.shape == want.shape and got.dtype == torch.bfloat16
        close(torch, got, want, name)
    launches = kernels_on_cpu["attention"]
    assert [name for name, *_ in launches] == [abk.FWD, abk.PRE, abk.DKDV, abk.DQ]
    (_, _, fwd_grid, fwd_args), _, (_, dkdv_values, dkdv_grid, dkdv_args), (_, _, dq_grid, _) = launches
    group = H // Hkv
    assert fwd_args[5:] == (S, SK, scale, group) and fwd_grid == (-(-S // 128), H, B)
    # Every kernel reads k and v as given (their heads grouped): the dK/dV kernel runs one
    # program per key block of a key/value head and sums dK, dV over its group of query heads.
    assert fwd_args[1] is k.detach() or fwd_args[1].data_ptr() == k.data_ptr()
    assert dkdv_args[1].shape == (B, Hkv, SK, D) and dkdv_args[1].data_ptr() == k.data_ptr()
    assert dkdv_values["BLOCK_N"] == abk.tile(abk.DKDV, D)["BLOCK_N"]
    assert dkdv_grid == (-(-SK // dkdv_values["BLOCK_N"]), Hkv, B)
    assert dq_grid == (-(-S // 128), H, B) and dkdv_args[8:] == (S, SK, scale, group)


def test_attention_views_read_in_place_and_a_broadcast_gradient_copied(torch, kernels_on_cpu):
    """q, k, v as views of a fused QKV projection [B, S, 3, H, D]: read in
    place by every kernel; O in [B, S, H, D] storage, as the inference
    operator gives it, read in place by the preprocess (its threads take
    O's strides); the gradient of `o.sum()` (a broadcast, stride 0: rows not
    contiguous) copied densely; the QKV projection's gradient assembled by
    autograd."""
    g = torch.Generator().manual_seed(7)
    B, S, H, D = 1, 40, 2, 64
    (qkv,), (qkv_f,) = leaves(torch, torch.randn(B, S, 3, H, D, generator=g))
    q, k, v = qkv.permute(2, 0, 3, 1, 4)
    o = tt.attention(q, k, v, causal=True, scale=0.2)
    assert o.stride() == (S * H * D, D, H * D, 1)
    o.sum().backward()  # dO = ones broadcast: stride 0
    ref = attention_reference(torch, *qkv_f.permute(2, 0, 3, 1, 4), 0.2, True)
    ref.sum().backward()
    close(torch, qkv.grad, qkv_f.grad, "dQKV")
    launches = kernels_on_cpu["attention"]
    for name, _, _, args in launches:
        if name != abk.PRE:
            assert [a.data_ptr() for a in args[:3]] == [t.data_ptr() for t in (q, k, v)], name
    (_, _, _, fwd), (_, _, _, pre), (_, _, _, dkdv), _ = launches
    assert pre[0].data_ptr() == fwd[3].data_ptr() == o.data_ptr()  # the saved O, read in place
    assert pre[1].is_contiguous() and 0 not in pre[1].stride() and dkdv[3] is pre[1]  # dO: one dense copy, shared
    assert dkdv[8:] == (S, S, 0.2, 1)


def test_seq_major_o_and_do_read_in_place_by_the_preprocess(torch, kernels_on_cpu):
    """A fused-QKV model's step: O and dO both seq-major [B, S, H, D]
    storage seen as [B, H, S, D] (dO the gradient that flows back through
    `o.transpose(1, 2).reshape(B, S, H·D)`).  The preprocess addresses
    them itself, with their strides: both read in place, no copies; the
    dK/dV and dQ kernels read dO in place too (a tensor map describes it)."""
    g = torch.Generator().manual_seed(9)
    B, S, H, D = 1, 40, 2, 64
    (qkv,), (qkv_f,) = leaves(torch, torch.randn(B, S, 3, H, D, generator=g))
    q, k, v = qkv.permute(2, 0, 3, 1, 4)
    o = tt.attention(q, k, v, causal=False, scale=0.2)
    out = o.transpose(1, 2).reshape(B, S, H * D)
    dy = torch.randn(B, S, H * D, generator=g).to(torch.bfloat16)
    out.backward(dy)
    ref = attention_reference(torch, *qkv_f.permute(2, 0, 3, 1, 4), 0.2, False)
    ref.transpose(1, 2).reshape(B, S, H * D).backward(dy.float())
    close(torch, qkv.grad, qkv_f.grad, "dQKV")
    (_, _, _, fwd), (_, _, _, pre), (_, _, _, dkdv), (_, _, _, dq) = kernels_on_cpu["attention"]
    assert pre[0].data_ptr() == fwd[3].data_ptr() == o.data_ptr() and pre[0].stride() == (S * H * D, D, H * D, 1)
    assert pre[1].data_ptr() == dy.data_ptr() and pre[1].stride() == (S * H * D, D, H * D, 1)  # dO: no copy
    assert dkdv[3] is pre[1] and dq[3] is pre[1]


def test_attention_without_backward_kernels_runs_forward_and_backward_raises(torch, kernels_on_cpu):
    """Head dim 256 has no backward kernels: a call that needs a gradient
    runs the inference forward, and a backward through it raises saying why."""
    q = torch.randn(1, 2, 20, 256).to(torch.bfloat16).requires_grad_()
    o = tt.attention(q, q, q)
    assert o.requires_grad and [c[0] for c in kernels_on_cpu["matmul"]] and not kernels_on_cpu["attention"]
    with pytest.raises(RuntimeError, match=r"tawa::attention has no backward here: head dim D = 256 has no "
                                           r"backward kernels"):
        o.float().sum().backward()


def test_an_operator_without_a_backward_says_so(torch, kernels_on_cpu):
    """attention_fp8 has no backward: its forward runs on tensors requiring
    grad, and a backward through it raises, naming it."""
    q = torch.randn(1, 2, 16, 128).to(torch.float8_e4m3fn).requires_grad_()
    o = tt.attention_fp8(q, q, q)
    assert o.requires_grad and [c[0] for c in kernels_on_cpu["matmul"]] == ["attention_fwd_fp8"]
    with pytest.raises(RuntimeError, match=r"^tawa::attention_fp8 has no backward \(docs/runtime.md"):
        o.float().sum().backward()


def test_attention_empty_and_no_queries(torch, kernels_on_cpu):
    k = torch.randn(1, 2, 8, 64).to(torch.bfloat16).requires_grad_()
    q = torch.zeros(1, 2, 0, 64, dtype=torch.bfloat16, requires_grad=True)
    o = tt.attention(q, k, k)
    o.sum().backward()
    assert o.shape == (1, 2, 0, 64) and q.grad.shape == q.shape
    assert bool((k.grad == 0).all()) and not kernels_on_cpu["attention"]


@pytest.mark.slow
def test_attention_opcheck(torch, kernels_on_cpu):
    """torch.library.opcheck of the training operators (schema, fake against
    real, autograd registration, AOT dispatch), kernels interpreted."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 2, n, 64, generator=g).to(torch.bfloat16) for n in (20, 36, 36))
    utils = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")
    torch.library.opcheck(torch.ops.tawa.attention_fwd_lse.default, (q, k, v, True, None), test_utils=utils)
    o, lse = torch.ops.tawa.attention_fwd_lse.default(q, k, v, True, None)
    do = torch.randn(o.shape, generator=g).to(torch.bfloat16)
    torch.library.opcheck(torch.ops.tawa.attention_bwd.default, (do, q, k, v, o, lse, True, 0.125), test_utils=utils)


# --------------------------------------------------------------------------- matmul, linear, gated_mlp


def linear_reference(torch, x, w, bias, activation, residual):
    y = x @ w.T
    if bias is not None:
        y = y + bias
    y = {None: y, "gelu_tanh": torch.nn.functional.gelu(y, approximate="tanh"),
         "silu": torch.nn.functional.silu(y), "relu": torch.relu(y)}[activation]
    return y if residual is None else y + residual


def _by_name(launches, kind):
    return ([c for c in launches["matmul"] if c[0] in ("matmul", "gemm", "matmul_at", "gemm_at")] if kind == "matmul"
            else launches["linear"])


@pytest.mark.parametrize("activation", [None, "gelu_tanh", "silu", "relu"])
@pytest.mark.parametrize("bias, residual", [(True, True), (False, False)])
def test_linear_gradients(torch, kernels_on_cpu, activation, bias, residual):
    g = torch.Generator().manual_seed(1)
    M0, M1, K, N = 2, 35, 64, 136  # M = 70 tokens: dW's reduction padded to 72
    tensors = [torch.randn(M0, M1, K, generator=g), torch.randn(N, K, generator=g) * 0.2]
    tensors += [torch.randn(N, generator=g)] if bias else []
    tensors += [torch.randn(M0, M1, N, generator=g)] if residual else []
    low, ref = leaves(torch, *tensors)

    def split(ts):
        x, w, *rest = ts
        return x, w, rest.pop(0) if bias else None, rest.pop(0) if residual else None

    x, w, b, r = split(low)
    xf, wf, bf, rf = split(ref)
    dy = torch.randn(M0, M1, N, generator=g).to(torch.bfloat16)
    y = tt.linear(x, w, b, activation, r)
    y.backward(dy)
    want = linear_reference(torch, xf, wf, bf, activation, rf)
    want.backward(dy.float())
    close(torch, y.detach(), want.detach(), "Y")
    for name, got, exp in zip(("dX", "dW", "dbias", "dresidual"), (x, w, b, r), (xf, wf, bf, rf)):
        if got is not None:
            assert got.grad.shape == got.shape and got.grad.dtype == torch.bfloat16
            close(torch, got.grad, exp.grad, name)
    # One launch: the forward, which with an activation also stores the pre-activation the
    # backward pass reads (no GEMM recomputes it).
    ((config, args, _),) = kernels_on_cpu["linear"]
    assert config.epilogue.save_pre == (activation is not None)
    assert (config.epilogue.activation, config.epilogue.residual, config.epilogue.bias) == (activation, residual, bias)
    if activation is not None:
        pre = args[-4]  # (..., C, P, M, N, K)
        assert pre.shape == (M0 * M1, N) and pre.dtype == torch.bfloat16
        close(torch, pre, (xf @ wf.T + (0 if bf is None else bf)).detach().reshape(-1, N), "P")
    (dx_name, _, dx_args, _), (dw_name, _, dw_args, _) = kernels_on_cpu["matmul"]
    # dX = dY'·W: W [N, K] read in place as the matmul's B [K, N]
    assert dx_name == "matmul" and dx_args[1].data_ptr() == w.data_ptr() and dx_args[3:] == (M0 * M1, K, N)
    # dW = dY'ᵀ·X: dY'ᵀ read as the [tokens, N] it is the transpose of ("_at"), its 70 tokens
    # padded to 72 in that layout (and X's rows with it)
    assert dw_name == "matmul_at" and dw_args[3:] == (N, K, 72)
    assert dw_args[0].shape == (72, N) and dw_args[0].is_contiguous()
    assert bool((dw_args[0][70:] == 0).all()) and bool((dw_args[1][70:] == 0).all())


def test_linear_only_the_gradients_needed(torch, kernels_on_cpu):
    """A frozen input (x needs no gradient, a LoRA-style frozen w, ...) runs no product for it."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(64, 32, generator=g).to(torch.bfloat16)
    (w,), (wf,) = leaves(torch, torch.randn(48, 32, generator=g))
    tt.linear(x, w).sum().backward()
    (x.float() @ wf.T).sum().backward()
    close(torch, w.grad, wf.grad, "dW")
    ((name, _, args, _),) = kernels_on_cpu["matmul"]  # dW only
    assert args[3:] == (48, 32, 64) and args[1].data_ptr() == x.data_ptr()  # x read in place, rows aligned


def test_linear_unaligned_output_features(torch, kernels_on_cpu):
    """N = 100: dX = dY'·W contracts over 100 features, padded to 104."""
    g = torch.Generator().manual_seed(4)
    (x, w), (xf, wf) = leaves(torch, torch.randn(24, 64, generator=g), torch.randn(100, 64, generator=g))
    dy = torch.randn(24, 100, generator=g).to(torch.bfloat16)
    tt.linear(x, w, activation="relu").backward(dy)
    torch.relu(xf @ wf.T).backward(dy.float())
    close(torch, x.grad, xf.grad, "dX")
    close(torch, w.grad, wf.grad, "dW")
    dx_args = kernels_on_cpu["matmul"][0][2]
    assert dx_args[3:] == (24, 64, 104) and bool((dx_args[0][:, 100:] == 0).all())


@pytest.mark.parametrize("transpose_b", [True, False])
def test_matmul_gradients(torch, kernels_on_cpu, transpose_b):
    g = torch.Generator().manual_seed(5)
    b_shape = (96, 64) if transpose_b else (64, 96)
    (a, b), (af, bf) = leaves(torch, torch.randn(3, 16, 64, generator=g), torch.randn(*b_shape, generator=g))
    dc = torch.randn(3, 16, 96, generator=g).to(torch.bfloat16)
    tt.matmul(a, b, transpose_b=transpose_b).backward(dc)
    (af @ (bf.T if transpose_b else bf)).backward(dc.float())
    close(torch, a.grad, af.grad, "dA")
    close(torch, b.grad, bf.grad, "dB")
    assert b.grad.shape == b.shape and b.grad.is_contiguous()
    fwd, (da_name, _, da_args, _), (_, _, db_args, _) = kernels_on_cpu["matmul"]
    # dA = dC·Bᵀ: B itself (row-major [N, K] → @matmul) or its transpose (of row-major [K, N] → @gemm)
    assert da_name == ("matmul" if transpose_b else "gemm") and da_args[1].data_ptr() == b.data_ptr()
    assert db_args[3:] == ((96, 64, 48) if transpose_b else (64, 96, 48))


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("N", [96, 100])
def test_gated_mlp_gradients(torch, kernels_on_cpu, activation, N):
    g = torch.Generator().manual_seed(6)
    K = 64
    (x, wg, wu), (xf, wgf, wuf) = leaves(torch, torch.randn(2, 20, K, generator=g),
                                         *(torch.randn(N, K, generator=g) * 0.2 for _ in range(2)))
    dy = torch.randn(2, 20, N, generator=g).to(torch.bfloat16)
    tt.gated_mlp(x, wg, wu, activation).backward(dy)
    act = {"silu": torch.nn.functional.silu,
           "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh")}[activation]
    (act(xf @ wgf.T) * (xf @ wuf.T)).backward(dy.float())
    for name, got, want in (("dX", x, xf), ("dW_gate", wg, wgf), ("dW_up", wu, wuf)):
        close(torch, got.grad, want.grad, name)
    linears, matmuls, norms = kernels_on_cpu["linear"], kernels_on_cpu["matmul"], kernels_on_cpu["norms"]
    silu = activation == "silu"
    # The forward, which also gives G and U for the backward pass (nothing recomputes them): for
    # silu two matmuls and the swiglu kernel, else one kernel storing all three.
    if silu:
        (_, _, g_args, _), (_, _, u_args, _) = matmuls[:2]
        g_saved, u_saved = g_args[2], u_args[2]
        assert norms[0][0] == "swiglu"
        assert [a.data_ptr() for a in norms[0][3][:2]] == [g_saved.data_ptr(), u_saved.data_ptr()]
    else:
        assert linears[0][0].epilogue.save_pre
        g_saved, u_saved = linears[0][1][-5], linears[0][1][-4]  # (..., C, P, P2, M, N, K)
    close(torch, g_saved, (xf @ wgf.T).detach().reshape(-1, N), "G")
    close(torch, u_saved, (xf @ wuf.T).detach().reshape(-1, N), "U")
    # With N aligned, dX's two products in one linear call (dU·W_up its residual).
    assert len(linears) == (not silu) + (N % 8 == 0)
    if N % 8 == 0:
        assert linears[-1][0].epilogue.residual and linears[-1][0].b_layout == "kn"
    # dU·W_up (or dG·W_gate and dU·W_up where N is unaligned), dW_gate, dW_up: no [tokens, N] product.
    backward = matmuls[2:] if silu else matmuls
    assert len(backward) == (3 if N % 8 == 0 else 4) and all(args[-2] != N for _, _, args, _ in backward)
    # silu's dG and dU: one elementwise kernel over dY, G and U (the saved ones, read in place).
    if silu:
        (name, _, _, args) = norms[1]
        assert len(norms) == 2 and name == "swiglu_bwd" and args[5:] == (40, N)
        assert args[1].data_ptr() == g_saved.data_ptr() and args[2].data_ptr() == u_saved.data_ptr()
    else:
        assert not norms


@pytest.mark.slow
def test_gated_mlp_save_of_silu_opcheck(torch, kernels_on_cpu):
    """opcheck of the gated MLP's training forward where it runs two matmuls
    and the swiglu kernel (kernels interpreted and stood in)."""
    g = torch.Generator().manual_seed(8)
    x = torch.randn(2, 35, 64, generator=g).to(torch.bfloat16)
    w = torch.randn(136, 64, generator=g).to(torch.bfloat16)
    torch.library.opcheck(torch.ops.tawa.gated_mlp_save.default, (x, w, w, "silu"),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


def test_torch_compile_training_step(torch, kernels_on_cpu):
    """A block (projection, attention, output projection with the residual)
    under torch.compile(backend="aot_eager", fullgraph=True): forward and
    backward traced through the operators' fake implementations, run with
    the real ones, gradients as eager tawa's."""
    g = torch.Generator().manual_seed(8)
    B, S, H, D = 1, 24, 2, 64
    E = H * D
    x = torch.randn(B, S, E, generator=g).to(torch.bfloat16)
    w_qkv = (torch.randn(3 * E, E, generator=g) * 0.1).to(torch.bfloat16)
    w_o = (torch.randn(E, E, generator=g) * 0.1).to(torch.bfloat16)

    def block(x, w_qkv, w_o):
        q, k, v = tt.linear(x, w_qkv).view(B, S, 3, H, D).permute(2, 0, 3, 1, 4)
        o = tt.attention(q, k, v, causal=True)
        return tt.linear(o.transpose(1, 2).reshape(B, S, E), w_o, residual=x)

    def grads(fn):
        params = [t.clone().requires_grad_() for t in (x, w_qkv, w_o)]
        fn(*params).float().square().sum().backward()
        return [p.grad for p in params]

    eager = grads(block)
    compiled = grads(torch.compile(block, backend="aot_eager", fullgraph=True))
    for e, c in zip(eager, compiled):
        close(torch, c, e, "compiled")


def test_torch_compile_keeps_the_saved_pre_activation(torch, kernels_on_cpu):
    """An activated linear layer under torch.compile(backend="aot_eager",
    fullgraph=True): the traced forward runs tawa::linear_save (one launch,
    Y and P), the backward reads the saved P (no GEMM recomputes it);
    gradients as eager tawa's and within bf16 of float32 torch's."""
    from torch._functorch.aot_autograd import aot_function, make_boxed_func

    g = torch.Generator().manual_seed(9)
    (x, w, b), (xf, wf, bf) = leaves(torch, torch.randn(3, 16, 64, generator=g),
                                     torch.randn(96, 64, generator=g) * 0.2, torch.randn(96, generator=g))

    def layer(x, w, b):
        return tt.linear(x, w, b, activation="silu")

    graphs = []

    def keep(graph, _):
        graphs.append(graph)
        return make_boxed_func(graph)

    def grads(fn):
        params = [t.detach().clone().requires_grad_() for t in (x, w, b)]
        fn(*params).float().square().sum().backward()
        return [p.grad for p in params]

    eager = grads(layer)
    kernels_on_cpu["linear"].clear()
    compiled = grads(torch.compile(layer, backend="aot_eager", fullgraph=True))
    ((config, _, _),) = kernels_on_cpu["linear"]
    assert config.epilogue.save_pre and config.epilogue.activation == "silu"
    for e, c in zip(eager, compiled):
        close(torch, c, e, "compiled")
    torch.nn.functional.silu(xf @ wf.T + bf).square().sum().backward()
    for name, got, want in zip(("dX", "dW", "dbias"), eager, (xf.grad, wf.grad, bf.grad)):
        close(torch, got, want, name)
    aot_function(layer, fw_compiler=keep, bw_compiler=keep)(x, w, b).sum().backward()
    forward, backward = ({str(n.target) for n in gm.graph.nodes if n.op == "call_function"} for gm in graphs)
    assert "tawa.linear_save.default" in forward and "tawa.linear.default" not in forward
    assert "tawa.matmul.default" in backward and not {"tawa.linear.default", "tawa.linear_save.default"} & backward
