"""`tawa-overlap-dots`'s analysis (tawa/transforms/pipeline/overlap_dots.py): which
consumer loops it rotates, what it carries, and the ones it leaves alone.
The rewrite itself: tests/filecheck/transforms/pipeline/overlap_dots.mlir; what the
rewritten kernels compute: the differential tests (test_lowering_differential)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ptxas_check import PTXAS, assert_assembles_without_spills
from xdsl.dialects import scf
from xdsl.passes import PassPipeline

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.diagnostics import TawaError
from tawa.dialects import aref, tile
from tawa.torch.kernels import python_example
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.partition.warp_specialize import WarpSpecializePass
from tawa.transforms.pipeline.assign_stage_phase import AssignStagePhasePass
from tawa.transforms.pipeline.overlap_dots import MAX_OVERLAP_REGS, OverlapDotsPass, consumer_loops, overlap_plan
from tawa.transforms.pipeline.pipeline import PipelinePass

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def specialized(name: str):
    module = tawa.parse((EXAMPLES / name).read_text())
    PassPipeline((WarpSpecializePass(), PipelinePass(stages=2))).apply(tawa.context(), module)
    return module


def plans_of(module):
    return [overlap_plan(loop) for loop, _ in consumer_loops(module)]


def plans(name: str):
    return plans_of(specialized(name))


@pytest.mark.parametrize(("name", "registers"), [("attention_fwd.mlir", [64 + 64 + 2 * 32] * 2),
                                                 ("attention_fwd_d64.mlir", [32 + 64 + 2 * 32] * 4),
                                                 ("attention_fwd_d256.mlir", [128 + 32 + 2 * 16] * 2),
                                                 ("attention_fwd_d256_n80.mlir", [128 + 40 + 2 * 20] * 2)])
def test_attention_loops_are_planned(name, registers):
    found = [p for p in plans(name) if p is not None]
    # every kernel of the file: the kernel and its causal twin (d64: and its 128-row twin)
    assert len(found) == (EXAMPLES / name).read_text().count("func.func @")
    for plan, want in zip(found, registers, strict=True):
        assert plan.head.rhs_transposed is not None  # Q·Kᵀ first ...
        assert plan.tail is plan.stage_b[1]  # ... P·V last, between its get and its release
        assert [v.name_hint for v in plan.carried] == ["p_bf16", "acc_scaled"]
        assert plan.registers_in_flight() == want  # accumulator, S, P twice


@pytest.mark.parametrize("name", ["gemm.mlir", "gemm_chain.mlir", "gemm_softmax.mlir"])
def test_other_loops_are_left_alone(name):
    # gemm and gemm_softmax: one dot in the loop; gemm_chain: its P·V
    # accumulates into the iteration argument itself (nothing of stage A to carry).
    assert all(p is None for p in plans(name))


def test_the_register_bound(capsys):
    module = specialized("attention_fwd_d256.mlir")
    before = str(module)
    OverlapDotsPass(max_regs=160, remarks=True).apply(tawa.context(), module)
    assert str(module) == before
    assert capsys.readouterr().err.count("would keep 192 registers per thread in flight, more than 160") == 2
    OverlapDotsPass(max_regs=MAX_OVERLAP_REGS).apply(tawa.context(), module)  # the default bound takes it
    assert str(module) != before and not [p for p in plans_of(module) if p is not None]
    # 80-key blocks keep 208, the default bound (MAX_OVERLAP_REGS): overlapped too.
    n80 = specialized("attention_fwd_d256_n80.mlir")
    OverlapDotsPass(max_regs=MAX_OVERLAP_REGS - 8, remarks=True).apply(tawa.context(), n80)
    assert capsys.readouterr().err.count("would keep 208 registers per thread in flight, more than 200") == 2
    OverlapDotsPass(max_regs=MAX_OVERLAP_REGS).apply(tawa.context(), n80)
    assert not [p for p in plans_of(n80) if p is not None]


def test_after_stage_assignment_is_a_located_error():
    module = specialized("attention_fwd.mlir")
    AssignStagePhasePass().apply(tawa.context(), module)
    with pytest.raises(TawaError, match=r"run tawa-overlap-dots before tawa-assign-stage-phase") as err:
        OverlapDotsPass().apply(tawa.context(), module)
    assert "\n" not in str(err.value)


def test_a_negative_bound_is_refused():
    with pytest.raises(TawaError, match=r"max-regs must be 0 \(no bound\) or positive, got -1"):
        OverlapDotsPass(max_regs=-1).apply(tawa.context(), specialized("attention_fwd.mlir"))


def _q_released_in_the_loops_guard(module) -> list[bool]:
    """Per overlapped kernel: whether Q's slot (the depth-1 aref) is released inside the
    rotated loop's guard (`scf.if %ran`: early) or after it."""
    out = []
    for guard in [o for o in module.walk() if isinstance(o, scf.IfOp) and o.cond.name_hint == "ran"]:
        out.append(any(isinstance(o, aref.ConsumedOp) and o.aref.type.depth.data == 1 for o in guard.walk()))
    return out


@pytest.mark.parametrize(("name", "early_release", "expected"), [
    ("attention_fwd.mlir", "auto", True),  # Q: 32 KiB
    ("attention_fwd_d256.mlir", "auto", False),  # Q: 64 KiB, above MAX_EARLY_RELEASE_BYTES
    ("attention_fwd_d256.mlir", "all", True),
    ("attention_fwd.mlir", "none", False),
])
def test_hopper_pipeline_early_release(name, early_release, expected):
    module = tawa.parse((EXAMPLES / name).read_text())
    hp = HopperPipelinePass.of(stages=2, early_release=early_release)
    hp.specialize_pass().apply(tawa.context(), module)
    for p in hp.steps(2)[:2]:  # tawa-pipeline, tawa-overlap-dots
        p.apply(tawa.context(), module)
    kernels = (EXAMPLES / name).read_text().count("func.func @")
    assert _q_released_in_the_loops_guard(module) == [expected] * kernels


def test_hopper_pipeline_refuses_an_unknown_early_release():
    with pytest.raises(TawaError, match=r"early-release must be one of auto, all, none, got 'early'"):
        HopperPipelinePass.of(early_release="early")  # when it is made, before any module


def test_the_next_operand_is_converted_after_the_wait_whatever_the_order(tmp_path):
    """examples/python/attention_fwd.py converts P to bf16 before it rescales
    the accumulator (the .mlir example after): the rotated loop still waits
    for the P·V in flight before the conversion, which ptxas would otherwise
    give the registers that P·V reads, and serialize every wgmma (C7513)."""
    text = python_example("attention_fwd").attention_fwd.ir()
    module = tawa.parse(text)
    PassPipeline((WarpSpecializePass(), PipelinePass(stages=2), OverlapDotsPass())).apply(tawa.context(), module)
    loop = next(o for o in module.walk() if isinstance(o, scf.ForOp) and "tawa.overlapped" in o.attributes)
    ops = list(loop.body.block.ops)
    wait = next(i for i, o in enumerate(ops) if isinstance(o, tile.DotWaitOp) and o.pending.value.data == 0)
    converts = [i for i, o in enumerate(ops) if o.name == "arith.truncf"]
    assert converts and all(i > wait for i in converts)
    if PTXAS is not None:
        full = tawa.parse(text)
        HopperPipelinePass().apply(tawa.context(), full)
        assert_assembles_without_spills(print_ptx(full), tmp_path)
