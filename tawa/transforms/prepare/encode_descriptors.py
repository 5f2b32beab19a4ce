"""`tawa-encode-wgmma-descriptors`: wgmma descriptors as address arithmetic and fields.

`nvgpu.wgmma_descriptor %buf[%stage, %row]` becomes the tile's shared
address in `arith` on i32 — the buffer's (`nvgpu.smem_address`) plus
stage × stage bytes plus row × span (a row of a column chunk; with
`columns`, column × rows × element bytes: the column starts a chunk) — and an
`nvgpu.wgmma_desc_encode` of it whose properties are the descriptor fields:
leading and stride byte offsets and swizzle, computed here from the tile's
swizzle and shape and from how the descriptor is read (K-major as a lhs or a
transposed rhs, MN-major as a rhs or an `lhs_transposed` lhs; see
`tawa.transforms.lower.wgmma_layout`).
Run after `tawa-expand-wgmma`, which reads the tiles of the descriptor ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tawa.dialects import nvgpu
from tawa.transforms.lower.wgmma_layout import tile_layout
from tawa.transforms.prepare.rewrite_each import rewrite_each
from tawa.transforms.utils import fail

NAME = "tawa-encode-wgmma-descriptors"


def reads_k_major(desc: SSAValue, at: Operation) -> bool:
    """Whether the wgmma ops reading `desc` (through advances) read it
    K-major; an error if they disagree or something else reads it."""
    majors: set[bool] = set()
    pending = [desc]
    while pending:
        v = pending.pop()
        for use in v.uses:
            user = use.operation
            if isinstance(user, nvgpu.WgmmaDescAdvanceOp):
                pending.append(user.result)
            elif isinstance(user, nvgpu.WgmmaOp | nvgpu.WgmmaMmaAsyncOp) and use.index in (0, 1):
                transposed = user.lhs_transposed if use.index == 0 else user.rhs_transposed
                majors.add((transposed is None) == (use.index == 0))
            else:
                raise fail(at, f"{NAME}: a wgmma descriptor is used by '{user.name}'")
    if len(majors) > 1:
        raise fail(at, f"{NAME}: a wgmma descriptor is read both K-major and MN-major")
    return majors.pop() if majors else True


class EncodeDescriptor(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.WgmmaDescriptorOp, rewriter: PatternRewriter) -> None:
        t = op.source.type
        assert isinstance(t, nvgpu.SmemType)
        try:
            layout = tile_layout(t)
        except ValueError as err:
            raise fail(op, f"{NAME}: {err}") from None
        lbo, sbo = layout.descriptor_offsets(reads_k_major(op.result, op))
        stage_bytes = t.num_bytes() // t.get_shape()[0]

        def const(v: int) -> arith.ConstantOp:
            return arith.ConstantOp(IntegerAttr(v, i32))

        base = nvgpu.SmemAddressOp(op.source)
        stage = arith.IndexCastOp(op.stage, i32)
        c_stage = const(stage_bytes)
        stage_off = arith.MuliOp(stage, c_stage)
        at_stage = arith.AddiOp(stage_off, base)
        row = arith.IndexCastOp(op.row, i32)
        # A row is `span` bytes of its chunk; a column (`columns`, a multiple of the span) starts a
        # chunk, `rows × span` bytes per span of columns: rows × element bytes per column.
        c_row = const(t.get_shape()[1] * nvgpu.element_bytes(t.element_type) if op.columns else layout.span)
        row_off = arith.MuliOp(row, c_row)
        address = arith.AddiOp(row_off, at_stage)
        desc_type = op.result.type
        assert isinstance(desc_type, nvgpu.WgmmaDescriptorType)
        encode = nvgpu.WgmmaDescEncodeOp(address.result, lbo, sbo, layout.swizzle, desc_type)
        rewriter.replace(
            op, [base, stage, c_stage, stage_off, at_stage, row, c_row, row_off, address, encode]
        )


@dataclass(frozen=True)
class EncodeWgmmaDescriptorsPass(ModulePass):
    """Writes wgmma descriptors out as shared-address arithmetic and an encode op with the fields."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_each(op, {nvgpu.WgmmaDescriptorOp: EncodeDescriptor()})
