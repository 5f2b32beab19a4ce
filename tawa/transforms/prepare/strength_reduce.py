"""`tawa-strength-reduce`: unsigned division and remainder by powers of two
as shifts and masks.

Integer division is a subroutine on the GPU (tens of instructions); the
lowering divides thread and tile indices by powers of two all the time.
`arith.divui %x, 2^k` becomes `arith.shrui %x, k` and `arith.remui %x, 2^k`
becomes `arith.andi %x, 2^k - 1`; other divisions stay.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

NAME = "tawa-strength-reduce"


def power_of_two(v: SSAValue) -> int | None:
    """k when v is the constant 2^k, else None."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        c = op.value.value.data
        if c > 0 and c & (c - 1) == 0:
            return c.bit_length() - 1
    return None


def _replace(rewriter: PatternRewriter, op: Operation, constant: int, new_op: type) -> None:
    c = arith.ConstantOp(IntegerAttr(constant, op.results[0].type))
    divisor = op.operands[1].owner
    rewriter.replace(op, [c, new_op(op.operands[0], c.result)])
    # The divisor's constant is dead when this was its only use.
    if isinstance(divisor, arith.ConstantOp) and not divisor.result.uses:
        rewriter.erase(divisor)


class DivUIByPowerOfTwo(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.DivUIOp, rewriter: PatternRewriter) -> None:
        k = power_of_two(op.rhs)
        if k is not None:
            _replace(rewriter, op, k, arith.ShRUIOp)


class RemUIByPowerOfTwo(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.RemUIOp, rewriter: PatternRewriter) -> None:
        k = power_of_two(op.rhs)
        if k is not None:
            _replace(rewriter, op, (1 << k) - 1, arith.AndIOp)


@dataclass(frozen=True)
class StrengthReducePass(ModulePass):
    """Unsigned division / remainder by powers of two as shifts / masks."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([DivUIByPowerOfTwo(), RemUIByPowerOfTwo()]),
            apply_recursively=False,
        ).rewrite_module(op)
