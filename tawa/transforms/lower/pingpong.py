"""Ping-pong between the consumer warp groups of an overlapped loop.

After `tawa-overlap-dots` each consumer warp group issues two wgmma groups
per iteration (S_j = Q·K_jᵀ, then the P·V of iteration j-1) and runs its
softmax while they are in flight.  The two warp groups of a cooperative
partition share the tensor cores: when both issue at once their dots queue
behind each other and both softmaxes then run with the tensor cores idle.
FlashAttention-3 orders them with two named barriers so that one warp
group's dots run while the other's softmax does.  The same here: each warp
group waits for its turn before issuing its two groups and hands the turn
over right after:

    scf.if %first {} else { bar.arrive PING, 256 }  // warp group 0 goes first
    scf.for ... {
      scf.if %first { bar.sync PING, 256 } else { bar.sync PONG, 256 }      // my turn
      ... wgmma S_j ... commit ... wgmma P·V ... commit
      scf.if %first { bar.arrive PONG, 256 } else { bar.arrive PING, 256 }  // yours
      ... wait 1, softmax, wait 0 ...
    }
    scf.if %first { bar.sync PING, 256 ; bar.arrive PONG, 256 }  // 1's last turn taken, the loop closed
    else { bar.sync PONG, 256 }

(`%first`: this is the partition's first warp group.)  Per loop, warp group
0 syncs PING once per iteration plus once after the loop and warp group 1
arrives once before it plus once per iteration; PONG is synced by 1 and
arrived at by 0 once per iteration plus once after the loop.  Every barrier
generation so has 128 syncing and 128 arriving threads, and a warp group
can be at most one turn ahead (it waits for the other's hand-over before
its next issue), so no generation completes with the arrivals of one warp
group alone.  The closing PONG is what bounds warp group 1 when a loop runs
no iteration (a program with one key block): without it, its arrive before
the loop never waits, and with the next program's Q already loaded
(`once-depth=2`) and no epilogue barrier between the programs (the thread
epilogue) it could arrive at PING for two programs before warp group 0
synced once — one generation of its arrivals alone, and warp group 0
waiting on the next forever (`tawa-verify-protocol` found it).
`tawa-verify-protocol` checks the counts over all interleavings.

**More warp groups** take their turns in a ring: warp group g waits at
barrier 2 + g and hands over at 2 + (g + 1) mod N; the last one arrives at
warp group 0's barrier before the loop; after it, each takes its last turn
and, but the last, hands the next one its closing turn (0 → 1 → ... → N-1).
With N = 2 this is the protocol above, op for op.  Each barrier has one
warp group that waits and one that arrives, and a warp group's next
arrival needs the whole ring to have turned, so again none is more than a
turn ahead (`tests/transforms/test_pingpong.py`: three warp groups, and the
deadlock the protocol check finds without the closing turns).

`tawa-pingpong` (`PingPongPass`, after `tawa-lower-tile`; in
`tawa-hopper-pipeline` unless `pingpong=false`) applies it to the loops
`tawa-overlap-dots` marks (`OVERLAPPED`) in a partition of 2 to `MAX_GROUPS`
warp groups, whose body issues two wgmma groups before its first wait.  It
finds the warp group's index in the partition where `tawa-lower-tile` put
it (`tawa.transforms.lower.partitions.group_index`).  Measured faster on the H100 than the overlapped loop without
it, most on head dim 64 causal (docs/perf.md, "Subtiled staging").  The CPU
simulator runs each warp group as its own task, so the hand-over runs there
as on the GPU (a divergent `scf.if` within one task would wait for both
branches to end, and deadlock).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import nvgpu
from tawa.target.hopper import THREADS_PER_GROUP
from tawa.transforms.lower.partitions import consumer_partitions, group_index
from tawa.transforms.pipeline.overlap_dots import OVERLAPPED
from tawa.transforms.utils import group_tests, per_group

NAME = "tawa-pingpong"

TURNS = 2
"""The named barrier of warp group 0's turn; warp group g's is TURNS + g (0
is the CTA's, 1 the TMA-store epilogue's:
`tawa.transforms.lower.tma_epilogue.EPILOGUE_BARRIER`; the epilogue's per-warp-group
barriers count down from 15: `tma_epilogue.group_barrier`)."""
PING, PONG = TURNS, TURNS + 1
"""The two warp groups' turns."""
MAX_GROUPS = 16 - TURNS
"""A CTA has 16 named barriers."""
THREADS = 2 * THREADS_PER_GROUP
"""Threads of a turn's barrier: the warp group that waits and the one that hands over."""


def _issue_span(loop: scf.ForOp) -> tuple[Operation, Operation] | None:
    """The first `wgmma_fence` of the loop body and the commit of its second
    wgmma group (both top-level ops), if the body issues two groups before
    its first wait."""
    fence, commits = None, []
    for op in loop.body.block.ops:
        if isinstance(op, nvgpu.WgmmaWaitGroupOp):
            break
        if isinstance(op, nvgpu.WgmmaFenceOp) and fence is None:
            fence = op
        if isinstance(op, nvgpu.WgmmaCommitGroupOp):
            commits.append(op)
    return (fence, commits[1]) if fence is not None and len(commits) == 2 else None


def _turn_taking(region: Region) -> list[tuple[scf.ForOp, Operation, Operation]]:
    """The overlapped loops of `region` whose body issues two wgmma groups
    before its first wait, each with its first fence and second commit."""
    loops = [o for o in region.walk() if isinstance(o, scf.ForOp) and OVERLAPPED in o.attributes]
    return [(loop, *span) for loop in loops if (span := _issue_span(loop)) is not None]


def ping_pong(region: Region, group: SSAValue, groups: int) -> int:
    """Orders the wgmma issues of the warp groups in the overlapped loops of
    a consumer partition of `groups` ≥ 2 warp groups (`region`, run by its
    warp group `group`, an index) in a ring of turns; returns how many
    loops it ordered."""
    if not 2 <= groups <= MAX_GROUPS:
        return 0
    done = 0
    for loop, fence, commit in _turn_taking(region):
        is_group = group_tests(group, groups, InsertPoint.before(loop))

        def turn(k: int) -> int:
            return TURNS + k % groups

        def each(make) -> scf.IfOp:
            return per_group(is_group, [make(g) for g in range(groups)])

        # The last warp group hands warp group 0 its first turn.
        Rewriter.insert_op(each(lambda g: [nvgpu.NamedBarrierArriveOp(turn(0), THREADS)] if g == groups - 1 else []),
                           InsertPoint.before(loop))
        Rewriter.insert_op(each(lambda g: [nvgpu.NamedBarrierSyncOp(turn(g), THREADS)]), InsertPoint.before(fence))
        Rewriter.insert_op(each(lambda g: [nvgpu.NamedBarrierArriveOp(turn(g + 1), THREADS)]),
                           InsertPoint.after(commit))
        # The closing: each takes its last turn and, but the last, hands the next one its closing turn.
        Rewriter.insert_op(each(lambda g: [nvgpu.NamedBarrierSyncOp(turn(g), THREADS)]
                                + ([nvgpu.NamedBarrierArriveOp(turn(g + 1), THREADS)] if g < groups - 1 else [])),
                           InsertPoint.after(loop))
        done += 1
    return done


@dataclass(frozen=True)
class PingPongPass(ModulePass):
    """The consumer warp groups of an overlapped loop take turns issuing their dots (named barriers)."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for c in list(consumer_partitions(op)):
            if 2 <= c.groups <= MAX_GROUPS and _turn_taking(c.region):
                ping_pong(c.region, group_index(c.region, c.first_group), c.groups)
