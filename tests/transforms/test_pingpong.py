"""`tawa-pingpong` with three consumer warp groups
(tawa/transforms/lower/pingpong.py): the warp groups of an overlapped loop take
their turns in a ring (named barriers 2, 3, 4), the lowered kernel passes
`tawa-verify-protocol` and computes the tile program's result in the
simulator, also when a CTA runs programs whose loop has no iteration (one
key block) back to back.  Two warp groups: tests/filecheck/transforms/pipeline/overlap_dots.mlir."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import scf

import tawa
from tawa.dialects import nvgpu
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.pipeline.overlap_dots import OVERLAPPED
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

PROGRAM = Path(__file__).resolve().parent / "pingpong" / "attention_3groups.mlir"
KERNEL = "attention_3groups"
ROWS, D = 192, 64


def lowered():
    module = tawa.parse(PROGRAM.read_text())
    ctx = tawa.context()
    HopperPipelinePass(prepare=False).apply(ctx, module)  # tawa-verify-protocol included
    for p in PreparePtxPass.steps()[:-1]:
        p.apply(ctx, module)
    return module


def barriers(ops, kind) -> list[int]:
    return sorted(o.barrier_id.value.data for o in ops if isinstance(o, kind))


@pytest.mark.slow
def test_three_warp_groups_take_turns_in_a_ring():
    module = tawa.parse(PROGRAM.read_text())
    HopperPipelinePass(prepare=False).apply(tawa.context(), module)
    (loop,) = [o for o in module.walk() if isinstance(o, scf.ForOp) and OVERLAPPED in o.attributes]
    body = list(loop.body.block.walk())
    # Each warp group g waits for turn 2 + g and hands turn 2 + (g + 1) mod 3 over.
    assert barriers(body, nvgpu.NamedBarrierSyncOp) == [2, 3, 4]
    assert barriers(body, nvgpu.NamedBarrierArriveOp) == [2, 3, 4]
    before, after = loop.prev_op, loop.next_op
    # Only the last warp group arrives before the loop (warp group 0 goes first) ...
    assert barriers(before.walk(), nvgpu.NamedBarrierArriveOp) == [2]
    assert barriers(before.walk(), nvgpu.NamedBarrierSyncOp) == []
    # ... and the loop closes with every warp group's last turn, handed on from 0 to 1 to 2.
    assert barriers(after.walk(), nvgpu.NamedBarrierSyncOp) == [2, 3, 4]
    assert barriers(after.walk(), nvgpu.NamedBarrierArriveOp) == [3, 4]


@pytest.mark.slow
@pytest.mark.parametrize("seq_len", [64, 200])
def test_three_warp_groups_compute_the_tile_program(seq_len):
    """64: one key block (the loop runs no iteration), 200: four, the last ragged. One CTA runs
    every program (2 heads × ⌈S/192⌉ query blocks) back to back."""
    rng = np.random.default_rng(seq_len)
    bh = 2
    q, k, v = (rng.standard_normal((bh, seq_len, D)).astype(ml_dtypes.bfloat16) for _ in range(3))
    grid = (-(-seq_len // ROWS), bh)
    want = np.full((bh, seq_len, D), np.nan, ml_dtypes.bfloat16)
    tawa.interpret(PROGRAM.read_text(), KERNEL, grid, q, k, v, want, seq_len, 0.125)
    got = np.full((bh, seq_len, D), np.nan, ml_dtypes.bfloat16)
    tawa.interpret(lowered(), KERNEL, grid, q, k, v, got, seq_len, 0.125, schedule=Schedule("random", seed=3), ctas=1)
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert not np.isnan(w).any() and not np.isnan(g).any()
    assert np.linalg.norm(g - w) / np.linalg.norm(w) <= 1e-2


@pytest.mark.slow
def test_without_the_closing_turns_the_protocol_check_finds_a_deadlock():
    """The closing turns bound how far a warp group runs ahead when a loop runs no iteration."""
    from xdsl.rewriter import Rewriter

    from tawa.diagnostics import TawaError
    from tawa.verify.verify_protocol import VerifyProtocolPass

    module = tawa.parse(PROGRAM.read_text())
    HopperPipelinePass(prepare=False).apply(tawa.context(), module)
    (loop,) = [o for o in module.walk() if isinstance(o, scf.ForOp) and OVERLAPPED in o.attributes]
    Rewriter.erase_op(loop.next_op)
    with pytest.raises(TawaError, match=r"deadlock in @attention_3groups \(seq_len = \d+, 2 programs per CTA\)"):
        VerifyProtocolPass().apply(tawa.context(), module)
