"""`tawa-expand-wgmma`: a whole-tile `nvgpu.wgmma` as one op per instruction.

A 64xNxK `nvgpu.wgmma` becomes K/16 (K/32 for f8) `nvgpu.wgmma_mma_async`,
each chained on the previous one's accumulator.  Step j reads

* a descriptor operand advanced to its k-step (`nvgpu.wgmma_desc_advance`,
  byte offsets from the tile's layout: `tawa.transforms.lower.wgmma_layout`);
* a register lhs as its k-step j slice (`nvgpu.wgmma_k_slice`);

and scale-d is the wgmma's `accumulate` for step 0, true after it (the
later steps add to what step 0 wrote).

A warp group that owns 64·R rows (an MxNxK wgmma, M = 64·R, lhs a
descriptor) issues R instructions per k-step, one per 64-row block
(`row_block` r, the A descriptor a further 64·r rows down, or 64·r
columns on for an MN-major A, `lhs_transposed`: whole column chunks;
its k-steps are k rows down, as an MN-major B's): k-steps outer,
row blocks inner, so consecutive instructions write different registers
and the tensor core need not wait for one to finish before the next.  Descriptors must still be
`nvgpu.wgmma_descriptor` ops: their source tile gives the chunk distance
a k-step may cross.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i1
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tawa.dialects import nvgpu
from tawa.target.hopper import WGMMA_M
from tawa.transforms.lower.wgmma_layout import TileLayout, tile_layout
from tawa.transforms.prepare.rewrite_each import rewrite_each
from tawa.transforms.utils import fail

NAME = "tawa-expand-wgmma"


def layout_of(desc: SSAValue, at: Operation) -> TileLayout:
    """The shared-memory layout a descriptor operand reads (its source tile's)."""
    owner = desc.owner
    if not isinstance(owner, nvgpu.WgmmaDescriptorOp):
        raise fail(at, f"{NAME}: wgmma operands must be nvgpu.wgmma_descriptor results (run it before "
                       "tawa-encode-wgmma-descriptors)")
    t = owner.source.type
    assert isinstance(t, nvgpu.SmemType)
    try:
        return tile_layout(t)
    except ValueError as err:
        raise fail(owner, f"{NAME}: {err}") from None


@dataclass
class ExpandWgmma(RewritePattern):
    trues: dict[Block, SSAValue] = field(default_factory=dict)
    """Per kernel entry block, an `arith.constant true` at its top: scale-d
    of steps > 0 (one per kernel, so branches never hide its definition)."""

    def true(self, op: Operation, rewriter: PatternRewriter) -> SSAValue:
        kernel = op.parent_op()
        while not isinstance(kernel, func.FuncOp):
            assert kernel is not None
            kernel = kernel.parent_op()
        entry = kernel.body.block
        if entry not in self.trues:
            c = arith.ConstantOp(IntegerAttr(1, i1))
            rewriter.insert(c, InsertPoint.at_start(entry))
            self.trues[entry] = c.result
        return self.trues[entry]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.WgmmaOp, rewriter: PatternRewriter) -> None:
        lt = op.lhs.type
        assert isinstance(lt, nvgpu.WgmmaDescriptorType | nvgpu.FragmentType)
        k_step = op.k_step()
        steps = op.lhs_k() // k_step
        rhs_k_major = op.rhs_transposed is not None
        b_offsets = layout_of(op.rhs, op).k_offsets(steps, k_step, rhs_k_major)
        blocks, row_bytes = op.m() // WGMMA_M, 0
        if isinstance(lt, nvgpu.FragmentType):
            slice_type = nvgpu.FragmentType([lt.get_shape()[0], k_step], lt.element_type, lt.tiled_layout)
        else:
            a_layout = layout_of(op.lhs, op)
            a_k_major = op.lhs_transposed is None
            a_offsets = a_layout.k_offsets(steps, k_step, a_k_major)
            if a_k_major:
                row_bytes = a_layout.row_offset(WGMMA_M)
            else:  # an MN-major A: the next 64 rows of M are the next column chunks
                try:
                    row_bytes = a_layout.mn_offset(WGMMA_M, nvgpu.element_bytes(lt.element_type))
                except ValueError as err:
                    raise fail(op, f"{NAME}: {err}") from None
        new: list[Operation] = []
        acc = op.acc
        for j in range(steps):
            b = nvgpu.WgmmaDescAdvanceOp(op.rhs, b_offsets[j])
            for r in range(blocks):
                if isinstance(lt, nvgpu.FragmentType):
                    a = nvgpu.WgmmaKSliceOp(op.lhs, j, slice_type)
                else:
                    a = nvgpu.WgmmaDescAdvanceOp(op.lhs, a_offsets[j] + r * row_bytes)
                new += [a, b] if r == 0 else [a]
                props = dict(op.properties)
                if blocks > 1:
                    props["row_block"] = IntegerAttr(r, 64)
                mma = nvgpu.WgmmaMmaAsyncOp(
                    operands=[a.result, b.result, acc, op.accumulate if j == 0 else self.true(op, rewriter)],
                    result_types=[op.result.type],
                    properties=props,
                )
                new.append(mma)
                acc = mma.result
        rewriter.replace(op, new, [acc])


@dataclass(frozen=True)
class ExpandWgmmaPass(ModulePass):
    """Expands whole-tile wgmma ops into one nvgpu.wgmma_mma_async per k-step."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_each(op, {nvgpu.WgmmaOp: ExpandWgmma()})
