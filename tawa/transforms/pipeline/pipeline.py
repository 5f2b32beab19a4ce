"""`tawa-pipeline{stages=D}`: multi-buffer arefs and keep one dot in flight.

Runs after `tawa-warp-specialize`.  Two rewrites:

1. Every aref that is filled inside a loop becomes a ring of D slots, so the
   producer can run up to D iterations ahead of the consumer.  Rings may
   have depths of their own: `ring-depths=d1,d2,...` gives the i-th ring, in
   the order of the kernel's `aref.create`s, d_i slots (attention's K and V:
   `ring-depths=3,2` keeps three key blocks and two value blocks; the one
   place a ring's depth is chosen, everything after reads it from the
   aref's type).  Arefs filled once per program (attention's Q tile) get
   `once_depth` slots (1 unless asked: 2 lets a persistent kernel load the
   next program's Q early; `tawa-hopper-pipeline` asks for 2 where it fits).
2. With D >= 2 (every ring its operands come from), a consumer loop that accumulates with a `tile.dot` whose
   operands come straight from arefs (the GEMM main loop) keeps that dot in
   flight across iterations, the discipline `wgmma.wait_group 1` implements
   (a loop with n such dots, one per accumulator, waits with n: the dots of
   iteration k-1 have completed):

       %a, %b = aref.get %r                     # borrow slot k
       %d = tile.dot_async %a, %b, %acc_i       # dot k starts
       tile.dot_wait 1                          # dot k-1 has completed ...
       scf.if (k > lb) { aref.consumed %r }     # ... so slot k-1 is released
       scf.yield %d
     after the loop:
       %acc = tile.dot_wait 0 (%loop_result)    # the last dot completes
       scf.if (lb < ub) { aref.consumed %r }    # and its slot is released

   Slot k-1 is never released before the dot that read it is complete.  The
   lag needs two slots (the consumer holds k-1 while it borrows k), so with
   D = 1 dots stay synchronous.

Built from one analysis and three patterns:

* `PipelinePlan` (an analysis) decides, over each whole `aref.warp_specialize`,
  which arefs are deepened (`pipelined_arefs`: those put inside a loop,
  wherever the put is) and which dots stay in flight (the loop-carried
  accumulations of a loop, whose operands and releases are checked across
  the loop body and its yield).  Neither is visible from one op.
* `DeepenAref` (`aref.create`), `KeepDotInFlight` (`tile.dot`) and
  `DeferRelease` (`aref.consumed`) are `RewritePattern`s that each rewrite one
  op the plan names.  The releases are rewritten in a second walk, after the
  dots, since a deferred release goes after its dot's `tile.dot_wait`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import PassFailedException

from tawa.diagnostics import location_of
from tawa.dialects import aref, tile
from tawa.transforms.utils import InheritLocation, fail, guarded

# ---------------------------------------------------------------------- analysis


def _in_loop(op: Operation, stop: Operation) -> bool:
    node = op.parent_op()
    while node is not None and node is not stop:
        if isinstance(node, scf.ForOp):
            return True
        node = node.parent_op()
    return False


def pipelined_arefs(ws: aref.WarpSpecializeOp) -> list[SSAValue]:
    """The arefs this pass turns into rings (`stages` slots, or their entry
    of `ring-depths`): those put inside a loop (the others are filled once
    and keep one slot), in the order of their `aref.create`s.  Public so
    that `tawa-hopper-pipeline` can plan shared memory for depths before
    choosing them."""
    looped = {op.aref for op in ws.walk() if isinstance(op, aref.PutOp) and _in_loop(op, ws)}
    return sorted(looped, key=_creation_order)


def _creation_order(ref: SSAValue) -> tuple[int, int]:
    owner = ref.owner
    if isinstance(owner, Operation) and (block := owner.parent_block()) is not None:
        return 0, block.get_operation_index(owner)
    return 1, 0  # not made by an op of a block (a block argument): after the others


def ring_depths_of(ws: aref.WarpSpecializeOp, depths: int | Sequence[int]) -> dict[SSAValue, int]:
    """Each ring of `ws` (`pipelined_arefs`) with its depth: `depths` for
    all, or one per ring in creation order.  A one-line error when the
    counts differ."""
    looped = pipelined_arefs(ws)
    if isinstance(depths, int):
        return dict.fromkeys(looped, depths)
    if len(depths) != len(looped):
        names = ", ".join(f"%{r.name_hint}" if r.name_hint else "?" for r in looped)
        given = f"{len(depths)} depth" + ("s" if len(depths) > 1 else "")
        raise fail(ws, f"{PipelinePass.name}: ring-depths gives {given} for {len(looped)} rings ({names or 'none'})")
    return dict(zip(looped, depths, strict=True))


@dataclass(eq=False)
class InFlightDot:
    """The loop-carried accumulating dots of one consumer loop, fed only by
    arefs (one in a GEMM's main loop; one per accumulator where a loop keeps
    several), and the releases of their operands' slots, which move one
    iteration later."""

    loop: scf.ForOp
    dots: list[tile.DotOp]
    """In the loop body's order."""
    iter_indices: list[int]
    releases: list[aref.ConsumedOp]
    # Filled in by `KeepDotInFlight`, read by `DeferRelease`:
    rewritten: list[tile.DotAsyncOp] = field(default_factory=list)
    in_loop: Operation | None = None
    """The op after which the next deferred release goes in the loop body."""
    after_loop: Operation | None = None
    """The op after which the next deferred release goes after the loop."""
    not_first: SSAValue | None = None
    ran: SSAValue | None = None


def _accumulates(dot: tile.DotOp, loop: scf.ForOp) -> int | None:
    """The iter_arg index that `dot` accumulates into across `loop` (its
    accumulator is that iteration argument, used only by the dot; the dot's
    result only yielded there), or None."""
    acc, body = dot.acc, loop.body.block
    if not isinstance(acc, BlockArgument) or acc.block is not body or acc.index == 0 or not acc.has_one_use():
        return None
    i = acc.index - 1
    yield_op = body.last_op
    if not isinstance(yield_op, scf.YieldOp) or not dot.result.has_one_use():
        return None
    if dot.result.get_unique_use().operation is not yield_op or yield_op.operands[i] is not dot.result:
        return None
    return i


def _in_flight(loop: scf.ForOp) -> InFlightDot | None:
    """The accumulating dots of `loop` that can stay in flight together:
    every operand is a value of an `aref.get` of the loop body that only
    these dots use, released later in the body."""
    body = loop.body.block
    accumulating = [(o, i) for o in body.ops if isinstance(o, tile.DotOp) and (i := _accumulates(o, loop)) is not None]
    if not accumulating:
        return None
    dots = [d for d, _ in accumulating]
    releases: list[aref.ConsumedOp] = []
    for dot in dots:
        for operand in (dot.lhs, dot.rhs):
            get = operand.owner
            if not isinstance(get, aref.GetOp) or get.parent_block() is not body:
                return None
            if any(u.operation not in dots for v in get.values for u in v.uses):
                return None
            release = _release_of(get, body)
            if release is None:
                return None
            if release not in releases:
                releases.append(release)
    return InFlightDot(loop, dots, [i for _, i in accumulating], releases)


def _release_of(get: aref.GetOp, body: Block) -> aref.ConsumedOp | None:
    """The `aref.consumed` of the same aref that follows `get` in `body`."""
    node = get.next_op
    while node is not None:
        if isinstance(node, aref.ConsumedOp) and node.aref is get.aref:
            return node
        if isinstance(node, aref.GetOp) and node.aref is get.aref:
            return None
        node = node.next_op
    return None


@dataclass
class PipelinePlan:
    """What `tawa-pipeline` changes, decided over whole warp-specialized kernels
    before anything is rewritten."""

    stages: int
    once_depth: int = 1
    ring_depths: tuple[int, ...] = ()
    """Depths of a kernel's rings in creation order; empty: `stages` each."""
    deepen: dict[SSAValue, int] = field(default_factory=dict)
    """Arefs that become rings, with their depth: `stages` slots (or their
    `ring_depths` entry) for those put inside a loop, `once_depth` for those
    put once per program."""
    dots: dict[tile.DotOp, InFlightDot] = field(default_factory=dict)
    """Dots that stay in flight (with D >= 2)."""
    releases: dict[aref.ConsumedOp, InFlightDot] = field(default_factory=dict)
    """Releases that move one iteration later, with their dot."""

    def add(self, ws: aref.WarpSpecializeOp) -> None:
        looped = ring_depths_of(ws, self.ring_depths or self.stages)
        self.deepen.update(looped)
        if self.once_depth > 1:
            self.deepen.update((op.aref, self.once_depth) for op in ws.walk()
                               if isinstance(op, aref.PutOp) and op.aref not in looped)
        for loop in [o for o in ws.walk() if isinstance(o, scf.ForOp)]:
            plan = _in_flight(loop)
            if plan is None or any(r in self.releases for r in plan.releases):
                continue  # a release belongs to one group of dots
            if any(self.depth(r.aref) < 2 for r in plan.releases):
                continue  # the lag needs two slots in each ring the dots read
            self.dots.update((d, plan) for d in plan.dots)
            self.releases.update((r, plan) for r in plan.releases)

    def depth(self, ref: SSAValue) -> int:
        """The depth `ref` will have."""
        t = ref.type
        assert isinstance(t, aref.ArefType)
        return self.deepen.get(ref, t.depth.data)


# ---------------------------------------------------------------------- patterns


@dataclass
class DeepenAref(RewritePattern):
    """`aref.create` of an aref the plan deepens → the same aref with its planned slots."""

    plan: PipelinePlan

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aref.CreateOp, rewriter: PatternRewriter) -> None:
        old = op.result.type
        depth = self.plan.deepen.pop(op.result, None)
        if depth is None or not isinstance(old, aref.ArefType):
            return
        new = aref.CreateOp(aref.ArefType(old.types, depth))
        new.result.name_hint = op.result.name_hint
        rewriter.replace(op, new)


@dataclass
class KeepDotInFlight(RewritePattern):
    """A dot the plan keeps in flight → `tile.dot_async`.  After the last of
    its loop's n such dots, `tile.dot_wait n` (the dots of iteration k-1
    have completed); after the loop, `tile.dot_wait 0` on the accumulators
    (the last dots complete), which the loop's users now read."""

    plan: PipelinePlan

    @op_type_rewrite_pattern
    def match_and_rewrite(self, dot: tile.DotOp, rewriter: PatternRewriter) -> None:
        c = self.plan.dots.pop(dot, None)
        if c is None:
            return
        loop = c.loop
        new_dot = tile.DotAsyncOp(dot.lhs, dot.rhs, dot.acc, dot.rhs_transposed is not None,
                                  dot.lhs_transposed is not None)
        new_dot.result.name_hint = dot.result.name_hint
        rewriter.replace(dot, new_dot)
        c.rewritten.append(new_dot)
        if len(c.rewritten) < len(c.dots):
            return
        last = max(c.rewritten, key=loop.body.block.get_operation_index)
        # In the loop: complete the dots of iteration k-1; their slots may go (but not in iteration 0).
        not_first = arith.CmpiOp(loop.body.block.args[0], loop.lb, "ne")
        not_first.result.name_hint = "not_first"
        rewriter.insert([tile.DotWaitOp(len(c.dots)), not_first], InsertPoint.after(last))
        c.in_loop, c.not_first = not_first, not_first.result
        # After the loop: complete the last dots; their slots may go if the loop ran.
        results = [loop.results[i] for i in c.iter_indices]
        wait = tile.DotWaitOp(0, results)
        for r, w in zip(results, wait.results_, strict=True):
            w.name_hint = r.name_hint
        ran = arith.CmpiOp(loop.lb, loop.ub, "slt")
        ran.result.name_hint = "ran"
        rewriter.insert([wait, ran], InsertPoint.after(loop))
        c.after_loop, c.ran = ran, ran.result
        for r, w in zip(results, wait.results_, strict=True):
            r.replace_uses_with_if(w, lambda use: use.operation is not wait)


@dataclass
class DeferRelease(RewritePattern):
    """The release of a slot read by an in-flight dot → a release after that
    dot's `tile.dot_wait 1` unless in the first iteration (it frees the slot
    of iteration k-1), and one after the loop if the loop ran (the last slot)."""

    plan: PipelinePlan

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aref.ConsumedOp, rewriter: PatternRewriter) -> None:
        c = self.plan.releases.pop(op, None)
        if c is None:
            return
        assert c.in_loop is not None and c.after_loop is not None, "the dot is rewritten first"
        assert c.not_first is not None and c.ran is not None
        in_loop = guarded(c.not_first, [aref.ConsumedOp(op.aref)])
        after = guarded(c.ran, [aref.ConsumedOp(op.aref)])
        rewriter.insert(in_loop, InsertPoint.after(c.in_loop))
        rewriter.insert(after, InsertPoint.after(c.after_loop))
        c.in_loop, c.after_loop = in_loop, after
        rewriter.erase(op)


def _walk(module: ModuleOp, *patterns: RewritePattern) -> None:
    PatternRewriteWalker(
        GreedyRewritePatternApplier([InheritLocation(p) for p in patterns], dce_enabled=False),
        apply_recursively=False,
    ).rewrite_module(module)


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    """Deepens arefs into D-slot rings and keeps one consumer dot in flight."""

    name = "tawa-pipeline"

    stages: int = 3
    """Slots of every aref filled inside a loop (D)."""
    ring_depths: tuple[int, ...] = ()
    """Slots of each aref filled inside a loop, in the order of the kernel's
    `aref.create`s (e.g. attention's K and V rings: `ring-depths=3,2`); one
    entry per ring.  Empty: `stages` for every ring."""
    once_depth: int = 1
    """Slots of every aref filled once per program (attention's Q tile): 2
    lets a persistent kernel's producer fill the next program's tile while
    the consumers still read this one's (`tawa-hopper-pipeline{once-depth}`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.stages < 1:
            raise PassFailedException(f"{self.name}: stages must be at least 1, got {self.stages}")
        if self.once_depth < 1:
            raise PassFailedException(f"{self.name}: once-depth must be at least 1, got {self.once_depth}")
        if any(d < 1 for d in self.ring_depths):
            raise PassFailedException(f"{self.name}: ring-depths must be at least 1 each, "
                                      f"got {','.join(map(str, self.ring_depths))}")
        plan = PipelinePlan(self.stages, self.once_depth, tuple(self.ring_depths))
        for kernel in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            specialized = [o for o in kernel.walk() if isinstance(o, aref.WarpSpecializeOp)]
            if not specialized and not kernel.is_declaration:
                where = location_of(kernel) or "tawa"
                sys.stderr.write(
                    f"{where}: remark: {self.name} left @{kernel.sym_name.data} unchanged: "
                    "it has no aref.warp_specialize (run tawa-warp-specialize first)\n"
                )
            for ws in specialized:
                plan.add(ws)
        _walk(op, DeepenAref(plan), KeepDotInFlight(plan))
        _walk(op, DeferRelease(plan))  # after the dots: a release goes after its dot's wait
