"""`tawa-overlap-dots`: a consumer loop's trailing dot runs under the next iteration's work.

FlashAttention-3's intra-warp-group overlap, derived rather than written by
hand.  In attention's consumer loop each iteration computes S = Q·Kᵀ, the
online softmax of S, and then O += P·V; run in that order, the tensor cores
idle during the softmax and the softmax units idle during the dots.  This
pass issues iteration j-1's trailing P·V (stage B) in iteration j, right
after iteration j's first dot (the head), so that the softmax of S_j (stage
A) runs while the P·V is in flight:

    before (iteration j)                      after (iteration j, for j > lb)
    %k = aref.get %ref_k                      %k = aref.get %ref_k
    %s = tile.dot %q, %k, %z                  %s = tile.dot_async %q, %k, %z          // S_j
    aref.consumed %ref_k                      %v = aref.get %ref_v                    // stage B
    ... softmax of %s ...                     %o = tile.dot_async %pb_prev, %v, %x_prev  // of j-1
    %x = arith.mulf %acc_prev, %alpha         %s1 = tile.dot_wait 1 (%s)              // S_j done
    %pb = arith.truncf %p                     aref.consumed %ref_k
    %v = aref.get %ref_v                      ... softmax of %s1 ...                 // P·V runs
    %o = tile.dot %pb, %v, %x                 %o1 = tile.dot_wait 0 (%o)              // P·V done
    aref.consumed %ref_v                      aref.consumed %ref_v
    scf.yield %m, %l, %o                      %x = arith.mulf %o1, %alpha
                                              %pb = arith.truncf %p
                                              scf.yield %m, %l, %pb, %x

The loop now runs from lb + step; iteration lb's stage A is a prologue and
the last iteration's stage B an epilogue, both with synchronous dots, and the
whole is guarded by `lb < ub` (an `scf.if` whose else yields the initial
values).  A slot the loop reads that was taken before it and is released
after the guard (Q) is released right after the new loop instead
(`_release_before_epilogue`): the epilogue does not read it, and the
producer of a persistent kernel loads the next program's Q under it.
Stage B's inputs computed by stage A (%pb, %x) are carried to the
next iteration instead of the dot's result (P in bf16: half the registers of
f32); the dot's result reaches stage A through the wait that completes it,
placed before its first use, and stage A's pure math that does not depend on
it runs before that wait (`_wait_late`) — except P's conversion: ptxas
puts the next P in the registers the P·V in flight reads, and serializes
every wgmma of the loop where an instruction may write them during it.  The head
dot is issued first so that `dot_wait 1` completes it while the P·V (issued
after it) stays in flight: wgmma groups complete in order.

**When** (`overlap_plan`): an `scf.for` of a consumer partition whose body
has at least two `tile.dot` ops at its top level and none nested, whose last
dot (the tail) accumulates into the value it yields (its result is yielded
and used by nothing else), and reads its rhs from an `aref.get` used by
nothing else and released after it.  Stage B's inputs must be computed by
stage A or defined before the loop (not the induction variable or an
iteration argument), stage A must not use stage B's values except the dot's
result through the iteration argument it is yielded to, and must use that,
and takes no aref slot after the head (stage B's get moves before the rest
of stage A: the consumer would take slots in another order than the
producer fills them).
A GEMM main loop (one dot, fed by arefs) is `tawa-pipeline`'s, not this.

**Why it fits in registers**: only completed values cross the back edge (P
in bf16 and the rescaled accumulator), and the two dots in flight at once are
the head's accumulator and the tail's, as FA3 has it.  Where registers are
too few, the decision is the caller's: `tawa-hopper-pipeline{overlap=auto}`
keeps a loop unchanged when it would keep more than `MAX_OVERLAP_REGS`
registers in flight (`OverlapPlan.registers_in_flight`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from tawa.diagnostics import TawaError
from tawa.dialects import aref, tile
from tawa.dialects.aref import PartitionRole
from tawa.dialects.nvgpu.types import element_bytes, tensor_bytes
from tawa.target.hopper import THREADS_PER_GROUP, WARPS_PER_GROUP, WGMMA_M
from tawa.transforms.partition.warp_groups import group_rows
from tawa.transforms.utils import async_dot, fail, remark, top_op

OVERLAPPED = "tawa.overlapped"
"""Attribute this pass puts on the loops it rotates (`tawa-pingpong` orders
their warp groups' issues)."""

NAME = "tawa-overlap-dots"

MAX_OVERLAP_REGS = 208
"""The most 32-bit registers per thread that `overlap=auto` lets the overlap
keep at once (`OverlapPlan.registers_in_flight`): attention at head dims 64,
128 and 256 (160, 192 and 192; 64-key blocks at 256) assemble with 0 spills
in the consumers' 232 and run faster on the H100 (docs/perf.md, "Subtiled
staging"); so does head dim 256 with 80-key blocks (208:
`@attention_fwd_d256_n80`, which spills unrotated).  Head dim 256 with
128-key blocks would keep 256."""

MAX_EARLY_RELEASE_BYTES = 32 * 1024
"""The largest slot `tawa-hopper-pipeline` releases right after the loop
(`OverlapDotsPass.early_release_bytes`, `_release_before_epilogue`).  On the
H100 (A/B in the same run) the early release of Q ran faster on the short
rows of head dims 64 and 128 (Q: 16 and 32 KiB), but slower at head dim 256,
whose Q slot holds 64 KiB (then with the thread epilogue; not measured
again since the TMA-store epilogue fits at 256:
`tawa-hopper-pipeline{early-release=all}` is the other side of that A/B);
the cause is not analysed (docs/perf.md, "Balanced causal order")."""
OVERLAPS = ("auto", "all", "none")
"""`tawa-hopper-pipeline`'s `overlap=` and `early-release=` values
(`tawa.transforms.tuning.Tuning`): within the bound (`MAX_OVERLAP_REGS`,
`MAX_EARLY_RELEASE_BYTES`), every loop or slot that qualifies, none."""


@dataclass(frozen=True)
class OverlapPlan:
    """One loop's stages: B is the tail dot with the ops that move with it."""

    loop: scf.ForOp
    head: tile.DotOp
    tail: tile.DotOp
    index: int
    """The iteration argument the tail's result is yielded to."""
    stage_b: tuple[Operation, ...]
    """In body order: the tail's aref.get, the tail, its aref.consumed."""
    stage_a: tuple[Operation, ...]
    carried: tuple[SSAValue, ...]
    """Stage B's inputs that stage A computes: carried to the next iteration."""
    get: aref.GetOp
    release: aref.ConsumedOp

    def registers_in_flight(self, group_rows: int = WGMMA_M) -> int:
        """32-bit registers per thread (of one warp group's share of
        `group_rows` rows) that the overlap keeps at once: the tail's
        accumulator and the head's result in flight, and the tail's register
        operand twice (the one the tail in flight reads and the next one)."""
        return sum(n * _registers(v, group_rows)
                   for n, v in ((1, self.tail.result), (1, self.head.result), (2, self.tail.lhs)))


def _registers(value: SSAValue, group_rows: int) -> int:
    """32-bit registers per thread of one warp group's `group_rows`-row share
    of a 2-D tile (16-bit elements packed in pairs)."""
    t = value.type
    assert isinstance(t, TensorType)
    rows, cols = t.get_shape()
    return min(rows, group_rows) * cols * element_bytes(t.get_element_type()) // 4 // THREADS_PER_GROUP


def overlap_plan(loop: scf.ForOp) -> OverlapPlan | None:
    """The stages of `loop` if it can be overlapped (module docstring, "When")."""
    body = loop.body.block
    ops = list(body.ops)
    yield_op = ops[-1]
    if not isinstance(yield_op, scf.YieldOp):
        return None
    dots = [o for o in ops if isinstance(o, tile.DotOp)]
    nested = [o for top in ops for o in top.walk() if o is not top and isinstance(o, tile.DotOp | tile.DotAsyncOp)]
    if len(dots) < 2 or nested or any(isinstance(o, tile.DotAsyncOp | tile.DotWaitOp) for o in ops):
        return None
    head, tail = dots[0], dots[-1]
    if not tail.result.has_one_use() or tail.result.get_unique_use().operation is not yield_op:
        return None
    index = tail.result.get_unique_use().index
    get = tail.rhs.owner
    if not isinstance(get, aref.GetOp) or get.parent_block() is not body:
        return None
    if any(u.operation is not tail for v in get.values for u in v.uses):
        return None
    release = next((o for o in ops[ops.index(tail) + 1:] if isinstance(o, aref.ConsumedOp) and o.aref is get.aref), None)
    if release is None or any(isinstance(o, aref.GetOp) and o.aref is get.aref for o in ops[ops.index(get) + 1: ops.index(release)]):
        return None
    stage_b: list[Operation] = [get, tail, release]
    b_set = set(stage_b)
    stage_a = tuple(o for o in ops[:-1] if o not in b_set)
    if head not in stage_a:
        return None
    if any(isinstance(o, aref.GetOp) for top in stage_a[stage_a.index(head):] for o in top.walk()):
        return None  # stage B's get would overtake it: the slots would be taken in another order
    b_results = {r for o in stage_b for r in o.results}
    carried: list[SSAValue] = []
    for o in stage_b:
        for v in o.operands:
            if v in b_results or v in carried:
                continue
            if isinstance(v, BlockArgument) and v.block is body:
                return None  # the induction variable or an iteration argument
            if not isinstance(v, BlockArgument) and v.owner.parent_block() is body:
                carried.append(v)
    for top in stage_a:
        for o in top.walk():
            if any(v in b_results for v in o.operands):
                return None
    acc_prev = body.args[index + 1]
    if not acc_prev.uses or any(top_op(u.operation, body) not in stage_a for u in acc_prev.uses):
        return None
    if any(r in b_results for r in yield_op.operands if r is not tail.result):
        return None
    return OverlapPlan(loop, head, tail, index, tuple(stage_b), stage_a, tuple(carried), get, release)


def _reorderable(op: Operation) -> bool:
    """Whether stage A may run `op` in another order: pure math (not a dot:
    where a dot stands decides which wgmma groups are in flight)."""
    return is_side_effect_free(op) and not op.regions and not isinstance(op, tile.DotOp)


def _wait_late(plan: OverlapPlan, acc_prev: SSAValue) -> tuple[list[Operation], set[Operation]]:
    """Stage A's ops, those that depend on the tail's result (through the
    iteration argument `acc_prev`) or compute its next register operand last,
    so that its wait comes as late as the work allows; and those ops, before
    the first of which the wait goes.  In body order when such an op is not
    pure math (nothing is reordered across an aref op or a store)."""
    dependent: set[Operation] = set()
    reached = {acc_prev}
    # The tail's next register operand (P) too: ptxas gives it the registers
    # of the one the tail in flight reads (they meet at the back edge), so a
    # conversion before the wait would overwrite them, and ptxas serializes
    # every wgmma of the loop instead (C7513; measured slower).
    carried_lhs = {plan.tail.lhs} & set(plan.carried)
    for op in plan.stage_a:
        if any(r in carried_lhs for r in op.results) or any(v in reached for o in op.walk() for v in o.operands):
            dependent.add(op)
            reached.update(op.results)
    if not all(_reorderable(o) for o in dependent):
        return list(plan.stage_a), dependent
    return [o for o in plan.stage_a if o not in dependent] + [o for o in plan.stage_a if o in dependent], dependent


def _lookup(vmap: dict[SSAValue, SSAValue], v: SSAValue) -> SSAValue:
    return vmap.get(v, v)


def _clone_into(block: Block, ops: Sequence[Operation], vmap: dict[SSAValue, SSAValue]) -> None:
    for op in ops:
        block.add_op(op.clone(value_mapper=vmap))


def overlap(plan: OverlapPlan, early_release_bytes: int = 0) -> scf.IfOp:
    """Rewrites `plan.loop` as the guarded prologue, overlapped loop and
    epilogue of the module docstring; returns the `scf.if` that replaces it.
    `early_release_bytes`: as `OverlapDotsPass`'s."""
    loop, body = plan.loop, plan.loop.body.block
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    n = len(loop.iter_args)
    kept = [k for k in range(n) if k != plan.index]
    then = Block()

    # Prologue: stage A of iteration lb.
    pro: dict[SSAValue, SSAValue] = {body.args[0]: loop.lb}
    pro.update({body.args[k + 1]: loop.iter_args[k] for k in range(n)})
    _clone_into(then, plan.stage_a, pro)
    start = arith.AddiOp(loop.lb, loop.step)
    start.result.name_hint = "second"
    then.add_op(start)

    # The overlapped loop: stage B of iteration j-1 between the head and the rest of stage A of j.
    arg_types = [IndexType(), *(body.args[k + 1].type for k in kept), *(v.type for v in plan.carried)]
    new_body = Block(arg_types=arg_types)
    new_body.args[0].name_hint = body.args[0].name_hint
    vmap: dict[SSAValue, SSAValue] = {body.args[0]: new_body.args[0]}
    for j, k in enumerate(kept):
        vmap[body.args[k + 1]] = new_body.args[1 + j]
        new_body.args[1 + j].name_hint = body.args[k + 1].name_hint
    prev = {v: new_body.args[1 + len(kept) + c] for c, v in enumerate(plan.carried)}
    for a, v in zip(new_body.args[1 + len(kept):], plan.carried):
        a.name_hint = (v.name_hint or "b") + "_prev"
    acc_prev = body.args[plan.index + 1]
    tail_async: tile.DotAsyncOp | None = None
    order, dependent = _wait_late(plan, acc_prev)
    for op in order:
        # The wait goes before the first dependent op, the next register operand's conversion included
        # (whatever the program's order of the two).
        if tail_async is not None and acc_prev not in vmap and op in dependent:
            wait0 = tile.DotWaitOp(0, [tail_async.result])
            wait0.results_[0].name_hint = acc_prev.name_hint
            new_body.add_ops([wait0, aref.ConsumedOp(plan.release.aref)])
            vmap[acc_prev] = wait0.results_[0]
        if op is not plan.head:
            new_body.add_op(op.clone(value_mapper=vmap))
            continue
        head_async = async_dot(plan.head, vmap)
        new_body.add_op(head_async)
        for b in plan.stage_b:
            if b is plan.tail:
                tail_async = async_dot(plan.tail, prev)
                new_body.add_op(tail_async)
            elif b is not plan.release:
                new_body.add_op(b.clone(value_mapper=prev))
        wait1 = tile.DotWaitOp(1, [head_async.result])
        wait1.results_[0].name_hint = plan.head.result.name_hint
        new_body.add_op(wait1)
        vmap[plan.head.result] = wait1.results_[0]
    new_body.add_op(scf.YieldOp(*(_lookup(vmap, yield_op.operands[k]) for k in kept),
                                *(_lookup(vmap, v) for v in plan.carried)))
    inits = [_lookup(pro, yield_op.operands[k]) for k in kept] + [_lookup(pro, v) for v in plan.carried]
    new_loop = scf.ForOp(start.result, loop.ub, loop.step, inits, Region(new_body))
    new_loop.attributes[OVERLAPPED] = UnitAttr()  # tawa-pingpong orders its warp groups' issues
    then.add_op(new_loop)

    # Epilogue: stage B of the last iteration.
    epi = {v: new_loop.results[len(kept) + c] for c, v in enumerate(plan.carried)}
    _clone_into(then, plan.stage_b, epi)
    results = list(new_loop.results[: len(kept)])
    results.insert(plan.index, epi[plan.tail.result])
    then.add_op(scf.YieldOp(*results))

    ran = arith.CmpiOp(loop.lb, loop.ub, "slt")
    ran.result.name_hint = "ran"
    guarded = scf.IfOp(ran.result, [r.type for r in loop.results], Region(then),
                       Region(Block([scf.YieldOp(*loop.iter_args)])))
    Rewriter.insert_op([ran, guarded], InsertPoint.before(loop))
    for old, new in zip(loop.results, guarded.results):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    Rewriter.erase_op(loop)
    if early_release_bytes >= 0:
        _release_before_epilogue(guarded, new_loop, early_release_bytes)
    return guarded


def _uses_any(ops: Sequence[Operation], values: Sequence[SSAValue]) -> bool:
    """Whether any of `ops` (or an op nested in one) reads one of `values`."""
    wanted = set(values)
    return any(v in wanted for top in ops for o in top.walk() for v in o.operands)


def _slot_bytes(ref: SSAValue) -> int:
    """Bytes of one slot of the aref `ref` (its payload tensors)."""
    t = ref.type
    assert isinstance(t, aref.ArefType)
    return sum(tensor_bytes(p) for p in t.types)


def _release_before_epilogue(guarded: scf.IfOp, new_loop: scf.ForOp, max_bytes: int = 0) -> None:
    """Moves the `aref.consumed` of a slot the loop reads (attention's Q)
    from after `guarded` to the end of the overlapped loop (and the start
    of the else branch): the epilogue's last P·V does not read it, and in a
    persistent kernel the producer can then load the next program's Q and
    first K while this program's P·V, normalization and store still run.

    Only a release that follows `guarded` in its block, of a slot taken
    before it there (`aref.get`) whose values nothing after the loop reads:
    not the epilogue, the ops between `guarded` and the release, nor the
    scf.if's else branch; with `max_bytes` > 0, only a slot of at most that
    many bytes."""
    block = guarded.parent_block()
    assert block is not None
    after = list(block.ops)
    after = after[after.index(guarded) + 1:]
    then_block, else_block = guarded.true_region.block, guarded.false_region.block
    epilogue = list(then_block.ops)
    epilogue = epilogue[epilogue.index(new_loop) + 1:]
    for i, op in enumerate(after):
        if not isinstance(op, aref.ConsumedOp):
            continue
        gets = [g for g in block.ops if isinstance(g, aref.GetOp) and g.aref is op.aref and g.is_before_in_block(guarded)]
        get = gets[-1] if gets else None
        between = after[:i]
        if (get is None or 0 < max_bytes < _slot_bytes(op.aref)
                or any(isinstance(o, aref.GetOp | aref.ConsumedOp) and o.aref is op.aref for o in between)
                or _uses_any(between + epilogue + list(else_block.ops), get.values)):
            continue
        op.detach()
        Rewriter.insert_op(op.clone(), InsertPoint.after(new_loop))
        Rewriter.insert_op(op, InsertPoint.at_start(else_block))


def consumer_loops(module: ModuleOp, who: str = NAME) -> list[tuple[scf.ForOp, int]]:
    """The `scf.for` ops of the consumer partitions, outermost first, each
    with the rows a warp group of its partition owns (`group_rows`; a tile
    the warp groups cannot split is `who`'s located error)."""
    loops = []
    for ws in [o for o in module.walk() if isinstance(o, aref.WarpSpecializeOp)]:
        for role, warps, _, region in ws.partition_specs():
            if role == PartitionRole.CONSUMER:
                rows = group_rows(region, warps // WARPS_PER_GROUP, who)
                loops += [(o, rows) for o in region.walk() if isinstance(o, scf.ForOp)]
    return loops


@dataclass(frozen=True)
class OverlapDotsPass(ModulePass):
    """Issues a consumer loop's trailing dot in the next iteration, under its softmax (FA3's intra-warp-group overlap)."""

    name = NAME

    max_regs: int = 0
    """Overlap only loops that keep at most this many registers per thread
    at once (`OverlapPlan.registers_in_flight`; `MAX_OVERLAP_REGS` in
    `tawa-hopper-pipeline`); 0: every loop that qualifies."""
    early_release_bytes: int = 0
    """Release a slot the loop reads that was taken before it (attention's
    Q) right after the rotated loop, not after the guard, when it holds at
    most this many bytes (`MAX_EARLY_RELEASE_BYTES` in
    `tawa-hopper-pipeline`); 0: any slot; negative: none."""
    remarks: bool = False
    """Print one `remark:` line per loop overlapped or left for its registers."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_regs < 0:
            raise TawaError(f"max-regs must be 0 (no bound) or positive, got {self.max_regs}", NAME)
        for loop, rows in consumer_loops(op):
            if any(isinstance(o, aref.GetOp | aref.ConsumedOp) and o.has_slot() for o in loop.walk()):
                raise fail(loop, f"{NAME}: the loop's arefs already have stages and phases: run "
                           "tawa-overlap-dots before tawa-assign-stage-phase")
            plan = overlap_plan(loop)
            if plan is None:
                continue
            regs = plan.registers_in_flight(rows)
            if self.max_regs and regs > self.max_regs:
                self._remark(loop, f"left a loop as it is: overlapped it would keep {regs} registers per thread "
                             f"in flight, more than {self.max_regs}")
                continue
            self._remark(loop, "a loop's last tile.dot is issued in the next iteration after its first, "
                         "and runs under the rest of it (2 dots in flight)")
            overlap(plan, self.early_release_bytes)

    def _remark(self, at: Operation, msg: str) -> None:
        if self.remarks:
            remark(NAME, at, msg)


__all__ = ["MAX_EARLY_RELEASE_BYTES", "MAX_OVERLAP_REGS", "OVERLAPS", "OverlapDotsPass", "OverlapPlan", "consumer_loops", "overlap", "overlap_plan"]
