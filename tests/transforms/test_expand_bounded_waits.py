"""`tawa-expand-bounded-waits` (tawa/transforms/prepare/expand_bounded_waits.py)
under the CPU simulator, on the GEMM example lowered with the watchdog
(`tawa-bound-waits` after `tawa-lower-aref`, as `tawa-hopper-pipeline`
runs it) and taken through `tawa-prepare-ptx` less its cf conversion.

An intact kernel computes bit for bit what the kernel without the watchdog
computes.  A kernel that `tawa-break-protocol` made hang times out instead
of deadlocking (the simulator resumes a timed spin unsatisfied when no
task can proceed, as the GPU's ends when its time is up): the report
claims the watchdog buffer, writes the record and traps, and the trap's
error says what the record says, as `KernelHangError` does on the GPU."""

from __future__ import annotations

import numpy as np
import pytest
from example_cases import EXAMPLES, simulate_gemm

import tawa
from tawa.interpreters.errors import SimulationError
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.lower.bound_waits import BoundWaitsPass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass
from tawa.transforms.testing import BreakProtocolPass

STAGES = 2
K = 64 * (2 * STAGES + 1)


def lowered(watchdog: bool, kind: str | None = None):
    module = tawa.parse((EXAMPLES / "gemm.mlir").read_text(), "examples/gemm.mlir")
    ctx = tawa.context()
    pipeline = HopperPipelinePass(prepare=False)
    for p in [pipeline.specialize_pass(), *pipeline.steps(STAGES)]:
        p.apply(ctx, module)
        if watchdog and p.name == "tawa-lower-aref":
            BoundWaitsPass().apply(ctx, module)
    if kind is not None:
        BreakProtocolPass(kind=kind).apply(ctx, module)
    for p in PreparePtxPass.steps()[:-1]:
        p.apply(ctx, module)
    return module


def test_the_intact_watchdog_gemm_computes_the_same():
    module = lowered(watchdog=True)
    ops = {o.name for o in module.walk()}
    assert {"nvgpu.mbarrier_timed_wait_parity", "nvgpu.trap", "nvgpu.park"} <= ops
    assert "nvgpu.mbarrier_wait_parity" not in ops
    schedule = Schedule("random", seed=3)
    got, _ = simulate_gemm(module, 200, 300, K, schedule, seed=5)
    want, _ = simulate_gemm(lowered(watchdog=False), 200, 300, K, schedule, seed=5)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("kind", ["flip-empty-parity", "drop-release"])
def test_a_hanging_gemm_traps_with_the_record(kind):
    """The producer's wait on slot 0 of its empty barriers (wait 0) times
    out: at once with the other parity (0, flipped from 1), or when the ring
    wraps with no release (the second pass over slot 0: parity 0)."""
    with pytest.raises(SimulationError, match=r"nvgpu\.trap in CTA \(0, 0, 0\), thread 0: the kernel aborts; "
                       r"the watchdog record: wait 0 timed out in CTA \(0, 0, 0\), thread 0, barrier 0, parity 0(\n|$)"):
        simulate_gemm(lowered(watchdog=True, kind=kind), 128, 256, K, Schedule("random", seed=3))


def test_without_the_watchdog_the_simulator_reports_the_deadlock():
    with pytest.raises(SimulationError, match="deadlock in .*mbarrier_wait_parity"):
        simulate_gemm(lowered(watchdog=False, kind="flip-empty-parity"), 128, 256, K, Schedule("random", seed=3))
