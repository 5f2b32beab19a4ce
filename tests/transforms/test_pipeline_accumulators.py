"""`tawa-pipeline` keeps every accumulating dot of a loop in flight: a 64x256
GEMM tile computed as two 64x128 accumulators
(`tests/filecheck/transforms/Inputs/gemm_two_accumulators.mlir`) on the
simulators, against NumPy.  At the aref level the interpreter checks that no
slot is released while a dot that reads it is in flight; the lowered kernel
runs over trip counts around the 4-deep ring, under each schedule."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from example_cases import lowered_gemm, simulate_gemm
from xdsl.passes import PassPipeline

import tawa
from tawa.dialects import tile
from tawa.interpreters.schedule import Schedule
from tawa.transforms.partition.warp_specialize import WarpSpecializePass
from tawa.transforms.pipeline.pipeline import PipelinePass

SOURCE = (Path(__file__).resolve().parents[1] / "filecheck" / "transforms" / "Inputs"
          / "gemm_two_accumulators.mlir").read_text()
TILE = (64, 256)
SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=3)]


@cache
def pipelined():
    module = tawa.parse(SOURCE, "gemm_two_accumulators.mlir")
    PassPipeline((WarpSpecializePass(strict=True), PipelinePass(stages=4))).apply(tawa.context(), module)
    return module


@cache
def lowered():
    return lowered_gemm(SOURCE, stages=4)


def test_both_dots_stay_in_flight():
    ops = list(pipelined().walk())
    assert sum(isinstance(o, tile.DotAsyncOp) for o in ops) == 2
    assert [o.pending.value.data for o in ops if isinstance(o, tile.DotWaitOp)] == [2, 0]


@pytest.mark.parametrize("schedule", [s if s.policy == "random" else pytest.param(s, marks=pytest.mark.slow) for s in SCHEDULES],
                         ids=lambda s: s.policy)
def test_the_aref_level_kernel_releases_no_slot_under_a_dot(schedule: Schedule):
    c, ref = simulate_gemm(pipelined(), 136, 300, 64 * 5 - 8, schedule, seed=1, tile=TILE)
    got = c.astype(np.float32)
    assert not np.isnan(got).any()
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-2


@pytest.mark.slow
@pytest.mark.parametrize("trips", [0, 1, 4, 5, 9])
def test_the_lowered_kernel_computes_the_product(trips: int):
    schedule = SCHEDULES[trips % len(SCHEDULES)]
    k = 64 * trips - 8 if trips else 0
    c, ref = simulate_gemm(lowered(), 300, 300, k, schedule, ctas=3, seed=trips, tile=TILE)
    got = c.astype(np.float32)
    assert not np.isnan(got).any()
    if k:
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-2
    else:
        assert not got.any()


def test_waiting_for_too_few_dots_is_caught():
    """Mutation: `tile.dot_wait 3` instead of 2 leaves the second dot of
    iteration k-1 in flight when its slot is released; the interpreter
    reports it."""
    from xdsl.dialects.builtin import IntegerAttr

    from tawa.interpreters.errors import SimulationError

    module = pipelined().clone()
    (wait,) = [o for o in module.walk() if isinstance(o, tile.DotWaitOp) and o.pending.value.data == 2]
    wait.properties["pending"] = IntegerAttr(3, 64)
    with pytest.raises(SimulationError, match="in flight"):
        simulate_gemm(module, 136, 300, 64 * 5 - 8, SCHEDULES[0], seed=1, tile=TILE)
