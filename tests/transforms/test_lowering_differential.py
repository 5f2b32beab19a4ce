"""Differential tests of every pass of `tawa-hopper-pipeline`: the output of
each pass, run by the CPU simulator (thread-level IR: tawa.interpreters.cta),
computes what the tile program computes, on fresh random data with poisoned
outputs.

* `test_each_pass`: one test per pass and example kernel (the test id names
  the pass that broke), ring depth 2, a loop of 3 trips; the GEMM's case of
  each pass is in the fast tier, the other kernels' are slow.
* `test_ring_depths`: the last structured output (tawa-prepare-ptx less its
  final scf-to-cf conversion: 64-bit wgmma descriptors, k-slices, strength-
  reduced index math) for D = 1..4 and trip counts 0 (1 for attention, whose
  grid needs a row), D+1 and 2D+1 for every example and all of 0, 1, D−1, D,
  D+1, 2D+1 for GEMM, each under a schedule (producer ahead, consumers
  ahead, seeded random) chosen in turn (slow).

Up to `tawa-stage-operands` the kernels compute with the same tile ops (a
staged store stores, a staged operand is its tile), so the results are
bit-identical; from `tawa-lower-tile` on, wgmma sums K in other
chunks (per instruction), so results are compared by relative error (≤ 1e-2
for bf16 outputs, whose rounding alone is 4e-3).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from example_cases import CASES, EXAMPLES, case, fresh_outputs
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.diagnostics import TawaError
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass, deepest_fitting
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

PIPELINE = HopperPipelinePass(prepare=False)
STEPS = [PIPELINE.specialize_pass(), *PIPELINE.steps(2), *PreparePtxPass.steps()[:-1]]
CHECKS = {"tawa-check-resources", "tawa-verify-protocol"}
"""Analyses that leave the IR unchanged (tested on their own)."""
PASS_NAMES = [p.name for p in STEPS if p.name not in CHECKS]
EXACT = {"tawa-warp-specialize", "tawa-pipeline", "tawa-cache-hints", "tawa-persistent", "tawa-assign-stage-phase", "tawa-lower-aref",
         "tawa-stage-stores", "tawa-stage-operands"}
SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=11)]


@cache
def lowered(file: str, stages: int) -> dict[str, ModuleOp]:
    """The module after each pass of the pipeline at ring depth `stages`,
    with the once-depth the pipeline decides there (Q double-buffered in
    attention where it fits; `test_each_pass` runs one slot)."""
    module = tawa.parse((EXAMPLES / file).read_text(), f"examples/{file}")
    ctx = tawa.context()
    specialize = PIPELINE.specialize_pass()
    specialize.apply(ctx, module)
    out = {specialize.name: module.clone()}
    once_depth = PIPELINE.once_depth_for(module, stages, PIPELINE.epilogue, PIPELINE.tuning.staging)
    for p in [*PIPELINE.steps(stages, once_depth=once_depth), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
        out[p.name] = module.clone()
    return out


@cache
def original(file: str) -> ModuleOp:
    return tawa.parse((EXAMPLES / file).read_text(), f"examples/{file}")


def check(kernel: str, module: ModuleOp, trips: int, schedule: Schedule, exact: bool, seed: int) -> None:
    file = CASES[kernel][0]
    c = case(kernel, trips, np.random.default_rng(seed))
    want = fresh_outputs(c)
    tawa.interpret(original(file), kernel, c.grid, *want)
    got = fresh_outputs(c)
    tawa.interpret(module, kernel, c.grid, *got, schedule=schedule)
    for i in c.outputs:
        g, w = got[i].astype(np.float64), want[i].astype(np.float64)
        assert not np.isnan(w).any()
        assert not np.isnan(g).any(), f"{kernel}: {int(np.isnan(g).sum())} output elements never written"
        if exact:
            assert np.array_equal(g, w), f"{kernel}: results differ"
        elif w.size:
            err = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
            assert err <= 1e-2, f"{kernel}: relative error {err:.2e}"


FAST_KERNEL = "gemm"
"""The kernel of each pass's fast-tier case; the other kernels are slow."""


@pytest.mark.parametrize(
    ("pass_name", "kernel"),
    [
        pytest.param(pass_name, kernel, marks=[] if kernel == FAST_KERNEL else [pytest.mark.slow])
        for pass_name in PASS_NAMES
        for kernel in CASES
    ],
)
def test_each_pass(pass_name: str, kernel: str):
    n = list(CASES).index(kernel)
    module = lowered(CASES[kernel][0], 2)[pass_name]
    check(kernel, module, 3, Schedule("random", seed=n), pass_name in EXACT, seed=n)


def _trips(kernel: str, d: int) -> list[int]:
    first = 1 if kernel.startswith("attention") else 0
    if kernel == "gemm":
        return sorted({0, 1, max(d - 1, 0), d, d + 1, 2 * d + 1})
    return [first, d + 1, 2 * d + 1]


@cache
def deepest(file: str) -> int:
    module = original(file).clone()
    PIPELINE.specialize_pass().apply(tawa.context(), module)
    return deepest_fitting(module)


VARIANTS_AT_DEFAULT_DEPTH = {"attention_fwd_d64", "attention_fwd_d64_m128", "attention_fwd_d64_causal", "attention_fwd_d256",
                             "attention_fwd_bias"}
"""Attention variants whose ring protocol is attention_fwd's (swept at every
depth; attention_fwd_d64's three warp groups share those rings): checked at
the depth they compile with by default only, to keep the CPU suite within its
time (their simulation is the slowest)."""

RING_DEPTH_CASES = [
    (kernel, stages)
    for kernel in CASES
    for stages in ([deepest(CASES[kernel][0])] if kernel in VARIANTS_AT_DEFAULT_DEPTH else [1, 2, 3, 4])
]


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "stages"), RING_DEPTH_CASES)
def test_ring_depths(kernel: str, stages: int):
    file = CASES[kernel][0]
    if stages > deepest(file):  # the rings do not fit: a located error, not a kernel
        with pytest.raises(TawaError, match=r"examples/.*: error: tawa-lower-aref: .* shared memory"):
            lowered(file, stages)
        return
    module = lowered(file, stages)[PASS_NAMES[-1]]
    for n, trips in enumerate(_trips(kernel, stages)):
        schedule = SCHEDULES[(n + stages) % len(SCHEDULES)]
        check(kernel, module, trips, schedule, False, seed=100 * stages + trips)


def test_watchdog_pipeline():
    """tawa-bound-waits (the watchdog's bounded waits) keeps what the kernel computes."""
    pipeline = HopperPipelinePass(prepare=False, watchdog_ms=2000)
    module = original("gemm.mlir").clone()
    ctx = tawa.context()
    for p in [pipeline.specialize_pass(), *pipeline.steps(2)]:
        p.apply(ctx, module)
    assert "watchdog(" in str(module)
    check("gemm", module, 5, SCHEDULES[2], False, seed=5)


@pytest.mark.slow
def test_double_buffered_q():
    """`once-depth=2` gives the persistent d64 attention's Q two slots (the
    next program's Q loads while this one runs); the kernel, two CTAs each
    running several programs, computes what the tile program computes."""
    pipeline = HopperPipelinePass.of(prepare=False, once_depth=2)
    module = original("attention_fwd_d64.mlir").clone()
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    steps = pipeline.planned_steps(module)
    assert next(p for p in steps if p.name == "tawa-pipeline").once_depth == 2
    for p in [*steps, *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    assert "smem<2x128x64xbf16" in str(module)  # the causal kernel's Q: two slots
    for n, trips in enumerate((1, 5)):
        check("attention_fwd_d64_causal", module, trips, SCHEDULES[n], False, seed=7 + trips)


@pytest.mark.slow
def test_pinned_waits_compute_the_same_and_assemble():
    """`tawa-hopper-pipeline{pin-waits=true}` (a fence before the overlapped
    loop's P·V wait): the lowered d64 attention still computes the tile
    program's result in the simulator, and its PTX assembles."""
    kernel = "attention_fwd_d64_causal"
    file = CASES[kernel][0]
    pinned = HopperPipelinePass.of(prepare=False, pin_waits=True)
    module = original(file).clone()
    ctx = tawa.context()
    pinned.specialize_pass().apply(ctx, module)
    for p in pinned.planned_steps(module):
        p.apply(ctx, module)
    assert "nvgpu.fence_cta" in str(module)
    check(kernel, module, 3, Schedule("random", seed=5), False, seed=5)
    compiled = tawa.compile((EXAMPLES / file).read_text(), kernel, pin_waits=True)
    assert "fence.acq_rel.cta;" in compiled.ptx
    compiled.assemble()
