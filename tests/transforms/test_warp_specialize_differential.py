"""Differential tests: the warp-specialized, pipelined kernels under the
concurrent simulator compute exactly what the original tile program computes,
for every interleaving policy, ring depth D and loop trip count around D."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.passes import PassPipeline

import tawa
from tawa.interpreters.schedule import Schedule
from tawa.transforms.partition.warp_specialize import WarpSpecializePass
from tawa.transforms.pipeline.pipeline import PipelinePass

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BF16 = ml_dtypes.bfloat16
SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=7)]


def specialize(text: str, stages: int):
    module = tawa.parse(text)
    PassPipeline((WarpSpecializePass(), PipelinePass(stages=stages))).apply(tawa.context(), module)
    return module


def trip_counts(d: int) -> list[int]:
    return sorted({0, 1, max(d - 1, 0), d, d + 1, 2 * d + 1})


def _gemm_case(trips: int, rng):
    m, n = 130, 100  # two row tiles, one ragged column tile
    k = 64 * trips - (24 if trips else 0)  # a ragged last K slice
    a = rng.standard_normal((m, k)).astype(BF16)
    b = rng.standard_normal((n, k)).astype(BF16)
    return (a, b), (m, n, k), ((m + 127) // 128, (n + 255) // 256)


def _run_gemm(module, inputs, dims, grid, schedule=None):
    (a, b), (m, n, k) = inputs, dims
    c = np.full((m, n), np.nan, dtype=BF16)  # poisoned: every element must be written
    kwargs = {} if schedule is None else {"schedule": schedule}
    tawa.interpret(module, "gemm", grid, a, b, c, m, n, k, **kwargs)
    return c


@pytest.mark.parametrize("stages", [1, 2, *(pytest.param(d, marks=pytest.mark.slow) for d in (3, 4))])
def test_gemm_specialized_equals_original(stages):
    rng = np.random.default_rng()
    text = (EXAMPLES / "gemm.mlir").read_text()
    original, specialized = tawa.parse(text), specialize(text, stages)
    for trips in trip_counts(stages):
        inputs, dims, grid = _gemm_case(trips, rng)
        expected = _run_gemm(original, inputs, dims, grid)
        assert not np.isnan(expected.astype(np.float32)).any()
        for schedule in SCHEDULES:
            got = _run_gemm(specialized, inputs, dims, grid, schedule)
            assert np.array_equal(got.astype(np.float32), expected.astype(np.float32)), (
                f"D={stages} trips={trips} {schedule}"
            )


def _run_attention(module, kernel, q, k, v, schedule=None):
    batch, heads, seq, _ = q.shape
    o = np.full(q.shape, np.nan, dtype=BF16)
    kwargs = {} if schedule is None else {"schedule": schedule}
    group = heads // k.shape[1]
    tawa.interpret(module, kernel, ((seq + 127) // 128, heads, batch), q, k, v, o, seq, seq, 0.088, group, **kwargs)
    return o.astype(np.float32)


@pytest.mark.parametrize("stages", [1, *(pytest.param(d, marks=pytest.mark.slow) for d in (2, 3, 4))])
@pytest.mark.parametrize("kernel", ["attention_fwd", pytest.param("attention_fwd_causal", marks=pytest.mark.slow)])
def test_attention_specialized_equals_original(stages, kernel):
    rng = np.random.default_rng()
    text = (EXAMPLES / "attention_fwd.mlir").read_text()
    original, specialized = tawa.parse(text), specialize(text, stages)
    # The key loop of the last query tile runs `trips` times; sequence lengths
    # are ragged (not multiples of 128) so masking is exercised too.
    for trips in sorted({1, max(stages - 1, 1), stages, stages + 1, 2 * stages + 1}):
        seq = 128 * (trips - 1) + 77
        q, k, v = (rng.standard_normal((1, 1, seq, 128)).astype(BF16) for _ in range(3))
        expected = _run_attention(original, kernel, q, k, v)
        assert not np.isnan(expected).any()
        for schedule in SCHEDULES:
            got = _run_attention(specialized, kernel, q, k, v, schedule)
            assert np.array_equal(got, expected), f"D={stages} trips={trips} {schedule}"
