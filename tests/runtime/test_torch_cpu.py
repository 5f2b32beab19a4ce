"""tawa.torch without a GPU.

- The argument checks, the layout decisions and the grids (`tawa.torch.checks`)
  on plain `TensorInfo`s, and the kernel sources (`tawa.torch.kernels`): no
  torch needed, these always run.
- With torch installed (skipped, saying why, without it): the operators'
  registration and schemas, their fake implementations on meta and fake CUDA
  tensors (shapes, errors, tracing by make_fx and torch.compile), and the
  real implementations on CPU tensors with a stand-in kernel that computes in
  float32 what the compiled kernel computes (which kernel is chosen, which
  operands are copied, the output, the grid; for attention_fp8 also the
  transposed, zero-padded V and the scales the kernel gets).
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import types

import pytest

import tawa.torch as tt
from tawa.analysis.attention_cost import VARIANTS
from tawa.runtime.autotune import GemmProblem, heuristic
from tawa.torch import checks, kernels
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


def test_matmul_problem_sizes():
    p = checks.check_matmul(info([2, 100, 64]), info([64, 300]), transpose_b=False)
    assert (p.M, p.N, p.K, p.out_shape, p.dtype) == (200, 300, 64, (2, 100, 300), "bfloat16")
    p = checks.check_matmul(info([100, 64], "float16"), info([300, 64], "float16"), transpose_b=True)
    assert (p.M, p.N, p.K, p.out_shape) == (100, 300, 64, (100, 300))


@pytest.mark.parametrize(
    "a, b, transpose_b, error, message",
    [
        (info([8, 8], "float32"), info([8, 8], "float32"), False, TypeError, "a is float32; supported: bfloat16, float16"),
        (info([8, 8]), info([8, 8], "float16"), False, TypeError, "a is bfloat16 but b is float16"),
        (info([8, 8], device="cpu"), info([8, 8], device="cpu"), False, ValueError, "a is on cpu"),
        (info([8, 8]), info([8, 8], device="cuda:1"), False, ValueError, "a is on cuda:0 but b on cuda:1"),
        (info([8]), info([8, 8]), False, ValueError, "a must be [..., M, K], got shape [8]"),
        (info([8, 8]), info([2, 8, 8]), True, ValueError, "b must be [N, K], got shape [2, 8, 8]"),
        (info([4, 64]), info([72, 16]), False, ValueError, "has K = 64 but b [72, 16], read as [K, N], has K = 72"),
        (info([4, 64]), info([64, 72]), True, ValueError, "read as [N, K] (transpose_b), has K = 72"),
        (info([4, 60]), info([60, 16]), False, ValueError, "K = 60 is not a multiple of 8"),
    ],
)
def test_matmul_errors(a, b, transpose_b, error, message):
    with pytest.raises(error) as err:
        checks.check_matmul(a, b, transpose_b)
    text = str(err.value)
    assert message in text and text.startswith("tawa.torch.matmul: ") and "\n" not in text


def test_meta_tensors_pass_only_the_fake_checks():
    a, b = info([4, 8], device="meta"), info([8, 8], device="meta")
    assert checks.check_matmul(a, b, False, fake=True).out_shape == (4, 8)
    with pytest.raises(ValueError, match="a is on meta"):
        checks.check_matmul(a, b, False)


def test_attention_problem_and_kernels():
    q = info([2, 12, 256, 64])
    p = checks.check_attention(q, q, q)
    assert (p.B, p.H, p.S, p.D) == (2, 12, 256, 64)
    names = {(d, c): checks.attention_variant(d, c).kernel for d in checks.HEAD_DIMS for c in (False, True)}
    assert names == {
        (64, False): "attention_fwd_d64",
        (64, True): "attention_fwd_d64_causal",
        (128, False): "attention_fwd",
        (128, True): "attention_fwd_causal",
        (256, False): "attention_fwd_d256",
        (256, True): "attention_fwd_d256_causal",
    }
    for name in names.values():  # every kernel is a function of its example file
        assert f"func.func @{name}(" in (kernels.EXAMPLES / kernels.FILES[name]).read_text()


@pytest.mark.parametrize(
    "q, k, v, error, message",
    [
        (info([1, 1, 8, 64], "float16"), None, None, TypeError, "q is float16; supported: bfloat16"),
        (info([1, 1, 8, 64]), info([1, 1, 8, 64], "float32"), None, TypeError, "k is float32"),
        (info([1, 1, 8, 64], device="cpu"), None, None, ValueError, "q is on cpu"),
        (info([8, 8, 64]), None, None, ValueError, "q must be [B, H, S, D], got shape [8, 8, 64]"),
        (info([1, 1, 8, 64]), info([1, 1, 16, 64]), None, ValueError, "k [1, 1, 16, 64]"),
        (info([1, 2, 8, 64]), None, info([1, 1, 8, 64]), ValueError, "must have one shape"),
        (info([1, 1, 8, 96]), None, None, ValueError, "head dim D = 96 has no kernel; supported: 64, 128, 256"),
    ],
)
def test_attention_errors(q, k, v, error, message):
    with pytest.raises(error) as err:
        checks.check_attention(q, k or q, v or q)
    text = str(err.value)
    assert message in text and text.startswith("tawa.torch.attention: ") and "\n" not in text


@pytest.mark.parametrize("scale", [0.0, -0.125, float("inf"), float("nan")])
def test_attention_scale_must_be_positive(scale):
    assert checks.attention_scale(64, None) == 0.125 and checks.attention_scale(64, 2) == 2.0
    with pytest.raises(ValueError, match=r"^tawa.torch.attention: scale must be positive and finite, got "):
        checks.attention_scale(64, scale)


def test_attention_fp8_problem_kernels_and_grid():
    q = info([2, 3, 200, 128], "float8_e4m3fn")
    p = checks.check_attention_fp8(q, q, q)
    assert (p.B, p.H, p.S, p.D) == (2, 3, 200, 128)
    assert [checks.attention_fp8_kernel(c) for c in (False, True)] == ["attention_fwd_fp8", "attention_fwd_fp8_causal"]
    for name in checks.FP8_KERNELS.values():  # functions of their example file, 128 query rows a program
        assert f"func.func @{name}(" in (kernels.EXAMPLES / kernels.FILES[name]).read_text()
        assert checks.attention_grid(200, 6, name) == (2, 6)
        assert checks.attention_grid(1, 2, name) == (1, 2)
    assert [checks.fp8_padded_keys(S) for S in (1, 16, 65, 200, 1024)] == [16, 16, 80, 208, 1024]
    assert not checks.needs_copy(q)
    assert checks.needs_copy(info([1, 1, 8, 128], "float8_e4m3fn", ptr=(1 << 20) + 8))  # 8 bytes off
    assert checks.needs_copy(info([1, 1, 8, 128], "float8_e4m3fn", strides=(3072, 128, 384, 1)))  # a qkv slice


FP8 = "float8_e4m3fn"


@pytest.mark.parametrize(
    "q, k, v, error, message",
    [
        (info([1, 1, 8, 128]), None, None, TypeError, "q is bfloat16; supported: float8_e4m3fn"),
        (info([1, 1, 8, 128], FP8), None, info([1, 1, 8, 128], "float8_e5m2"), TypeError,
         "v is float8_e5m2; supported: float8_e4m3fn"),
        (info([1, 1, 8, 128], FP8, device="cpu"), None, None, ValueError, "q is on cpu"),
        (info([1, 1, 8, 128], FP8), info([1, 1, 8, 128], FP8, device="cuda:1"), None, ValueError,
         "q is on cuda:0 but k on cuda:1"),
        (info([8, 8, 128], FP8), None, None, ValueError, "q must be [B, H, S, D], got shape [8, 8, 128]"),
        (info([1, 1, 8, 128], FP8), info([1, 1, 16, 128], FP8), None, ValueError,
         "must have one shape [B, H, S, D] (self-attention, equal lengths and heads); "
         "got q [1, 1, 8, 128], k [1, 1, 16, 128], v [1, 1, 8, 128]"),
        (info([1, 1, 8, 64], FP8), None, None, ValueError, "head dim D = 64 has no kernel; supported: 128"),
        (info([1, 1, 8, 256], FP8), None, None, ValueError, "head dim D = 256 has no kernel; supported: 128"),
    ],
)
def test_attention_fp8_errors(q, k, v, error, message):
    with pytest.raises(error) as err:
        checks.check_attention_fp8(q, k or q, v or q)
    text = str(err.value)
    assert message in text and text.startswith("tawa.torch.attention_fp8: ") and "\n" not in text


def test_attention_fp8_scales():
    assert checks.fp8_scales(None, 1, 1.0, 1) == (1 / math.sqrt(128), 1.0, 1.0, 1.0)
    assert checks.attention_fp8_scales(None, 1.0, 1.0, 1.0) == (1 / math.sqrt(128), 1.0)
    sm_scale, v_scale = checks.attention_fp8_scales(0.25, 0.5, 2.0, 0.75)
    assert (sm_scale, v_scale) == (0.25, 0.75)  # scale·q_scale·k_scale
    assert checks.attention_fp8_scales(None, 0.5, 3.0, 1.0)[0] == pytest.approx(1.5 / math.sqrt(128))


@pytest.mark.parametrize("name", ["scale", "q_scale", "k_scale", "v_scale"])
@pytest.mark.parametrize(
    "value, error, message",
    [
        (0.0, ValueError, "must be positive and finite, got 0.0"),
        (-0.5, ValueError, "must be positive and finite, got -0.5"),
        (float("inf"), ValueError, "must be positive and finite, got inf"),
        (float("nan"), ValueError, "must be positive and finite, got nan"),
        ("0.5", TypeError, "must be a float, got str"),
        (True, TypeError, "must be a float, got bool"),
    ],
)
def test_attention_fp8_bad_scales(name, value, error, message):
    scales = {"scale": None, "q_scale": 1.0, "k_scale": 1.0, "v_scale": 1.0, name: value}
    with pytest.raises(error) as err:
        checks.attention_fp8_scales(**scales)
    assert str(err.value) == f"tawa.torch.attention_fp8: {name} {message}"


def test_attention_fp8_scales_must_be_float32():
    with pytest.raises(ValueError) as err:
        checks.attention_fp8_scales(1e-20, 1e-20, 1.0, 1.0)
    assert str(err.value) == (
        "tawa.torch.attention_fp8: scale·q_scale·k_scale = 1e-40 is not a normal float32 (the kernel takes it as f32)"
    )
    with pytest.raises(ValueError, match=r"^tawa.torch.attention_fp8: v_scale = 1e\+39 is not a normal float32"):
        checks.attention_fp8_scales(None, 1.0, 1.0, 1e39)


def test_needs_copy():
    assert not checks.needs_copy(info([64, 128]))
    assert not checks.needs_copy(info([1, 128], strides=(999, 1)))  # a size-1 dimension's stride is free
    assert checks.needs_copy(info([64, 128], ptr=(1 << 20) + 2))  # element- but not 16-byte-aligned
    assert checks.needs_copy(info([128, 64], strides=(1, 128)))  # a transposed view
    assert checks.needs_copy(info([64, 64], strides=(128, 1)))  # every other row


@pytest.mark.parametrize(
    "b_kn, expected",
    [
        (info([64, 256]), ("matmul", False)),  # row-major [K, N]: @matmul in place
        (info([64, 256], ptr=(1 << 20) + 8), ("matmul", True)),  # misaligned: a copy
        (info([64, 100]), ("gemm", True)),  # [K, N] rows of 200 bytes: TMA cannot read them
        (info([64, 100], strides=(1, 64)), ("gemm", False)),  # w.t() of a row-major [N, K]: @gemm in place
        (info([64, 100], strides=(1, 64), ptr=(1 << 20) + 4), ("gemm", True)),
        (info([64, 256], strides=(512, 1)), ("gemm", True)),  # a slice of a wider array
        (info([64, 1]), ("gemm", False)),  # N = 1: row-major [K, 1] is also [1, K]
    ],
)
def test_matmul_b_operand(b_kn, expected):
    assert checks.matmul_b_operand(b_kn) == expected


@pytest.mark.parametrize(
    "a_mk, expected",
    [
        (info([100, 64]), (False, False)),  # row-major [M, K]: in place
        (info([100, 64], ptr=(1 << 20) + 8), (False, True)),  # misaligned: a copy
        (info([136, 64], strides=(1, 136)), (True, False)),  # dy.t() of a row-major [K, M]: in place, "_at"
        (info([100, 64], strides=(1, 100)), (False, True)),  # [K, M] rows of 200 bytes: TMA cannot read them
        (info([136, 64], strides=(1, 136), ptr=(1 << 20) + 4), (False, True)),  # misaligned transpose: a copy
        (info([136, 64], strides=(1, 272)), (False, True)),  # neither layout: a slice of a transpose
        (info([128, 64], strides=(128, 2)), (False, True)),  # every other column
    ],
)
def test_matmul_a_operand(a_mk, expected):
    assert checks.matmul_a_operand(a_mk) == expected


def test_grids_follow_the_examples():
    assert checks.matmul_grid(200, 136) == (2, 1)
    assert checks.matmul_grid(256, 257) == (2, 2)
    assert checks.matmul_grid(0, 300) == (0, 2)
    assert checks.attention_grid(200, 24, "attention_fwd") == (2, 24)
    assert checks.attention_grid(128, 1, "attention_fwd_d256_causal") == (1, 1)
    assert checks.attention_grid(384, 1, "attention_fwd_d64") == (2, 1)  # 192 rows a program
    assert checks.attention_grid(384, 1, "attention_fwd_d64_causal") == (3, 1)


@pytest.mark.parametrize("name", sorted(checks.FP8_KERNELS.values()))
def test_attention_fp8_rows_are_the_example(name):
    from tawa.bench.attention import query_rows

    assert query_rows(kernels.source(name), name) == 128 and name not in checks.KERNEL_ROWS
    assert checks.attention_grid(300, 4, name) == (3, 4)


@pytest.mark.parametrize(("head_dim", "causal", "S", "batch_heads", "kernel"), [
    (64, False, 2048, 16, "attention_fwd_d64_m128"),  # 176 programs of 192 rows on 132 SMs: two rounds of 1.5
    (64, False, 20, 6, "attention_fwd_d64_m128"),
    (64, False, 512, 512, "attention_fwd_d64"),  # many programs: the 192-row kernel's cheaper rows
    (64, False, 16384, 16, "attention_fwd_d64"),
    (64, True, 16384, 16, "attention_fwd_d64_causal_m192"),
    (64, True, 512, 512, "attention_fwd_d64_causal"),
    (256, False, 16384, 16, "attention_fwd_d256_n80"),  # long sequences: 80-key blocks
    (256, True, 32768, 16, "attention_fwd_d256_n80_causal"),
    (256, True, 512, 512, "attention_fwd_d256_causal"),  # short ones: 64-key blocks
])
def test_attention_variant_per_problem(head_dim, causal, S, batch_heads, kernel):
    """The operators take the variant the cost model expects to finish first
    (`tawa.analysis.attention_cost`; its tests check the model itself)."""
    from tawa.analysis.attention_cost import VARIANTS, estimate

    chosen = checks.attention_variant(head_dim, causal, S, batch_heads, sms=132)
    assert chosen.kernel == kernel
    times = [estimate(v, head_dim, S, batch_heads, causal, sms=132) for v in VARIANTS[(head_dim, causal)]]
    assert min(times) == estimate(chosen, head_dim, S, batch_heads, causal, sms=132)
    assert checks.attention_grid(S, batch_heads, kernel)[0] == -(-S // chosen.rows)


def test_kernel_sources():
    causal = kernels.source("attention_fwd_d64_causal")
    assert re.findall(r"func\.func @(\w+)", causal) == ["attention_fwd_d64_causal"]
    f16 = kernels.source("matmul", "float16")
    assert "f16" in f16 and "bf16" not in f16
    with pytest.raises(KeyError, match="no kernel 'conv'"):
        kernels.source("conv")


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted({v.label for vs in VARIANTS.values() for v in vs if v.options}))
def test_variant_options_compile(label):
    """Each variant's options change its kernel (PTX on the CPU): head dim
    256's early release of Q moves its release before the last P·V; causal
    head dim 64's pinned waits add fences, and without turns its named
    barriers go."""
    import tawa

    (variant,) = [v for vs in VARIANTS.values() for v in vs if v.label == label]
    source = kernels.source(variant.kernel)
    assert tawa.compile(source, variant.kernel, **dict(variant.options)).ptx != tawa.compile(source, variant.kernel).ptx


def test_user_options_per_kernel(monkeypatch):
    assert kernels.options_for("attention_fwd_d256") == {}
    monkeypatch.setitem(kernels.OPTIONS, "attention_fwd_d256", {"stages": 2})
    assert kernels.options_for("attention_fwd_d256") == {"stages": 2}
    kernels.options_for("attention_fwd_d256")["stages"] = 3  # a copy
    assert kernels.OPTIONS["attention_fwd_d256"] == {"stages": 2}


@pytest.mark.parametrize("name", ["attention_fwd_fp8", "attention_fwd_fp8_causal"])
def test_fp8_kernel_sources_are_as_written(name):
    """The fp8 example is compiled as written: its e4m3 inputs and bf16 output
    stay (no element type is substituted), and it takes no other dtype."""
    text = kernels.source(name)
    assert re.findall(r"func\.func @(\w+)", text) == [name]
    assert kernels.default_dtype(name) == "float8_e4m3fn" and kernels.source(name, "float8_e4m3fn") == text
    assert "memref<?x?x?xf8E4M3FN>" in text and "memref<?x?x?xbf16>" in text and "xf16" not in text
    for dtype in ("bfloat16", "float16"):
        with pytest.raises(ValueError, match=f"kernel '{name}' takes float8_e4m3fn only, not {dtype}"):
            kernels.source(name, dtype)
    assert kernels.default_dtype("attention_fwd") == "bfloat16"


def test_import_tawa_does_not_import_torch():
    code = "import sys, tawa, tawa.runtime; assert 'torch' not in sys.modules, 'torch was imported'"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_without_torch_the_operators_say_why():
    if tt.UNAVAILABLE is None:
        pytest.skip("torch is installed here: the operators are registered")
    with pytest.raises(ImportError, match=r"tawa.torch needs torch >= 2\.5"):
        tt.matmul(None, None)
    with pytest.raises(ImportError, match=r"tawa.torch needs torch >= 2\.5"):
        tt.attention(None, None, None)
    with pytest.raises(ImportError, match=r"tawa.torch needs torch >= 2\.5"):
        tt.attention_fp8(None, None, None)


# --------------------------------------------------------------------------- with torch


@pytest.fixture
def torch():
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


def test_operators_are_registered(torch):
    assert str(torch.ops.tawa.matmul.default._schema) == (
        "tawa::matmul(Tensor a, Tensor b, bool transpose_b) -> Tensor"
    )
    assert str(torch.ops.tawa.attention.default._schema) == (
        "tawa::attention(Tensor q, Tensor k, Tensor v, bool causal, float? scale) -> Tensor"
    )
    assert str(torch.ops.tawa.attention_fp8.default._schema) == (
        "tawa::attention_fp8(Tensor q, Tensor k, Tensor v, bool causal, float? scale, float q_scale, "
        "float k_scale, float v_scale, bool v_transposed) -> Tensor"
    )


def test_meta_shapes(torch):
    bf16 = torch.bfloat16
    a = torch.empty(2, 100, 64, dtype=bf16, device="meta")
    assert tt.matmul(a, torch.empty(64, 300, dtype=bf16, device="meta")).shape == (2, 100, 300)
    c = tt.matmul(a, torch.empty(300, 64, dtype=bf16, device="meta"), transpose_b=True)
    assert (c.shape, c.dtype, c.is_contiguous()) == ((2, 100, 300), bf16, True)
    q = torch.empty(2, 12, 256, 64, dtype=bf16, device="meta").transpose(1, 2).transpose(1, 2)
    o = tt.attention(q, q, q, causal=True)
    assert (o.shape, o.dtype) == ((2, 12, 256, 64), bf16)
    q8 = torch.empty(2, 3, 200, 128, dtype=torch.float8_e4m3fn, device="meta")
    o = tt.attention_fp8(q8, q8, q8.transpose(2, 3).transpose(2, 3), causal=True, q_scale=0.5, v_scale=2)
    assert (o.shape, o.dtype, o.is_contiguous()) == ((2, 3, 200, 128), bf16, True)


def test_meta_errors(torch):
    a = torch.empty(4, 60, dtype=torch.bfloat16, device="meta")
    with pytest.raises(ValueError, match="K = 60 is not a multiple of 8"):
        tt.matmul(a, torch.empty(60, 8, dtype=torch.bfloat16, device="meta"))
    with pytest.raises(TypeError, match="a is float32"):
        tt.matmul(a.float(), a.float().t())
    q = torch.empty(1, 2, 8, 32, dtype=torch.bfloat16, device="meta")
    with pytest.raises(ValueError, match="head dim D = 32"):
        tt.attention(q, q, q)
    with pytest.raises(TypeError, match="attention_fp8: q is bfloat16; supported: float8_e4m3fn"):
        tt.attention_fp8(q, q, q)
    q8 = torch.empty(1, 2, 8, 64, dtype=torch.float8_e4m3fn, device="meta")
    with pytest.raises(ValueError, match="attention_fp8: head dim D = 64 has no kernel; supported: 128"):
        tt.attention_fp8(q8, q8, q8)
    q8 = torch.empty(1, 2, 8, 128, dtype=torch.float8_e4m3fn, device="meta")
    with pytest.raises(ValueError, match="attention_fp8: k_scale must be positive and finite, got -1"):
        tt.attention_fp8(q8, q8, q8, k_scale=-1.0)
    with pytest.raises(ValueError, match="attention_fp8: v_scale must be positive and finite"):  # the operator itself
        torch.ops.tawa.attention_fp8(q8, q8, q8, False, None, 1.0, 1.0, 0.0, False)
    with pytest.raises(TypeError, match="attention_fp8: q_scale must be a float, got Tensor"):
        tt.attention_fp8(q8, q8, q8, q_scale=torch.tensor(0.5))


def test_cpu_tensors_are_refused(torch):
    a = torch.ones(8, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="a is on cpu; tawa's kernels run on CUDA tensors"):
        tt.matmul(a, a)
    q = torch.ones(1, 1, 8, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="q is on cpu"):
        tt.attention(q, q, q)
    q8 = torch.ones(1, 1, 8, 128).to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="attention_fp8: q is on cpu"):
        tt.attention_fp8(q8, q8, q8)


def test_traced_as_one_operator(torch):
    """make_fx over fake CUDA tensors: each operator is one node of the graph."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    def block(x, w, q, q8):
        o8 = tt.attention_fp8(q8, q8, q8, q_scale=0.5, v_scale=2.0)
        return tt.matmul(x, w, transpose_b=True).relu(), tt.attention(q, q, q, causal=True), o8

    with FakeTensorMode():
        args = (
            torch.empty(4, 64, dtype=torch.bfloat16, device="cuda"),
            torch.empty(8, 64, dtype=torch.bfloat16, device="cuda"),
            torch.empty(1, 2, 16, 64, dtype=torch.bfloat16, device="cuda"),
            torch.empty(1, 2, 16, 128, dtype=torch.float8_e4m3fn, device="cuda"),
        )
    graph = make_fx(block, tracing_mode="fake")(*args)
    targets = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    assert targets.count("tawa.matmul.default") == 1 and targets.count("tawa.attention.default") == 1
    assert targets.count("tawa.attention_fp8.default") == 1


def test_torch_compile_fullgraph_on_meta_tensors(torch):
    def block(x, w):
        return tt.matmul(x, w, transpose_b=True) * 2

    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    x = torch.empty(4, 64, dtype=torch.bfloat16, device="meta")
    w = torch.empty(8, 64, dtype=torch.bfloat16, device="meta")
    assert compiled(x, w).shape == (4, 8)


def test_attention_fp8_torch_compile_fullgraph_on_meta_tensors(torch):
    def block(q, k, v):
        return tt.attention_fp8(q, k, v, causal=True, q_scale=0.5, k_scale=2.0, v_scale=0.75) * 2

    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    q = torch.empty(1, 2, 40, 128, dtype=torch.float8_e4m3fn, device="meta")
    o = compiled(q, q, q)
    assert (o.shape, o.dtype) == ((1, 2, 40, 128), torch.bfloat16)


class StandIn:
    """A kernel that computes, on the CPU in float32, what the compiled kernel
    computes from its arguments, and records the call."""

    def __init__(self, name, dtype, calls):
        self.name, self.dtype, self.calls = name, dtype, calls
        # The arguments the kernel addresses itself (`tawa.Kernel.abi`): the 80-key head-dim-256
        # attention kernels store O from their threads, as a dense array.
        self.abi = types.SimpleNamespace(addressed=(3,) if "_n80" in name else ())

    def __call__(self, *args, grid):
        import torch

        self.calls.append((self.name, self.dtype, args, grid))
        if self.name in ("matmul", "gemm", "matmul_at", "gemm_at"):  # "_at": A given as [K, M]
            A, B, C = (t.float() for t in args[:3])
            C_ref = args[2]
            A = A.T if self.name.endswith("_at") else A
            C_ref.copy_(A @ (B if self.name.startswith("matmul") else B.T))
            return
        if self.name.startswith("attention_fwd_fp8"):  # Vᵀ [B·H, D, S padded], then v_scale
            q, k, vt, o, S, scale, v_scale = args
            v, out_scale = vt[:, :, :S].transpose(1, 2), v_scale
        else:  # q, o [B, H, S, D]; k, v [B, H / group, Sk, D]
            q, k, v, o, S, Sk, scale, group = args
            k, v = (t.repeat_interleave(group, 1) for t in (k, v))
            out_scale = 1.0
        s = (q.float() @ k.float().transpose(-1, -2)) * scale
        if "_causal" in self.name:  # aligned bottom-right
            n, m = s.shape[-2:]
            s = s.masked_fill(torch.ones(n, m, dtype=torch.bool).triu(m - n + 1), float("-inf"))
        o.copy_(out_scale * (s.softmax(-1) @ v.float()))


@pytest.fixture
def stand_in(torch, monkeypatch):
    """Real implementations on CPU tensors, with stand-in kernels."""
    calls = []
    monkeypatch.setattr(checks, "check_devices", lambda *args: None)
    monkeypatch.setattr(kernels, "compiled", lambda name, dtype, **options: StandIn(name, dtype, calls))
    from tawa.torch import calls as calls_module

    calls_module.forget()  # calls remembered by earlier tests hold their stand-ins
    yield calls
    calls_module.forget()


@pytest.mark.parametrize(
    "case, kernel, b_in_place",
    [
        ("kn", "matmul", True),  # row-major [K, N]
        ("kn_ragged", "gemm", False),  # [K, N] with N = 100: copied to [N, K]
        ("nk", "gemm", True),  # transpose_b, row-major [N, K]
        ("w_t", "gemm", True),  # w.t() of a row-major [N, K]
        ("sliced", "gemm", False),  # every other column
    ],
)
def test_matmul_real_implementation(torch, stand_in, case, kernel, b_in_place):
    g = torch.Generator().manual_seed(0)
    dt = torch.float16 if case == "nk" else torch.bfloat16
    a = torch.randn(2, 70, 64, generator=g).to(dt)
    transpose_b = case == "nk"
    b = {
        "kn": lambda: torch.randn(64, 256, generator=g).to(dt),
        "kn_ragged": lambda: torch.randn(64, 100, generator=g).to(dt),
        "nk": lambda: torch.randn(136, 64, generator=g).to(dt),
        "w_t": lambda: torch.randn(136, 64, generator=g).to(dt).t(),
        "sliced": lambda: torch.randn(64, 512, generator=g).to(dt)[:, ::2],
    }[case]()
    c = tt.matmul(a, b, transpose_b=transpose_b)
    ref = a.float() @ (b.float().T if transpose_b else b.float())
    assert c.shape == ref.shape and c.dtype == dt and c.is_contiguous()
    assert torch.allclose(c.float(), ref, rtol=1e-2, atol=1e-2)
    ((name, dtype, args, grid),) = stand_in
    N = ref.shape[-1]
    # The heuristic's tile (tawa.runtime.autotune, the cost model's choice): a small problem takes
    # 64-row tiles, more programs on more SMs.
    elem = "bf16" if dt == torch.bfloat16 else "f16"
    tiled = heuristic(GemmProblem(140, N, 64, elem, elem, elem, "kn" if kernel == "matmul" else "nk"))
    assert tiled.config.block_m == 64
    assert (name, dtype, args[3:], grid) == (kernel, str(dt).removeprefix("torch."), (140, N, 64), tiled.grid(140, N))
    assert args[0].shape == (140, 64) and args[0].data_ptr() == a.data_ptr()  # a read in place
    assert args[1].is_contiguous() and (args[1].data_ptr() == b.data_ptr()) == b_in_place
    assert args[2].data_ptr() == c.data_ptr()


@pytest.mark.parametrize("b_kn", [True, False], ids=["b_kn", "b_nk"])
def test_matmul_reads_a_transposed_a_in_place(torch, stand_in, b_kn):
    """A = dYᵀ (the transpose of a row-major [K, M]) is read in place by the "_at" kernels."""
    g = torch.Generator().manual_seed(1)
    dy = torch.randn(72, 136, generator=g).to(torch.bfloat16)  # [K, M]: tokens × features
    b = torch.randn(72, 64, generator=g).to(torch.bfloat16)
    b = b if b_kn else b.t().contiguous().t()  # [K, N] row-major, or the transpose of an [N, K]
    c = tt.matmul(dy.t(), b)
    ref = dy.float().T @ b.float()
    assert c.shape == (136, 64) and torch.allclose(c.float(), ref, rtol=1e-2, atol=1e-2)
    ((name, _, args, grid),) = stand_in
    assert name == ("matmul_at" if b_kn else "gemm_at") and args[3:] == (136, 64, 72)
    assert args[0].shape == (72, 136) and args[0].data_ptr() == dy.data_ptr() and args[0].is_contiguous()
    assert args[1].data_ptr() == b.data_ptr()


def test_matmul_copies_an_a_neither_layout_describes(torch, stand_in):
    g = torch.Generator().manual_seed(2)
    wide = torch.randn(64, 272, generator=g).to(torch.bfloat16)
    a = wide[:, ::2].t()  # [136, 64], strides (2, 272): no row-major [M, K] or [K, M]
    c = tt.matmul(a, torch.randn(64, 48, generator=g).to(torch.bfloat16))
    assert torch.allclose(c.float(), a.float() @ stand_in[0][2][1].float(), rtol=1e-2, atol=1e-2)
    ((name, _, args, _),) = stand_in
    assert name == "matmul" and args[0].shape == (136, 64) and args[0].is_contiguous()
    assert args[0].data_ptr() != wide.data_ptr()


def test_matmul_degenerate_sizes_launch_nothing(torch, stand_in):
    bf16 = torch.bfloat16
    c = tt.matmul(torch.ones(3, 0, dtype=bf16), torch.ones(0, 5, dtype=bf16))
    assert c.shape == (3, 5) and bool((c == 0).all())
    assert tt.matmul(torch.ones(0, 8, dtype=bf16), torch.ones(8, 5, dtype=bf16)).shape == (0, 5)
    assert stand_in == []


@pytest.mark.parametrize("causal", [False, True])
def test_attention_real_implementation(torch, stand_in, causal):
    g = torch.Generator().manual_seed(1)
    B, S, H, D = 2, 20, 3, 64
    qkv = torch.randn(B, S, 3, H, D, generator=g).to(torch.bfloat16)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)  # [B, H, S, D] views of the fused projection: read in place
    o = tt.attention(q, k, v, causal=causal)
    ((name, dtype, args, grid),) = stand_in
    # S = 20 on 6 heads: one 128-row program a head beats one of 192 rows (d64 non-causal)
    assert name == checks.attention_variant(D, causal, S, B * H).kernel and grid == (1, H, B)
    assert name == ("attention_fwd_d64_causal" if causal else "attention_fwd_d64_m128")
    assert args[4:] == (S, S, 1 / math.sqrt(D), 1)  # q_len, kv_len, scale, query heads per key/value head
    for given, passed in zip((q, k, v), args[:3]):
        assert (passed.data_ptr(), passed.stride()) == (given.data_ptr(), given.stride())
    mask = torch.ones(S, S, dtype=torch.bool).triu(1) if causal else None
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=None if mask is None else ~mask)
    # O in q's order: [B, S, H, D] storage, so that the next projection reads O.transpose(1, 2) as it is.
    assert o.shape == (B, H, S, D) and o.stride() == (S * H * D, D, H * D, 1) and args[3] is o
    assert o.transpose(1, 2).is_contiguous()
    assert torch.allclose(o.float(), ref, atol=2e-2)
    tt.attention(q, k, v, scale=0.5)
    assert stand_in[-1][2][6] == 0.5


def fp8_reference(torch, q, k, v, scale, q_scale, k_scale, v_scale, causal):
    """float32 attention of the dequantized e4m3 inputs."""
    S = q.shape[-2]
    s = (q_scale * q.float()) @ (k_scale * k.float()).transpose(-1, -2) * scale
    if causal:
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return s.softmax(-1) @ (v_scale * v.float())


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", ["dense", "qkv"])
def test_attention_fp8_real_implementation(torch, stand_in, causal, layout):
    g = torch.Generator().manual_seed(3)
    B, H, S, D = 2, 3, 20, 128
    if layout == "qkv":  # [B, H, S, D] views of one [B, S, 3, H, D]: q, k copied
        q, k, v = torch.randn(B, S, 3, H, D, generator=g).to(torch.float8_e4m3fn).permute(2, 0, 3, 1, 4)
    else:
        q, k, v = (torch.randn(B, H, S, D, generator=g).to(torch.float8_e4m3fn) for _ in range(3))
    o = tt.attention_fp8(q, k, v, causal=causal, q_scale=0.5, k_scale=2.0, v_scale=0.75)
    ((name, dtype, args, grid),) = stand_in
    assert (name, dtype, grid) == (checks.attention_fp8_kernel(causal), "float8_e4m3fn", (1, B * H))
    assert name == ("attention_fwd_fp8_causal" if causal else "attention_fwd_fp8")
    assert args[4:] == (S, 0.5 * 2.0 / math.sqrt(D), 0.75)  # seq_len, scale·q_scale·k_scale, v_scale
    q3, k3, vt, o3 = args[:4]
    assert all(t.shape == (B * H, S, D) and t.is_contiguous() for t in (q3, k3, o3))
    assert (q3.data_ptr() == q.data_ptr()) == (layout == "dense") and o3.data_ptr() == o.data_ptr()
    # Vᵀ: a fresh dense [B·H, D, 32] e4m3 buffer, keys padded to 16 bytes with zeros
    assert vt.shape == (B * H, D, 32) and vt.is_contiguous() and vt.dtype == torch.float8_e4m3fn
    assert torch.equal(vt[:, :, :S].float(), v.reshape(B * H, S, D).transpose(1, 2).float())
    assert bool((vt[:, :, S:].float() == 0).all())
    ref = fp8_reference(torch, q, k, v, 1 / math.sqrt(D), 0.5, 2.0, 0.75, causal)
    assert o.shape == (B, H, S, D) and o.dtype == torch.bfloat16 and o.is_contiguous()
    assert torch.allclose(o.float(), ref, atol=2e-2)
    tt.attention_fp8(q, k, v, scale=0.5)
    assert stand_in[-1][2][5:] == (0.5, 1.0)


def test_attention_fp8_unpadded_keys(torch, stand_in):
    """S a multiple of 16: Vᵀ has no padding columns."""
    q = torch.randn(1, 1, 32, 128).to(torch.float8_e4m3fn)
    tt.attention_fp8(q, q, q)
    vt = stand_in[0][2][2]
    assert vt.shape == (1, 128, 32) and torch.equal(vt[0].float(), q[0, 0].t().float())


def test_attention_fp8_degenerate_sizes_launch_nothing(torch, stand_in):
    f8 = torch.float8_e4m3fn
    o = tt.attention_fp8(*(torch.ones(2, 3, 0, 128).to(f8) for _ in range(3)))
    assert (o.shape, o.dtype) == ((2, 3, 0, 128), torch.bfloat16)
    assert tt.attention_fp8(*(torch.ones(0, 3, 8, 128).to(f8) for _ in range(3))).shape == (0, 3, 8, 128)
    assert stand_in == []


def test_opcheck(torch, stand_in):
    """torch.library.opcheck: schema, fake implementation against the real one
    (stand-in kernels on the CPU), AOT dispatch with dynamic shapes."""
    g = torch.Generator().manual_seed(2)
    a = torch.randn(70, 64, generator=g).to(torch.bfloat16)
    w = torch.randn(136, 64, generator=g).to(torch.bfloat16)
    torch.library.opcheck(torch.ops.tawa.matmul.default, (a, w, True))
    torch.library.opcheck(torch.ops.tawa.matmul.default, (a, w.t(), False))
    q = torch.randn(1, 2, 20, 64, generator=g).to(torch.bfloat16)
    torch.library.opcheck(torch.ops.tawa.attention.default, (q, q, q, True, None))
    # fp8: without test_schema, whose mutation check compares inputs by allclose (no e4m3 arithmetic in torch)
    q8 = torch.randn(1, 2, 20, 128, generator=g).to(torch.float8_e4m3fn)
    utils = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
    torch.library.opcheck(torch.ops.tawa.attention_fp8.default, (q8, q8, q8, True, None, 0.5, 2.0, 0.75, False),
                          test_utils=utils)


def test_inputs_that_require_grad_run_forward_and_backward_raises(torch, stand_in):
    """Where no backward kernels exist (attention at head dim 256), a call on
    tensors requiring grad computes its output (nn.Parameters outside
    torch.no_grad() are common), and only a backward through it raises,
    saying why.  The operators' backward passes: tests/runtime/test_autograd_cpu.py."""
    g = torch.Generator().manual_seed(3)
    q = torch.randn(1, 2, 20, 256, generator=g).to(torch.bfloat16).requires_grad_()
    k = torch.randn(1, 2, 20, 256, generator=g).to(torch.bfloat16)
    o = torch.ops.tawa.attention.default(q, k, k, False, None)
    assert o.requires_grad and len(stand_in) == 1
    with pytest.raises(RuntimeError, match=r"tawa::attention has no backward here: head dim D = 256"):
        o.float().sum().backward()
    with torch.no_grad():
        assert not torch.ops.tawa.attention.default(q, k, k, False, None).requires_grad


def test_a_given_vt_is_checked_as_the_v_it_holds_and_read_in_place_when_it_can():
    """`attention_fp8(..., v_transposed=True)`: v is Vᵀ [B, H, 128, S]; the
    kernel reads it as it is when dense, 16-byte aligned and of whole 16-key rows."""
    q = checks.TensorInfo((1, 2, 32, 128), "float8_e4m3fn", "cuda:0", (8192, 4096, 128, 1), 0)
    vt = checks.TensorInfo((1, 2, 128, 32), "float8_e4m3fn", "cuda:0", (8192, 4096, 32, 1), 0)
    assert checks.check_attention_fp8(q, q, vt, v_transposed=True) == checks.AttentionProblem(1, 2, 32, 128)
    with pytest.raises(ValueError, match="q, k and v must have one shape"):
        checks.check_attention_fp8(q, q, q, v_transposed=True)
    assert checks.vt_in_place(vt)
    ragged = checks.TensorInfo((1, 2, 128, 24), "float8_e4m3fn", "cuda:0", (6144, 3072, 24, 1), 0)
    assert not checks.vt_in_place(ragged)  # 24-byte rows: copied into 32-key rows
    assert not checks.vt_in_place(checks.TensorInfo(vt.shape, vt.dtype, vt.device, vt.strides, 8))
