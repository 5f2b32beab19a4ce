"""tawa-async-dots (docs/passes.md): a loop's products issued as soon as their
operands are ready and waited for where first read.  The lowered kernel, run by
the CPU simulator on two CTAs, gives the tile program's output; the register
model counts what stays live in flight; a slot released before the wait that
retires its reader is an overwrite the protocol proof reports."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from test_dot_free import lowered

import tawa
import tawa.language as tl
from tawa.backend.ptx.printer import print_ptx
from tawa.diagnostics import TawaError
from tawa.dialects import aref, tile
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.partition.warp_specialize import WarpSpecializePass
from tawa.transforms.pipeline.async_dots import AsyncDotsPass, fragment_peak
from tawa.transforms.pipeline.pipeline import PipelinePass
from tawa.transforms.tile.dot_addend import FoldDotAddendPass

BF16 = ml_dtypes.bfloat16


@tawa.kernel
def scores_and_grads(Q: tl.tensor_ref(tl.bf16, 2), K: tl.tensor_ref(tl.bf16, 2), V: tl.tensor_ref(tl.bf16, 2),
                     dO: tl.tensor_ref(tl.bf16, 2), Out: tl.tensor_ref(tl.f32, 2), n: tl.index,
                     BLOCK_M: tl.constexpr = 64, BLOCK_N: tl.constexpr = 64, D: tl.constexpr = 64):
    """attention_bwd_dq's loop in small: S = Q·Kᵀ and dP = dO·Vᵀ (independent),
    dS = exp2(S/8) ∘ (dP − 1), Out += dS·K."""
    m0 = tl.program_id(0) * BLOCK_M
    q = tl.load(Q, (m0, 0), (BLOCK_M, D))
    do = tl.load(dO, (m0, 0), (BLOCK_M, D))
    acc = tl.zeros((BLOCK_M, D), tl.f32)
    for n0 in tl.range(0, n, BLOCK_N):
        k = tl.load(K, (n0, 0), (BLOCK_N, D))
        v = tl.load(V, (n0, 0), (BLOCK_N, D))
        p = tl.exp2(tl.dot(q, k, trans_b=True) * 0.125)
        dp = tl.dot(do, v, trans_b=True) - 1.0
        acc = tl.dot((p * dp).to(tl.bf16), k, acc)
    tl.store(Out, (m0, 0), acc)


def aref_level(text: str, fold: bool = True):
    """The module through `tawa-warp-specialize` and `tawa-pipeline{stages=2}`."""
    module = tawa.parse(text)
    ctx = tawa.context()
    for p in ((FoldDotAddendPass(),) if fold else ()) + (WarpSpecializePass(), PipelinePass(stages=2)):
        p.apply(ctx, module)
    return module


def consumer_loop(module):
    return next(o for o in module.walk() if o.name == "scf.for" and any(isinstance(d, tile.DotOp | tile.DotAsyncOp)
                                                                         for d in o.body.block.ops))


def test_lowered_kernel_matches_the_tile_program(seed):
    rng = np.random.default_rng(seed)
    M, N, D = 128, 150, 64  # two programs; three key blocks, the last short
    q, do = (rng.standard_normal((M, D)).astype(BF16) for _ in range(2))
    k, v = (rng.standard_normal((N, D)).astype(BF16) for _ in range(2))
    text = scores_and_grads.ir()
    low = lowered(text)
    assert "nvgpu.wgmma_wait_group 1" in str(low)  # the pass ran: dP stays in flight while S is read
    want, got = (np.full((M, D), np.nan, np.float32) for _ in range(2))
    tawa.interpret(text, "scores_and_grads", (M // 64,), q, k, v, do, want, N)
    tawa.interpret(low, "scores_and_grads", (M // 64,), q, k, v, do, got, N, ctas=2)
    assert not np.isnan(got).any()
    # wgmma sums K in other chunks than the interpreter; the folded −1 is added first.
    assert np.linalg.norm(got - want) / np.linalg.norm(want) <= 1e-3


def test_schedule_issues_the_independent_product_early():
    module = aref_level(scores_and_grads.ir())
    AsyncDotsPass().apply(tawa.context(), module)
    ops = list(consumer_loop(module).body.block.ops)
    names = [o.name for o in ops if o.name in ("tile.dot_async", "tile.dot_wait", "aref.consumed")]
    # S and dP issued together, S waited for (dP in flight); dP's wait, then V's slot; dS·K issued,
    # its wait, then K's slot (S and dS·K read it).
    assert names == ["tile.dot_async", "tile.dot_async", "tile.dot_wait", "tile.dot_wait", "aref.consumed",
                     "tile.dot_async", "tile.dot_wait", "aref.consumed"]
    assert [o.pending.value.data for o in ops if isinstance(o, tile.DotWaitOp)] == [1, 0, 0]


def test_register_model_counts_what_stays_in_flight():
    """64-row warp group shares: S and dP 64x64 f32 (32 registers each), the
    accumulator 32; dS in bf16 16.  Issued early, dP is live while S's
    exponentials run, as it was not before; the folded −1 costs nothing."""
    module = aref_level(scores_and_grads.ir())
    before = fragment_peak(consumer_loop(module).body.block, 64)
    AsyncDotsPass().apply(tawa.context(), module)
    after = fragment_peak(consumer_loop(module).body.block, 64)
    assert (before, after) == (96, 96)
    bound = aref_level(scores_and_grads.ir())
    AsyncDotsPass(max_regs=64).apply(tawa.context(), bound)  # no more than before: rewritten still
    assert any(isinstance(o, tile.DotAsyncOp) for o in consumer_loop(bound).body.block.ops)


def test_release_before_the_retiring_wait_is_an_overwrite():
    """The pass moves K's release after the wait that retires dS·K (which reads
    K's slot); put back before it, the proof finds the producer's next load
    into the slot that wgmma may still read."""
    module = aref_level(scores_and_grads.ir())
    AsyncDotsPass().apply(tawa.context(), module)
    body = consumer_loop(module).body.block
    release = [o for o in body.ops if isinstance(o, aref.ConsumedOp)][-1]  # K's
    last = [o for o in body.ops if isinstance(o, tile.DotWaitOp)][-1]
    assert last.is_before_in_block(release)
    release.detach()
    body.insert_op_before(release, last)
    steps = HopperPipelinePass(prepare=False).steps(2)
    start = next(i for i, p in enumerate(steps) if p.name == "tawa-assign-stage-phase")
    with pytest.raises(TawaError, match="overwritten|still read"):
        for p in steps[start:]:
            p.apply(tawa.context(), module)


@needs_ptxas
def test_assembles_with_the_products_in_flight(tmp_path):
    """No spills, and no wait that ptxas adds itself (C7513, C7517: a register a
    wgmma in flight reads or writes, set by another instruction)."""
    module = tawa.parse(scores_and_grads.ir())
    HopperPipelinePass().apply(tawa.context(), module)
    assert_assembles_without_spills(print_ptx(module), tmp_path)
