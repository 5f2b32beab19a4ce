"""`tawa-exp-to-exp2` against the CPU interpreter: the kernel before and after
the pass computes the same values, within the rounding the rewrite adds.

exp2(fl(x · fl(log2 e))) differs from exp(x) by the roundings of log2 e and
of the product, each a relative 2^-24 of the exponent: a relative error of
about |x| · 2^-23 in the result, plus an ulp for each of exp and exp2.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tawa
from tawa.tools.tawa_opt import main
from tawa.transforms.tile.exp_to_exp2 import ExpToExp2Pass

ROWS = 16  # rows per program

# exp(X) and a row softmax written with math.exp, 16 rows per program.
KERNELS = """
func.func @exp(%X: memref<?x64xf32>, %Y: memref<?x64xf32>) {
  %c16 = arith.constant 16 : index
  %c0 = arith.constant 0 : index
  %pid = tile.program_id 0
  %r0 = arith.muli %pid, %c16 : index
  %x = tile.load %X[%r0, %c0] : memref<?x64xf32> -> tensor<16x64xf32>
  %y = math.exp %x : tensor<16x64xf32>
  tile.store %y, %Y[%r0, %c0] : tensor<16x64xf32>, memref<?x64xf32>
  func.return
}
func.func @softmax(%X: memref<?x64xf32>, %Y: memref<?x64xf32>) {
  %c16 = arith.constant 16 : index
  %c0 = arith.constant 0 : index
  %pid = tile.program_id 0
  %r0 = arith.muli %pid, %c16 : index
  %x = tile.load %X[%r0, %c0] : memref<?x64xf32> -> tensor<16x64xf32>
  %row_max = tile.reduce max %x, 1 : tensor<16x64xf32> -> tensor<16xf32>
  %max_col = tile.expand_dims %row_max, 1 : tensor<16xf32> -> tensor<16x1xf32>
  %max_b = tile.broadcast %max_col : tensor<16x1xf32> -> tensor<16x64xf32>
  %shifted = arith.subf %x, %max_b : tensor<16x64xf32>
  %p = math.exp %shifted : tensor<16x64xf32>
  %row_sum = tile.reduce sum %p, 1 : tensor<16x64xf32> -> tensor<16xf32>
  %sum_col = tile.expand_dims %row_sum, 1 : tensor<16xf32> -> tensor<16x1xf32>
  %sum_b = tile.broadcast %sum_col : tensor<16x1xf32> -> tensor<16x64xf32>
  %o = arith.divf %p, %sum_b : tensor<16x64xf32>
  tile.store %o, %Y[%r0, %c0] : tensor<16x64xf32>, memref<?x64xf32>
  func.return
}
"""


def rewritten(text: str):
    module = tawa.parse(text)
    ExpToExp2Pass().apply(tawa.context(), module)
    return module


def run(module_or_text, kernel: str, x: np.ndarray) -> np.ndarray:
    y = np.full_like(x, np.nan)  # poisoned: every element must be written
    grid = (len(x) + ROWS - 1) // ROWS  # 40 rows: the last program is ragged
    tawa.interpret(module_or_text, kernel, grid, x, y)
    return y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exp_is_preserved(seed):
    x = np.random.default_rng(seed).uniform(-80, 80, (40, 64)).astype(np.float32)
    before, after = run(KERNELS, "exp", x), run(rewritten(KERNELS), "exp", x)
    assert np.isfinite(before).all()
    bound = (np.abs(x.astype(np.float64)) + 4) * 2.0**-23
    assert (np.abs(after.astype(np.float64) / before - 1) <= bound).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_softmax_is_preserved(seed):
    x = (3 * np.random.default_rng(seed).standard_normal((40, 64))).astype(np.float32)
    before, after = run(KERNELS, "softmax", x), run(rewritten(KERNELS), "softmax", x)
    assert not np.isnan(before).any()
    np.testing.assert_allclose(after, before, rtol=1e-5)


def test_the_pass_rewrites_every_exp():
    text = str(rewritten(KERNELS))
    assert "math.exp " not in text and text.count("math.exp2") == 2


# The pattern must not fire on a bf16 tile: the IR stays as it was, and so
# does every bit of the output.
BF16_KERNEL = KERNELS.replace("f32", "bf16")


def test_bf16_exp_is_left_alone():
    assert str(rewritten(BF16_KERNEL)) == str(tawa.parse(BF16_KERNEL))
    x = np.random.default_rng(3).uniform(-8, 8, (40, 64)).astype(ml_dtypes.bfloat16)
    before, after = run(BF16_KERNEL, "exp", x), run(rewritten(BF16_KERNEL), "exp", x)
    assert before.tobytes() == after.tobytes()


def test_strict_reports_the_exp_left(tmp_path, capsys):
    src = tmp_path / "bf16.mlir"
    src.write_text(BF16_KERNEL)
    line = next(i for i, t in enumerate(BF16_KERNEL.splitlines(), 1) if "math.exp" in t)
    assert main([str(src), "-p", "tawa-exp-to-exp2{strict=true}"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"{src}:{line}:3: error: tawa-exp-to-exp2: math.exp on tensor<16x64xbf16> is not rewritten"
        " (only f32 tiles are)"
    )


# examples/gemm_softmax.mlir written with math.exp (its `scale` then in the
# natural domain): the pass preserves it and makes it compile, since the
# Hopper lowering knows math.exp2 only.
GEMM_SOFTMAX_EXP = (
    (Path(__file__).resolve().parents[2] / "examples" / "gemm_softmax.mlir")
    .read_text()
    .replace("math.exp2 %shifted", "math.exp %shifted")
)


def test_gemm_softmax_with_exp_is_preserved():
    assert "math.exp %shifted" in GEMM_SOFTMAX_EXP
    rng = np.random.default_rng(4)
    M, K, scale = 200, 72, 0.3
    A = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((256, K)).astype(ml_dtypes.bfloat16)
    outs = []
    for module in (tawa.parse(GEMM_SOFTMAX_EXP), rewritten(GEMM_SOFTMAX_EXP)):
        C = np.full((M, 256), np.nan, dtype=ml_dtypes.bfloat16)
        tawa.interpret(module, "gemm_softmax", (2,), A, B, C, M, K, scale)
        outs.append(C)
    before, after = outs
    assert not np.isnan(before.astype(np.float32)).any()
    # The f32 probabilities agree to ~1e-6; rounded to bf16 they may land on
    # neighbouring values near a rounding tie: at most one ulp apart (they
    # are positive, so adjacent bf16 values have adjacent bit patterns).
    ulps = before.view(np.uint16).astype(np.int32) - after.view(np.uint16).astype(
        np.int32
    )
    assert np.abs(ulps).max() <= 1


@pytest.mark.slow
def test_gemm_softmax_with_exp_compiles(tmp_path, capsys):
    src = tmp_path / "gemm_softmax_exp.mlir"
    src.write_text(GEMM_SOFTMAX_EXP)
    # tawa-hopper-pipeline runs the pass first; run alone, tawa-lower-tile names the exp.
    assert main([str(src), "-p", "tawa-hopper-pipeline", "-t", "ptx"]) == 0
    assert "ex2.approx" in capsys.readouterr().out
    unrewritten = "tawa-warp-specialize,tawa-pipeline,tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile"
    assert main([str(src), "-p", unrewritten]) == 1
    assert "'math.exp' is not supported" in capsys.readouterr().err
