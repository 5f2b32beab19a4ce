"""`tawa-overlap-programs`: a persistent consumer starts the next program under this one's last dot.

`tawa-overlap-dots` keeps two dots in flight inside attention's key loop,
but each program still starts and ends with nothing in flight: its prologue
waits for S₀ = Q·K₀ᵀ and runs the first block's softmax with the tensor
cores idle, and its epilogue waits for the last P·V alone.  On the H100
that is a large part of the consumers' time on short rows (docs/perf.md,
"Short-first pairs and Q's early release at head dim 256").  This pass
carries the overlap across the programs of a persistent loop: program t
issues program t+1's first dot, then its own last dot, and runs t+1's first
softmax while that last dot is in flight:

    before (program t)                        after (program t; Q_t, (m, l, P, ...)_t carried in)
    %q = aref.get %ref_q                      <pure ops of t>
    scf.if %ran {                             scf.if %ran {
      %k0 = aref.get %ref_k                     <the overlapped loop, from the carried values>
      %s0 = tile.dot %q, %k0, %z                %v = aref.get %ref_v
      ... first softmax ...                     scf.if (t + step < ub) {       // program t+1's prologue
      <the overlapped loop>                       <pure ops of t+1> ; %q' = aref.get %ref_q
      %v = aref.get %ref_v                        scf.if %ran' {
      %o = tile.dot %p, %v, %x                      %k0' = aref.get %ref_k
      aref.consumed %ref_v                          %s0' = tile.dot_async %q', %k0', %z
    }                                               %o = tile.dot_async %p, %v, %x    // t's last dot
    <epilogue: normalize, store>                    %s1' = tile.dot_wait 1 (%s0')
                                                    ... first softmax of t+1 ...      // under %o
                                                    %o1 = tile.dot_wait 0 (%o)
                                                  } else { %o = tile.dot ... }
                                                } else { %o = tile.dot ... }
                                                aref.consumed %ref_v
                                              }
                                              <epilogue of t> ; scf.yield <Q', (m, l, P, ...)'>

The first program's prologue runs before the loop (both under `lb < ub`).
Where no program follows (or it has no key block) the carried values are
placeholders that nothing reads: the Q slot view carried in, zeros for the
rest.  The slot views of the carried Q cross the loop's back edge:
`tawa-lower-aref` carries their stage instead (`tawa.transforms.slot_views`).

**What is carried**: the aref slots taken before the guarded loop (Q) and
the prologue's values that the loop and the last dot use, except those that
are cheaper to compute again at the start of the next program than to keep
in registers (`_rematerialized`): a value whose op is pure and whose
operands, recursively, take fewer bytes than it does. The first block's
rescaled accumulator (zeros times alpha = exp2(m₀ - m), broadcast) is
recomputed from alpha, a carried row vector, not kept: a tile of f32 per
program would otherwise be live beside the last P·V's accumulator.

**When** (`program_plan`): the loop over programs (or over a pair's members)
of a consumer partition carries no values; its body is pure ops and
`aref.get`s, then the `scf.if` that `tawa-overlap-dots` made of its key loop
(the prologue: pure ops, slot ops, loads of memory the loop does not store
to and exactly one `tile.dot`; the `tawa.overlapped` loop; the tail: slot
ops, pure ops and exactly one `tile.dot`), then pure ops, slot releases and
`tile.store`s; its else branch
only releases slots. A slot taken before the guard and released after it
(not right after the loop) needs a second slot in its ring: the next
program takes it before this one gives its own back. The carried values
must be tiles of floats or scalars (what the placeholders can be made of).
Anything else is left as it is.  Runs after `tawa-persistent`, before
`tawa-assign-stage-phase`; `tawa-hopper-pipeline{overlap-programs=softmax}`
(`=dots`: `tail_first`, this program's last dot issued first and both
waited for before the next program's first softmax).

**Off by default**: on the H100 the rotated kernels measured slower than
the default at every head dim, the short rows included (docs/perf.md, "The
next program started in this one's tail"): ptxas moves the `dot_wait 0`
above the softmax placed before it (as in the overlapped loop:
`pin_waits`), and the next program's first K block, requested before this
program's epilogue, is not loaded yet at the 2-deep rings of head dims 128
and 256.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from tawa.dialects import aref, tile
from tawa.dialects.aref import PartitionRole
from tawa.dialects.nvgpu.types import tensor_bytes
from tawa.transforms.pingpong import OVERLAPPED
from tawa.transforms.utils import async_dot, erase_unused, fail, top_op, zeros_of

NAME = "tawa-overlap-programs"


@dataclass(frozen=True)
class ProgramPlan:
    """The parts of one loop over programs (module docstring, "When")."""

    loop: scf.ForOp
    pre: tuple[Operation, ...]
    """The body's ops before the guard: pure ops and `aref.get`s."""
    guard: scf.IfOp
    prologue: tuple[Operation, ...]
    """The guard's ops before the overlapped loop."""
    head: tile.DotOp
    tail_ops: tuple[Operation, ...]
    """The guard's ops after the overlapped loop (its yield left out)."""
    tail: tile.DotOp
    post: tuple[Operation, ...]
    """The body's ops after the guard (its yield left out)."""
    carried: tuple[SSAValue, ...]
    """The prologue's values that the next program takes from this one."""
    rematerialized: tuple[Operation, ...]
    """The prologue's ops that the next program runs again, in body order."""

    @property
    def gets(self) -> list[aref.GetOp]:
        return [o for o in self.pre if isinstance(o, aref.GetOp)]

    @property
    def slot_values(self) -> list[SSAValue]:
        """The values of the slots taken before the guard, carried too."""
        return [v for g in self.gets for v in g.values]


def _pure(op: Operation) -> bool:
    """Whether `op` may run again, or once more, without changing what the
    kernel does: math without effects (integer division counts: the program
    ids divide by grid sizes, and it runs only where the original ran)."""
    if op.regions or isinstance(op, tile.DotOp):
        return False
    return is_side_effect_free(op) or op.name.startswith("arith.")


def _read_only_load(op: Operation, stored: set[SSAValue]) -> bool:
    """A consumer's `tile.load` (attention's bias) of memory that the loop
    does not store to: the next program's prologue may read it before this
    program's store."""
    return isinstance(op, tile.LoadOp) and op.source not in stored


def _placeholder_type(t: Attribute) -> bool:
    """Whether `_placeholder` can make a value of type `t`."""
    if isinstance(t, TensorType):
        return isinstance(t.get_element_type(), AnyFloat) and len(t.get_shape()) in (1, 2)
    return isinstance(t, IndexType | IntegerType | AnyFloat)


def _placeholder(t: Attribute) -> tuple[list[Operation], SSAValue]:
    """Ops making a value of type `t` that nothing reads: zeros."""
    if isinstance(t, TensorType):
        return zeros_of(t)
    c = arith.ConstantOp(FloatAttr(0.0, t) if isinstance(t, AnyFloat) else IntegerAttr(0, t))
    return [c], c.result


def _overlapped_loop(op: Operation) -> scf.ForOp | None:
    if not isinstance(op, scf.IfOp) or not op.false_region.blocks:
        return None
    loops = [o for o in op.true_region.block.ops if isinstance(o, scf.ForOp) and OVERLAPPED in o.attributes]
    return loops[0] if len(loops) == 1 else None


def _slot_depth(ref: SSAValue) -> int:
    t = ref.type
    assert isinstance(t, aref.ArefType)
    return t.depth.data


def program_plan(loop: scf.ForOp) -> ProgramPlan | None:
    """The parts of `loop` if its programs can overlap (module docstring, "When")."""
    if loop.iter_args:
        return None
    body = loop.body.block
    ops = list(body.ops)
    if not isinstance(ops[-1], scf.YieldOp) or ops[-1].operands:
        return None
    guards = [o for o in ops if _overlapped_loop(o) is not None]
    if len(guards) != 1:
        return None
    guard = guards[0]
    assert isinstance(guard, scf.IfOp)
    at = ops.index(guard)
    pre, post = ops[:at], ops[at + 1: -1]
    if not all(isinstance(o, aref.GetOp) or _pure(o) for o in pre):
        return None
    if not all(isinstance(o, tile.StoreOp | aref.ConsumedOp) or _pure(o) for o in post):
        return None
    then = list(guard.true_region.block.ops)
    inner = _overlapped_loop(guard)
    assert inner is not None
    prologue, tail_ops = then[: then.index(inner)], then[then.index(inner) + 1: -1]
    stored = {o.dest for o in loop.walk() if isinstance(o, tile.StoreOp)}
    if not all(isinstance(o, aref.GetOp | aref.ConsumedOp | tile.DotOp) or _pure(o) or _read_only_load(o, stored)
               for o in prologue + tail_ops):
        return None
    heads = [o for o in prologue if isinstance(o, tile.DotOp)]
    tails = [o for o in tail_ops if isinstance(o, tile.DotOp)]
    if len(heads) != 1 or len(tails) != 1:
        return None
    if not all(isinstance(o, aref.ConsumedOp | scf.YieldOp) for o in guard.false_region.block.ops):
        return None
    tail = tails[0]
    before_tail = tail_ops[: tail_ops.index(tail)]
    for g in (o for o in pre if isinstance(o, aref.GetOp)):
        released_early = any(isinstance(o, aref.ConsumedOp) and o.aref is g.aref for o in before_tail)
        if not released_early and _slot_depth(g.aref) < 2:
            return None  # the next program's get would wait for this program's release
    in_prologue = set(prologue)
    outs = [r for o in prologue for r in o.results
            if any(top_op(u.operation, guard.true_region.block) not in in_prologue for u in r.uses)]
    carried, remat = _rematerialized(outs, in_prologue)
    if not all(_placeholder_type(v.type) for v in carried):
        return None
    return ProgramPlan(loop, tuple(pre), guard, tuple(prologue), heads[0], tuple(tail_ops), tail, tuple(post),
                       tuple(carried), tuple(o for o in prologue if o in remat))


def _rematerialized(outs: Sequence[SSAValue], prologue: set[Operation]) -> tuple[list[SSAValue], set[Operation]]:
    """(the prologue's values to carry, its ops to run again in the next
    program) for the values `outs` that the rest of the program uses: a
    value is computed again when its op is pure and the values it needs
    from the prologue, recursively, take fewer bytes than it does (or as
    many, in tensors of lower rank: a row vector rather than its 128x1
    column)."""
    memo: dict[SSAValue, tuple[tuple[int, int], frozenset[SSAValue], frozenset[Operation]]] = {}

    def cost(v: SSAValue) -> tuple[tuple[int, int], frozenset[SSAValue], frozenset[Operation]]:
        if isinstance(v, BlockArgument) or v.owner not in prologue:
            return (0, 0), frozenset(), frozenset()  # recomputed by the program's pure ops, or outside the loop
        if v in memo:
            return memo[v]
        own = ((_bytes(v.type), _rank(v.type)), frozenset((v,)), frozenset())
        op = v.owner
        if _pure(op):
            parts = [cost(o) for o in op.operands]
            total = (sum(p[0][0] for p in parts), max((p[0][1] for p in parts), default=0))
            if total < own[0]:
                own = (total, frozenset().union(*(p[1] for p in parts)),
                       frozenset((op,)).union(*(p[2] for p in parts)))
        memo[v] = own
        return own

    carried: list[SSAValue] = []
    remat: set[Operation] = set()
    for v in outs:
        _, values, ops = cost(v)
        carried += [c for c in values if c not in carried]
        remat |= ops
    order = {r: i for i, r in enumerate(r for o in sorted(prologue, key=_position) for r in o.results)}
    return sorted(carried, key=lambda v: order[v]), remat


def _bytes(t: Attribute) -> int:
    return tensor_bytes(t) if isinstance(t, TensorType) else 4  # a scalar: one register


def _rank(t: Attribute) -> int:
    return len(t.get_shape()) if isinstance(t, TensorType) else 0


def _position(op: Operation) -> int:
    block = op.parent_block()
    assert block is not None
    return block.get_operation_index(op)


def _clone(block: Block, op: Operation, vm: dict[SSAValue, SSAValue]) -> Operation:
    new = op.clone(value_mapper=vm)
    block.add_op(new)
    return new


class _Rotation:
    """Builds the rotated loop of one `ProgramPlan` (module docstring)."""

    def __init__(self, plan: ProgramPlan, tail_first: bool = False):
        self.plan = plan
        self.tail_first = tail_first
        self.iv = plan.loop.body.block.args[0]
        self.types = [v.type for v in (*plan.slot_values, *plan.carried)]

    def placeholders(self, block: Block, types: Sequence[Attribute]) -> list[SSAValue]:
        values = []
        for t in types:
            ops, v = _placeholder(t)
            block.add_ops(ops)
            values.append(v)
        return values

    def prologue(self, block: Block, program: SSAValue, tail: tuple[tile.DotOp, dict] | None) -> list[SSAValue]:
        """Program `program`'s pure ops, slot gets and guarded prologue at
        the end of `block`; with `tail` (this program's last dot and its
        value map) the prologue's dot is issued before it and the dot's wait
        comes after the rest of the prologue.  Returns [the tail's result,]
        the slots' values and the carried values."""
        p = self.plan
        vm: dict[SSAValue, SSAValue] = {self.iv: program}
        for o in p.pre:
            _clone(block, o, vm)
        then, other = Block(), Block()
        tail_result: SSAValue | None = None
        if tail is not None and self.tail_first:
            last = async_dot(tail[0], tail[1])
            then.add_op(last)
        for o in p.prologue:
            if o is not p.head or tail is None:
                _clone(then, o, vm)
                continue
            head = async_dot(p.head, vm)
            if self.tail_first:  # both in flight; both waited for before the softmax
                wait = tile.DotWaitOp(0, [head.result, last.result])
                then.add_ops([head, wait])
                tail_result = wait.results_[1]
            else:  # the head first: its wait leaves the last dot in flight under the softmax
                last = async_dot(tail[0], tail[1])
                wait = tile.DotWaitOp(1, [head.result])
                then.add_ops([head, last, wait])
                tail_result = last.result
            wait.results_[0].name_hint = p.head.result.name_hint
            vm[p.head.result] = wait.results_[0]
        carried = [vm[v] for v in p.carried]
        carried_types = [v.type for v in p.carried]
        if tail is None:
            then.add_op(scf.YieldOp(*carried))
            other.add_op(scf.YieldOp(*self.placeholders(other, carried_types)))
            result_types = carried_types
        else:
            assert tail_result is not None
            if not self.tail_first:
                wait0 = tile.DotWaitOp(0, [tail_result])
                then.add_op(wait0)
                tail_result = wait0.results_[0]
            then.add_op(scf.YieldOp(tail_result, *carried))
            sync = self.sync_tail(other, tail)
            other.add_op(scf.YieldOp(sync, *self.placeholders(other, carried_types)))
            result_types = [tail[0].result.type, *carried_types]
        ran = vm.get(p.guard.cond, p.guard.cond)
        first = scf.IfOp(ran, result_types, Region(then), Region(other))
        block.add_op(first)
        slots = [vm[v] for v in p.slot_values]
        if tail is None:
            return [*slots, *first.results]
        return [first.results[0], *slots, *first.results[1:]]

    @staticmethod
    def sync_tail(block: Block, tail: tuple[tile.DotOp, dict]) -> SSAValue:
        return _clone(block, tail[0], tail[1]).results[0]

    def next_program(self, block: Block, program: SSAValue, args: Sequence[SSAValue],
                     tail: tuple[tile.DotOp, dict] | None) -> list[SSAValue]:
        """Under `program + step < ub`, the next program's prologue
        (`prologue`); else [this program's tail dot,] `args`' slot views and
        placeholders.  Returns the values of `prologue`."""
        loop = self.plan.loop
        nxt = arith.AddiOp(program, loop.step)
        has = arith.CmpiOp(nxt.result, loop.ub, "slt")
        nxt.result.name_hint, has.result.name_hint = "next_program", "has_next"
        block.add_ops([nxt, has])
        then, other = Block(), Block()
        values = self.prologue(then, nxt.result, tail)
        then.add_op(scf.YieldOp(*values))
        slots = list(args[: len(self.plan.slot_values)])
        rest = self.placeholders(other, [v.type for v in self.plan.carried])
        if tail is None:
            other.add_op(scf.YieldOp(*slots, *rest))
        else:
            other.add_op(scf.YieldOp(self.sync_tail(other, tail), *slots, *rest))
        following = scf.IfOp(has.result, [v.type for v in values], Region(then), Region(other))
        block.add_op(following)
        return list(following.results)

    def build(self) -> scf.IfOp:
        p = self.plan
        loop = p.loop
        outer = Block()
        inits = self.prologue(outer, loop.lb, None)
        body = Block(arg_types=[IndexType(), *self.types])
        program, args = body.args[0], body.args[1:]
        program.name_hint = self.iv.name_hint
        vm: dict[SSAValue, SSAValue] = {self.iv: program}
        for old, new in zip((*p.slot_values, *p.carried), args):
            vm[old] = new
            new.name_hint = old.name_hint
        for o in p.pre:
            if not isinstance(o, aref.GetOp):
                _clone(body, o, vm)
        then, other = Block(), Block()
        for o in p.rematerialized:
            _clone(then, o, vm)
        prologue = set(p.prologue)
        for o in p.guard.true_region.block.ops:
            if o in prologue:
                continue
            if o is p.tail:
                values = self.next_program(then, program, args, (p.tail, vm))
                vm[p.tail.result] = values[0]
                nexts = values[1:]
            elif isinstance(o, scf.YieldOp):
                then.add_op(scf.YieldOp(*(vm.get(v, v) for v in o.operands), *nexts))
            else:
                _clone(then, o, vm)
        for o in p.guard.false_region.block.ops:
            if isinstance(o, scf.YieldOp):
                nexts_else = self.next_program(other, program, args, None)
                other.add_op(scf.YieldOp(*(vm.get(v, v) for v in o.operands), *nexts_else))
            else:
                _clone(other, o, vm)
        guard = scf.IfOp(vm.get(p.guard.cond, p.guard.cond), [*(r.type for r in p.guard.results), *self.types],
                         Region(then), Region(other))
        body.add_op(guard)
        for old, new in zip(p.guard.results, guard.results):
            vm[old] = new
            new.name_hint = old.name_hint
        for o in p.post:
            _clone(body, o, vm)
        body.add_op(scf.YieldOp(*guard.results[len(p.guard.results):]))
        rotated = scf.ForOp(loop.lb, loop.ub, loop.step, inits, Region(body))
        outer.add_ops([rotated, scf.YieldOp()])
        has_first = arith.CmpiOp(loop.lb, loop.ub, "slt")
        has_first.result.name_hint = "has_program"
        whole = scf.IfOp(has_first.result, [], Region(outer), Region(Block([scf.YieldOp()])))
        Rewriter.insert_op([has_first, whole], InsertPoint.before(loop))
        Rewriter.erase_op(loop)
        # The copies of a program's pure ops and prologue that a copy does not
        # need (the next program's zeros for its accumulator, computed again where it runs).
        erase_unused(whole, _pure)
        return whole


def program_loops(module: ModuleOp) -> list[scf.ForOp]:
    """The loops of the consumer partitions whose bodies hold a guarded
    overlapped loop at their top level (the loops over programs, or over a
    pair's members)."""
    loops = []
    for ws in [o for o in module.walk() if isinstance(o, aref.WarpSpecializeOp)]:
        for role, _, _, region in ws.partition_specs():
            if role == PartitionRole.CONSUMER:
                loops += [o for o in region.walk() if isinstance(o, scf.ForOp)
                          and any(_overlapped_loop(t) is not None for t in o.body.block.ops)]
    return loops


@dataclass(frozen=True)
class OverlapProgramsPass(ModulePass):
    """Starts a persistent consumer's next program under its current program's last dot."""

    name = NAME

    tail_first: bool = False
    """Issue this program's last dot before the next program's first and
    wait for both before the next program's first softmax (the two dots run
    back to back; the softmax does not run under either).  False: the next
    program's first dot first, its softmax under the last dot."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in program_loops(op):
            if any(isinstance(o, aref.GetOp | aref.ConsumedOp) and o.has_slot() for o in loop.walk()):
                raise fail(loop, f"{NAME}: the loop's arefs already have stages and phases: run "
                           "tawa-overlap-programs before tawa-assign-stage-phase")
            plan = program_plan(loop)
            if plan is not None:
                _Rotation(plan, self.tail_first).build()


__all__ = ["OverlapProgramsPass", "ProgramPlan", "program_loops", "program_plan"]
