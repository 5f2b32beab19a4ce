"""tawa-verify-protocol: every example's lowered protocol is proved at every
ring depth that fits; the broken protocols of Inputs/protocol_*.mlir are
rejected with a counterexample trace; the model's checks one by one on
hand-written traces."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.printer import Printer

import tawa
from tawa.diagnostics import TawaError
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.protocol_model import (
    ARRIVE,
    INIT,
    NAMED_SYNC,
    READ,
    TMA,
    WAIT,
    Event,
    Explorer,
)
from tawa.transforms.verify_protocol import VerifyProtocolPass

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
BROKEN = ROOT / "tests" / "filecheck" / "transforms" / "Inputs"


def _text(module) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_examples_are_proved(example: Path, stages: int):
    module = tawa.parse(example.read_text(), example.name)
    try:
        HopperPipelinePass(stages=stages, prepare=False).apply(tawa.context(), module)
    except TawaError as err:
        assert "shared memory" in err.message  # only depths that do not fit are skipped
        pytest.skip(f"{example.name} does not fit at stages={stages}")
    before = _text(module)
    VerifyProtocolPass().apply(tawa.context(), module)
    assert _text(module) == before


@pytest.mark.parametrize(
    "name, problem",
    [
        ("dropped_release", "deadlock"),
        ("count_short", "deadlock"),
        ("initial_parity", "deadlock"),
        ("expect_tx", "transaction bytes underflow"),
        ("runs_ahead", "too many arrivals"),
    ],
)
def test_broken_protocols_are_rejected_with_a_trace(name: str, problem: str):
    path = BROKEN / f"protocol_{name}.mlir"
    module = tawa.parse(path.read_text(), path.name)
    with pytest.raises(TawaError) as info:
        VerifyProtocolPass().apply(tawa.context(), module)
    err = info.value
    assert err.where.startswith(f"protocol_{name}.mlir:")
    assert err.message.startswith(f"tawa-verify-protocol: {problem} in @gemm")
    notes = err.details
    assert notes[0].startswith("counterexample (")
    assert notes[1].startswith("    1. wg0 mbarrier_init ")


def test_state_limit_is_a_located_error():
    path = BROKEN / "protocol_dropped_release.mlir"
    module = tawa.parse(path.read_text(), path.name)
    with pytest.raises(TawaError, match="more than 3 states; raise max-states"):
        VerifyProtocolPass(max_states=3).apply(tawa.context(), module)


# --------------------------------------------------------------------------- the model


def _op():
    return arith.ConstantOp(IntegerAttr(0, IndexType()))


def _explore(*traces: list[Event]):
    return Explorer(traces, 4, lambda b: f"b{b}", lambda s: f"s{s}",
                    lambda r: f"wg{r}", max_states=10_000).run()


def _sync():
    return Event(NAMED_SYNC, _op(), 0, count=256, threads=128)


def test_phase_aliasing():
    # wg0 completes two phases of b0 before wg1 waits for the first one.
    wait = Event(WAIT, _op(), 0, parity=0)
    v = _explore(
        [Event(INIT, _op(), 0, count=1), _sync(), Event(ARRIVE, _op(), 0, count=1),
         Event(ARRIVE, _op(), 0, count=1)],
        [_sync(), wait],
    )
    assert v is not None and v.problem == "phase aliasing" and v.op is wait.op
    assert "for phase 0, but the barrier has completed 2 phases" in v.message


def test_parity_handshake_passes():
    # The same two phases, each waited for before the next is produced.
    v = _explore(
        [Event(INIT, _op(), 0, count=1), Event(INIT, _op(), 1, count=1), _sync(),
         Event(ARRIVE, _op(), 0, count=1), Event(WAIT, _op(), 1, parity=0),
         Event(ARRIVE, _op(), 0, count=1)],
        [_sync(), Event(WAIT, _op(), 0, parity=0), Event(ARRIVE, _op(), 1, count=1),
         Event(WAIT, _op(), 0, parity=1)],
    )
    assert v is None


def test_read_while_a_load_is_in_flight():
    # The consumer reads stage s0 without waiting for the full barrier.
    read = Event(READ, _op(), slot=0)
    v = _explore(
        [Event(INIT, _op(), 0, count=1), _sync(), Event(ARRIVE, _op(), 0, count=1),
         Event(TMA, _op(), 0, 0, tx=64)],
        [_sync(), read],
    )
    assert v is not None and v.problem == "read during load" and v.op is read.op
    # The shortest trace: init+sync arrivals, the producer's block, the read.
    assert [s.kind for s in v.steps][-2:] == ["block", "block"]
