"""`tawa-split-tma-chunks`: TMA copies of whole tiles as one op per TMA box.

A swizzled tile whose rows are wider than the swizzle span is stored as
column chunks of one span each (`SmemType.chunk_columns`), and the tensor
map the runtime builds for it has one chunk as its box
(`tawa.backend.ptx.abi`).  So `nvgpu.tma_load` / `nvgpu.tma_store` of such a
tile is one TMA instruction per chunk; this pass writes them out, so that
the PTX printer prints one instruction per op:

    nvgpu.tma_load %tq[%m0, %k], %sq[%s], %full[%s]      (128x128 bf16, two chunks of 64)
  becomes
    nvgpu.tma_load_box %tq[%m0, %k], %sq[%s] offset 0, %full[%s]
    %k64 = arith.addi %k, %c64
    nvgpu.tma_load_box %tq[%m0, %k64], %sq[%s] offset 16384, %full[%s]

chunk c at `c · rows · span` bytes into the stage and `c · chunk_columns`
columns further in global memory.  A store becomes its boxes and one
`nvgpu.tma_store_commit`: the tile stays one bulk group, which is what
`nvgpu.tma_store_wait` counts.  A tile of one chunk becomes one box op.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tawa.dialects import nvgpu
from tawa.transforms.prepare.rewrite_each import rewrite_each

NAME = "tawa-split-tma-chunks"


def chunks(t: nvgpu.SmemType, coords: list[SSAValue]) -> list[tuple[list[Operation], list[SSAValue], int]]:
    """Per column chunk of a stage of `t`: the ops that form its
    coordinates, its coordinates (`coords` with the innermost moved to the
    chunk's first column), and its byte offset in the stage."""
    w = t.chunk_columns()
    n = t.get_shape()[-1] // w
    chunk_bytes = t.num_bytes() // t.get_shape()[0] // n
    out = []
    for c in range(n):
        if not c:
            out.append(([], list(coords), 0))
            continue
        step = arith.ConstantOp(IntegerAttr(c * w, IndexType()))
        col = arith.AddiOp(coords[-1], step.result)
        out.append(([step, col], [*coords[:-1], col.result], c * chunk_bytes))
    return out


class SplitTmaLoad(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.TmaLoadOp, rewriter: PatternRewriter) -> None:
        t = op.dest.type
        assert isinstance(t, nvgpu.SmemType)
        props = {k: v for k, v in op.properties.items() if k in ("l2", "multicast")}
        new: list[Operation] = []
        for ops, coords, offset in chunks(t, list(op.coords)):
            new += [*ops, nvgpu.TmaLoadBoxOp.build(
                operands=[op.desc, coords, op.dest, op.stage, op.barriers, op.barrier_index],
                properties={**props, "offset": IntegerAttr(offset, 64)})]
        rewriter.replace(op, new, new_results=[])


class SplitTmaStore(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.TmaStoreOp, rewriter: PatternRewriter) -> None:
        t = op.source.type
        assert isinstance(t, nvgpu.SmemType)
        new: list[Operation] = []
        for ops, coords, offset in chunks(t, list(op.coords)):
            props = {"offset": IntegerAttr(offset, 64), **({"add": op.add} if op.add is not None else {})}
            new += [*ops, nvgpu.TmaStoreBoxOp.build(operands=[op.source, op.stage, op.desc, coords], properties=props)]
        rewriter.replace(op, [*new, nvgpu.TmaStoreCommitOp()], new_results=[])


@dataclass(frozen=True)
class SplitTmaChunksPass(ModulePass):
    """Writes `nvgpu.tma_load` / `nvgpu.tma_store` out as one op per TMA box (column chunk), a store's
    boxes closed by one commit."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_each(op, {nvgpu.TmaLoadOp: SplitTmaLoad(), nvgpu.TmaStoreOp: SplitTmaStore()})
