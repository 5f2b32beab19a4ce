"""`tawa-lower-tile`: the tile compute of consumer partitions becomes Hopper ops.

Runs after `tawa-lower-aref` (and `tawa-stage-stores`, `tawa-stage-operands`,
whose decisions it reads from the IR), on the consumer partitions only.  In a
consumer partition of G warp groups, an R·G-row f32 accumulator tile becomes
one `wgmma` fragment per warp group: warp group c owns rows [Rc, Rc + R), R
= 64 by default or a multiple of 64 (`group_rows_of_tile`; each wgmma then
issues one instruction per 64-row block).

The lowering is the rewrite patterns of `tawa.transforms.lower.consumer_patterns`
(one per op family: accumulator init, loop-carried values, dots, dot waits,
elementwise math, row reductions, row broadcasts, masked selects, stores),
applied with xDSL's `PatternRewriteWalker` to a fixpoint, with the
partition's facts (`ConsumerInfo`: its warp groups, this warp group's index
and first row) computed once at its top.  A `nvgpu.staged_store` becomes the
TMA-store epilogue through the buffer and tensor map it names, a dot whose
lhs is an `nvgpu.staged_operand` reads it from the buffer that names, and
every other store is the thread epilogue.  Then index and mask tiles whose
uses were all lowered are dropped, and what is left is reported, with its
location: a dot or store whose accumulator never became a fragment, or any
other tile op or tensor value.  Nothing is silently dropped.

The partitions stay `aref.warp_specialize` regions; `tawa-pingpong`,
`tawa-pin-waits` and `tawa-drain-stores` work on them next, and
`tawa-materialize-partitions` turns them into warp-group branches.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free

from tawa.dialects import aref, nvgpu, tile
from tawa.transforms.lower.consumer_patterns import NAME, ConsumerInfo, consumer_patterns, diagnose
from tawa.transforms.lower.partitions import check_arefs_lowered, consumers_of
from tawa.transforms.partition.warp_specialize import group_rows
from tawa.transforms.utils import erase_unused, fail, kernel_of


def lower_consumer(region: Region, first_group: int, groups: int) -> None:
    """Lowers one consumer partition of `groups` warp groups, the first of
    which is warp group `first_group` of the CTA."""
    info = ConsumerInfo.at_start_of(region, first_group, groups, group_rows(region, groups, NAME))
    PatternRewriteWalker(
        # No DCE: dead scalar ops the partition had stay, as they were.
        GreedyRewritePatternApplier(consumer_patterns(info), dce_enabled=False),
        apply_recursively=True,
    ).rewrite_region(region)
    _erase_dead_tile_math(region)
    for op in [o for o in region.walk() if isinstance(o, tile.SplatOp | nvgpu.SmemTileOp)]:
        if not op.results[0].uses:
            Rewriter.erase_op(op)
    diagnose(region)


def _erase_dead_tile_math(region: Region) -> None:
    """Drops index and mask tiles whose uses were all lowered."""
    erase_unused(region, lambda op: any(isinstance(r.type, TensorType) for r in op.results) and is_side_effect_free(op))


@dataclass(frozen=True)
class LowerTilePass(ModulePass):
    """Lowers the tile compute of consumer partitions to wgmma and register fragments."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel_of(ws, NAME)
            check_arefs_lowered(ws, NAME)
            for c in consumers_of(ws):
                lower_consumer(c.region, c.first_group, c.groups)
        # What materialize-partitions lowers (the partitions, program ids)
        # may remain; any other tile or aref op, or tensor, is not supported.
        left_for_later = (aref.WarpSpecializeOp, tile.ProgramIdOp, tile.NumProgramsOp)
        for o in op.walk():
            if isinstance(o, left_for_later):
                continue
            on_tiles = any(isinstance(v.type, TensorType) for v in (*o.operands, *o.results))
            if (isinstance(o, scf.IfOp) and any(isinstance(r.type, TensorType) for r in o.results)
                    and any(isinstance(d, tile.DotOp | tile.DotAsyncOp | nvgpu.WgmmaOp) for d in o.walk())):
                raise fail(o, f"{NAME}: a tile.dot inside 'scf.if' is not supported: its accumulator would have "
                           "to be yielded as a fragment by both branches; compute it unconditionally (and "
                           "tile.select the result)")
            if o.dialect_name() in ("tile", "aref") or on_tiles:
                raise fail(o, f"{NAME}: '{o.name}' is not supported by the Hopper lowering yet")
