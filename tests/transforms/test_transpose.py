"""Transposes of tiles of blocked layouts (examples/python/transpose.py) through the whole
pipeline: `tile.trans` becomes `nvgpu.frag_transpose_shared` (the values move between threads
through shared memory), and the lowered kernels, run by the CPU simulator on two CTAs over
ragged shapes with NaN-poisoned outputs, give the tile programs' results bit for bit: bf16 and
f32 transposes, e4m3 through f32, and a column softmax that reduces the transposed tile's rows.
ptxas assembles them without spills.  A transpose of a tile that several warp groups split is
one located error.  tests/runtime/test_transpose_gpu.py runs them on the GPU."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from test_dot_free import lowered

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.diagnostics import TawaError
from tawa.torch.kernels import python_example
from tawa.transforms.hopper_pipeline import HopperPipelinePass


def kernels():
    return python_example("transpose")


def run_both(name: str, constexprs: dict[str, int], grid, inputs, out, *scalars):
    """(the tile program's output, the lowered kernel's on 2 CTAs), each into a copy of `out`."""
    text = getattr(kernels(), name).ir(**constexprs)
    want, got = out.copy(), out.copy()
    tawa.interpret(text, name, grid, *inputs, want, *scalars)
    module = lowered(text)
    assert "nvgpu.frag_transpose_shared" in str(module)
    tawa.interpret(module, name, grid, *inputs, got, *scalars, ctas=2)
    return want, got


@pytest.mark.parametrize("name, M, N, constexprs, dtype", [
    ("transpose", 100, 70, {}, ml_dtypes.bfloat16),                               # ragged both ways
    ("transpose", 37, 130, {"BLOCK_M": 32, "BLOCK_N": 128}, ml_dtypes.bfloat16),  # 32x128 -> 128x32
    ("transpose", 130, 37, {"BLOCK_M": 128, "BLOCK_N": 32}, ml_dtypes.bfloat16),
    ("transpose", 5, 9, {"BLOCK_M": 16, "BLOCK_N": 16}, ml_dtypes.bfloat16),      # copies in other threads
    ("transpose_f32", 70, 100, {}, np.float32),
])
def test_transpose_matches_the_tile_program(name, M, N, constexprs, dtype, seed):
    X = np.random.default_rng(seed).standard_normal((M, N)).astype(np.float32).astype(dtype)
    values = getattr(kernels(), name).constexprs(constexprs)
    grid = (-(-M // values["BLOCK_M"]), -(-N // values["BLOCK_N"]))
    want, got = run_both(name, constexprs, grid, [X], np.full((N, M), np.nan, dtype), M, N)
    np.testing.assert_array_equal(want, X.T)
    np.testing.assert_array_equal(got, want)


def test_an_e4m3_tile_transposes_through_f32(tmp_path, seed):
    """The exchange moves f32: an e4m3 tile is widened before it and narrowed after, exactly."""
    text = kernels().transpose.ir().replace("bf16", "f8E4M3FN")
    X = (np.random.default_rng(seed).standard_normal((70, 50)) * 20).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    want = np.full((50, 70), np.nan, ml_dtypes.float8_e4m3fn)
    got = want.copy()
    tawa.interpret(text, "transpose", (2, 1), X, want, 70, 50)
    tawa.interpret(lowered(text), "transpose", (2, 1), X, got, 70, 50, ctas=2)
    np.testing.assert_array_equal(want.view(np.uint8), X.T.view(np.uint8))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("M, N, constexprs", [(50, 70, {}), (3, 5, {"BLOCK_M": 4, "BLOCK_N": 8}),
                                              (200, 40, {"BLOCK_M": 256, "BLOCK_N": 8})])
def test_column_softmax(M, N, constexprs, seed):
    X = np.random.default_rng(seed).standard_normal((M, N)).astype(np.float32).astype(ml_dtypes.bfloat16)
    values = kernels().column_softmax.constexprs(constexprs)
    want, got = run_both("column_softmax", constexprs, (-(-N // values["BLOCK_N"]),), [X],
                         np.full((N, M), np.nan, ml_dtypes.bfloat16), M, N)
    x = X.astype(np.float32).T
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(want.astype(np.float32), e / e.sum(1, keepdims=True), rtol=2**-7, atol=2**-12)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2**-7, atol=2**-19)


@needs_ptxas
@pytest.mark.parametrize("name", ["transpose", "transpose_f32", "column_softmax"])
def test_assembles_without_spills(name, tmp_path):
    module = tawa.parse(getattr(kernels(), name).ir())
    HopperPipelinePass().apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert_assembles_without_spills(ptx, tmp_path)
    # Each value to shared memory, the warp group's barrier, each value back.
    assert re.search(r"st\.shared\.f32 \[%r\d+\+\d+\], %f\d+;\n\s*bar\.sync 15, 128;", ptx)
    assert re.search(r"ld\.shared\.f32 %f\d+, \[%r\d+\+\d+\];", ptx)


def test_a_tile_split_over_warp_groups_is_refused_at_the_transpose():
    with pytest.raises(TawaError, match=r"transpose\.py:\d+:\d+: error: tawa-lower-tile: a transpose \(tile\.trans\) "
                                        r"of a tile that 2 warp groups split is not supported"):
        tawa.compile(kernels().transpose.ir(BLOCK_M=128, BLOCK_N=128), "transpose", consumer_warps=8)
