"""Masks of data: `tile.cmpf` (float comparisons of tiles) and `tile.select`
on them, through the whole pipeline.  The lowered kernels, run by the CPU
simulator on two CTAs over ragged shapes with NaNs and ties in the inputs
and NaN-poisoned outputs, give the tile program's results, which give
NumPy's (IEEE comparisons: ordered but for `une`); ptxas assembles them
without spills; a comparison in a GEMM's epilogue (leaky ReLU) lowers on
the wgmma accumulator the same way.  Bad inputs are one located error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from test_dot_free import both, lowered

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.diagnostics import TawaError

TEXT = (Path(__file__).resolve().parent / "dot_free" / "data_masks.mlir").read_text()


def _inputs(M: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, 32)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    x[rng.random(x.shape) < 0.1] = 0.5  # ties with the splat
    return x


@pytest.mark.parametrize("M", [70, 32, 1])
def test_every_predicate_matches_numpy_in_the_simulator(M):
    x = _inputs(M, M)
    want, got = both(TEXT, "data_masks", (-(-M // 32),), [x], np.full((M, 192), np.nan, np.float32), M)
    n = -x
    with np.errstate(invalid="ignore"):
        ref = np.concatenate([np.where(x == 0.5, x, n), np.where(x != 0.5, x, n), np.where(0.5 < x, 0.5, n),
                              np.where(x <= 0.5, x, 0.5), np.where(x > n, x, n), np.where(x >= 0.5, x, n)], axis=1)
    assert np.array_equal(want, ref, equal_nan=True)
    assert np.array_equal(got, want, equal_nan=True)


def test_the_lowering_compares_per_register():
    text = str(lowered(TEXT))
    for pred in ("oeq", "une", "ogt", "ole", "oge"):
        assert f"nvgpu.frag_cmpf {pred}" in text
    assert "nvgpu.frag_cmpf ogt" in text  # olt with the splat on the left: the sides swapped
    assert "tile.cmpf" not in text and "tile.select" not in text


@needs_ptxas
def test_data_masks_assemble_without_spills(tmp_path):
    module = tawa.parse(TEXT)
    from tawa.transforms.hopper_pipeline import HopperPipelinePass

    HopperPipelinePass().apply(tawa.context(), module)
    ptx = print_ptx(module)
    for setp in ("setp.eq.f32", "setp.neu.f32", "setp.gt.f32", "setp.le.f32", "setp.ge.f32"):
        assert setp in ptx
    assert_assembles_without_spills(ptx, tmp_path)


LEAKY = '''
import tawa
import tawa.language as tl


@tawa.kernel
def leaky_gemm(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2), C: tl.tensor_ref(tl.f32, 2),
               M: tl.index, N: tl.index, K: tl.index,
               BLOCK_M: tl.constexpr = 64, BLOCK_N: tl.constexpr = 64, BLOCK_K: tl.constexpr = 64):
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
    for k0 in tl.range(0, K, BLOCK_K):
        a = tl.load(A, (m0, k0), (BLOCK_M, BLOCK_K))
        b = tl.load(B, (n0, k0), (BLOCK_N, BLOCK_K))
        acc = tl.dot(a, b, acc, trans_b=True)
    tl.store(C, (m0, n0), tl.where(acc > 0.0, acc, acc * 0.125))
'''


def test_a_gemm_epilogue_compares_its_accumulator(tmp_path):
    """Leaky ReLU on the wgmma accumulator: the front end's `>` on a float
    tile is `tile.cmpf ogt`, lowered per register; the kernel in the
    simulator gives the tile program's result."""
    import importlib.util

    import ml_dtypes

    path = tmp_path / "leaky.py"
    path.write_text(LEAKY)
    spec = importlib.util.spec_from_file_location("leaky", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.leaky_gemm
    text = kernel.ir()
    assert "tile.cmpf ogt" in text
    M, N, K = 70, 64, 64
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    want, got = np.full((M, N), np.nan, np.float32), np.full((M, N), np.nan, np.float32)
    grid = (-(-M // 64), 1)
    tawa.interpret(text, "leaky_gemm", grid, a, b, want, M, N, K)
    tawa.interpret(lowered(text), "leaky_gemm", grid, a, b, got, M, N, K, ctas=2)
    acc = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(want, np.where(acc > 0, acc, acc * 0.125), rtol=1e-4, atol=1e-4)  # sum order
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # the wgmma k-steps sum in another order


def test_cmpf_takes_float_tiles():
    with pytest.raises(Exception, match="tile.cmpf compares float tiles"):
        tawa.parse("func.func @k(%i: tensor<4x4xi32>) {\n  %m = tile.cmpf olt, %i, %i : tensor<4x4xi32>\n"
                   "  func.return\n}")
    with pytest.raises(Exception, match="unknown tile.cmpf predicate 'ult'"):
        tawa.parse("func.func @k(%x: tensor<4x4xf32>) {\n  %m = tile.cmpf ult, %x, %x : tensor<4x4xf32>\n"
                   "  func.return\n}")


def test_a_comparison_of_bf16_tiles_is_refused_at_the_op():
    text = """func.func @k(%X: memref<?x?xbf16>, %Y: memref<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xbf16> -> tensor<16x64xbf16>
  %m = tile.cmpf ogt, %x, %x : tensor<16x64xbf16>
  %y = tile.select %m, %x, %x : tensor<16x64xi1>, tensor<16x64xbf16>
  tile.store %y, %Y[%c0, %c0] : tensor<16x64xbf16>, memref<?x?xbf16>
  func.return
}"""
    with pytest.raises(TawaError, match=r"4:3: error: tawa-lower-tile: 'tile.cmpf' on a bf16 tile is not supported"):
        lowered(text)


def test_a_mask_of_data_chooses_between_splats():
    """`where(x > 0, 1, 0)`: neither value is a fragment; the select takes
    the mask's layout (the true value a splat fragment of it, the false
    one its scalar)."""
    text = """func.func @positive(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %zero_f = arith.constant 0.000000e+00 : f32
  %one_f = arith.constant 1.000000e+00 : f32
  %pid = tile.program_id 0
  %m0 = arith.muli %pid, %c16 : index
  %x = tile.load %X[%m0, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  %zero = tile.splat %zero_f : f32 -> tensor<16x64xf32>
  %one = tile.splat %one_f : f32 -> tensor<16x64xf32>
  %pos = tile.cmpf ogt, %x, %zero : tensor<16x64xf32>
  %y = tile.select %pos, %one, %zero : tensor<16x64xi1>, tensor<16x64xf32>
  tile.store %y, %Y[%m0, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  func.return
}"""
    x = _inputs(37, 5)
    x = np.concatenate([x, -x], axis=1)
    want, got = both(text, "positive", (3,), [x], np.full((37, 64), np.nan, np.float32))
    with np.errstate(invalid="ignore"):
        assert np.array_equal(want, (x > 0).astype(np.float32))
    assert np.array_equal(got, want)
