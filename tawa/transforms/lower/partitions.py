"""The consumer partitions of a kernel, as the passes of the lower level see them.

A consumer partition is a region of an `aref.warp_specialize` run by G warp
groups; its first is warp group F of the CTA (the warp groups of the
partitions before it come first).  `tawa-lower-tile` computes, at the top of
each consumer partition, this warp group's index in it,

    %wg = nvgpu.warp_group_id
    %wg_index = arith.subi %wg, %c_F

and the passes after it (`tawa-pingpong`) find that index there
(`group_index`) rather than compute it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import aref, nvgpu
from tawa.dialects.aref import PartitionRole
from tawa.target.hopper import WARPS_PER_GROUP
from tawa.transforms.utils import const, fail


@dataclass(frozen=True)
class Consumer:
    """One consumer partition of an `aref.warp_specialize`."""

    ws: aref.WarpSpecializeOp
    region: Region
    first_group: int
    """The CTA's warp group that is the partition's first."""
    groups: int
    """The partition's warp groups."""


def consumers_of(ws: aref.WarpSpecializeOp) -> list[Consumer]:
    """The consumer partitions of `ws`, in order."""
    out, start = [], 0
    for role, warps, _, region in ws.partition_specs():
        if role == PartitionRole.CONSUMER:
            out.append(Consumer(ws, region, start, warps // WARPS_PER_GROUP))
        start += warps // WARPS_PER_GROUP
    return out


def consumer_partitions(module: ModuleOp) -> Iterator[Consumer]:
    """The consumer partitions of every `aref.warp_specialize` of `module`,
    in program order."""
    for ws in [o for o in module.walk() if isinstance(o, aref.WarpSpecializeOp)]:
        yield from consumers_of(ws)


def emit_group_index(first_group: int, at: InsertPoint) -> SSAValue:
    """Emits, at `at`, this warp group's index in a partition whose first
    warp group is `first_group`: warp group id − `first_group`."""
    wg = nvgpu.WarpGroupIdOp()
    Rewriter.insert_op(wg, at)
    local = arith.SubiOp(wg.result, const(first_group, at))
    local.result.name_hint = "wg_index"
    Rewriter.insert_op(local, at)
    return local.result


def group_index(region: Region, first_group: int) -> SSAValue:
    """This warp group's index in the consumer partition `region` (first
    warp group `first_group`): the first `arith.subi` of `nvgpu.warp_group_id`
    and `first_group` among the partition's top-level ops (what
    `tawa-lower-tile` put there), else one emitted at its top."""
    for op in region.block.ops:
        if (isinstance(op, arith.SubiOp) and isinstance(op.lhs.owner, nvgpu.WarpGroupIdOp)
                and isinstance(c := op.rhs.owner, arith.ConstantOp)
                and c.value == IntegerAttr(first_group, IndexType())):
            return op.result
    return emit_group_index(first_group, InsertPoint.at_start(region.block))


def check_arefs_lowered(ws: aref.WarpSpecializeOp, who: str) -> None:
    """A located error unless `tawa-lower-aref` lowered the arefs of `ws`
    (the rings are in shared memory, and the slots' tiles are read in place)."""
    if any(isinstance(o, aref.GetOp | aref.PutOp) for o in ws.walk()):
        raise fail(ws, f"{who}: run tawa-lower-aref first")
