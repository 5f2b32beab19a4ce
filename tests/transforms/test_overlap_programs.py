"""`tawa-overlap-programs` (a persistent consumer issues the next program's
first dot before its own last one): the rotated attention kernels on the
CTA simulator — two CTAs, so each runs several programs and carries one
program's Q view, running max, row sum, rescale and P into the next — bit
for bit against the same kernels without the pass and against the tile
program; under each schedule; with one key block (no overlapped iteration)
and several.  And what the pass leaves alone, and what it carries."""

from __future__ import annotations

from functools import cache

import pytest
from example_cases import CASES, EXAMPLES, assert_same_bits_as, simulated
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.dialects import nvgpu
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.overlap_dots import OverlapDotsPass
from tawa.transforms.overlap_programs import OverlapProgramsPass, program_loops, program_plan
from tawa.transforms.persistent import PersistentPass
from tawa.transforms.pipeline import PipelinePass
from tawa.transforms.prepare_ptx import PreparePtxPass
from tawa.transforms.warp_specialize import WarpSpecializePass

SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=3)]
KERNELS = ["attention_fwd", "attention_fwd_causal", "attention_fwd_d64", "attention_fwd_d64_causal",
           "attention_fwd_d256", "attention_fwd_bias"]
OPTIONS = {"attention_fwd_d256": {"early_release": "all"}}
"""As `tawa.torch` compiles them: head dim 256's single Q slot is released
right after the key loop, so the next program can take it in the tail."""


@cache
def lowered(kernel: str, mode: str) -> ModuleOp:
    """The kernel's file through `tawa-hopper-pipeline{overlap-programs}`
    to the last structured IR (what the simulator runs)."""
    file = CASES[kernel][0]
    pipeline = HopperPipelinePass(prepare=False, overlap_programs=mode, **OPTIONS.get(kernel, {}))
    module = tawa.parse((EXAMPLES / file).read_text(), f"examples/{file}")
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for p in [*pipeline.planned_steps(module), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "mode"), [(k, "softmax") for k in KERNELS]
                         + [(k, "dots") for k in ("attention_fwd_causal", "attention_fwd_d256")])
@pytest.mark.parametrize("trips", [1, 3])
def test_rotated_kernels_match_the_plain_ones_bit_for_bit(kernel: str, trips: int, mode: str):
    assert str(lowered(kernel, mode)) != str(lowered(kernel, "none"))  # the pass applies
    schedule = SCHEDULES[(KERNELS.index(kernel) + trips) % len(SCHEDULES)]
    seed = 10 * trips + KERNELS.index(kernel)
    got = simulated(kernel, lowered(kernel, mode), trips, seed, schedule)
    plain = simulated(kernel, lowered(kernel, "none"), trips, seed, schedule)
    assert_same_bits_as(kernel, got, plain, trips, seed)


@pytest.mark.slow
def test_the_rotated_loop_carries_q_as_a_stage_and_recomputes_the_rescale():
    module = lowered("attention_fwd", "softmax")
    loops = [o for o in module.walk() if isinstance(o, scf.ForOp) and o.body.block.args[0].name_hint == "program"]
    consumer = loops[-1]
    carried = [a.type for a in consumer.body.block.args[1:]]
    # Q's view as its stage (index); m, alpha and l as row vectors; P in bf16; no f32 tile.
    assert str(carried[0]) == "index"
    frags = [t for t in carried if isinstance(t, nvgpu.FragmentType)]
    assert [str(t.element_type) for t in frags] == ["f32", "f32", "f32", "bf16"]
    assert [len(t.get_shape()) for t in frags] == [1, 1, 1, 2]


def _through_persistent(file: str) -> ModuleOp:
    module = tawa.parse((EXAMPLES / file).read_text(), f"examples/{file}")
    ctx = tawa.context()
    for p in (WarpSpecializePass(strict=True), PipelinePass(stages=2, once_depth=2), OverlapDotsPass(),
              PersistentPass()):
        p.apply(ctx, module)
    return module


def test_the_next_programs_first_dot_is_issued_before_the_last_dot():
    module = _through_persistent("attention_fwd.mlir")
    OverlapProgramsPass().apply(tawa.context(), module)
    text = str(module)
    # Inside the tail: the next program's S0 issued, then this program's P·V, then wait 1 and wait 0.
    head = text.index("%s_3 = tile.dot_async")
    assert text.index("tile.dot_async", head + 1) < text.index("tile.dot_wait 1 (%s_3)") < text.index(
        "tile.dot_wait 0", head)


def test_gemm_and_non_persistent_loops_are_left_alone():
    module = _through_persistent("gemm.mlir")
    before = str(module)
    OverlapProgramsPass().apply(tawa.context(), module)
    assert str(module) == before
    assert not program_loops(module)


def test_a_q_released_after_the_epilogue_needs_a_second_slot():
    """With Q single-buffered and released after the epilogue (no early
    release), the next program's Q could not be taken before this one's is
    given back: the loop is left as it is."""
    module = tawa.parse((EXAMPLES / "attention_fwd.mlir").read_text(), "examples/attention_fwd.mlir")
    ctx = tawa.context()
    for p in (WarpSpecializePass(strict=True), PipelinePass(stages=2, once_depth=1),
              OverlapDotsPass(early_release_bytes=-1), PersistentPass()):
        p.apply(ctx, module)
    loops = program_loops(module)
    assert loops and all(program_plan(loop) is None for loop in loops)
    module2 = tawa.parse((EXAMPLES / "attention_fwd.mlir").read_text(), "examples/attention_fwd.mlir")
    for p in (WarpSpecializePass(strict=True), PipelinePass(stages=2, once_depth=2),
              OverlapDotsPass(early_release_bytes=-1), PersistentPass()):
        p.apply(ctx, module2)
    assert all(program_plan(loop) is not None for loop in program_loops(module2))


@pytest.mark.slow
@needs_ptxas
def test_ptx_assembles_without_spills(tmp_path):
    wait1 = "wgmma.wait_group.sync.aligned 1;"
    for file, kernel in (("attention_fwd.mlir", "attention_fwd_causal"), ("attention_fwd_d256.mlir", "attention_fwd_d256")):
        source = (EXAMPLES / file).read_text()
        options = OPTIONS.get(kernel, {})
        rotated = tawa.compile(source, kernel, overlap_programs="softmax", **options).ptx
        plain = tawa.compile(source, kernel, **options).ptx
        assert rotated.count(wait1) > plain.count(wait1)  # the tail's wait for the next program's first dot
        assert_assembles_without_spills(rotated, tmp_path)


@pytest.mark.slow
def test_register_demand_sees_the_last_dot_accumulate_in_place_across_the_branches():
    """The tail's result leaves the next program's prologue (an `scf.if`)
    in the registers of the accumulator it came in as: head dim 256's
    64x256 f32 accumulator is counted once, not as two live tiles."""
    from tawa.transforms.register_demand import RegisterDemand

    module = lowered("attention_fwd_d256", "softmax")
    setmaxnreg = [o for o in module.walk() if o.name == "nvgpu.setmaxnreg"]
    peaks = [RegisterDemand(iter_args_in_place=True).of_block(o.parent_block()) for o in setmaxnreg]
    consumer = max(peaks, key=lambda p: p.fragment_registers)
    accumulators = [v for v in consumer.live if tuple(v.type.get_shape()) == (64, 256)]
    assert len(accumulators) == 1, consumer.describe()
    assert consumer.registers <= 232
