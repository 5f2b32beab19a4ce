"""`tawa.torch.matmul_fp8` and the scaled fp8 GEMM programs without a GPU.

- The argument checks and layouts (`tawa.torch.fp8_checks`) on plain
  `TensorInfo`s: no torch needed.
- The generated tile programs (`Epilogue(scale_a=..., scale_b=...)`): their
  text, the tile program in the CPU interpreter against NumPy float64 on
  ragged M, N (C poisoned), per-tensor and per-row scales, e4m3 and e5m2;
  the program lowered by `tawa-hopper-pipeline` and run by the CTA
  simulator on 2 persistent CTAs computes what the tile program computes;
  ptxas assembles the chosen tiles without spills.
- With torch installed (skipped, saying why, without it): the schema, the
  fake implementation on meta tensors, and the real implementation on CPU
  tensors with a stand-in kernel (which kernel, which operands are read in
  place or copied, the output against torch in float32).
"""

from __future__ import annotations

import itertools
import shutil
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest
from test_linear_cpu import info as linear_info

import tawa
import tawa.torch as tt
from tawa.kernels.gemm import Epilogue, GemmConfig, gemm_grid, gemm_source, unsupported
from tawa.runtime.autotune import Choice
from tawa.torch import checks, linear_kernels
from tawa.torch import fp8_checks as fc

CUDA = "cuda:0"
E4M3, E5M2 = "float8_e4m3fn", "float8_e5m2"
NUMPY = {"f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) is not on PATH")


def info(shape, dtype=E4M3, device=CUDA, strides=None):
    """A TensorInfo of an fp8 tensor by default (test_linear_cpu's, row-major, aligned)."""
    return linear_info(shape, dtype, device, strides)


def f32(shape):
    return info(shape, "float32")


# --------------------------------------------------------------------------- checks (no torch)


def test_problem_and_scale_kinds():
    p = fc.check_matmul_fp8(info([100, 64]), info([64, 40], E5M2), f32([]), f32([1, 40]), "bfloat16")
    assert (p.M, p.N, p.K, p.types, p.scale_a, p.scale_b) == (100, 40, 64, ("f8E4M3FN", "f8E5M2", "bf16"), "tensor", "row")
    p = fc.check_matmul_fp8(info([100, 64]), info([64, 40]), f32([100, 1]), f32([1]), "float32")
    assert (p.scale_a, p.scale_b, p.types[2], p.out_shape) == ("row", "tensor", "f32", (100, 40))
    p = fc.check_matmul_fp8(info([100, 64]), info([64, 40]), f32([100]), f32([40]), "float16")
    assert (p.scale_a, p.scale_b) == ("row", "row")


A, B = info([8, 32]), info([32, 16])


@pytest.mark.parametrize("args, error, message", [
    ((info([8, 32], "bfloat16"), B, f32([]), f32([]), "bfloat16"), TypeError, "a is bfloat16; supported: float8_e4m3fn"),
    ((A, info([32, 16], "float16"), f32([]), f32([]), "bfloat16"), TypeError, "b is float16"),
    ((A, B, f32([]), f32([]), "float8_e4m3fn"), TypeError, "out_dtype float8_e4m3fn; supported: bfloat16, float16, float32"),
    ((A, B, info([], "bfloat16"), f32([]), "bfloat16"), TypeError, "scale_a is bfloat16; scales are float32"),
    ((A, B, f32([8, 2]), f32([]), "bfloat16"), ValueError,
     "scale_a must hold one element (per tensor) or be [8] or [8, 1] (one per row of a (M = 8)), got shape [8, 2]"),
    ((A, B, f32([]), f32([16, 1]), "bfloat16"), ValueError, "scale_b must hold one element (per tensor) or be [16] or [1, 16]"),
    ((info([2, 8, 32]), B, f32([]), f32([]), "bfloat16"), ValueError, "a and b must be 2-d ([M, K] and [K, N])"),
    ((A, info([16, 16]), f32([]), f32([]), "bfloat16"), ValueError, "a [8, 32] has K = 32 but b [16, 16], read as [K, N], has K = 16"),
    ((info([8, 40]), info([40, 16]), f32([]), f32([]), "bfloat16"), ValueError, "K = 40 is not a multiple of 16"),
    ((A, B, info([], "float32", device="cpu"), f32([]), "bfloat16"), ValueError, "scale_a is on cpu; tawa's kernels run on CUDA"),
    ((A, info([32, 16], device="cuda:1"), f32([]), f32([]), "bfloat16"), ValueError, "a is on cuda:0 but b on cuda:1"),
])
def test_errors(args, error, message):
    with pytest.raises(error) as err:
        fc.check_matmul_fp8(*args)
    text = str(err.value)
    assert message in text and text.startswith("tawa.torch.matmul_fp8: ") and "\n" not in text


def test_layouts():
    """b in place where it is the transpose of a row-major [N, K] (column-major
    [K, N], as torch._scaled_mm takes it); a row-major b is copied (wgmma reads
    fp8 only K-major). A scale viewed [M, 1] of a vector is read in place."""
    assert fc.b_in_place(info([64, 40], strides=(1, 64)))
    assert not fc.b_in_place(info([64, 40]))
    assert fc.b_in_place(info([64, 40], strides=(1, 80)))  # bᵀ rows of a wider [N, 80] matrix
    assert not fc.b_in_place(info([64, 40], strides=(1, 72)))  # 72-byte rows: not whole 16-byte units
    assert fc.a_in_place(info([100, 64])) and not fc.a_in_place(info([100, 64], strides=(1, 100)))
    assert fc.scale_in_place(f32([100, 1])) and fc.scale_in_place(f32([]))
    assert not fc.scale_in_place(info([100, 1], "float32", strides=(2, 1)))


# --------------------------------------------------------------------------- the generated programs


def test_scaled_program_text():
    config = GemmConfig(128, 128, 128, "f8E4M3FN", "f8E5M2", "bf16", epilogue=Epilogue(scale_a="row", scale_b="tensor"))
    text = gemm_source(config)
    assert config.kernel == "gemm_scale_a_row_scale_b_tensor" and unsupported(config) is None
    assert "%B: memref<?x?xf8E5M2>, %ScaleA: memref<?xf32>, %ScaleB: memref<?xf32>, %C: memref<?x?xbf16>" in text
    assert "tile.load %ScaleA[%m0] : memref<?xf32> -> tensor<128xf32>" in text  # one per row of C
    assert "tile.load_scalar %ScaleB[%c0] : memref<?xf32> -> f32" in text  # one for the tensor, read on the device
    assert text.index("%s_a_scaled") < text.index("%s_b_scaled") < text.index("arith.truncf")
    assert "unbatched" in unsupported(config.replace(batched=True))
    with pytest.raises(tawa.TawaError, match="a gated epilogue takes no scales"):
        Epilogue(gated=True, activation="silu", scale_a="row")
    with pytest.raises(tawa.TawaError, match="scale_b='col': expected None or one of tensor, row"):
        Epilogue(scale_b="col")


def operands(config: GemmConfig, M: int, N: int, K: int, seed: int):
    """The kernel's arguments (C poisoned) and NumPy's float64 reference."""
    rng = np.random.default_rng(seed)
    ep = config.epilogue
    a = rng.standard_normal((M, K)).astype(NUMPY[config.a_dtype])
    b = rng.standard_normal((N, K)).astype(NUMPY[config.b_dtype])
    sa = (rng.random(M if ep.scale_a == "row" else 1) + 0.5).astype(np.float32)
    sb = (rng.random(N if ep.scale_b == "row" else 1) + 0.5).astype(np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64).T) * sa.astype(np.float64)[:, None][: M if ep.scale_a == "row" else 1]
    want = want * sb.astype(np.float64)[None, :]
    c = np.full((M, N), np.nan, {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}[config.c_dtype])
    return [a, b, sa, sb, c, M, N, K], want


def check(got: np.ndarray, want: np.ndarray) -> None:
    got = got.astype(np.float64)
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements of C never written"
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2


@pytest.mark.parametrize("scale_a, scale_b", list(itertools.product(("tensor", "row"), repeat=2)))
@pytest.mark.parametrize("types", [("f8E4M3FN", "f8E4M3FN", "bf16"), ("f8E5M2", "f8E4M3FN", "f32")])
def test_in_the_interpreter(scale_a, scale_b, types, seed):
    config = GemmConfig(64, 64, 128, *types, epilogue=Epilogue(scale_a=scale_a, scale_b=scale_b))
    M, N, K = 100, 70, 256
    args, want = operands(config, M, N, K, seed)
    tawa.interpret(gemm_source(config), config.kernel, gemm_grid(config, M, N), *args)
    check(args[4], want)


@pytest.mark.parametrize("scale_a, scale_b", [("row", "tensor"), pytest.param("tensor", "row", marks=pytest.mark.slow)])
def test_lowered_program_computes_the_tile_program(scale_a, scale_b, seed):
    """Ragged M and N (the scale vectors' loads are masked at the edges), 2
    persistent CTAs, the pipeline's choice of tile for the problem."""
    from test_linear_generator import lowered

    M, N, K = 200, 150, 384
    choice = linear_kernels.epilogue_choice("nk", "", M, N, K, Epilogue(scale_a=scale_a, scale_b=scale_b),
                                            types=("f8E4M3FN", "f8E4M3FN", "bf16"))
    config = choice.config.replace(block_m=64, block_n=64)  # 4 x 3 programs for 2 CTAs
    choice = Choice(config, choice.stages, choice.group_m, choice.persistent)
    args, want = operands(config, M, N, K, seed)
    tawa.interpret(lowered(choice), config.kernel, gemm_grid(config, M, N), *args, ctas=2)
    check(args[4], want)


@needs_ptxas
@pytest.mark.parametrize("M, N, K", [(4096, 4096, 4096), (16, 4096, 4096), (1000, 1000, 1008)])
def test_chosen_tiles_assemble_without_spills(M, N, K):
    choice = linear_kernels.epilogue_choice("nk", "", M, N, K, Epilogue(scale_a="row", scale_b="row"),
                                            types=("f8E4M3FN", "f8E4M3FN", "bf16"))
    assert choice.compile().assemble().spill_bytes == 0, choice.config.id


# --------------------------------------------------------------------------- with torch


@pytest.fixture
def torch():
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


def test_without_torch_the_operator_says_why():
    if tt.UNAVAILABLE is None:
        pytest.skip("torch is installed here: the operator is registered")
    with pytest.raises(ImportError, match=r"tawa.torch needs torch >= 2\.5"):
        tt.matmul_fp8(None, None, None, None)


def test_registered_with_meta_shapes_and_errors(torch):
    assert str(torch.ops.tawa.matmul_fp8.default._schema) == (
        "tawa::matmul_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, ScalarType? out_dtype) -> Tensor")
    a = torch.empty(100, 64, dtype=torch.float8_e4m3fn, device="meta")
    b = torch.empty(40, 64, dtype=torch.float8_e4m3fn, device="meta").t()
    one = torch.empty((), dtype=torch.float32, device="meta")
    c = tt.matmul_fp8(a, b, one, one)
    assert (c.shape, c.dtype) == ((100, 40), torch.bfloat16)
    assert tt.matmul_fp8(a, b, one, one, torch.float32).dtype == torch.float32
    with pytest.raises(ValueError, match="tawa.torch.matmul_fp8: K = 40 is not a multiple of 16"):
        tt.matmul_fp8(a[:, :40], b[:40], one, one)
    with pytest.raises(TypeError, match="tawa.torch.matmul_fp8: scale_a is bfloat16"):
        tt.matmul_fp8(a, b, one.bfloat16(), one)


class StandIn:
    """The generated kernel stood in for: computes in float32 on the CPU what
    the kernel of `choice` computes, and records the call."""

    def __init__(self, choice, calls):
        self.choice, self.calls = choice, calls

    def assemble(self):
        """ptxas's verdict, which `linear_kernels.spill_free` asks for: no spills."""
        return SimpleNamespace(spill_bytes=0)

    def __call__(self, a, bt, scale_a, scale_b, c, M, N, K, grid):
        self.calls.append((self.choice.config, (a, bt, scale_a, scale_b, c), grid))
        assert a.shape == (M, K) and bt.shape == (N, K) and c.shape == (M, N)
        y = a.float() @ bt.float().T
        y = y * (scale_a[:, None] if scale_a.numel() == M and self.choice.config.epilogue.scale_a == "row" else scale_a)
        c.copy_(y * scale_b)


@pytest.fixture
def stand_in(torch, monkeypatch):
    """The real implementation on CPU tensors, with a stand-in kernel."""
    from tawa.torch import calls as calls_module

    calls = []
    monkeypatch.setattr(checks, "check_devices", lambda *args: None)
    monkeypatch.setattr(linear_kernels, "build", lambda choice: StandIn(choice, calls))
    calls_module.forget()
    linear_kernels.clear_cache()
    yield calls
    calls_module.forget()
    linear_kernels.clear_cache()


def test_real_implementation(torch, stand_in):
    g = torch.Generator().manual_seed(0)
    M, N, K = 70, 136, 64
    a = torch.randn(M, K, generator=g).to(torch.float8_e4m3fn)
    w = torch.randn(N, K, generator=g).to(torch.float8_e4m3fn)
    sa, sb = torch.rand(M, 1, generator=g) + 0.5, torch.tensor(0.75)
    c = tt.matmul_fp8(a, w.t(), sa, sb)
    want = (a.float() @ w.float().T) * sa * sb
    assert c.shape == (M, N) and c.dtype == torch.bfloat16 and c.is_contiguous()
    torch.testing.assert_close(c.float(), want, rtol=2e-2, atol=2e-2)
    ((config, args, grid),) = stand_in
    assert config.epilogue == Epilogue(scale_a="row", scale_b="tensor") and config.a_dtype == "f8E4M3FN"
    choice = linear_kernels.epilogue_choice("nk", "", M, N, K, config.epilogue, types=("f8E4M3FN", "f8E4M3FN", "bf16"))
    assert config == choice.config and grid == choice.grid(M, N)
    # In place: a, bᵀ (w as it is), the scales as vectors; C is the output.
    assert [t.data_ptr() for t in args] == [a.data_ptr(), w.data_ptr(), sa.data_ptr(), sb.data_ptr(), c.data_ptr()]


def test_row_major_b_is_copied_and_f32_out(torch, stand_in):
    g = torch.Generator().manual_seed(1)
    a = torch.randn(33, 32, generator=g).to(torch.float8_e5m2)
    b = torch.randn(32, 24, generator=g).to(torch.float8_e4m3fn)  # row-major [K, N]: read MN-major, so copied
    sa, sb = torch.tensor([2.0]), torch.rand(1, 24, generator=g) + 0.5
    c = tt.matmul_fp8(a, b, sa, sb, out_dtype=torch.float32)
    torch.testing.assert_close(c, (a.float() @ b.float()) * 2.0 * sb, rtol=1e-5, atol=1e-5)
    ((config, args, _),) = stand_in
    assert (config.a_dtype, config.b_dtype, config.c_dtype) == ("f8E5M2", "f8E4M3FN", "f32")
    assert args[1].data_ptr() != b.data_ptr() and args[1].is_contiguous() and args[1].shape == (24, 32)


def test_degenerate_sizes_launch_nothing(torch, stand_in):
    one = torch.tensor(1.0)
    e = torch.float8_e4m3fn
    assert tt.matmul_fp8(torch.ones(0, 16, dtype=e), torch.ones(5, 16, dtype=e).t(), one, one).shape == (0, 5)
    c = tt.matmul_fp8(torch.ones(3, 0, dtype=e), torch.ones(4, 0, dtype=e).t(), one, one)
    assert c.shape == (3, 4) and bool((c == 0).all())
    assert stand_in == []


def test_opcheck(torch, stand_in):
    """torch.library.opcheck: the fake implementation against the real one
    (the stand-in on the CPU), AOT dispatch (its schema test multiplies the
    fp8 inputs, which torch's CPU kernels do not)."""
    g = torch.Generator().manual_seed(2)
    a = torch.randn(20, 32, generator=g).to(torch.float8_e4m3fn)
    w = torch.randn(24, 32, generator=g).to(torch.float8_e4m3fn)
    torch.library.opcheck(torch.ops.tawa.matmul_fp8.default, (a, w.t(), torch.rand(20, 1), torch.rand(1, 24), None),
                          test_utils=("test_faketensor", "test_aot_dispatch_dynamic"))
