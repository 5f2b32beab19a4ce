"""The fp8 kernels of examples/python/quantize.py through the whole pipeline: the lowered
kernels, run by the CPU simulator on two CTAs over ragged shapes with NaN-poisoned outputs,
give the tile programs' results (quantized rows dequantize to the input within e4m3's
precision; dequantized rows are Q · S rounded once, bit for bit), and ptxas assembles them
without spills, each e4m3 vector of 16 values moved by one 16-byte access.
tests/runtime/test_quantize_gpu.py runs them on the GPU."""

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
    flipped = int((got[0].view(np.uint8) != want[0].view(np.uint8)).sum())
    assert np.all(steps <= 2**-2) and flipped <= max(2, 0.01 * q.size), f"{flipped} of {q.size} elements differ"


@pytest.mark.parametrize("M, N, constexprs", [
    (37, 700, {}),                                   # ragged rows and columns: the edge paths
    (16, 1024, {}),                                  # whole tiles: 16-byte vector loads
    (5, 30, {"BLOCK_M": 2, "BLOCK_N": 16}),          # a tile smaller than the warp group's vectors
    (9, 1000, {"BLOCK_M": 1, "BLOCK_N": 1024}),      # a row split over the 4 warps
])
def test_dequantize_matches_the_tile_program(M, N, constexprs, seed):
    kernel = python_example("quantize").dequantize_rows
    values = kernel.constexprs(constexprs)
    rng = np.random.default_rng(seed)
    Q = (rng.standard_normal((M, N)) * 50).astype(np.float32).astype(E4M3)
    Q.view(np.uint8)[0, :3] = (0x7F, 0x01, 0x80)  # NaN, the smallest subnormal, -0
    S = rng.uniform(0.01, 10, M).astype(np.float32)
    grid = (-(-M // values["BLOCK_M"]), -(-N // values["BLOCK_N"]))
    want = np.full((M, N), np.nan, ml_dtypes.bfloat16)
    got = want.copy()
    text = kernel.ir(**constexprs)
    tawa.interpret(text, "dequantize_rows", grid, Q, S, want, M, N)
    tawa.interpret(lowered(text), "dequantize_rows", grid, Q, S, got, M, N, ctas=2)
    ref = (Q.astype(np.float32) * S[:, None]).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(want.view(np.uint16), ref.view(np.uint16))
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@needs_ptxas
def test_assembles_without_spills(tmp_path):
    kernels = python_example("quantize")
    for kernel, access in ((kernels.quantize_rows, r"st\.global\.v4\.b32"), (kernels.dequantize_rows, r"ld\.global\.v4\.b32")):
        module = tawa.parse(kernel.ir())
        HopperPipelinePass().apply(tawa.context(), module)
        ptx = print_ptx(module)
        assert_assembles_without_spills(ptx, tmp_path)
        # Two e4m3 pairs to a 32-bit register, 16 values a 16-byte access, in and out.
        assert re.search(r"mov\.b32 (%r\d+, \{%h\d+, %h\d+\}|\{%h\d+, %h\d+\}, %r\d+);", ptx)
        assert re.search(access + r" ", ptx), access
    assert "cvt.rn.f16x2.e4m3x2" in ptx  # dequantize: a pair through f16 to f32


ROW_ABSMAX = '''
import tawa
import tawa.language as tl


@tawa.kernel
def row_absmax(Q: tl.tensor_ref(tl.f8e4m3fn, 2), Y: tl.tensor_ref(tl.f32, 1), M: tl.index, N: tl.index,
               BLOCK_M: tl.constexpr = 4, BLOCK_N: tl.constexpr = 1024):
    m0 = tl.program_id(0) * BLOCK_M
    acc = tl.zeros((BLOCK_M,), tl.f32)
    for n0 in tl.range(0, N, BLOCK_N):
        acc = tl.maximum(acc, tl.max(tl.abs(tl.load(Q, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)), 1))
    tl.store(Y, (m0,), acc)
'''


def test_e4m3_chunks_of_a_loop_are_loaded_by_the_consumers(tmp_path, seed):
    """A loop over a row's chunks streams bf16 tiles from a TMA producer; the consumers read a
    slot only as f32, bf16 or f16, so an e4m3 tile stays their own load (no producer)."""
    source = tmp_path / "row_absmax.py"
    source.write_text(ROW_ABSMAX)
    spec = importlib.util.spec_from_file_location("row_absmax", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.row_absmax.ir()
    kernel = lowered(text)
    assert "nvgpu.tma_load" not in str(kernel) and "f8E4M3FN" in str(kernel)
    M, N = 9, 2500  # three chunks, the last ragged; a ragged last tile of rows
    Q = (np.random.default_rng(seed).standard_normal((M, N)) * 30).astype(np.float32).astype(E4M3)
    want, got = np.full(M, np.nan, np.float32), np.full(M, np.nan, np.float32)
    tawa.interpret(text, "row_absmax", (3,), Q, want, M, N)
    tawa.interpret(kernel, "row_absmax", (3,), Q, got, M, N, ctas=2)
    np.testing.assert_array_equal(want, np.abs(Q.astype(np.float32)).max(1))
    np.testing.assert_array_equal(got, want)
