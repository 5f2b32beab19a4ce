"""Kernels without dots through the whole pipeline (docs/passes.md, "Kernels without dots"):
tawa-warp-specialize puts every op in the consumer warp groups but the tiles a loop streams
(the split-K reduce program's partials: a TMA producer and a ring), and the lowered kernel, run by
the CPU simulator on ragged shapes, gives the tile program's bits (the row softmax: within the
last bits its sums' order changes; the interpreter is the oracle, itself checked against
NumPy); ptxas assembles each without spills.  tests/runtime/test_dot_free_gpu.py runs them
on the GPU."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tawa
from tawa.kernels.gemm import GemmConfig, gemm_reduce_source
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

KERNELS = Path(__file__).resolve().parent / "dot_free"
BF16 = ml_dtypes.bfloat16


def lowered(text: str, **options):
    """`tawa-hopper-pipeline` (with `options`) less its final scf-to-cf step (what the simulator runs)."""
    module = tawa.parse(text)
    ctx = tawa.context()
    HopperPipelinePass.of(prepare=False, **options).apply(ctx, module)
    for p in PreparePtxPass.steps()[:-1]:
        p.apply(ctx, module)
    return module


def both(text: str, name: str, grid, inputs, out: np.ndarray, *scalars) -> tuple[np.ndarray, np.ndarray]:
    """(tile program's output, lowered kernel's output on 2 CTAs), each into a NaN-poisoned copy of `out`."""
    want, got = out.copy(), out.copy()
    tawa.interpret(text, name, grid, *inputs, want, *scalars)
    tawa.interpret(lowered(text), name, grid, *inputs, got, *scalars, ctas=2)
    return want, got


@pytest.mark.parametrize("M, N", [(130, 200), (128, 128), (1, 8)])
def test_add_relu(M, N):
    rng = np.random.default_rng(M * 1000 + N)
    A, B = (rng.standard_normal((M, N)).astype(BF16) for _ in range(2))
    text = (KERNELS / "add_relu.mlir").read_text()
    want, got = both(text, "add_relu", (-(-M // 128), -(-N // 128)), [A, B], np.full((M, N), np.nan, BF16))
    ref = np.maximum(A.astype(np.float32) + B.astype(np.float32), 0).astype(BF16)
    assert np.array_equal(want.astype(np.float32), ref.astype(np.float32))
    assert np.array_equal(got.astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("M", [100, 64, 3])
def test_row_softmax(M):
    X = np.random.default_rng(M).standard_normal((M, 136)).astype(np.float32) * 4
    text = (KERNELS / "row_softmax.mlir").read_text()
    out = np.full((M, 136), np.nan, np.float32)
    want, got = both(text, "row_softmax", (-(-M // 64),), [X], out)
    e = np.exp2(X[:, :128] - X[:, :128].max(1, keepdims=True))
    np.testing.assert_allclose(want[:, :128], e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert np.isnan(want[:, 128:]).all()  # columns past the tile are not written
    # The row sums fold in another order (per thread, then across the quad): the last bits differ.
    np.testing.assert_allclose(got[:, :128], want[:, :128], rtol=1e-6, atol=0)
    assert np.isnan(got[:, 128:]).all()


@pytest.mark.parametrize("M, N", [(100, 200), (1, 8)])
def test_unary_math(M, N):
    """sqrt, rsqrt, log (as log2 · ln 2), log2 and abs on fragments: the hardware's approximate
    lg2 and rsqrt are NumPy's functions in the simulator, so it matches the tile program closely."""
    X = np.random.default_rng(M).standard_normal((M, N)).astype(np.float32) * 3
    text = (KERNELS / "unary_math.mlir").read_text()
    want, got = both(text, "unary_math", (-(-M // 64), -(-N // 128)), [X], np.full((M, N), np.nan, np.float32))
    a = np.abs(X)
    ref = np.sqrt(a) + 1 / np.sqrt(a + 1) + np.log(a + 1) + np.log2(a + 2)
    np.testing.assert_allclose(want, ref, rtol=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_split_k_reduce_program():
    """The split-K GEMM's reduce program (tawa.kernels.gemm_reduce_source): a loop of loads and adds."""
    config = GemmConfig(128, 128, 64, split_k=3)
    M, N = 130, 200
    W = np.random.default_rng(7).standard_normal((3, M, N)).astype(np.float32)
    want, got = both(gemm_reduce_source(config), config.reduce_kernel, (2, 2), [W],
                     np.full((M, N), np.nan, BF16), M, N)
    np.testing.assert_allclose(want.astype(np.float32), W.sum(0), rtol=1e-2, atol=1e-2)
    assert np.array_equal(got.astype(np.float32), want.astype(np.float32))


def test_math_on_splats_alone_folds_to_scalars():
    """`FoldSplatMath`: tl.full(...) * s + 0.5 and -(1 / 4) run once on
    scalars (no fragment math on splats, which no pattern lowers), and the
    lowered kernel gives the tile program's result."""
    text = (KERNELS / "splat_math.mlir").read_text()
    M, s = 37, np.float32(3.0)
    x = np.random.default_rng(3).standard_normal((M, 64)).astype(np.float32)
    want, got = both(text, "splat_math", (3,), [x], np.full((M, 64), np.nan, np.float32), M, s)
    np.testing.assert_allclose(want, x * (s + np.float32(0.5)) - np.float32(0.25), rtol=1e-6)
    assert np.array_equal(got, want)
    body = str(lowered(text))
    assert "arith.negf %q : f32" in body and "nvgpu.frag_unary negf" not in body


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) is not on PATH")
@pytest.mark.parametrize("source, name", [
    ("add_relu.mlir", "add_relu"),
    ("splat_math.mlir", "splat_math"),
    ("row_softmax.mlir", "row_softmax"),
    ("unary_math.mlir", "unary_math"),
    (None, "gemm_splitk_reduce"),
])
def test_assembles_without_spills(source, name, tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))  # ptxas runs: no cubin from an earlier run
    text = gemm_reduce_source(GemmConfig(128, 128, 64, split_k=3)) if source is None else (KERNELS / source).read_text()
    kernel = tawa.compile(text, name)
    log = kernel.assemble().log
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert spills and all(s == ("0", "0") for s in spills), log
    if name == "gemm_splitk_reduce":  # its loop over the partials streams them from a TMA producer
        assert "cp.async.bulk.tensor" in kernel.ptx and "setmaxnreg" in kernel.ptx
    else:  # no ring, so no barrier to initialise: no init fences and no CTA-wide sync at the entry
        assert "fence.mbarrier_init" not in kernel.ptx and "bar.sync" not in kernel.ptx
