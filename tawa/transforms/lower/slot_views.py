"""Slot views that control flow carries: passed on as their stage.

`tawa-lower-aref` turns the values of an `aref.get` into views of the slot
they were written to (`nvgpu.smem_tile %buf[%stage]`), and `tawa-lower-tile`
reads a dot's shared-memory operand from such a view (a wgmma descriptor of
`%buf` at `%stage`).  A view that an `scf.for` carries to its next iteration,
or that an `scf.if` yields, would reach the dot as a block argument or an
`scf.if` result instead, whose slot nothing names.  `carry_slot_views`
carries the stage in its place (an index) and makes the view again where it
arrives.  Worked example (a loop over programs whose body takes the next
program's Q and passes it to the next iteration, which reads it in its dot):

    %q0 = nvgpu.smem_tile %bq[%s0]                 %q0 = nvgpu.smem_tile %bq[%s0]      // dead: erased later
    scf.for ... iter_args(%q = %q0) {        =>    scf.for ... iter_args(%q = %s0) {   // an index now
      ... tile.dot_async %q, %k ...                  %qv = nvgpu.smem_tile %bq[%q]
      %n = scf.if %has_next {                        ... tile.dot_async %qv, %k ...
        %q1 = nvgpu.smem_tile %bq[%s1]               %n = scf.if %has_next {
        scf.yield %q1                                  scf.yield %s1
      } else { scf.yield %q }                        } else { scf.yield %q }
      scf.yield %n                                   scf.yield %n
    }                                              }

A carried tensor qualifies when every value it receives is a view of one
buffer or another carried tensor that qualifies: the largest such set, since
a loop's argument arrives back through the `scf.if`s of its body (the
`else` above yields the argument itself).  Anything else keeps its type.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType, TensorType
from xdsl.ir import Attribute, BlockArgument, Operation, Region, SSAValue, Use
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import nvgpu


def arrivals(value: SSAValue) -> list[Use]:
    """The uses of `value`, and of the values control flow carries it to:
    followed through `scf.yield` to the `scf.if` result or the `scf.for`
    iteration argument and result it gives."""
    uses, seen, todo = [], {value}, [value]
    while todo:
        for use in todo.pop().uses:
            carried = _carried_to(use)
            if carried is None:
                uses.append(use)
            for c in carried or ():
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
    return uses


def _carried_to(use: Use) -> list[SSAValue] | None:
    """The values an operand of `scf.yield` or an `scf.for` init becomes
    (None: the use is not one)."""
    op = use.operation
    if isinstance(op, scf.ForOp) and use.index >= 3:
        i = use.index - 3
        return [op.body.block.args[i + 1], op.results[i]]
    if not isinstance(op, scf.YieldOp):
        return None
    parent = op.parent_op()
    if isinstance(parent, scf.IfOp):
        return [parent.results[use.index]]
    if isinstance(parent, scf.ForOp):
        return [parent.body.block.args[use.index + 1], parent.results[use.index]]
    return None


@dataclass
class _Carrier:
    """A tensor that control flow carries: an `scf.if` result, or an
    `scf.for` iteration argument with its result; `incoming` are the
    (op, operand index) pairs that give it its values (yields, the init)."""

    values: list[SSAValue]
    incoming: list[tuple[Operation, int]]


def _carriers(region: Region) -> list[_Carrier]:
    found = []
    for op in region.walk():
        if isinstance(op, scf.IfOp) and op.false_region.blocks:
            yields = [op.true_region.block.last_op, op.false_region.block.last_op]
            found += [_Carrier([r], [(y, i) for y in yields]) for i, r in enumerate(op.results)
                      if isinstance(r.type, TensorType)]
        elif isinstance(op, scf.ForOp):
            y = op.body.block.last_op
            found += [_Carrier([op.body.block.args[i + 1], r], [(op, i + 3), (y, i)])
                      for i, r in enumerate(op.results) if isinstance(r.type, TensorType)]
    return found


def carry_slot_views(region: Region) -> None:
    """Carries each slot view that `scf.for` and `scf.if` ops in `region`
    pass on as its stage: the carried tensor becomes an index, and its uses
    read `nvgpu.smem_tile` of the same buffer at that index, made where it
    arrives.  A carried tensor qualifies when every value it receives is a
    view of one buffer or another carried tensor that qualifies (the largest
    such set: a loop's argument may arrive back through the `scf.if`s of
    its body)."""
    carriers = _carriers(region)
    of = {v: c for c in carriers for v in c.values}
    buffer: dict[int, SSAValue] = {}
    alive = {id(c) for c in carriers}
    changed = True
    while changed:  # drop carriers that receive anything else, until none does
        changed = False
        for c in carriers:
            if id(c) not in alive:
                continue
            bufs = set()
            for op, i in c.incoming:
                v = op.operands[i]
                if isinstance(v.owner, nvgpu.SmemTileOp):
                    bufs.add(v.owner.source)
                elif v in of and id(of[v]) in alive:
                    if id(of[v]) in buffer:
                        bufs.add(buffer[id(of[v])])
                else:
                    bufs = None
                    break
            if bufs is None or len(bufs) > 1:
                alive.discard(id(c))
                buffer.pop(id(c), None)
                changed = True
            elif bufs and id(c) not in buffer:
                buffer[id(c)] = bufs.pop()
                changed = True
    chosen = [c for c in carriers if id(c) in alive and id(c) in buffer]
    retyped: list[tuple[SSAValue, Attribute, SSAValue]] = []
    for c in chosen:
        t = c.values[0].type
        c.values = [Rewriter.replace_value_with_new_type(v, IndexType()) for v in c.values]
        retyped += [(v, t, buffer[id(c)]) for v in c.values]
    for c in chosen:
        for op, i in c.incoming:
            view = op.operands[i].owner
            if isinstance(view, nvgpu.SmemTileOp):
                op.operands = [view.stage if k == i else v for k, v in enumerate(op.operands)]
    for v, t, buf in retyped:
        at = InsertPoint.at_start(v.block) if isinstance(v, BlockArgument) else InsertPoint.after(v.owner)
        _view_at(buf, v, t, at)


def _view_at(buffer: SSAValue, stage: SSAValue, t: Attribute, at: InsertPoint) -> None:
    """Makes the view of `buffer` at `stage` at `at`, and gives it the
    uses of `stage` that are not its carrying on."""
    uses = [u for u in stage.uses if _carried_to(u) is None]
    if not uses:
        return
    view = nvgpu.SmemTileOp.build(operands=[buffer, stage], result_types=[t])
    view.result.name_hint = stage.name_hint
    Rewriter.insert_op(view, at)
    for u in uses:
        u.operation.operands[u.index] = view.result


__all__ = ["arrivals", "carry_slot_views"]
