"""`tawa-assign-stage-phase`: every aref use names its ring slot in the IR.

After Triton's NVWS, which separates AssignStagePhase from LowerAref.  Inside
each partition of an `aref.warp_specialize`, the puts, the gets and the
releases of each aref form three sequences; use n of a sequence takes stage
n mod D of a ring of depth D, in pass (phase) (n / D) & 1.  This pass makes
that explicit:

1. **Counter threading** (an analysis that rewrites control flow, since it is
   a global decision): each (aref, kind) sequence gets an i32 counter that
   starts at 0 at the top of the partition, steps after each use, and is
   threaded through `scf.for` iter_args and `scf.if` results, so each use
   sees its count as an SSA value.  The counter counts modulo 2D (w = n mod
   2D), which is all a slot needs: stage n mod D = w mod D, phase
   (n / D) & 1 = w / D.
2. **Slot assignment** (a `RewritePattern` per op): `aref.put %r, ...`
   becomes `aref.put %r[%stage, %phase], ...` (likewise get and consumed).

Both take the cheapest form for the depth (`step_counter`,
`stage_and_phase`): for a power of two, masks and a shift; for any other
depth, a compare and selects, where n mod D and n / D of an unbounded count
were multiplies (about 165 more instructions in the consumer loop of
attention at head dim 64 with D = 3 or 6 than with 4, which measured slower
on the H100: docs/perf.md, "Deep rings for small GEMM tiles").

The result is still aref-level IR that the interpreter runs (it checks each
named slot against its own count); `tawa-lower-aref` turns the slots into
mbarrier waits and arrivals.

3. **The proof at the aref level** (`verify`, on by default): each kernel's
   slots, as assigned, are proved free of deadlock and of slots refilled
   under a read (`tawa.verify.verify_protocol.verify_aref_kernel`, the
   search of `tawa-verify-protocol` on the partitions' aref events;
   docs/protocol.md section 6).  A consumer that releases a slot before the
   `tile.dot_wait` that retires the `tile.dot_async` reading it, that reads
   a slot after releasing it, or that never releases one, is an error
   located at that op, its counterexample as `note:` lines.
   `tawa-hopper-pipeline` runs the pass with `verify=false` and proves the
   lowered kernel; it runs this proof only to locate the error of a step
   that fails after it (`HopperPipelinePass.diagnose_at_aref_level`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, i32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import aref
from tawa.transforms.utils import InheritLocation, const, fail
from tawa.verify.verify_protocol import verify_aref_kernel

NAME = "tawa-assign-stage-phase"
_KINDS = {aref.PutOp: "put", aref.GetOp: "get", aref.ConsumedOp: "release"}
SlotOp = aref.PutOp | aref.GetOp | aref.ConsumedOp


class CounterThreading:
    """Numbers every use of every aref in one partition: each put/get/release
    learns its use count as an SSA value (counters are threaded through
    `scf.for` iter_args and `scf.if` results)."""

    def __init__(self) -> None:
        self.count_of: dict[Operation, SSAValue] = {}

    def run(self, block: Block) -> None:
        zero = const(0, InsertPoint.at_start(block), i32)
        keys = self._keys(block)
        self._block(block, {k: zero for k in keys})

    def _keys(self, node: Block | Region | Operation) -> list[tuple[SSAValue, str]]:
        ops: Iterable[Operation] = node.walk()
        keys: dict[tuple[SSAValue, str], None] = {}
        for op in ops:
            if type(op) in _KINDS:
                keys[(op.operands[0], _KINDS[type(op)])] = None
        return list(keys)

    def _block(self, block: Block, counts: dict) -> dict:
        for op in list(block.ops):
            if type(op) in _KINDS:
                key = (op.operands[0], _KINDS[type(op)])
                self.count_of[op] = counts[key]
                t = op.operands[0].type
                assert isinstance(t, aref.ArefType)
                ops, after = step_counter(counts[key], t.depth.data)
                Rewriter.insert_op(ops, InsertPoint.before(op))
                counts = {**counts, key: after}
            elif isinstance(op, scf.ForOp) and (keys := self._keys(op)):
                counts = self._for(op, keys, counts)
            elif isinstance(op, scf.IfOp) and (keys := self._keys(op)):
                counts = self._if(op, keys, counts)
            elif op.regions and self._keys(op):
                raise fail(op, f"{NAME}: aref ops inside '{op.name}' are not supported")
        return counts

    def _for(self, loop: scf.ForOp, keys: list, counts: dict) -> dict:
        body = loop.body.block
        n_old = len(loop.iter_args)
        args = [body.insert_arg(i32, len(body.args)) for _ in keys]
        inner = self._block(body, {**counts, **dict(zip(keys, args))})
        old_yield = body.last_op
        assert isinstance(old_yield, scf.YieldOp)
        Rewriter.replace_op(old_yield, scf.YieldOp(*old_yield.operands, *(inner[k] for k in keys)))
        new_loop = scf.ForOp(
            loop.lb, loop.ub, loop.step, [*loop.iter_args, *(counts[k] for k in keys)],
            loop.detach_region(loop.body),
        )
        new_loop.attributes |= loop.attributes
        Rewriter.insert_op(new_loop, InsertPoint.before(loop))
        for old, new in zip(loop.results, new_loop.results[:n_old]):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(loop)
        return {**counts, **dict(zip(keys, new_loop.results[n_old:]))}

    def _if(self, op: scf.IfOp, keys: list, counts: dict) -> dict:
        n_old = len(op.results)
        regions = [op.detach_region(r) for r in list(op.regions)]
        if len(regions) == 1:
            regions.append(Region())
        for region in regions:
            if not region.blocks:
                region.add_block(Block([scf.YieldOp()]))
            blk = region.block
            inner = self._block(blk, dict(counts))
            y = blk.last_op
            assert isinstance(y, scf.YieldOp)
            Rewriter.replace_op(y, scf.YieldOp(*y.operands, *(inner[k] for k in keys)))
        new_if = scf.IfOp(
            op.cond, [*(r.type for r in op.results), *(i32 for _ in keys)], *regions
        )
        new_if.attributes |= op.attributes
        Rewriter.insert_op(new_if, InsertPoint.before(op))
        for old, new in zip(op.results, new_if.results[:n_old]):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(op)
        return {**counts, **dict(zip(keys, new_if.results[n_old:]))}


def _c32(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, i32))


def _pow2(depth: int) -> bool:
    return depth & (depth - 1) == 0


def step_counter(w: SSAValue, depth: int) -> tuple[list[Operation], SSAValue]:
    """Ops stepping a counter modulo 2·`depth` (w + 1, wrapped to 0), and the
    result: `(w + 1) & (2D - 1)` for a power of two, else a select."""
    one, wrap = _c32(1), _c32(2 * depth - 1 if _pow2(depth) else 2 * depth)
    next_ = arith.AddiOp(w, one.result)
    if _pow2(depth):
        stepped: Operation = arith.AndIOp(next_.result, wrap.result)
        return [one, wrap, next_, stepped], stepped.results[0]
    zero = _c32(0)
    full = arith.CmpiOp(next_.result, wrap.result, "eq")
    stepped = arith.SelectOp(full.result, zero.result, next_.result)
    return [one, wrap, zero, next_, full, stepped], stepped.results[0]


def stage_and_phase(w: SSAValue, depth: int) -> tuple[list[Operation], SSAValue, SSAValue]:
    """Ops computing a use's stage `w mod depth` and phase `w / depth` from
    its counter w < 2·depth (masks and a shift for a power of two, else a
    compare and a select), and the two index results."""
    if _pow2(depth):
        mask, shift = _c32(depth - 1), _c32(depth.bit_length() - 1)
        stage32: Operation = arith.AndIOp(w, mask.result)
        phase32: Operation = arith.ShRUIOp(w, shift.result)
        ops = [mask, shift, stage32, phase32]
    else:
        d, zero, one = _c32(depth), _c32(0), _c32(1)
        second = arith.CmpiOp(w, d.result, "uge")
        less = arith.SubiOp(w, d.result)
        stage32 = arith.SelectOp(second.result, less.result, w)
        phase32 = arith.SelectOp(second.result, one.result, zero.result)
        ops = [d, zero, one, second, less, stage32, phase32]
    stage = arith.IndexCastOp(stage32.results[0], IndexType())
    phase = arith.IndexCastOp(phase32.results[0], IndexType())
    stage.result.name_hint, phase.result.name_hint = "stage", "phase"
    return [*ops, stage, phase], stage.result, phase.result


@dataclass
class AssignSlot(RewritePattern):
    """`aref.X %r` with use count n (counter w = n mod 2D) → `aref.X %r[n mod D, (n / D) & 1]`."""

    count_of: dict[Operation, SSAValue]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SlotOp, rewriter: PatternRewriter) -> None:
        if op.has_slot() or op not in self.count_of:
            return
        t = op.aref.type
        assert isinstance(t, aref.ArefType)
        ops, stage, phase = stage_and_phase(self.count_of.pop(op), t.depth.data)
        rewriter.insert(ops, InsertPoint.before(op))
        if isinstance(op, aref.PutOp):
            new: Operation = aref.PutOp(op.aref, list(op.values), stage, phase)
        else:
            new = type(op)(op.aref, stage, phase)
        new.attributes |= op.attributes
        new.location = op.location
        for old, res in zip(op.results, new.results, strict=True):
            res.name_hint = old.name_hint
        rewriter.replace(op, new)


@dataclass(frozen=True)
class AssignStagePhasePass(ModulePass):
    """Gives every aref put, get and release its ring stage and phase as SSA operands."""

    name = NAME

    verify: bool = True
    """Prove the assigned slots' protocol (`verify_aref_kernel`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        count_of: dict[Operation, SSAValue] = {}
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            for _, _, _, region in ws.partition_specs():
                uses = [o for o in region.walk() if isinstance(o, SlotOp)]
                assigned = [o for o in uses if o.has_slot()]
                if assigned and len(assigned) == len(uses):
                    continue  # already assigned: the pass is idempotent
                if assigned:
                    raise fail(assigned[0], f"{NAME}: a partition mixes aref ops with and without slots")
                threading = CounterThreading()
                threading.run(region.block)
                count_of.update(threading.count_of)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([InheritLocation(AssignSlot(count_of))], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
        if self.verify:
            for kernel in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
                if any(isinstance(o, aref.WarpSpecializeOp) for o in kernel.walk()):
                    verify_aref_kernel(kernel)
