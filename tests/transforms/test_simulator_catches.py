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
