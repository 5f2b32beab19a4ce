"""tawa-assign-stage-phase: the slots it names are the ones the rings really
use.  The simulator checks every explicit `[%stage, %phase]` against its own
count of the ring's puts, gets and releases, so running the assigned kernels
under every schedule, depth and trip count around the depth checks the
counter threading; the results must still equal the original program's."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.passes import PassPipeline

import tawa
from tawa.dialects import aref
from tawa.interpreters.errors import SimulationError
from tawa.interpreters.schedule import Schedule
from tawa.transforms.partition.warp_specialize import WarpSpecializePass
from tawa.transforms.pipeline.assign_stage_phase import AssignStagePhasePass
from tawa.transforms.pipeline.pipeline import PipelinePass

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BF16 = ml_dtypes.bfloat16
SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=3)]


def assigned(text: str, stages: int):
    module = tawa.parse(text)
    PassPipeline(
        (WarpSpecializePass(), PipelinePass(stages=stages), AssignStagePhasePass())
    ).apply(tawa.context(), module)
    return module


def _gemm(module, trips: int, schedule=None):
    rng = np.random.default_rng(trips)
    m, n, k = 130, 100, max(64 * trips - 24, 0)
    a = rng.standard_normal((m, k)).astype(BF16)
    b = rng.standard_normal((n, k)).astype(BF16)
    c = np.full((m, n), np.nan, dtype=BF16)
    kwargs = {} if schedule is None else {"schedule": schedule}
    tawa.interpret(module, "gemm", (2, 1), a, b, c, m, n, k, **kwargs)
    return c.astype(np.float32)


@pytest.mark.parametrize("stages", [pytest.param(1, marks=pytest.mark.slow), 2, pytest.param(3, marks=pytest.mark.slow)])
def test_gemm_slots_match_the_rings(stages):
    text = (EXAMPLES / "gemm.mlir").read_text()
    original, module = tawa.parse(text), assigned(text, stages)
    assert all(o.has_slot() for o in module.walk() if isinstance(o, aref.PutOp | aref.GetOp | aref.ConsumedOp))
    for trips in sorted({0, 1, stages, stages + 1, 2 * stages + 1}):
        expected = _gemm(original, trips)
        for schedule in SCHEDULES:
            assert np.array_equal(_gemm(module, trips, schedule), expected), f"D={stages} trips={trips} {schedule}"


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["attention_fwd", "attention_fwd_causal"])
def test_attention_slots_match_the_rings(kernel):
    text = (EXAMPLES / "attention_fwd.mlir").read_text()
    original, module = tawa.parse(text), assigned(text, 2)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, 300, 64)).astype(BF16) for _ in range(3))

    def run(m, schedule=None):
        o = np.full(q.shape, np.nan, dtype=BF16)
        kwargs = {} if schedule is None else {"schedule": schedule}
        tawa.interpret(m, kernel, (3, 2, 1), q, k, v, o, 300, 300, 0.125, 1, **kwargs)
        return o.astype(np.float32)

    expected = run(original)
    for schedule in SCHEDULES:
        assert np.array_equal(run(module, schedule), expected)


def test_a_wrong_slot_is_reported():
    text = (EXAMPLES / "gemm.mlir").read_text()
    module = assigned(text, 2)
    get = next(o for o in module.walk() if isinstance(o, aref.GetOp))
    assert get.stage is not None and get.phase is not None
    get.operands = [get.aref, get.phase, get.stage]  # stage and phase swapped
    with pytest.raises(SimulationError) as info:
        _gemm(module, 3, Schedule("producer-first"))
    msg = str(info.value)
    assert "aref.get of %ref_a_b names stage" in msg and "but it is use 1 of the ring" in msg
    assert "\n" not in msg
