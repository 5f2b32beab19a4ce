"""`tawa-async-dots`: a consumer loop's dots issued as soon as their operands are ready and waited for when their results are needed.

A `tile.dot` waits for its product at once (`wgmma.wait_group 0`): the
warp group's math and the tensor cores take turns.  Attention's backward
loops run four or five products an iteration; several do not depend on each
other, and the math of one step could run while another's product is in
flight.  This pass reorders a loop body's products and turns them into
`tile.dot_async` with a `tile.dot_wait` before the first use of each
result, FlashAttention-3's intra-warp-group overlap derived for any order
of products:

    before (the dK/dV loop, transposed frame)   after
    %st = tile.dot %k, %q, %z                    %st_a = tile.dot_async %k, %q, %z
    ... %pt = exp2(%st ...) ...                  %do = aref.get %ref_do          // hoisted
    %pt16 = arith.truncf %pt                     %dpt_a = tile.dot_async %v, %do, %nd
    %do = aref.get %ref_do                       %st = tile.dot_wait 1 (%st_a)   // dPᵀ runs on ...
    %dv = tile.dot %pt16, %do, %dv0              ... %pt = exp2(%st ...) ...    // ... under exp2
    %dpt = tile.dot %v, %do, %nd                 %pt16 = arith.truncf %pt
    aref.consumed %ref_do                        %dv_a = tile.dot_async %pt16, %do, %dv0
    %ds16 = arith.truncf (%pt * %dpt)            %dpt = tile.dot_wait 1 (%dpt_a) // dV runs on ...
    %dk = tile.dot %ds16, %q, %dk0               %ds16 = arith.truncf (%pt * %dpt) // ... under dS
    aref.consumed %ref_q                         %dk_a = tile.dot_async %ds16, %q, %dk0
    scf.yield %dk, %dv                           %dk, %dv = tile.dot_wait 0 (%dk_a, %dv_a)
                                                 aref.consumed %ref_do
                                                 aref.consumed %ref_q
                                                 scf.yield %dk, %dv

* **Issue order.** Each product's level is one more than the highest level
  of the products its operands are computed from (0: none); products are
  issued by level, then in program order (dPᵀ, level 0, before dV, level
  1).  wgmma groups complete in issue order, so a wait for one product
  leaves the later ones in flight: `tile.dot_wait N`, N the products issued
  after it so far.
* **Placement.** A product moves up to just after the previous product in
  issue order and its operands' definitions, taking along the side-effect-free
  ops (and the `aref.get`) its operands come from, unless one of them
  reads a product's result (it waits where it is) or an `aref.get` would
  pass another aref op (the consumer takes slots in the order the producer
  fills them).  Everything else keeps its order; a result's wait goes
  before the op (at the top level of the body) that first reads it; an
  `scf.yield` reads the results it carries, so nothing is in flight across
  the back edge.
* **Releases.** An `aref.consumed` of a slot that an issued product reads
  moves after the wait that retires the product (the hardware reads shared
  memory until then).
* **Which loops.** Every product must read a loaded B operand (an
  `aref.get` of the body, or a value from before the loop).  A B operand
  computed in registers is staged through shared memory by
  `tawa-stage-operands`, which takes only a product that waits at once;
  with the others in flight around it (the dQ share of
  `attention_bwd_dkdvdq`) the loop ran slower at the consumers' 232
  registers (docs/perf.md, "Attention backward"), so such a loop is left as
  it is.
* **When.** An `scf.for` of a consumer partition not rotated by
  `tawa-overlap-dots` (`tawa.overlapped`), with at least two top-level
  products and none nested, where the new order puts math (not only other
  issues) between some product and its wait: attention's forward loop
  without the rotation gains nothing (each product is needed by the next
  op) and is left as it is, as are GEMM main loops (one product).
* **Registers** (`fragment_peak`): products in flight keep their
  accumulators and register operands; the loop is rewritten only where the
  most 32-bit registers a consumer thread keeps at once (a tile-level
  liveness of the warp group's share of each f32/bf16 tile) stays within
  `max-regs` or does not grow.

Must run before `tawa-assign-stage-phase` (it moves gets and releases).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free

from tawa.diagnostics import TawaError
from tawa.dialects import aref, tile
from tawa.dialects.nvgpu.types import element_bytes
from tawa.target.hopper import THREADS_PER_GROUP
from tawa.transforms.pipeline.overlap_dots import OVERLAPPED, consumer_loops
from tawa.transforms.utils import async_dot, fail, remark, top_op

NAME = "tawa-async-dots"


# --------------------------------------------------------------------------- registers


def _tile_registers(v: SSAValue, rows: int) -> int:
    """32-bit registers per thread that one warp group's share (`rows` rows)
    of tile `v` takes: a 2-D f32/bf16 tile its elements (16-bit ones packed
    in pairs); a vector that a tile repeats along its columns a quarter of its
    elements (each thread holds two of every eight columns), along its rows
    two; integer and boolean tiles nothing (the lowering recomputes them per
    element where they are used)."""
    t = v.type
    if not isinstance(t, TensorType) or isinstance(t.get_element_type(), IntegerType):
        return 0
    shape = t.get_shape()
    if len(shape) == 2:
        return min(shape[0], rows) * shape[1] * element_bytes(t.get_element_type()) // 4 // THREADS_PER_GROUP
    axes = {u.operation.axis.value.data for u in v.uses if isinstance(u.operation, tile.ExpandDimsOp)}
    return shape[0] // 4 if 0 in axes else 2


def _charged(v: SSAValue, body: Block) -> bool:
    """Whether `v` lives in the consumer's registers: a tile computed in the
    body or carried by it (not a slot of an aref, not a `tile.zeros` that
    only starts an accumulator, not a loop-invariant value from outside)."""
    if isinstance(v, BlockArgument):
        return v.block is body and v.index > 0
    op = v.owner
    if op.parent_block() is not body:
        return False
    return not isinstance(op, (aref.GetOp, tile.ZerosOp, tile.SplatOp, *_VIEWS))


_VIEWS = (tile.BroadcastOp, tile.ExpandDimsOp)
"""Ops whose result reads the registers of their operand (the lowering
repeats a vector in place): a use of the result is a use of the operand."""


def _root(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, _VIEWS):
        v = v.owner.operands[0]
    return v


def fragment_peak(body: Block, rows: int) -> int:
    """The most registers per thread the tiles live at once in `body` take
    (`_tile_registers` of each `_charged` tile): a tile is live from its
    definition (an iteration argument from the top) to its last reader (an
    op of the body or one that contains it); a `tile.dot_async` keeps its
    result and a register A operand until the `tile.dot_wait` that retires
    it."""
    ops = list(body.ops)
    last: dict[SSAValue, int] = {}
    first: dict[SSAValue, int] = {}
    for a in body.args[1:]:
        first[a] = -1
    for i, op in enumerate(ops):
        for r in op.results:
            first[r] = i
        for inner in op.walk():
            for v in inner.operands:
                v = _root(v)
                last[v] = max(last.get(v, -1), i)
    # In flight: a product's A operand in registers and its result until the wait that retires it.
    issued: list[tile.DotAsyncOp] = []
    for i, op in enumerate(ops):
        if isinstance(op, tile.DotAsyncOp):
            issued.append(op)
            continue
        if isinstance(op, tile.DotWaitOp):
            n = max(len(issued) - op.pending.value.data, 0)
        elif any(isinstance(o, tile.DotOp) for o in op.walk()):
            n = len(issued)  # a product that waits at once retires every one issued before it
        else:
            continue
        for dot in issued[:n]:
            for v in (dot.lhs, dot.result):
                last[v] = max(last.get(v, -1), i)
        issued = issued[n:]
    peak = 0
    for i in range(-1, len(ops)):
        live = [v for v, at in first.items() if at <= i < last.get(v, -1) and _charged(v, body)]
        peak = max(peak, sum(_tile_registers(v, rows) for v in live))
    return peak


# --------------------------------------------------------------------------- the schedule


def _level(dot: tile.DotOp, dots: Sequence[tile.DotOp], body: Block, memo: dict[Operation, int]) -> int:
    """1 + the highest level of the products `dot`'s operands are computed
    from within `body` (0: none)."""
    found = memo.get(dot)
    if found is not None:
        return found
    best, seen, stack = 0, set(), [dot.lhs, dot.rhs, dot.acc]
    while stack:
        v = stack.pop()
        if isinstance(v, BlockArgument) or v in seen:
            continue
        seen.add(v)
        op = top_op(v.owner, body)
        if op is None:
            continue
        if isinstance(op, tile.DotOp) and op in dots:
            best = max(best, 1 + _level(op, dots, body, memo))
            continue
        stack.extend(o for inner in op.walk() for o in inner.operands)
    memo[dot] = best
    return best


def staged_products(loop: scf.ForOp) -> bool:
    """Whether a top-level product of `loop` reads a B operand that is not
    loaded (module docstring, "Which loops")."""
    body = loop.body.block
    return any(isinstance(o, tile.DotOp) and not _loaded_rhs(o, body) for o in body.ops)


def _loaded_rhs(dot: tile.DotOp, body: Block) -> bool:
    """Whether `dot`'s B operand is loaded (a slot taken in the body or a
    value from before the loop): see the module docstring, "Which loops"."""
    rhs = dot.rhs
    if isinstance(rhs, BlockArgument):
        return rhs.block is not body
    return isinstance(rhs.owner, aref.GetOp) or top_op(rhs.owner, body) is None


def _hoist(dot: tile.DotOp, floor: Operation | None, body: Block, products: set[Operation]) -> None:
    """Moves `dot` up to just after `floor` (the product issued before it;
    None: it is the first and stays), or as far as its operands allow, taking
    along the movable ops its operands come from (module docstring,
    "Placement")."""
    if floor is None:
        return  # the first product issued stays where it is
    ops = list(body.ops)
    index = {op: i for i, op in enumerate(ops)}
    pos = index[dot]
    target = index[floor]
    while True:
        moving: set[Operation] = set()
        stack = [dot]
        blocker = target
        while stack:
            op = stack.pop()
            for inner in op.walk():
                for v in inner.operands:
                    if isinstance(v, BlockArgument):
                        continue
                    dep = top_op(v.owner, body)
                    if dep is None or dep in moving or index[dep] <= target:
                        continue
                    if _movable(dep, ops, target, index, products):
                        moving.add(dep)
                        stack.append(dep)
                    else:
                        blocker = max(blocker, index[dep])
        if blocker == target:
            break
        target = blocker
    if target + 1 >= pos:
        return
    # The ops that take no slot go before the previous product when nothing else holds them after it:
    # where they set the next product's accumulator while one was in flight, ptxas injected a
    # `warpgroup.wait` there (C7517).
    taking = {op for op in moving if isinstance(op, aref.GetOp)}
    for op in sorted(moving, key=index.__getitem__):
        if any(top_op(v.owner, body) in taking for inner in op.walk() for v in inner.operands
               if not isinstance(v, BlockArgument)):
            taking.add(op)
    early = [op for op in sorted(moving, key=index.__getitem__) if op not in taking] if target == index[floor] else []
    for op in early:
        op.detach()
        body.insert_op_before(op, floor)
    anchor = ops[target]
    for op in [o for o in sorted(moving, key=index.__getitem__) if o not in early] + [dot]:
        op.detach()
        body.insert_op_after(op, anchor)
        anchor = op


def _movable(op: Operation, ops: list[Operation], target: int, index: dict[Operation, int],
             products: set[Operation]) -> bool:
    """Whether `op` may move up to just after `ops[target]`: side-effect-free
    and reading no product, or an `aref.get` with no aref op in between."""
    if op in products or op.regions:
        return False
    if isinstance(op, aref.GetOp):
        return not any(isinstance(o, aref.GetOp | aref.ConsumedOp | aref.PutOp)
                       for top in ops[target + 1:index[op]] for o in top.walk())
    return is_side_effect_free(op) and not isinstance(op, tile.DotWaitOp)


def schedule(loop: scf.ForOp) -> bool | None:
    """Rewrites `loop`'s body in place (module docstring) and says whether
    some product now has arithmetic between its issue and its wait; None,
    unchanged, where it does not apply (the pass has left out loops with a
    B operand computed in registers: `staged_products`)."""
    body = loop.body.block
    ops = list(body.ops)
    if any(isinstance(o, tile.DotAsyncOp | tile.DotWaitOp) for top in ops for o in top.walk()):
        return None
    dots = [o for o in ops if isinstance(o, tile.DotOp)]
    if len(dots) < 2 or any(isinstance(o, tile.DotOp) for top in ops for o in top.walk()
                            if o is not top and o.parent_block() is not body):
        return None
    memo: dict[Operation, int] = {}
    order = sorted(dots, key=lambda d: (_level(d, dots, body, memo), ops.index(d)))
    products = set(dots)
    # Ops that read a product's result (transitively) wait where they are: mark them unmovable.
    unmovable: set[Operation] = set(products)
    for op in ops:
        if op not in products and any(top_op(v.owner, body) in unmovable for inner in op.walk()
                                      for v in inner.operands if not isinstance(v, BlockArgument)):
            unmovable.add(op)
    floor: Operation | None = None
    for d in order:
        _hoist(d, floor, body, unmovable)
        floor = d
    # Issue: every product as a tile.dot_async; waits before first readers.
    for d in [o for o in body.ops if isinstance(o, tile.DotOp)]:
        new = async_dot(d, {})
        body.insert_op_before(new, d)
        d.result.replace_all_uses_with(new.result)
        d.detach()
        d.erase()
    issued: list[tile.DotAsyncOp] = []
    waited: dict[SSAValue, SSAValue] = {}
    retires: dict[tile.DotWaitOp, list[tile.DotAsyncOp]] = {}
    math_between = False
    pending_since: dict[tile.DotAsyncOp, bool] = {}
    for op in list(body.ops):
        if isinstance(op, tile.DotAsyncOp):
            issued.append(op)
            pending_since[op] = False
            continue
        needed = []
        for inner in op.walk():
            for i, v in enumerate(inner.operands):
                dot = v.owner if not isinstance(v, BlockArgument) else None
                if isinstance(dot, tile.DotAsyncOp) and dot.parent_block() is body and v not in waited:
                    if isinstance(inner, tile.DotAsyncOp) and i == 2:
                        continue  # the accumulator of a later product: chained without a wait
                    needed.append(dot)
        if needed:
            latest = max(issued.index(d) for d in needed)
            pending = len(issued) - 1 - latest
            values = list(dict.fromkeys(d.result for d in needed))
            wait = tile.DotWaitOp(pending, values)
            for v, r in zip(values, wait.results_):
                r.name_hint = v.name_hint
            body.insert_op_before(wait, op)
            retired = [d for d in issued[:len(issued) - pending] if d in pending_since]
            retires[wait] = retired
            for d in retired:
                math_between = math_between or pending_since.pop(d)
            for v, r in zip(values, wait.results_):
                waited[v] = r
                for use in list(v.uses):
                    if use.operation is not wait and not (isinstance(use.operation, tile.DotAsyncOp)
                                                          and use.index == 2):
                        use.operation.operands[use.index] = r
        if _is_math(op):
            for d in pending_since:
                pending_since[d] = True
    _release_after_waits(body, retires)
    return math_between


def _is_math(op: Operation) -> bool:
    """Arithmetic on a float tile (what a product in flight runs under):
    not a splat, broadcast or reshape, not index or mask tiles."""
    if isinstance(op, tile.SplatOp | tile.BroadcastOp | tile.ExpandDimsOp | tile.ZerosOp) or op.regions:
        return False
    return any(isinstance(r.type, TensorType) and not isinstance(r.type.get_element_type(), IntegerType)
               for r in op.results) and is_side_effect_free(op)


def _release_after_waits(body: Block, retires: dict[tile.DotWaitOp, list[tile.DotAsyncOp]]) -> None:
    """Moves each `aref.consumed` of the body after the wait that retires the
    last product reading a slot of its aref."""
    ops = list(body.ops)
    for release in [o for o in ops if isinstance(o, aref.ConsumedOp)]:
        last_wait: Operation | None = None
        for wait, dots in retires.items():
            for d in dots:
                if any(isinstance(v.owner, aref.GetOp) and v.owner.aref is release.aref
                       for v in (d.lhs, d.rhs) if not isinstance(v, BlockArgument)):
                    if last_wait is None or last_wait.is_before_in_block(wait):
                        last_wait = wait
        if last_wait is not None and release.is_before_in_block(last_wait):
            release.detach()
            body.insert_op_after(release, last_wait)


# --------------------------------------------------------------------------- the pass


@dataclass(frozen=True)
class AsyncDotsPass(ModulePass):
    """Issues a consumer loop's dots as soon as their operands are ready and waits for each where its result is first read."""

    name = NAME

    max_regs: int = 0
    """Rewrite only loops whose tiles keep at most this many registers per
    consumer thread at once (`fragment_peak`), or no more than before; 0:
    every loop that qualifies."""
    remarks: bool = False
    """One `remark:` line per loop rewritten or left as it is."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_regs < 0:
            raise TawaError(f"max-regs must be 0 (no bound) or positive, got {self.max_regs}", NAME)
        for loop, rows in reversed(consumer_loops(op, NAME)):  # innermost first: a rewrite replaces the loop
            if OVERLAPPED in loop.attributes:
                continue
            if any(isinstance(o, aref.GetOp | aref.ConsumedOp) and o.has_slot() for o in loop.walk()):
                raise fail(loop, f"{NAME}: the loop's arefs already have stages and phases: run "
                           "tawa-async-dots before tawa-assign-stage-phase")
            before = fragment_peak(loop.body.block, rows)
            if staged_products(loop):
                self._remark(loop, "left a loop as it is: a product reads a B operand computed in registers "
                             "(staged in shared memory, it waits at once)")
                continue
            trial = loop.clone()
            done = schedule(trial)
            if done is None:
                trial.erase()
                continue
            if not done:
                self._remark(loop, "left a loop as it is: each product's result is read right after it")
                trial.erase()
                continue
            after = fragment_peak(trial.body.block, rows)
            if self.max_regs and after > max(before, self.max_regs):
                self._remark(loop, f"left a loop as it is: its products issued early would keep {after} registers "
                             f"per thread live, more than {self.max_regs}")
                trial.erase()
                continue
            self._remark(loop, f"a loop's products are issued early and waited for late ({after} registers "
                         "per thread live at most)")
            parent = loop.parent_block()
            assert parent is not None
            parent.insert_op_before(trial, loop)
            for r, t in zip(loop.results, trial.results):
                r.replace_all_uses_with(t)
            loop.detach()
            loop.erase()

    def _remark(self, at: Operation, msg: str) -> None:
        if self.remarks:
            remark(NAME, at, msg)
