"""`tawa-fold-dot-addend`: a broadcast added to a product starts its accumulator.

`tile.dot(a, b, zeros) ± c`, where `c` is a vector broadcast along an axis
(`tile.broadcast(tile.expand_dims(v, axis))`) or a scalar (`tile.splat(s)`)
and the product has no other use, becomes `tile.dot(a, b, ±c)`: the wgmma
accumulates onto the broadcast instead of onto zeros.  Attention's backward
pass has two: dPᵀ − Delta (the dK/dV kernels) and dP − Delta (the dQ
kernel).

Why: the subtraction's operand, a vector the threads loaded, is read when the
product is issued rather than when it completes, so the vector's registers
are free while the product runs and later; with the products issued early
and waited for late (`tawa-async-dots`) that is what keeps the dK/dV loop at
head dim 128 within its warp groups' registers.  It costs nothing else: the
accumulator is set from the broadcast (one move a register) where the
subtraction took one add a register.

Precision: the f32 sum adds ±c first and the products after, where the tile
program adds it last; the results differ by the rounding of one f32 sum
(wgmma's own order of the K chunks differs from the interpreter's as much).
Only f32 tiles; `c − dot` and a dot whose accumulator is not `tile.zeros`
are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tawa.dialects import tile
from tawa.transforms.tile.exp_to_exp2 import is_f32_tile
from tawa.transforms.utils import top_op

NAME = "tawa-fold-dot-addend"


def _dominates(v: SSAValue, op: Operation) -> bool:
    """Whether `v` is defined before `op` in `op`'s block or an enclosing one."""
    owner = v.owner
    block = owner.parent_block() if isinstance(owner, Operation) else v.block
    node = top_op(op, block) if block is not None else None
    return node is not None and (not isinstance(owner, Operation) or owner.is_before_in_block(node))


def _addend_source(c: SSAValue) -> tuple[list[Operation], SSAValue] | None:
    """(the broadcast's ops, outermost first, and the vector or scalar they
    repeat) when `c` is `broadcast(expand_dims(v))` or `splat(s)`."""
    op = c.owner
    if isinstance(op, tile.SplatOp):
        return [op], op.value
    if isinstance(op, tile.BroadcastOp) and isinstance(op.operands[0].owner, tile.ExpandDimsOp):
        expand = op.operands[0].owner
        return [expand, op], expand.operands[0]
    return None


class FoldDotAddend(RewritePattern):
    """`arith.addf dot(a, b, zeros), c` (either order) or `arith.subf dot(a, b,
    zeros), c` → `dot(a, b, ±c)`, the negation applied to the broadcast's
    source (a vector or a scalar), the dot kept where it was."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddfOp | arith.SubfOp, rewriter: PatternRewriter) -> None:
        if not is_f32_tile(op.result.type):
            return
        pairs = [(op.lhs, op.rhs)] + ([(op.rhs, op.lhs)] if isinstance(op, arith.AddfOp) else [])
        for product, addend in pairs:
            dot = product.owner
            if not (isinstance(dot, tile.DotOp) and isinstance(dot.acc.owner, tile.ZerosOp)
                    and product.has_one_use() and addend.type == product.type):
                continue
            found = _addend_source(addend)
            if found is None or not _dominates(found[1], dot):
                continue
            chain, source = found
            new: list[Operation] = []
            if isinstance(op, arith.SubfOp):
                neg = arith.NegfOp(source)
                neg.result.name_hint = f"{source.name_hint}_neg" if source.name_hint else None
                new.append(neg)
                source = neg.result
            for old in chain:  # the broadcast again, of the (negated) source, before the dot
                copy = old.clone_without_regions()
                copy.operands[0] = source
                new.append(copy)
                source = copy.results[0]
            folded = tile.DotOp(dot.lhs, dot.rhs, source, dot.rhs_transposed is not None,
                                dot.lhs_transposed is not None)
            folded.attributes |= dot.attributes
            new.append(folded)
            folded.result.name_hint = op.result.name_hint or dot.result.name_hint
            zeros = dot.acc.owner
            rewriter.insert(new, InsertPoint.before(dot))
            rewriter.replace(op, [], [folded.result])
            rewriter.erase(dot)
            if not zeros.results[0].uses:
                rewriter.erase(zeros)
            for old in reversed(chain):
                if not old.results[0].uses:
                    rewriter.erase(old)
            return


@dataclass(frozen=True)
class FoldDotAddendPass(ModulePass):
    """Starts a product's accumulator at the broadcast vector or scalar
    added to (or subtracted from) it."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FoldDotAddend()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
