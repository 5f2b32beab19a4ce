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

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.ir import Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from tawa.analysis.register_demand import calls_subroutine
from tawa.analysis.smem_plan import extend_plan
from tawa.dialects import aref, nvgpu, tile
from tawa.target.hopper import MAX_REGS_PER_THREAD, MAX_SMEM_BYTES, THREADS_PER_GROUP
from tawa.transforms.lower.blocked_layouts import BlockedTile, plan_blocked_layouts
from tawa.transforms.lower.consumer_patterns import NAME, ConsumerInfo, consumer_patterns, diagnose
from tawa.transforms.lower.partitions import check_arefs_lowered, consumers_of
from tawa.transforms.lower.scalar_loads import lower_scalar_loads
from tawa.transforms.lower.tma_epilogue import group_barrier
from tawa.transforms.partition.warp_groups import BLOCKED_LAYOUTS, blocked_group_rows, group_rows, takes_blocked_layouts
from tawa.transforms.utils import InheritLocation, erase_unused, fail, kernel_of


def lower_consumer(region: Region, first_group: int, groups: int) -> None:
    """Lowers one consumer partition of `groups` warp groups, the first of
    which is warp group `first_group` of the CTA: blocked layouts where
    `tawa-warp-specialize` chose them (a kernel without dots,
    `BLOCKED_LAYOUTS`: `plan_blocked_layouts`), else the wgmma family."""
    if not takes_blocked_layouts(region):
        info = ConsumerInfo.at_start_of(region, first_group, groups, group_rows(region, groups, NAME))
    else:
        ws = region.parent_op()
        assert ws is not None
        if dot := next((o for o in region.walk() if isinstance(o, tile.DotOp | tile.DotAsyncOp)), None):
            raise fail(dot, f"{NAME}: a dot in a partition whose tiles take blocked layouts "
                            f"({BLOCKED_LAYOUTS}: for kernels without dots)")
        rows = blocked_group_rows(region, groups, ws, NAME)
        tiles = plan_blocked_layouts(region, NAME, groups)
        scratch = plan_scratch(region, tiles, groups)
        if rows is None:
            info = ConsumerInfo.blocked_at_start_of(region, first_group, tiles, scratch, group_barrier(0))
        else:
            info = replace(ConsumerInfo.at_start_of(region, first_group, groups, rows), tiles=tiles)
    PatternRewriteWalker(
        # No DCE: dead scalar ops the partition had stay, as they were.
        GreedyRewritePatternApplier([InheritLocation(p) for p in consumer_patterns(info)], dce_enabled=False),
        apply_recursively=True,
    ).rewrite_region(region)
    _erase_dead_tile_math(region)
    if info.tiles is not None:
        _sink_elementwise(region)
    for op in [o for o in region.walk() if isinstance(o, tile.SplatOp | nvgpu.SmemTileOp)]:
        if not op.results[0].uses:
            Rewriter.erase_op(op)
    diagnose(region)


MAX_EXCHANGED_ELEMENTS = 1 << 26
"""Tiles past this many elements are refused before their exchange is
planned: listing their layout's values would take minutes, and
`tawa-check-resources` refuses any tile past the registers anyway."""


def plan_scratch(region: Region, tiles: Mapping[SSAValue, BlockedTile], groups: int) -> SSAValue | None:
    """The shared buffer of the partition's exchanges between warps: the
    reductions whose warps split the reduced axis (`nvgpu.frag_reduce_warps`:
    128 f32 a result value per thread) and the transposes
    (`nvgpu.frag_transpose_shared`: the whole tile in f32), or None when it
    has none: one `n x 128` f32 buffer that holds the largest of them (they
    run one after the other, each between two barriers), placed after the
    kernel's other buffers (`extend_plan`) and counted in its shared memory.
    Only a partition of one warp group has them (several own 64 rows or
    more each: their warps lie along the rows, and a transpose would move
    rows between warp groups)."""
    need, first = 0, None
    for op in region.walk():
        if isinstance(op, tile.ReduceOp | tile.TransOp) and op.input in tiles:
            elements = math.prod(tiles[op.input].shape)
            if elements > MAX_EXCHANGED_ELEMENTS:  # (before its layout's values are listed, which takes long)
                raise fail(op, f"{NAME}: a tile of {elements} elements is far past one warp group's registers "
                               f"({THREADS_PER_GROUP} threads x {MAX_REGS_PER_THREAD}): use a smaller tile")
        if isinstance(op, tile.ReduceOp) and op.input in tiles:
            of, axis = tiles[op.input], op.axis.value.data
            if len(of.shape) < 2:
                raise fail(op, f"{NAME}: a reduction of a 1-D tile ({of.shape[0]} values) to a scalar is not "
                               "supported: reduce a 2-D tile along one axis (a 1xN tile along axis 1 gives a "
                               "1-value vector)")
            red = of.layout.reduce(of.shape, axis, across_warps=True)
            if red.warps > 1:
                values = red.layout.values_per_thread(of.shape[:axis] + of.shape[axis + 1:])
                need = max(need, values * THREADS_PER_GROUP)
                first = first or op
        elif isinstance(op, tile.TransOp) and op.input in tiles:
            need = max(need, math.prod(tiles[op.input].shape))
            first = first or op
    if not need:
        return None
    if groups > 1:  # (warps split only the rows of a warp group's 64 or more: this sums columns)
        what = ("a transpose (tile.trans)" if isinstance(first, tile.TransOp)
                else "a reduction along the rows")
        raise fail(first, f"{NAME}: {what} of a tile that {groups} warp groups split is not supported (the "
                          "values would move between warp groups): leave consumer-warps out (one warp group "
                          "holds the whole tile)")
    ws = region.parent_op()
    assert isinstance(ws, aref.WarpSpecializeOp)
    kernel = kernel_of(ws, NAME)
    t = nvgpu.SmemType([-(-need // THREADS_PER_GROUP), THREADS_PER_GROUP], Float32Type())
    allocs = [o for o in kernel.body.block.ops if isinstance(o, nvgpu.SmemAllocOp)]
    plan = extend_plan(allocs, [t])
    if not plan.fits:
        raise fail(first, f"{NAME}: this op's warps exchange values through {t.num_bytes()} bytes of shared "
                          f"memory, and with the kernel's other buffers it needs {plan.total}, more than the "
                          f"{MAX_SMEM_BYTES} a block may use")
    alloc = nvgpu.SmemAllocOp(plan.staging[0].offset, t)
    alloc.result.name_hint = "warp_scratch"
    Rewriter.insert_op(alloc, InsertPoint.before(ws))
    nvgpu.record_kernel_info(kernel, smem=max(plan.total, nvgpu.kernel_info(kernel).smem or 0))
    return alloc.result


_SINKABLE = (nvgpu.FragmentBinaryOp, nvgpu.FragmentUnaryOp, nvgpu.FragmentConvertOp, nvgpu.FragmentSelectOp,
             nvgpu.FragmentSplatOp, nvgpu.FragmentBroadcastOp)


def _sink_elementwise(region: Region) -> None:
    """Moves each elementwise fragment op of a partition of blocked layouts
    to just before the first op of its block that uses it (last ops
    first, so that chains follow their uses).  The PTX printer emits a
    fragment op for all of a thread's values before the next op, and ptxas
    reorders them little across the slow paths of `rcp.rn` and `sqrt.rn`
    (subroutine calls, `calls_subroutine`): computed where they are used, fewer of a
    thread's arrays are live at once (`|x| + 1`, `|x| + 2` and `sqrt(|x|)`
    of one tile: one at a time, not three).  Those ops themselves stay
    where the program put them: sunk below a tile's load they would have
    it live across their calls (RMSNorm's mean square, a division of a row
    vector, after the weights' load)."""
    for block in [b for op in region.walk() for r in op.regions for b in r.blocks] + list(region.blocks):
        for op in reversed(list(block.ops)):
            if not isinstance(op, _SINKABLE) or not op.results[0].uses or calls_subroutine(op):
                continue
            users = [block.find_ancestor_op_in_block(u.operation) for u in op.results[0].uses]
            if any(u is None for u in users):
                continue
            first = min(users, key=block.get_operation_index)  # type: ignore[arg-type]
            if first is not op.next_op:
                op.detach()
                block.insert_op_before(op, first)


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
            lower_scalar_loads(ws)  # in every partition: the producer's TMA coordinates may need them
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
