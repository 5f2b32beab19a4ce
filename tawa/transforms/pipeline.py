"""`tawa-pipeline{stages=D}`: multi-buffer arefs and keep one dot in flight.

Runs after `tawa-warp-specialize`.  Two rewrites:

1. Every aref that is filled inside a loop becomes a ring of D slots, so the
   producer can run up to D iterations ahead of the consumer.  Arefs filled
   once (attention's Q tile) keep one slot.
2. With D >= 2, a consumer loop that accumulates with a `tile.dot` whose
   operands come straight from arefs (the GEMM main loop) keeps that dot in
   flight across iterations, the discipline `wgmma.wait_group 1` implements:

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
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from tawa.diagnostics import location_of
from tawa.dialects import aref, tile


def _in_loop(op: Operation, stop: Operation) -> bool:
    node = op.parent_op()
    while node is not None and node is not stop:
        if isinstance(node, scf.ForOp):
            return True
        node = node.parent_op()
    return False


def pipelined_arefs(ws: aref.WarpSpecializeOp) -> set[SSAValue]:
    """The arefs this pass deepens to `stages` slots: those put inside a loop
    (the others are filled once and keep one slot).  Public so that
    `tawa-hopper-pipeline` can plan shared memory for a depth before
    choosing it."""
    return {op.aref for op in ws.walk() if isinstance(op, aref.PutOp) and _in_loop(op, ws)}


def _deepen(ws: aref.WarpSpecializeOp, stages: int) -> None:
    """Gives every aref put inside a loop `stages` slots."""
    for ref in pipelined_arefs(ws):
        create = ref.owner
        old = ref.type
        if not isinstance(create, aref.CreateOp) or not isinstance(old, aref.ArefType):
            continue
        new = aref.CreateOp(aref.ArefType(old.types, stages))
        new.result.name_hint = ref.name_hint
        Rewriter.replace_op(create, new)


@dataclass
class _AsyncCandidate:
    """A loop-carried accumulating dot fed only by arefs, in a consumer loop."""

    loop: scf.ForOp
    dot: tile.DotOp
    iter_index: int
    releases: list[aref.ConsumedOp]


def _find_candidate(dot: tile.DotOp) -> _AsyncCandidate | None:
    loop = dot.parent_op()
    acc = dot.acc
    if not isinstance(loop, scf.ForOp) or not isinstance(acc, BlockArgument):
        return None
    body = loop.body.block
    if acc.block is not body or acc.index == 0 or not acc.has_one_use():
        return None
    i = acc.index - 1
    yield_op = body.last_op
    if not isinstance(yield_op, scf.YieldOp) or not dot.result.has_one_use():
        return None
    if dot.result.get_unique_use().operation is not yield_op or yield_op.operands[i] is not dot.result:
        return None
    releases: list[aref.ConsumedOp] = []
    for operand in (dot.lhs, dot.rhs):
        get = operand.owner
        if not isinstance(get, aref.GetOp) or get.parent_block() is not body:
            return None
        if any(u.operation is not dot for v in get.values for u in v.uses):
            return None
        release = _release_of(get, body)
        if release is None:
            return None
        if release not in releases:
            releases.append(release)
    return _AsyncCandidate(loop, dot, i, releases)


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


def _guarded_release(ref: SSAValue, cond: SSAValue) -> scf.IfOp:
    then = Block()
    then.add_ops([aref.ConsumedOp(ref), scf.YieldOp()])
    return scf.IfOp(cond, [], [then])


def _make_async(c: _AsyncCandidate) -> None:
    loop, dot = c.loop, c.dot
    new_dot = tile.DotAsyncOp(dot.lhs, dot.rhs, dot.acc, dot.rhs_transposed is not None)
    new_dot.result.name_hint = dot.result.name_hint
    Rewriter.replace_op(dot, new_dot)
    # In the loop: complete dot k-1, then release its slots (not in iteration 0).
    not_first = arith.CmpiOp(loop.body.block.args[0], loop.lb, "ne")
    not_first.result.name_hint = "not_first"
    body_ops: list[Operation] = [tile.DotWaitOp(1), not_first]
    body_ops += [_guarded_release(r.aref, not_first.result) for r in c.releases]
    Rewriter.insert_op(body_ops, InsertPoint.after(new_dot))
    for r in c.releases:
        Rewriter.erase_op(r)
    # After the loop: complete the last dot and release its slots if the loop ran.
    result = loop.results[c.iter_index]
    wait = tile.DotWaitOp(0, [result])
    wait.results_[0].name_hint = result.name_hint
    ran = arith.CmpiOp(loop.lb, loop.ub, "slt")
    ran.result.name_hint = "ran"
    after: list[Operation] = [wait, ran]
    after += [_guarded_release(r.aref, ran.result) for r in c.releases]
    Rewriter.insert_op(after, InsertPoint.after(loop))
    result.replace_uses_with_if(wait.results_[0], lambda use: use.operation is not wait)


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    """Deepens arefs into D-slot rings and keeps one consumer dot in flight."""

    name = "tawa-pipeline"

    stages: int = 3
    """Slots of every aref filled inside a loop (D)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.stages < 1:
            raise PassFailedException(f"{self.name}: stages must be at least 1, got {self.stages}")
        for kernel in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            specialized = [o for o in kernel.walk() if isinstance(o, aref.WarpSpecializeOp)]
            if not specialized and not kernel.is_declaration:
                where = location_of(kernel) or "tawa"
                sys.stderr.write(
                    f"{where}: remark: {self.name} left @{kernel.sym_name.data} unchanged: "
                    "it has no aref.warp_specialize (run tawa-warp-specialize first)\n"
                )
            for ws in specialized:
                _deepen(ws, self.stages)
                if self.stages < 2:
                    continue
                dots = [o for o in ws.walk() if isinstance(o, tile.DotOp)]
                for cand in filter(None, map(_find_candidate, dots)):
                    _make_async(cand)
