"""Pinned waits: a `wgmma.wait_group` stays after the register math placed before it.

`tawa-overlap-dots` puts the wait that completes the P·V in flight after the
softmax of the next scores, so that the softmax runs while the tensor cores
compute the P·V:

    wgmma S_j ; commit ; wgmma P·V_{j-1} ; commit
    wgmma.wait_group 1            // S_j done, P·V in flight
    ... softmax of S_j ...        // max, exp2, sum: no wgmma register touched
    wgmma.wait_group 0            // P·V done
    O *= alpha ; P = cvt(p)

ptxas does not keep that order.  Its scheduler moves the `wait_group 0` up to
the start of its basic block (seen in the SASS of attention at head dim 128,
ptxas of CUDA 13: `WARPGROUP.DEPBAR.LE gsb0, 0x0` right where the mask's
branch joins, then the whole softmax), and the softmax then waits for
the P·V instead of running under it.  On the H100 that wait was the largest
stall of the d128 kernel in ncu's source counters (`docs/perf.md`).  A
fence before the wait is an instruction ptxas does not move code across;
`fence.acq_rel.cta` (`nvgpu.fence_cta`) has nothing to order in the
consumer's loop but the release of a ring slot just before it.  With it the
SASS keeps the softmax before the wait, but the kernels did not get faster
on the H100 (docs/perf.md, "Cheaper softmax reductions").  The likely
reason (not profiled): with ping-pong, the hoisted wait staggers the two
warp groups' softmaxes; starting one earlier makes them contend for the same
issue slots and MUFU.  So `tawa-pin-waits` (`PinWaitsPass`, after
`tawa-lower-tile` and `tawa-pingpong`) is in `tawa-hopper-pipeline` only with
`pin-waits=true`.

Which waits: those with register math (an op with a fragment result)
between them and the last wgmma issue, commit or wait or the last control
flow before them in their block.  A wait right after a commit (a GEMM main
loop's `wait_group 1`) or a loop (its `wait_group 0` after the main loop) has
nothing for ptxas to move it over and gets no fence.  The pass looks at every
wgmma wait of the module (only consumers wait for wgmmas), so it also runs
on IR after `tawa-materialize-partitions`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import nvgpu

NAME = "tawa-pin-waits"

_GROUP_OPS = (nvgpu.WgmmaOp, nvgpu.WgmmaMmaAsyncOp, nvgpu.WgmmaFenceOp, nvgpu.WgmmaCommitGroupOp,
              nvgpu.WgmmaWaitGroupOp)
"""Ops that issue, close or complete wgmma groups: a wait's scan stops at them."""


def _math_before(wait: nvgpu.WgmmaWaitGroupOp) -> bool:
    """Whether register math stands between `wait` and the group op or
    control flow (an op with regions: a block boundary in the PTX) before it."""
    op = wait.prev_op
    while op is not None and not isinstance(op, _GROUP_OPS) and not op.regions:
        if any(isinstance(r.type, nvgpu.FragmentType) for r in op.results):
            return True
        op = op.prev_op
    return False


def pin_waits(region: Region) -> int:
    """Puts an `nvgpu.fence_cta` before each wait of `region` that follows
    register math in its block; returns how many it pinned."""
    waits = [o for o in region.walk() if isinstance(o, nvgpu.WgmmaWaitGroupOp) and _math_before(o)]
    for wait in waits:
        Rewriter.insert_op(nvgpu.FenceCtaOp(), InsertPoint.before(wait))
    return len(waits)


@dataclass(frozen=True)
class PinWaitsPass(ModulePass):
    """A wgmma wait placed after register math gets a fence that keeps ptxas from moving it up."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pin_waits(op.body)
