"""`tawa-exp-to-exp2`: `math.exp` on f32 tiles becomes `math.exp2(x · log2 e)`.

The GPU has a base-2 exponential (`ex2.approx.f32`) and no natural one, so
every fast softmax computes e^x as 2^(x · log2 e); tawa's Hopper lowering
(`tawa-lower-tile`) accordingly knows `math.exp2` only.  This pass lets a tile
program be written with `math.exp` and still compile.  It is also the worked
example of docs/writing-a-pass.md: one `RewritePattern`, applied by a
`PatternRewriteWalker`, in a `ModulePass` with one option.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import Float32Type, FloatAttr, ModuleOp, TensorType, f32
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tawa.dialects import tile
from tawa.transforms.utils import fail

NAME = "tawa-exp-to-exp2"
LOG2_E = 1.4426950408889634  # log2(e) = 1 / ln(2)


def is_f32_tile(t: object) -> bool:
    return isinstance(t, TensorType) and isinstance(t.get_element_type(), Float32Type)


class ExpToExp2(RewritePattern):
    """`math.exp %x` on an f32 tile → `math.exp2 (%x · splat(log2 e))`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.ExpOp, rewriter: PatternRewriter) -> None:
        # Only f32 tiles.  On bf16 or f16 the product x · log2 e would be
        # rounded to 8 or 11 bits before the exponential (bf16: a relative
        # error of up to |x| · 2^-8 in the result), where the interpreter
        # computes exp in f32 and rounds once.
        if not is_f32_tile(op.operand.type):
            return  # returning without a change means "no match"
        t = op.operand.type
        # The scalar constant and a splat, not a dense tensor constant: that
        # is the form `tawa-lower-tile` lowers (math with an f32 scalar).
        log2e = arith.ConstantOp(FloatAttr(LOG2_E, f32))
        splat = tile.SplatOp.build(operands=[log2e.result], result_types=[t])
        scaled = arith.MulfOp(op.operand, splat.result)
        exp2 = math.Exp2Op(scaled.result, op.fastmath)  # keep the op's fastmath flags
        # `replace` gives the old result's name to every new result that has
        # none: name the intermediate values so that they print as %log2e...
        log2e.result.name_hint = "log2e"
        splat.result.name_hint = "log2e_t"
        scaled.result.name_hint = "x_log2e"
        # ...inserts the new ops before `op`, moves the uses of op's result to
        # the last new op's result (exp2's, which takes op's name), erases op.
        rewriter.replace(op, [log2e, splat, scaled, exp2])


@dataclass(frozen=True)
class ExpToExp2Pass(ModulePass):
    """Rewrites `math.exp` on f32 tiles as `math.exp2` of `x · log2 e`."""

    name = NAME

    strict: bool = False
    """Fail on a `math.exp` left unchanged (not an f32 tile), rather than
    leave it for a later pass to reject."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            # dce_enabled=False: by default the applier also erases every
            # unused pure op it visits, which is not this pass's business.
            GreedyRewritePatternApplier([ExpToExp2()], dce_enabled=False),
            apply_recursively=False,  # the new ops never match: one walk is enough
        ).rewrite_module(op)
        if not self.strict:
            return
        for left in op.walk():
            if isinstance(left, math.ExpOp):
                raise fail(
                    left,
                    f"{NAME}: math.exp on {left.operand.type} is not rewritten (only f32 tiles are)",
                )
