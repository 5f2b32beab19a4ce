"""`tawa-lower-tile`: the tile compute of consumer partitions becomes Hopper ops.

Runs after `tawa-lower-aref`, on the consumer partitions only.  In a
consumer partition of G warp groups, an R·G-row f32 accumulator tile becomes
one `wgmma` fragment per warp group: warp group c owns rows [Rc, Rc + R), R
= 64 by default or a multiple of 64 (`group_rows_of_tile`; each wgmma then
issues one instruction per 64-row block).

The lowering is the rewrite patterns of `tawa.transforms.lower.consumer_patterns`
(one per op family: accumulator init, loop-carried values, dots, dot waits,
elementwise math, row reductions, row broadcasts, masked selects, stores),
applied with xDSL's `PatternRewriteWalker` to a fixpoint, with the
partition's facts (`ConsumerInfo`: its warp groups, this warp group's first
row) computed once at its top.  Then index and mask tiles whose uses were all
lowered are dropped, and what is left is reported, with its location: a dot
or store whose accumulator never became a fragment, or any other tile op or
tensor value.  Nothing is silently dropped.

The partitions stay `aref.warp_specialize` regions; `tawa-materialize-
partitions` turns them into warp-group branches afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free

from tawa.dialects import aref, nvgpu, tile
from tawa.dialects.aref import PartitionRole
from tawa.target.hopper import WARPS_PER_GROUP
from tawa.transforms.lower.consumer_patterns import NAME, ConsumerInfo, consumer_patterns, diagnose
from tawa.transforms.lower.operand_staging import stage_operands
from tawa.transforms.lower.pin_waits import pin_waits
from tawa.transforms.lower.pingpong import ping_pong
from tawa.transforms.lower.tma_epilogue import (
    EPILOGUES,
    STAGINGS,
    STORE_GROUPS,
    drain_at_end,
    stage_stores,
    stores_by_group,
)
from tawa.transforms.partition.warp_specialize import group_rows
from tawa.transforms.utils import check_choice, erase_unused, fail, kernel_of


def lower_consumer(region: Region, first_group: int, groups: int,
                   staged: Mapping[tile.StoreOp, tuple[SSAValue, SSAValue]] | None = None,
                   pingpong: bool = True, pin: bool = False,
                   operands: Mapping[Operation, SSAValue] | None = None) -> None:
    """Lowers one consumer partition of `groups` warp groups, the first of
    which is warp group `first_group` of the CTA; the `staged` stores take
    the TMA-store epilogue; with `pingpong`, the warp groups of an
    overlapped loop take turns issuing their dots, in a ring
    (`tawa.transforms.lower.pingpong`); with `pin`, a wgmma wait
    after register math stays there (`tawa.transforms.lower.pin_waits`); the
    `operands` dots read their lhs from that shared buffer
    (`tawa.transforms.lower.operand_staging`)."""
    staged = {s: v for s, v in (staged or {}).items() if region.is_ancestor(s)}
    operands = {d: b for d, b in (operands or {}).items() if region.is_ancestor(d)}
    info = ConsumerInfo.at_start_of(region, first_group, groups, staged, group_rows(region, groups, NAME), operands)
    PatternRewriteWalker(
        # No DCE: dead scalar ops the partition had stay, as they were.
        GreedyRewritePatternApplier(consumer_patterns(info), dce_enabled=False),
        apply_recursively=True,
    ).rewrite_region(region)
    _erase_dead_tile_math(region)
    if pingpong:
        assert info.group is not None
        ping_pong(region, info.group, groups)
    if pin:
        pin_waits(region)
    if staged:
        drain_at_end(region, first_group,
                     any(stores_by_group(b, info.groups, info.rows) for b, _ in staged.values()))
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

    epilogue: str = "threads"
    """`threads` (each thread stores its fragment), `tma` (the TMA-store
    epilogue, an error where not possible) or `auto` (TMA stores where
    the staging tile fits in shared memory): `tawa.transforms.lower.tma_epilogue`."""
    staging: str = "auto"
    """The TMA-store epilogue's staging: `full` (the whole tile in one
    buffer), `subtiled` (span-wide column chunks in two alternating
    buffers), `single` (the chunks in one buffer) or `auto` (the first of
    `AUTO_STAGINGS` that fits)."""
    store_group: str = "auto"
    """Who stores a staged tile: `cta` (one thread, after a barrier over all
    the consumer warp groups), `warpgroup` (one thread of each warp group,
    its 64 rows) or `auto` (per warp group where they ping-pong, else per
    CTA): `tawa.transforms.lower.tma_epilogue`."""
    pingpong: bool = True
    """The consumer warp groups of a loop `tawa-overlap-dots` rotated take
    turns issuing their dots, in a ring (named barriers;
    `tawa.transforms.lower.pingpong`)."""
    pin_waits: bool = False
    """A wgmma wait placed after register math gets a fence that keeps
    ptxas from moving it up (`tawa.transforms.lower.pin_waits`)."""

    def __post_init__(self) -> None:
        check_choice("epilogue", self.epilogue, EPILOGUES, NAME)
        check_choice("staging", self.staging, STAGINGS, NAME)
        check_choice("store_group", self.store_group, STORE_GROUPS, NAME)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel = kernel_of(ws, NAME)
            if any(isinstance(o, aref.GetOp | aref.PutOp) for o in ws.walk()):
                raise fail(ws, f"{NAME}: run tawa-lower-aref first")
            staged = stage_stores(ws, kernel, self.epilogue, NAME, self.staging, self.store_group, self.pingpong)
            operands = stage_operands(ws, kernel, NAME)
            start = 0
            for role, warps, _, region in ws.partition_specs():
                if role == PartitionRole.CONSUMER:
                    lower_consumer(region, start, warps // WARPS_PER_GROUP, staged, self.pingpong,
                                   self.pin_waits, operands)
                start += warps // WARPS_PER_GROUP
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
