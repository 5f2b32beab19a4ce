"""Rings of their own depths (`tawa-pipeline{ring-depths}`, and through
`tawa-hopper-pipeline`): attention with K and V rings of different depths,
lowered to the last structured IR and run on the CTA simulator (two CTAs
that each run several programs, so the rings turn across programs with
their own stage and phase arithmetic), bit for bit against the kernels with
even rings and against the tile program; the planner's decisions with
explicit depths; ptxas on the result; and that one depth per ring equals
`stages` where they agree."""

from __future__ import annotations

from functools import cache

import pytest
from example_cases import CASES, EXAMPLES, assert_same_bits_as, simulated
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.diagnostics import TawaError
from tawa.dialects import aref, nvgpu
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=5)]
VARIANTS = [
    ("attention_fwd", (3, 2)),  # head dim 128: a third K slot in place of Q's second
    ("attention_fwd_causal", (2, 3)),
    ("attention_fwd_d64_m128", (5, 4)),  # head dim 64, 128 rows: the slot that is left
]
CASES_RUN = [(*VARIANTS[0], 1), (*VARIANTS[0], 4), (*VARIANTS[1], 1), (*VARIANTS[1], 4), (*VARIANTS[2], 4)]
"""(kernel, depths, key blocks): head dim 64's simulation is the slowest, so
it runs once, with the rings wrapping (its shallower rings: the GPU test)."""


def _module(kernel: str) -> ModuleOp:
    file = CASES[kernel][0]
    return tawa.parse((EXAMPLES / file).read_text(), f"examples/{file}")


@cache
def lowered(kernel: str, depths: tuple[int, ...] = ()) -> ModuleOp:
    """The kernel's file through `tawa-hopper-pipeline{ring-depths}` to the
    last structured IR (what the simulator runs)."""
    pipeline = HopperPipelinePass(prepare=False, ring_depths=depths)
    module = _module(kernel)
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for p in [*pipeline.planned_steps(module), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    return module


def _ring_buffers(module: ModuleOp, kernel: str) -> list[int]:
    func = next(o for o in module.walk() if getattr(o, "sym_name", None) and o.sym_name.data == kernel)
    return [o.result.type.get_shape()[0] for o in func.walk()
            if isinstance(o, nvgpu.SmemAllocOp) and isinstance(o.result.type, nvgpu.SmemType)]


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "depths", "trips"), CASES_RUN)
def test_uneven_rings_match_even_ones_bit_for_bit(kernel: str, depths: tuple[int, ...], trips: int):
    k, v = depths
    assert _ring_buffers(lowered(kernel, depths), kernel)[1:3] == [k, v]  # Q, then K and V
    i = [x for x, _ in VARIANTS].index(kernel)
    schedule, seed = SCHEDULES[(i + trips) % len(SCHEDULES)], 10 * trips + i
    got = simulated(kernel, lowered(kernel, depths), trips, seed, schedule)
    even = simulated(kernel, lowered(kernel), trips, seed, schedule)
    assert_same_bits_as(kernel, got, even, trips, seed)


def test_decide_keeps_the_depths_and_gives_q_one_slot_where_two_do_not_fit():
    module = _module("attention_fwd")
    pipeline = HopperPipelinePass(ring_depths=(3, 2))
    pipeline.specialize_pass().apply(tawa.context(), module)
    d = pipeline.decide(module)
    assert (d.ring_depths, d.stages, d.once_depth) == ((3, 2), 2, 1)
    even = HopperPipelinePass().decide(module)
    assert (even.ring_depths, even.stages, even.once_depth) == ((), 2, 2)  # the default: Q's second slot


@pytest.mark.slow
def test_one_depth_per_ring_is_stages_where_they_agree():
    for file, kernel, depths, stages in (("gemm.mlir", "gemm", (3,), 3), ("attention_fwd.mlir", "attention_fwd", (2, 2), 2)):
        text = (EXAMPLES / file).read_text()
        by_ring = tawa.compile(text, kernel, ring_depths=depths).ptx
        assert by_ring == tawa.compile(text, kernel, stages=stages).ptx, file


def test_the_wrong_number_of_depths_is_one_line_at_the_kernel():
    with pytest.raises(TawaError, match=r"attention_fwd.mlir:\d+:\d+: error: tawa-pipeline: ring-depths gives "
                                        r"3 depths for 2 rings \(%ref_k, %ref_v\)"):
        HopperPipelinePass(ring_depths=(3, 2, 2)).apply(tawa.context(), _module("attention_fwd"))


def test_rings_keep_their_depths_through_the_aref_types():
    module = _module("attention_fwd")
    pipeline = HopperPipelinePass(ring_depths=(3, 2))
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    pipeline.planned_steps(module)[0].apply(ctx, module)  # tawa-pipeline
    depths = [o.result.type.depth.data for o in module.walk() if isinstance(o, aref.CreateOp)]
    assert depths == [1, 3, 2] * 2  # Q, K, V of @attention_fwd and @attention_fwd_causal


@pytest.mark.slow
@needs_ptxas
def test_ptx_assembles_without_spills(tmp_path):
    kernel, depths = VARIANTS[0]
    ptx = tawa.compile((EXAMPLES / CASES[kernel][0]).read_text(), kernel, ring_depths=depths).ptx
    assert_assembles_without_spills(ptx, tmp_path)
