"""The CPU simulator of thread-level IR turns broken protocols into located
errors instead of wrong results: the five broken GEMMs of the protocol-proof
tests (lowered GEMM, stages=2, one mutation each), run on small inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from example_cases import case, fresh_outputs

import tawa
from tawa.diagnostics import TawaError
from tawa.interpreters.schedule import Schedule

INPUTS = Path(__file__).resolve().parents[1] / "filecheck" / "transforms" / "Inputs"


@pytest.mark.parametrize(
    "name, message",
    [
        ("dropped_release", "deadlock"),
        ("count_short", "deadlock"),
        ("initial_parity", "deadlock"),
        ("expect_tx", "deadlock"),
        ("runs_ahead", "deadlock"),
    ],
)
def test_broken_protocol_is_an_error(name: str, message: str):
    module = tawa.parse((INPUTS / f"protocol_{name}.mlir").read_text(), f"protocol_{name}.mlir")
    c = case("gemm", 5, np.random.default_rng(0))
    with pytest.raises(TawaError, match=message) as err:
        tawa.interpret(module, "gemm", c.grid, *fresh_outputs(c), schedule=Schedule("producer-first"))
    assert "error:" in str(err.value).splitlines()[0]
    if message == "deadlock":
        assert "waits at nvgpu.mbarrier_wait_parity" in str(err.value)


@pytest.mark.slow
def test_a_missing_ping_pong_hand_over_is_a_deadlock():
    """The ping-pong of attention's consumer warp groups (tawa/transforms/
    pingpong.py) without the first warp group's hand-over: the simulator,
    which runs each warp group as its own task as the GPU does, reports the
    second waiting for its turn at the named barrier."""
    from xdsl.rewriter import Rewriter

    from tawa.dialects import nvgpu
    from tawa.transforms.hopper_pipeline import HopperPipelinePass

    root = Path(__file__).resolve().parents[2]
    module = tawa.parse((root / "examples" / "attention_fwd_d64.mlir").read_text(), "examples/attention_fwd_d64.mlir")
    pipeline = HopperPipelinePass(prepare=False)
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for p in pipeline.planned_steps(module):
        p.apply(ctx, module)
    hand_over = next(o for o in module.walk() if isinstance(o, nvgpu.NamedBarrierArriveOp) and o.barrier_id.value.data == 3)
    Rewriter.erase_op(hand_over)
    c = case("attention_fwd_d64", 3, np.random.default_rng(0))
    with pytest.raises(TawaError, match="deadlock") as err:
        tawa.interpret(module, "attention_fwd_d64", c.grid, *fresh_outputs(c), schedule=Schedule("producer-first"))
    assert "named barrier 3" in str(err.value)
