"""`tawa-divide-by-reciprocal`: division by a broadcast becomes a product with its reciprocal.

`x / b[:, None]` (an f32 tile divided by a vector broadcast along an axis:
`tile.broadcast(tile.expand_dims(b, axis))`, or by a `tile.broadcast` of a
smaller tile) becomes `x * (1 / b)[:, None]`, and `x / splat(s)` becomes
`x * splat(1 / s)`: one reciprocal per element of the divisor, then one
multiply per element of the tile, instead of one division per element of
the tile.  A softmax's `e / sum(e)[:, None]` over a 16x1024 tile then takes
4 reciprocals and 128 multiplies a thread, not 128 divisions.

Precision.  The reciprocal `1.0 / b` is rounded to nearest (`tawa-lower-tile`
lowers a division of 1.0 to `rcp.rn.f32`, the bits of `div.rn.f32`), and so
is the product: x · (1/b) lies within 1.5 ulp of the exact x / b (two
roundings of at most half an ulp each, the first scaled by x), where a
division rounds once (0.5 ulp); the two results differ by at most 1 ulp
(an f32 result rounded to bf16 rarely changes: at most 1 bf16 ulp, where
the f32 value lies next to a bf16 rounding boundary).  A divisor of ±0, ±inf
or NaN gives what x · (1/b) gives (x/0 and x · inf agree; 0/0 and 0 · inf
are both NaN).  docs/passes.md, "tawa-divide-by-reciprocal".

Only f32 tiles: on 16-bit tiles the reciprocal would be rounded to 8 or 11
bits before the product.  A pattern, applied once (its new ops never match).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, FloatAttr, ModuleOp, TensorType, f32
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

NAME = "tawa-divide-by-reciprocal"


def _elements(t: TensorType) -> int:
    n = 1
    for d in t.get_shape():
        n *= d
    return n


def _reciprocal(v: SSAValue, at: InsertPoint, rewriter: PatternRewriter) -> SSAValue:
    """`1.0 / v` (a scalar or an f32 tile), inserted at `at`."""
    one = arith.ConstantOp(FloatAttr(1.0, f32))
    one.result.name_hint = "one"
    ops: list[Operation] = [one]
    numerator = one.result
    if isinstance(v.type, TensorType):
        splat = tile.SplatOp.build(operands=[one.result], result_types=[v.type])
        splat.result.name_hint = "ones"
        ops.append(splat)
        numerator = splat.result
    inv = arith.DivfOp(numerator, v)
    inv.result.name_hint = f"{v.name_hint}_inv" if v.name_hint else "inv"
    ops.append(inv)
    rewriter.insert(ops, at)
    return inv.result


class DivideByReciprocal(RewritePattern):
    """`arith.divf %x, broadcast(expand_dims(%b))` → `arith.mulf %x,
    broadcast(expand_dims(1.0 / %b))`; `arith.divf %x, splat(%s)` →
    `arith.mulf %x, splat(1.0 / %s)` (f32 tiles)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.DivfOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        if not is_f32_tile(t):
            return
        assert isinstance(t, TensorType)
        divisor = op.rhs.owner
        new: list[Operation]
        if isinstance(divisor, tile.SplatOp) and isinstance(divisor.value.type, Float32Type):
            if _elements(t) == 1:
                return  # as many divisions either way
            inv = _reciprocal(divisor.value, InsertPoint.before(op), rewriter)
            new = [tile.SplatOp.build(operands=[inv], result_types=[t])]
        elif isinstance(divisor, tile.BroadcastOp):
            src = divisor.operands[0]
            assert isinstance(src.type, TensorType)
            if _elements(src.type) >= _elements(t):
                return  # not a broadcast that repeats values
            expand = src.owner
            if isinstance(expand, tile.ExpandDimsOp):
                # Keep the `broadcast(expand_dims(vector))` form: it is what the lowering broadcasts in registers.
                inv = _reciprocal(expand.operands[0], InsertPoint.before(op), rewriter)
                expanded = tile.ExpandDimsOp.build(operands=[inv], properties=dict(expand.properties),
                                                   result_types=[src.type])
                new = [expanded]
                operand = expanded.results[0]
            else:
                inv = operand = _reciprocal(src, InsertPoint.before(op), rewriter)
                new = []
            new.append(tile.BroadcastOp.build(operands=[operand], result_types=[divisor.results[0].type]))
        else:
            return
        for o in new:  # named after the reciprocal: `replace` would give them the quotient's name
            o.results[0].name_hint = f"{inv.name_hint or 'inv'}_{'x' if isinstance(o, tile.ExpandDimsOp) else 'b'}"
        product = arith.MulfOp(op.lhs, new[-1].results[0], op.fastmath)
        rewriter.replace(op, [*new, product])
        # The divisor's broadcast (and expansion) when nothing else reads them.
        for old in (divisor, divisor.operands[0].owner if isinstance(divisor, tile.BroadcastOp) else None):
            if isinstance(old, tile.BroadcastOp | tile.ExpandDimsOp | tile.SplatOp) and not old.results[0].uses:
                rewriter.erase(old)


@dataclass(frozen=True)
class DivideByReciprocalPass(ModulePass):
    """Rewrites f32 tile division by a broadcast (a vector along an axis, or
    a scalar) as a product with the broadcast reciprocal."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([DivideByReciprocal()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
