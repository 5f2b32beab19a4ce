"""The fp8 quantization kernel of examples/python/quantize.py through the whole pipeline: the
lowered kernel, run by the CPU simulator on two CTAs over ragged shapes with NaN-poisoned
outputs, gives the tile program's results, and those dequantize to the input within e4m3's
precision (NumPy); ptxas assembles it without spills, the e4m3 tile stored in 8-byte vectors.
A consumer load of an e4m3 tile is one located error at the load.
tests/runtime/test_quantize_gpu.py runs the kernel on the GPU."""

from __future__ import annotations

import importlib.util
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

E4M3 = ml_dtypes.float8_e4m3fn


def quantize():
    return python_example("quantize").quantize_rows


def inputs(M: int, N: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((M, N)) * rng.uniform(0.01, 100, (M, 1))).astype(np.float32).astype(ml_dtypes.bfloat16)
    X[min(1, M - 1)] = 0  # a row of zeros: a tiny factor, zeros out
    return X


@pytest.mark.parametrize("M, N, constexprs", [
    (37, 700, {}),                                   # rows of 700 in tiles of 4×1024, the last tile ragged
    (6, 1024, {}),                                   # whole tiles: the 8-byte vector stores
    (5, 3000, {"BLOCK_M": 1, "BLOCK_N": 4096}),      # a row split over the 4 warps (amax through shared memory)
    (9, 8, {"BLOCK_M": 2, "BLOCK_N": 8}),            # a tile smaller than the warp group's vectors
])
def test_lowered_kernel_matches_the_tile_program(M, N, constexprs, seed):
    kernel = quantize()
    text = kernel.ir(**constexprs)
    X = inputs(M, N, seed)
    grid = (-(-M // kernel.constexprs(constexprs)["BLOCK_M"]),)
    want = [np.full((M, N), np.nan, E4M3), np.full((M,), np.nan, np.float32)]
    got = [w.copy() for w in want]
    tawa.interpret(text, "quantize_rows", grid, X, *want, M, N)
    tawa.interpret(lowered(text), "quantize_rows", grid, X, *got, M, N, ctas=2)
    x = X.astype(np.float32)
    q, s = want[0].astype(np.float32), want[1]
    assert not np.isnan(q).any() and not np.isnan(s).any()
    np.testing.assert_array_equal(s, np.maximum(np.abs(x).max(1), 1e-12) / np.float32(448))
    # e4m3 keeps 3 mantissa bits: each element within half a step of its own magnitude.
    assert np.all(np.abs(q * s[:, None] - x) <= np.abs(x) * 2**-4 + s[:, None] * 2**-9)
    # The pipeline divides by the broadcast factor as a product with its reciprocal
    # (tawa-divide-by-reciprocal): S within a unit in its last place, and an element on an
    # e4m3 rounding midpoint may round to the neighbouring value.
    np.testing.assert_allclose(got[1], s, rtol=2**-23, atol=0)
    steps = np.abs(got[0].astype(np.float32) - q) / np.maximum(np.abs(q), 2**-6)
    assert np.all(steps <= 2**-2) and (got[0].view(np.uint8) != want[0].view(np.uint8)).mean() < 0.01


@needs_ptxas
def test_assembles_without_spills(tmp_path):
    module = tawa.parse(quantize().ir())
    HopperPipelinePass().apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert_assembles_without_spills(ptx, tmp_path)
    # Two e4m3 pairs to a 32-bit register, a vector of 8 in one 8-byte store.
    assert re.search(r"mov\.b32 %r\d+, \{%h\d+, %h\d+\};", ptx) and re.search(r"st\.global\.v2\.b32 \[", ptx)


def test_a_load_of_e4m3_by_the_consumers_is_refused_at_the_load(tmp_path):
    source = tmp_path / "dequantize.py"
    source.write_text(
        "import tawa\nimport tawa.language as tl\n\n\n"
        "@tawa.kernel\n"
        "def dequantize(Q: tl.tensor_ref(tl.f8e4m3fn, 2), Y: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index):\n"
        "    q = tl.load(Q, (tl.program_id(0) * 8, 0), (8, 512)).to(tl.f32)\n"
        "    tl.store(Y, (tl.program_id(0) * 8, 0), q.to(tl.bf16))\n")
    spec = importlib.util.spec_from_file_location("dequantize", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(TawaError, match=rf"{re.escape(str(source))}:7:9: error: tawa-lower-tile: the consumers load "
                                        r"f32, bf16 or f16 tiles, got tensor<8x512xf8E4M3FN>"):
        module.dequantize.compile()
