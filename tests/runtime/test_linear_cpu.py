"""`tawa.torch.linear` and `tawa.torch.gated_mlp` without a GPU.

- The argument checks and layout decisions (`tawa.torch.linear_checks`) on
  plain `TensorInfo`s: no torch needed, these always run.
- With torch installed (skipped, saying why, without it): registration and
  schemas, the fake implementations on meta tensors (shapes, errors, tracing
  by make_fx and `torch.compile(fullgraph=True)`), and the real
  implementations on CPU tensors with a stand-in kernel that computes in
  float32 what the generated kernel computes (which epilogue and tile,
  which operands are copied or read in place, the grid, the output);
  `torch.library.opcheck`.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import tawa.torch as tt
from tawa.kernels.gemm import Epilogue
from tawa.torch import checks, linear_kernels
from tawa.torch import linear_checks as lc
from tawa.torch.checks import TensorInfo

CUDA = "cuda:0"


def info(shape, dtype="bfloat16", device=CUDA, strides=None, ptr=None):
    """A TensorInfo; `strides` (elements) default to row-major, `ptr` to an aligned address."""
    if strides is None:
        strides, step = [], 1
        for d in reversed(shape):
            strides.append(step)
            step *= max(d, 1)
        strides = tuple(reversed(strides))
    return TensorInfo(tuple(shape), dtype, device, tuple(strides), 1 << 20 if ptr is None else ptr)


# --------------------------------------------------------------------------- checks (no torch)


def test_linear_problem_sizes():
    p = lc.check_linear(info([2, 100, 64]), info([300, 64]), info([300]), "gelu_tanh", info([2, 100, 300]))
    assert (p.M, p.N, p.K, p.out_shape, p.dtype) == (200, 300, 64, (2, 100, 300), "bfloat16")
    p = lc.check_linear(info([64], "float16"), info([8, 64], "float16"), None, None, None)
    assert (p.M, p.N, p.K, p.out_shape) == (1, 8, 64, (8,))  # x [K]: one row, as nn.Linear takes it
    p = lc.check_gated_mlp(info([3, 5, 128]), info([256, 128]), info([256, 128]), "silu")
    assert (p.M, p.N, p.K, p.out_shape) == (15, 256, 128, (3, 5, 256))


X, W, V = info([4, 64]), info([16, 64]), info([16])


@pytest.mark.parametrize("args, error, message", [
    ((info([4, 64], "float32"), info([16, 64], "float32"), None, None, None), TypeError,
     "x is float32; supported: bfloat16, float16"),
    ((X, info([16, 64], "float16"), None, None, None), TypeError, "x is bfloat16 but w is float16; all must have one dtype"),
    ((X, W, info([16], "float32"), None, None), TypeError, "x is bfloat16 but bias is float32"),
    ((X, W, None, None, info([4, 16], "float16")), TypeError, "x is bfloat16 but residual is float16"),
    ((X, W, None, 2, None), TypeError, "activation must be a str, one of gelu_tanh, silu, relu or None; got int"),
    ((X, W, None, "gelu", None), ValueError,
     "unknown activation 'gelu'; supported: gelu_tanh, silu, relu or None (GELU's erf form has no kernel"),
    ((X, W, None, "tanh", None), ValueError, "unknown activation 'tanh'"),
    ((info([4, 64], device="cpu"), W, None, None, None), ValueError, "x is on cpu; tawa's kernels run on CUDA"),
    ((X, W, info([16], device="cuda:1"), None, None), ValueError, "x is on cuda:0 but bias on cuda:1"),
    ((info([]), W, None, None, None), ValueError, "x must be [..., K], got a 0-d tensor"),
    ((X, info([2, 16, 64]), None, None, None), ValueError, "w must be [N, K] (an nn.Linear weight), got shape [2, 16, 64]"),
    ((X, info([64, 16]), None, None, None), ValueError, "x [4, 64] has K = 64 but w [64, 16], read as [N, K], has K = 16"),
    ((info([4, 60]), info([16, 60]), None, None, None), ValueError, "K = 60 is not a multiple of 8"),
    ((X, W, info([8]), None, None), ValueError, "bias must be [N] = [16], got shape [8]"),
    ((X, W, info([1, 16]), None, None), ValueError, "bias must be [N] = [16], got shape [1, 16]"),
    ((X, W, None, None, info([16])), ValueError, "residual must have the output's shape [4, 16], got [16]"),
    ((X, W, None, None, info([2, 2, 16])), ValueError, "residual must have the output's shape [4, 16], got [2, 2, 16]"),
])
def test_linear_errors(args, error, message):
    with pytest.raises(error) as err:
        lc.check_linear(*args)
    text = str(err.value)
    assert message in text and text.startswith("tawa.torch.linear: ") and "\n" not in text


@pytest.mark.parametrize("args, error, message", [
    ((X, W, info([16, 64], "float16"), "silu"), TypeError, "x is bfloat16 but w_up is float16"),
    ((X, W, info([8, 64]), "silu"), ValueError, "w_gate [16, 64] and w_up [8, 64] must have one shape"),
    ((X, W, info([16, 32]), "silu"), ValueError, "x [4, 64] has K = 64 but w_up [16, 32]"),
    ((X, W, W, None), TypeError, "activation must be a str, one of gelu_tanh, silu, relu; got NoneType"),
    ((X, W, W, "swish"), ValueError, "unknown activation 'swish'; supported: gelu_tanh, silu, relu ('silu' is"),
    ((X, W, info([16, 64], device="cpu"), "silu"), ValueError, "w_up is on cpu"),
])
def test_gated_mlp_errors(args, error, message):
    with pytest.raises(error) as err:
        lc.check_gated_mlp(*args)
    text = str(err.value)
    assert message in text and text.startswith("tawa.torch.gated_mlp: ") and "\n" not in text


def test_meta_tensors_pass_only_the_fake_checks():
    x, w = info([4, 8], device="meta"), info([8, 8], device="meta")
    assert lc.check_linear(x, w, None, None, None, fake=True).out_shape == (4, 8)
    with pytest.raises(ValueError, match="x is on meta"):
        lc.check_linear(x, w, None, None, None)


@pytest.mark.parametrize("t, readable", [
    (info([4, 64]), True),
    (info([4, 64], strides=(128, 1)), True),  # a column slice of a [4, 128] matrix
    (info([4, 64], strides=(68, 1)), False),  # rows of 136 bytes: no multiple of 16
    (info([4, 64], strides=(32, 1)), False),  # overlapping rows
    (info([4, 64], strides=(0, 1)), False),  # broadcast rows (expand)
    (info([1, 64], strides=(7, 1)), True),  # one row: its stride does not matter
    (info([4, 64], strides=(1, 4)), False),  # a transposed view
    (info([4, 64], ptr=(1 << 20) + 8), False),  # misaligned
])
def test_tma_rows(t, readable):
    assert lc.tma_rows(t) == readable


@pytest.mark.parametrize("w, expected", [
    (info([136, 64]), ("nk", False)),  # an nn.Linear weight
    (info([136, 64], strides=(1, 136)), ("kn", False)),  # W.t() of a row-major [K, N] = [64, 136]
    (info([100, 64], strides=(1, 100)), ("nk", True)),  # W.t() with rows of 200 bytes: copied to [N, K]
    (info([136, 64], strides=(128, 1)), ("nk", False)),  # columns of a wider matrix, rows of 256 bytes
    (info([136, 64], strides=(2, 272)), ("nk", True)),  # strided both ways
])
def test_b_operand(w, expected):
    assert lc.b_operand(w) == expected


def test_dense():
    """What the kernels' threads read in place (they take the row stride):
    contiguous rows, outer dimensions that merge into rows one stride apart."""
    assert lc.dense(info([16])) and lc.dense(info([4, 16], ptr=(1 << 20) + 2))
    assert lc.dense(info([4, 16], strides=(32, 1)))  # columns of a wider matrix
    assert lc.dense(info([2, 3, 16], strides=(3 * 48, 48, 1)))  # a slice of a fused [B, S, 3·16] projection
    assert lc.dense(info([1, 16], strides=(7, 1))) and lc.dense(info([4, 1], strides=(3, 5)))  # size-1 strides
    assert not lc.dense(info([16], strides=(2,))) and not lc.dense(info([4, 16], strides=(1, 4)))  # transposed
    assert not lc.dense(info([4, 16], strides=(0, 1)))  # a broadcast
    assert not lc.dense(info([2, 3, 16], strides=(16, 32, 1)))  # positions not evenly spaced across B


# --------------------------------------------------------------------------- with torch


@pytest.fixture
def torch():
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


def test_without_torch_the_operators_say_why():
    if tt.UNAVAILABLE is None:
        pytest.skip("torch is installed here: the operators are registered")
    with pytest.raises(ImportError, match=r"tawa.torch needs torch >= 2\.5"):
        tt.linear(None, None)
    with pytest.raises(ImportError, match=r"tawa.torch needs torch >= 2\.5"):
        tt.gated_mlp(None, None, None)


def test_operators_are_registered(torch):
    assert str(torch.ops.tawa.linear.default._schema) == (
        "tawa::linear(Tensor x, Tensor w, Tensor? bias, str? activation, Tensor? residual) -> Tensor"
    )
    assert str(torch.ops.tawa.gated_mlp.default._schema) == (
        "tawa::gated_mlp(Tensor x, Tensor w_gate, Tensor w_up, str activation) -> Tensor"
    )


def test_meta_shapes(torch):
    bf16 = torch.bfloat16
    x = torch.empty(2, 100, 64, dtype=bf16, device="meta")
    w = torch.empty(136, 64, dtype=bf16, device="meta")
    y = tt.linear(x, w, torch.empty(136, dtype=bf16, device="meta"), "gelu_tanh",
                  torch.empty(2, 100, 136, dtype=bf16, device="meta"))
    assert (y.shape, y.dtype, y.is_contiguous()) == ((2, 100, 136), bf16, True)
    assert tt.linear(x.transpose(0, 1), w).shape == (100, 2, 136)
    y = tt.gated_mlp(x.half(), w.half(), w.half())
    assert (y.shape, y.dtype) == ((2, 100, 136), torch.float16)


def test_meta_errors(torch):
    x = torch.empty(4, 60, dtype=torch.bfloat16, device="meta")
    with pytest.raises(ValueError, match="tawa.torch.linear: K = 60 is not a multiple of 8"):
        tt.linear(x, torch.empty(8, 60, dtype=torch.bfloat16, device="meta"))
    x = torch.empty(4, 64, dtype=torch.bfloat16, device="meta")
    w = torch.empty(8, 64, dtype=torch.bfloat16, device="meta")
    with pytest.raises(ValueError, match="tawa.torch.linear: unknown activation 'gelu'"):
        tt.linear(x, w, activation="gelu")
    with pytest.raises(ValueError, match="unknown activation 'gelu'"):  # the operator itself checks too
        torch.ops.tawa.linear(x, w, None, "gelu", None)
    with pytest.raises(TypeError, match="tawa.torch.linear: activation must be a str"):
        tt.linear(x, w, activation=torch.nn.GELU())
    with pytest.raises(TypeError, match="tawa.torch.gated_mlp: x is float32"):
        tt.gated_mlp(x.float(), w.float(), w.float())
    with pytest.raises(ValueError, match="tawa.torch.gated_mlp: w_gate \\[8, 64\\] and w_up \\[4, 64\\]"):
        tt.gated_mlp(x, w, w[:4])


def test_cpu_tensors_are_refused(torch):
    x = torch.ones(8, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="tawa.torch.linear: x is on cpu; tawa's kernels run on CUDA tensors"):
        tt.linear(x, x)
    with pytest.raises(ValueError, match="tawa.torch.gated_mlp: x is on cpu"):
        tt.gated_mlp(x, x, x)


def test_traced_as_one_operator(torch):
    """make_fx over fake CUDA tensors: each operator is one node of the graph."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    def mlp(x, w1, b1, w2, wg, wu):
        h = tt.linear(x, w1, b1, "gelu_tanh")
        return tt.linear(h, w2, residual=x), tt.gated_mlp(x, wg, wu)

    with FakeTensorMode():
        bf = dict(dtype=torch.bfloat16, device="cuda")
        args = (torch.empty(2, 8, 64, **bf), torch.empty(256, 64, **bf), torch.empty(256, **bf),
                torch.empty(64, 256, **bf), torch.empty(128, 64, **bf), torch.empty(128, 64, **bf))
    graph = make_fx(mlp, tracing_mode="fake")(*args)
    targets = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    assert targets.count("tawa.linear.default") == 2 and targets.count("tawa.gated_mlp.default") == 1
    assert len(targets) == 3  # nothing else: no copies, no separate activation or add


def test_torch_compile_fullgraph_on_meta_tensors(torch):
    def block(x, w1, b1, w2, wg, wu, wd):
        h = tt.linear(x, w1, b1, activation="gelu_tanh")
        y = tt.linear(h, w2, residual=x)
        return tt.linear(tt.gated_mlp(y, wg, wu), wd, residual=y)

    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    bf = dict(dtype=torch.bfloat16, device="meta")
    out = compiled(torch.empty(2, 8, 64, **bf), torch.empty(256, 64, **bf), torch.empty(256, **bf),
                   torch.empty(64, 256, **bf), torch.empty(128, 64, **bf), torch.empty(128, 64, **bf),
                   torch.empty(64, 128, **bf))
    assert (out.shape, out.dtype) == ((2, 8, 64), torch.bfloat16)


class StandIn:
    """A generated kernel stood in for: computes, on the CPU in float32, what
    the kernel of `choice` computes from its arguments, and records the call."""

    def __init__(self, choice, calls):
        self.choice, self.calls = choice, calls

    def assemble(self):
        """ptxas's verdict, which `linear_kernels.spill_free` asks for: no spills."""
        return SimpleNamespace(spill_bytes=0)

    def __call__(self, *args, grid):
        import torch

        config = self.choice.config
        ep = config.epilogue
        self.calls.append((config, args, grid))
        A, *rest = args
        Bs, rest = rest[: 1 + ep.gated], rest[1 + ep.gated :]
        f = lambda t: t.float()  # noqa: E731
        products = [f(A) @ (f(B) if config.b_layout == "kn" else f(B).T) for B in Bs]
        y = products[0]
        if ep.bias:
            bias, *rest = rest
            y = y + f(bias)
        pre = y
        y = {None: y, "gelu_tanh": torch.nn.functional.gelu(y, approximate="tanh"),
             "silu": torch.nn.functional.silu(y), "relu": torch.relu(y)}[ep.activation]
        if ep.gated:
            y = y * products[1]
        if ep.residual:
            R, *rest = rest
            y = y + f(R)
        *outs, M, N, K = rest
        saved = [pre, *products[1:]] if ep.save_pre else []  # P, and P2 (the second product) gated
        assert len(outs) == 1 + len(saved) and A.shape == (M, K)
        for out, value in zip(outs, (y, *saved), strict=True):
            assert out.shape == (M, N)
            out.copy_(value)


@pytest.fixture
def stand_in(torch, monkeypatch):
    """Real implementations on CPU tensors, with stand-in kernels."""
    from tawa.torch import calls as calls_module

    calls = []
    monkeypatch.setattr(checks, "check_devices", lambda *args: None)
    monkeypatch.setattr(linear_kernels, "build", lambda choice: StandIn(choice, calls))
    calls_module.forget()
    linear_kernels.clear_cache()
    yield calls
    calls_module.forget()
    linear_kernels.clear_cache()


def reference(torch, x, w, bias=None, activation=None, residual=None):
    y = x.float() @ w.float().T
    if bias is not None:
        y = y + bias.float()
    y = {None: y, "gelu_tanh": torch.nn.functional.gelu(y, approximate="tanh"),
         "silu": torch.nn.functional.silu(y), "relu": torch.relu(y)}[activation]
    return y if residual is None else y + residual.float()


@pytest.mark.parametrize("activation", [None, "gelu_tanh", "silu", "relu"])
@pytest.mark.parametrize("bias, residual", [(False, False), (True, True), (True, False), (False, True)])
def test_linear_real_implementation(torch, stand_in, activation, bias, residual):
    g = torch.Generator().manual_seed(0)
    bf = torch.bfloat16
    x = torch.randn(2, 70, 64, generator=g).to(bf)
    w = torch.randn(136, 64, generator=g).to(bf)
    b = torch.randn(136, generator=g).to(bf) if bias else None
    r = torch.randn(2, 70, 136, generator=g).to(bf) if residual else None
    y = tt.linear(x, w, b, activation, r)
    assert y.shape == (2, 70, 136) and y.dtype == bf and y.is_contiguous()
    torch.testing.assert_close(y.float(), reference(torch, x, w, b, activation, r), rtol=2e-2, atol=2e-2)
    ((config, args, grid),) = stand_in
    choice = linear_kernels.epilogue_choice("nk", "bfloat16", 140, 136, 64, config.epilogue)
    assert config.epilogue == Epilogue(bias=bias, activation=activation, residual=residual)
    assert config == choice.config and config.b_layout == "nk"
    assert grid == choice.grid(140, 136) and args[-3:] == (140, 136, 64)
    # Read in place: x as [M, K], w, the bias, the residual as [M, N]; C is the output.
    assert args[0].shape == (140, 64) and args[0].data_ptr() == x.data_ptr()
    assert args[1].data_ptr() == w.data_ptr()
    assert [a.data_ptr() for a in args[2:-4]] == [t.data_ptr() for t in (b, r) if t is not None]
    assert args[-4].data_ptr() == y.data_ptr()


def test_gated_mlp_real_implementation(torch, stand_in):
    g = torch.Generator().manual_seed(1)
    f16 = torch.float16
    x = torch.randn(3, 17, 64, generator=g).to(f16)
    wgu = torch.randn(2 * 200, 64, generator=g).to(f16)  # one fused gate-up weight
    wg, wu = wgu[:200], wgu[200:]
    y = tt.gated_mlp(x, wg, wu)
    want = torch.nn.functional.silu(x.float() @ wg.float().T) * (x.float() @ wu.float().T)
    assert y.shape == (3, 17, 200) and y.dtype == f16
    torch.testing.assert_close(y.float(), want, rtol=2e-2, atol=2e-2)
    ((config, args, grid),) = stand_in
    choice = linear_kernels.epilogue_choice("nk", "float16", 51, 200, 64, config.epilogue)
    assert config.epilogue == Epilogue(activation="silu", gated=True) and config == choice.config
    assert (config.a_dtype, config.c_dtype) == ("f16", "f16") and grid == choice.grid(51, 200)
    assert args[1].data_ptr() == wg.data_ptr() and args[2].data_ptr() == wu.data_ptr()  # slices read in place
    y = tt.gated_mlp(x, wg, wu, activation="gelu_tanh")
    want = torch.nn.functional.gelu(x.float() @ wg.float().T, approximate="tanh") * (x.float() @ wu.float().T)
    torch.testing.assert_close(y.float(), want, rtol=2e-2, atol=2e-2)
    assert stand_in[-1][0].epilogue == Epilogue(activation="gelu_tanh", gated=True)


def test_layouts_read_in_place_or_copied(torch, stand_in):
    g = torch.Generator().manual_seed(2)
    bf = torch.bfloat16
    wide = torch.randn(40, 128, generator=g).to(bf)
    x = wide[:, :64]  # a column slice: rows of 256 bytes, read in place through the tensor map
    w_kn = torch.randn(64, 136, generator=g).to(bf)  # w = w_kn.t(): read as [K, N] ("kn") in place
    bias = torch.randn(272, generator=g).to(bf)[::2]  # every other element: copied (the consumers address it)
    residual = torch.randn(136, 40, generator=g).to(bf).t()  # transposed: copied
    y = tt.linear(x, w_kn.t(), bias, "relu", residual)
    torch.testing.assert_close(y.float(), reference(torch, x, w_kn.t(), bias, "relu", residual), rtol=2e-2, atol=2e-2)
    ((config, args, _),) = stand_in
    assert config.b_layout == "kn"
    assert args[0].data_ptr() == x.data_ptr() and args[0].stride() == (128, 1)
    assert args[1].data_ptr() == w_kn.data_ptr() and args[1].shape == (64, 136)
    assert args[2].data_ptr() != bias.data_ptr() and args[2].is_contiguous()
    assert args[3].data_ptr() != residual.data_ptr() and args[3].is_contiguous()
    # A transposed x and a w no tensor map reads: both copied; w into [N, K].
    xt = torch.randn(64, 40, generator=g).to(bf).t()
    w_odd = torch.randn(64, 200, generator=g).to(bf)[:, ::2].t()  # [100, 64], strided both ways
    y = tt.linear(xt, w_odd)
    torch.testing.assert_close(y.float(), reference(torch, xt, w_odd), rtol=2e-2, atol=2e-2)
    config, args, _ = stand_in[-1]
    assert config.b_layout == "nk" and args[0].is_contiguous() and args[1].is_contiguous()
    assert args[0].data_ptr() != xt.data_ptr() and args[1].shape == (100, 64)


def test_gated_weights_share_one_layout(torch, stand_in):
    """wgmma's B operands of one kernel are read in one layout: a w_gate
    readable as [K, N] but a w_up readable only as [N, K] runs "nk", w_gate
    copied."""
    g = torch.Generator().manual_seed(3)
    bf = torch.bfloat16
    x = torch.randn(5, 64, generator=g).to(bf)
    wg = torch.randn(64, 128, generator=g).to(bf).t()
    wu = torch.randn(128, 64, generator=g).to(bf)
    y = tt.gated_mlp(x, wg, wu)
    want = torch.nn.functional.silu(x.float() @ wg.float().T) * (x.float() @ wu.float().T)
    torch.testing.assert_close(y.float(), want, rtol=2e-2, atol=2e-2)
    config, args, _ = stand_in[-1]
    assert config.b_layout == "nk" and args[1].data_ptr() != wg.data_ptr() and args[2].data_ptr() == wu.data_ptr()
    tt.gated_mlp(x, wg, wu.t().contiguous().t())  # both [K, N]-readable: "kn", both in place
    config, args, _ = stand_in[-1]
    assert config.b_layout == "kn" and args[1].data_ptr() == wg.data_ptr()


def test_degenerate_sizes_launch_nothing(torch, stand_in):
    bf = torch.bfloat16
    assert tt.linear(torch.ones(0, 8, dtype=bf), torch.ones(5, 8, dtype=bf)).shape == (0, 5)
    assert tt.gated_mlp(torch.ones(3, 0, 8, dtype=bf), torch.ones(5, 8, dtype=bf), torch.ones(5, 8, dtype=bf)).shape \
        == (3, 0, 5)
    # K = 0: the product is zero; activation(bias) + residual, computed by torch.
    bias, res = torch.tensor([-1.0, 0.5, 2.0]).to(bf), torch.ones(2, 3, dtype=bf)
    y = tt.linear(torch.ones(2, 0, dtype=bf), torch.ones(3, 0, dtype=bf), bias, "relu", res)
    assert y.tolist() == [[1.0, 1.5, 3.0]] * 2
    assert bool((tt.gated_mlp(torch.ones(2, 0, dtype=bf), torch.ones(3, 0, dtype=bf), torch.ones(3, 0, dtype=bf))
                 == 0).all())
    assert stand_in == []


def test_a_call_is_remembered_per_layout(torch, stand_in):
    """The second call on tensors of the same layout reuses the first's
    decisions and kernel (one dictionary look-up); another layout is a new call."""
    from tawa.torch import linear_ops

    bf = torch.bfloat16
    x, w = torch.ones(4, 64, dtype=bf), torch.ones(16, 64, dtype=bf)
    tt.linear(x, w, activation="silu")
    tt.linear(x.clone(), w.clone(), activation="silu")
    assert len(linear_ops._CALLS) == 1 and len(linear_kernels._KERNELS) == 1 and len(stand_in) == 2
    tt.linear(x, w, activation="relu")
    tt.linear(torch.ones(8, 64, dtype=bf), w, activation="relu")
    assert len(linear_ops._CALLS) == 3 and len(linear_kernels._KERNELS) == 3


def test_opcheck(torch, stand_in):
    """torch.library.opcheck: schema, fake implementation against the real one
    (stand-in kernels on the CPU), AOT dispatch with dynamic shapes."""
    g = torch.Generator().manual_seed(4)
    bf = torch.bfloat16
    x = torch.randn(2, 35, 64, generator=g).to(bf)
    w = torch.randn(136, 64, generator=g).to(bf)
    b = torch.randn(136, generator=g).to(bf)
    r = torch.randn(2, 35, 136, generator=g).to(bf)
    torch.library.opcheck(torch.ops.tawa.linear.default, (x, w, b, "gelu_tanh", r))
    torch.library.opcheck(torch.ops.tawa.linear.default, (x, w, None, None, None))
    torch.library.opcheck(torch.ops.tawa.gated_mlp.default, (x, w, w, "silu"))


# --------------------------------------------------------------------------- the training forward: linear_save


def test_linear_save_is_registered(torch):
    assert str(torch.ops.tawa.linear_save.default._schema) == (
        "tawa::linear_save(Tensor x, Tensor w, Tensor? bias, str activation, Tensor? residual) -> (Tensor, Tensor)"
    )


def test_linear_save_meta_shapes_and_errors(torch):
    bf = dict(dtype=torch.bfloat16, device="meta")
    x, w = torch.empty(2, 100, 64, **bf), torch.empty(136, 64, **bf)
    y, pre = torch.ops.tawa.linear_save(x, w, torch.empty(136, **bf), "silu", torch.empty(2, 100, 136, **bf))
    assert y.shape == pre.shape == (2, 100, 136) and pre.dtype == torch.bfloat16 and pre.is_contiguous()
    with pytest.raises(ValueError, match="tawa.torch.linear_save: unknown activation 'gelu'"):
        torch.ops.tawa.linear_save(x, w, None, "gelu", None)
    with pytest.raises(ValueError, match="tawa.torch.linear: K = 60 is not a multiple of 8"):
        torch.ops.tawa.linear_save(torch.empty(4, 60, **bf), torch.empty(8, 60, **bf), None, "relu", None)


@pytest.mark.parametrize("activation", ["gelu_tanh", "silu", "relu"])
@pytest.mark.parametrize("bias, residual", [(True, True), (False, False)])
def test_linear_save_real_implementation(torch, stand_in, activation, bias, residual):
    """One kernel with the save_pre epilogue: Y as tawa::linear's, P = x·wᵀ + bias
    a second output of Y's shape; operands read in place as tawa::linear reads them."""
    from tawa.torch import linear_ops

    g = torch.Generator().manual_seed(5)
    bf = torch.bfloat16
    x = torch.randn(2, 70, 64, generator=g).to(bf)
    w = torch.randn(136, 64, generator=g).to(bf)
    b = torch.randn(136, generator=g).to(bf) if bias else None
    r = torch.randn(2, 70, 136, generator=g).to(bf) if residual else None
    y, pre = linear_ops.linear_save_impl(x, w, b, activation, r)
    assert y.shape == pre.shape == (2, 70, 136) and y.dtype == pre.dtype == bf
    torch.testing.assert_close(y.float(), reference(torch, x, w, b, activation, r), rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(pre.float(), reference(torch, x, w, b), rtol=2e-2, atol=2e-2)
    ((config, args, grid),) = stand_in
    epilogue = Epilogue(bias=bias, activation=activation, residual=residual, save_pre=True)
    assert config == linear_kernels.epilogue_choice("nk", "bfloat16", 140, 136, 64, epilogue).config
    assert args[0].data_ptr() == x.data_ptr() and args[1].data_ptr() == w.data_ptr()
    assert args[-5].data_ptr() == y.data_ptr() and args[-4].data_ptr() == pre.data_ptr()
    assert args[-3:] == (140, 136, 64)
    # Remembered per layout apart from tawa::linear's calls of the same operands.
    tt.linear(x, w, b, activation, r)
    linear_ops.linear_save_impl(x.clone(), w, b, activation, r)
    assert len(linear_ops._CALLS) == 2 and [c[0].epilogue.save_pre for c in stand_in] == [True, False, True]


def test_linear_save_degenerate_sizes(torch, stand_in):
    from tawa.torch import linear_ops

    bf = torch.bfloat16
    bias, res = torch.tensor([-1.0, 0.5, 2.0]).to(bf), torch.ones(2, 3, dtype=bf)
    y, pre = linear_ops.linear_save_impl(torch.ones(2, 0, dtype=bf), torch.ones(3, 0, dtype=bf), bias, "relu", res)
    assert y.tolist() == [[1.0, 1.5, 3.0]] * 2 and pre.tolist() == [[-1.0, 0.5, 2.0]] * 2
    y, pre = linear_ops.linear_save_impl(torch.ones(0, 8, dtype=bf), torch.ones(5, 8, dtype=bf), None, "silu", None)
    assert y.shape == pre.shape == (0, 5) and stand_in == []


def test_linear_save_opcheck(torch, stand_in):
    g = torch.Generator().manual_seed(6)
    bf = torch.bfloat16
    x = torch.randn(2, 35, 64, generator=g).to(bf)
    w = torch.randn(136, 64, generator=g).to(bf)
    b = torch.randn(136, generator=g).to(bf)
    r = torch.randn(2, 35, 136, generator=g).to(bf)
    torch.library.opcheck(torch.ops.tawa.linear_save.default, (x, w, b, "gelu_tanh", r))
    torch.library.opcheck(torch.ops.tawa.linear_save.default, (x, w, None, "relu", None))


# --------------------------------------------------------------------------- the training forward: gated_mlp_save


def test_gated_mlp_save_is_registered_and_traced(torch):
    assert str(torch.ops.tawa.gated_mlp_save.default._schema) == (
        "tawa::gated_mlp_save(Tensor x, Tensor w_gate, Tensor w_up, str activation) -> (Tensor, Tensor, Tensor)"
    )
    bf = dict(dtype=torch.bfloat16, device="meta")
    x, w = torch.empty(3, 5, 64, **bf), torch.empty(200, 64, **bf)
    outs = torch.ops.tawa.gated_mlp_save(x, w, w, "silu")
    assert [t.shape for t in outs] == [(3, 5, 200)] * 3
    with pytest.raises(ValueError, match="tawa.torch.gated_mlp: w_gate \\[200, 64\\] and w_up \\[8, 64\\]"):
        torch.ops.tawa.gated_mlp_save(x, w, w[:8], "silu")


def test_gated_mlp_save_real_implementation(torch, stand_in):
    """One kernel: Y as tawa::gated_mlp's, G = x·w_gateᵀ and U = x·w_upᵀ its
    second and third outputs; a fused gate-up weight's halves read in place."""
    from tawa.torch import linear_ops

    g = torch.Generator().manual_seed(7)
    bf = torch.bfloat16
    x = torch.randn(3, 17, 64, generator=g).to(bf)
    wgu = torch.randn(2 * 200, 64, generator=g).to(bf)
    wg, wu = wgu[:200], wgu[200:]
    y, gate, up = linear_ops.gated_mlp_save_impl(x, wg, wu, "gelu_tanh")
    want_g, want_u = x.float() @ wg.float().T, x.float() @ wu.float().T
    torch.testing.assert_close(y.float(), torch.nn.functional.gelu(want_g, approximate="tanh") * want_u,
                               rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(gate.float(), want_g, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(up.float(), want_u, rtol=2e-2, atol=2e-2)
    ((config, args, _),) = stand_in
    assert config.epilogue == Epilogue(activation="gelu_tanh", gated=True, save_pre=True)
    assert args[1].data_ptr() == wg.data_ptr() and args[2].data_ptr() == wu.data_ptr()
    assert [a.data_ptr() for a in args[-6:-3]] == [t.data_ptr() for t in (y, gate, up)]
    # K = 0: the products are zeros.
    outs = linear_ops.gated_mlp_save_impl(torch.ones(2, 0, dtype=bf), torch.ones(3, 0, dtype=bf),
                                          torch.ones(3, 0, dtype=bf), "relu")
    assert all(bool((t == 0).all()) and t.shape == (2, 3) for t in outs) and len(stand_in) == 1


def test_gated_mlp_save_opcheck(torch, stand_in):
    g = torch.Generator().manual_seed(8)
    bf = torch.bfloat16
    x = torch.randn(2, 35, 64, generator=g).to(bf)
    w = torch.randn(136, 64, generator=g).to(bf)
    torch.library.opcheck(torch.ops.tawa.gated_mlp_save.default, (x, w, w, "gelu_tanh"))
