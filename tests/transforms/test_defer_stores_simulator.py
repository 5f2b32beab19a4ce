"""The GEMM with deferred stores (`tawa-hopper-pipeline{defer-stores=true}`:
each program's tile stored under the next program's first dot) on the CTA
simulator, against NumPy and bit for bit against the kernel that stores at
the end of each program: several programs per CTA (the tile carried from
one to the next), one program per CTA (only the store after the loop over
programs), a main loop of 2 steps, K = 0 (the main loop runs no step: the
store after it), ragged shapes, under each schedule.  The pipeline proves the protocol
(`tawa-verify-protocol`) of the three store sites sharing one staging
buffer."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from example_cases import lowered_gemm, simulate_gemm
from xdsl.dialects.builtin import ModuleOp

from tawa.dialects import nvgpu
from tawa.interpreters.schedule import Schedule

SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=5)]


@cache
def lowered(defer: bool) -> ModuleOp:
    """examples/gemm.mlir through the pipeline (persistent, 4 stages: the
    subtiled staging, 4 chunks per tile) to the last structured IR."""
    return lowered_gemm(stages=4, defer_stores=defer)


def run(defer: bool, m: int, n: int, k: int, schedule: Schedule, ctas: int | None, seed: int = 0):
    return simulate_gemm(lowered(defer), m, n, k, schedule, ctas, seed)


@pytest.mark.slow
def test_the_deferred_kernel_stores_from_three_sites_through_one_buffer():
    ops = list(lowered(True).walk())
    stagings = [o for o in ops if isinstance(o, nvgpu.SmemAllocOp) and o.result.name_hint == "staging"]
    assert len(stagings) == 1
    assert sum(isinstance(o, nvgpu.TmaStoreOp) for o in ops) == 3 * sum(
        isinstance(o, nvgpu.TmaStoreOp) for o in lowered(False).walk())


@pytest.mark.parametrize("schedule", [s if s.policy == "random" else pytest.param(s, marks=pytest.mark.slow) for s in SCHEDULES],
                         ids=lambda s: s.policy if s.policy != "random" else "random-5")
@pytest.mark.parametrize(
    "m, n, k, ctas",
    [
        pytest.param(328, 300, 456, 2, marks=pytest.mark.slow),  # 6 programs on 2 CTAs: each carries a tile twice; K wraps the 4-deep ring
        pytest.param(328, 300, 72, 2, marks=pytest.mark.slow),  # 2 main-loop steps
        (200, 136, 72, None),  # one program per CTA: only the store after the loop over programs
        (328, 300, 0, 2),  # K = 0: the main loop runs no step, zeros stored after it
    ],
)
def test_deferred_stores_match_the_plain_kernel(schedule: Schedule, m: int, n: int, k: int, ctas: int | None):
    c, ref = run(True, m, n, k, schedule, ctas, seed=m + k)
    got = c.astype(np.float32)
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written"
    if k:
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-2
    else:
        assert not got.any()
    plain, _ = run(False, m, n, k, schedule, ctas, seed=m + k)
    np.testing.assert_array_equal(c.view(np.uint16), plain.view(np.uint16))
