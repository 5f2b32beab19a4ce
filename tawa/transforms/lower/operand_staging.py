"""Register A operands that wgmma cannot read from registers go through shared memory.

wgmma reads its A operand from registers only in the layout of 16-bit
types (the `wgmma` fragment layout, packed bf16/f16 pairs).  An 8-bit A
operand computed in registers — attention's P converted to fp8 for P·V —
has no register form the instruction takes, so the consumer writes it to a
shared-memory buffer of its own and the dot reads it through a descriptor,
as it reads a slot:

    %p8 = nvgpu.frag_convert %p : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xf8E4M3FN, wgmma>
    nvgpu.frag_store_shared %p8, %operand[%wg_index, %c0]   // this warp group's rows
    nvgpu.fence_proxy_async                                 // the writes, visible to wgmma
    nvgpu.named_barrier_sync 15 - g, 128                    // every row of the warp group written
    %da = nvgpu.wgmma_descriptor %operand[%wg_index, %c0]
    nvgpu.wgmma %da, %db, %acc, ...

Two passes build it: `tawa-stage-operands` (`stage_operands`) allocates
the buffer and gives the dot its lhs through `%p_staged =
nvgpu.staged_operand %p via %operand`; `tawa-lower-tile` writes that out as
above (`emit_operand_store`).

**The buffer** (`operand_type`): one tile per warp group of the partition,
`G x rows x K` (a warp group's rows and the dot's K), swizzled like a slot
of the same row bytes (`slot_swizzle`): 4 KiB per warp group for a 64x64
fp8 P, 8 KiB for 64x128.  It is planned after the rings and the epilogue's
staging (`tawa-hopper-pipeline` counts it when it picks the ring depth).

**The barrier**: warp group g's own named barrier (`group_barrier(g)`, 128
threads; the TMA-store epilogue's per-warp-group barrier: the same threads,
one after the other).  wgmma reads all of the warp group's rows, written by
all of its threads.

**Transposed A** (a dot whose lhs is `tile.trans` of a K×M tile computed
in registers, or `tile.dot {lhs_transposed}` of one: attention's dSᵀ, whose
transpose times K is a key block's share of dQ): wgmma reads a transposed
(MN-major) A only from shared memory, so the K×M tile is written there as
it is, one row of K per fragment row (the staged operand is the trans's
input: `tile.trans(nvgpu.staged_operand %dst16 via %operand)`), and the dot
reads it through a column-range descriptor (`{columns}`: the M columns of
every K row) with `lhs_transposed` on the wgmma, as it reads a K×M slot.  Every one of the K rows
feeds every output row, so one warp group must hold them all: a partition
of more warp groups is a located error.

**B computed in registers** (a dot whose rhs is a 16-bit K×N tile computed
in registers, e.g. attention backward's dSᵀ in dQᵀ = Kᵀ·dSᵀ, whose K rows
are the partition's rows): wgmma reads B from shared memory only, and each
warp group's product needs all K rows, so the buffer is the whole K×N
tile (`1 x K x N`), each warp group writes its own rows there, and the
dot reads it as it reads a K×N slot.  The barrier is then the consumer
partition's (`EPILOGUE_BARRIER`, all of its threads): once after the
writes, and where there are several warp groups once before them (every
warp group's wgmma of the previous instance was waited for: a loop's dot
waits at once, so a warp group that arrives has finished reading).  That
first sync is not needed where two buffers alternate (`2 x K x N`): when
the dot's block reads a slot of a ring of an even depth that nothing else
reads (`alternating_stage`: attention backward's dO slot), consecutive
instances read slots of alternating parity and write the buffer of that
parity; a warp group that writes instance i + 2 has passed instance i + 1's
second sync, which every warp group reaches after its wgmma of instance i
was waited for.  (Where that slot's op is gone by the time the dot is
lowered, the buffer of parity 0 and the first sync: correct, one sync
more.)  The rhs's rows must be the partition's rows (a located error
otherwise), it is read as K×N only (not `trans_b`), and its dot waits at
once (`tile.dot`: an overlapped dot's buffer could be overwritten before
its wait).

**Reuse**: the buffer is written again only at the dot's next instance.
Every earlier wgmma that read it was waited for before then: a loop's dot
waits at once (`tile.dot`), and an overlapped loop (`tawa-overlap-dots`)
waits for its tail before it rescales the accumulator the next tail adds to.
The CPU simulator reads a wgmma's shared-memory operands when the wgmma is
waited for, so an overwrite before that shows up as a wrong result.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.analysis.smem_plan import extend_plan, slot_swizzle
from tawa.dialects import aref, nvgpu, tile
from tawa.dialects.aref import PartitionRole
from tawa.target.hopper import MAX_SMEM_BYTES, THREADS_PER_GROUP, WARPS_PER_GROUP
from tawa.transforms.lower.tma_epilogue import EPILOGUE_BARRIER, group_barrier
from tawa.transforms.partition.warp_groups import group_rows
from tawa.transforms.utils import fail, group_tests, per_group

EIGHT_BIT = Float8E4M3FNType | Float8E5M2Type
"""Element types wgmma takes from shared memory only."""


def transposed_lhs(dot: Operation) -> bool:
    """Whether `dot` reads its lhs transposed (wgmma's MN-major A): it is
    `lhs_transposed` (a K×M lhs), or its lhs is `tile.trans` of a K×M tile."""
    return dot.properties.get("lhs_transposed") is not None or isinstance(dot.operands[0].owner, tile.TransOp)


def _register_tile(value: SSAValue) -> bool:
    """Whether `value` is computed in registers (no slot, not staged yet)."""
    return not isinstance(value.owner, aref.GetOp | nvgpu.SmemTileOp | nvgpu.StagedOperandOp)


def staged_value(dot: Operation) -> SSAValue:
    """What goes to the buffer: the lhs, or for `tile.trans` of a tile, that
    tile (the K×M tile as the fragment holds it)."""
    lhs = dot.operands[0]
    return lhs.owner.input if isinstance(lhs.owner, tile.TransOp) else lhs


def staged_rhs(dot: Operation) -> bool:
    """Whether `dot`'s rhs is an accumulator converted in registers
    (`arith.truncf` of one), which wgmma reads from shared memory only."""
    return isinstance(dot, tile.DotOp | tile.DotAsyncOp) and isinstance(dot.operands[1].owner, arith.TruncFOp)


def staged_operand(dot: Operation) -> bool:
    """Whether `dot`'s lhs is computed in registers (not a slot) in a type
    wgmma cannot read from registers, or read transposed."""
    if not isinstance(dot, tile.DotOp | tile.DotAsyncOp):
        return False
    value = staged_value(dot)
    t = value.type
    et = t.get_element_type() if isinstance(t, TensorType) else getattr(t, "element_type", None)
    return (isinstance(et, EIGHT_BIT) or transposed_lhs(dot)) and _register_tile(value)


def operand_type(dot: tile.DotOp | tile.DotAsyncOp, groups: int, rows: int) -> nvgpu.SmemType:
    """The staging buffer of `dot`'s lhs in a partition of `groups` warp
    groups of `rows` rows each."""
    t = staged_value(dot).type
    assert isinstance(t, TensorType)
    cols, et = t.get_shape()[1], t.get_element_type()  # K, or M for a transposed lhs
    swizzle = slot_swizzle(cols * nvgpu.element_bytes(et))
    return nvgpu.SmemType([groups, rows, cols], et, swizzle or 0)


def rhs_type(dot: tile.DotOp | tile.DotAsyncOp, groups: int, rows: int, who: str) -> nvgpu.SmemType:
    """The buffer of `dot`'s rhs computed in registers: the whole K×N tile,
    whose K rows must be the `groups` warp groups' `rows` each; else a
    located error."""
    t = dot.operands[1].type
    assert isinstance(t, TensorType)
    (k, n), et = t.get_shape(), t.get_element_type()
    if isinstance(dot, tile.DotAsyncOp):
        raise fail(dot, f"{who}: {dot.name} with an rhs computed in registers: its shared buffer is written again "
                   "at the dot's next instance, so the dot must wait at once (tile.dot, not overlapped)")
    transposed = dot.properties.get("rhs_transposed") is not None
    if transposed or k != groups * rows or not isinstance(et, BFloat16Type | Float16Type):
        raise fail(dot, f"{who}: {dot.name} rhs computed in registers: wgmma reads B from shared memory, where "
                   "each warp group writes its own rows of it, so it must be a 16-bit K×N tile (no trans_b) whose "
                   f"K rows are the warp groups' {groups} x {rows}, got {t}{' with trans_b' if transposed else ''}: "
                   "transform the A operand instead (e.g. compute Cᵀ = Bᵀ·Aᵀ), or transform B before the kernel")
    # Two where they alternate; `stage_operands` takes one where two do not fit (the plan of
    # `tawa-hopper-pipeline`, made before the rings are slots, counts one).
    buffers = 2 if groups > 1 and alternating_stage(dot) is not None else 1
    return nvgpu.SmemType([buffers, k, n], et, slot_swizzle(n * nvgpu.element_bytes(et)) or 0)


def alternating_stage(dot: Operation) -> tuple[SSAValue, int] | None:
    """(stage, ring depth) of a ring slot that `dot`'s block reads before it
    from a ring of an even depth that no other op of the partition reads: each
    instance of the dot reads the next slot of that ring, so the stage's
    parity alternates between consecutive instances.  None where there is
    none (before `tawa-lower-aref` there is none: rings are not slots yet)."""
    op = dot.prev_op
    while op is not None:
        if isinstance(op, nvgpu.SmemTileOp):
            t = op.source.type
            assert isinstance(t, nvgpu.SmemType)
            depth = t.get_shape()[0]
            readers = [u.operation for u in op.source.uses if isinstance(u.operation, nvgpu.SmemTileOp)]
            if depth % 2 == 0 and readers == [op]:
                return op.stage, depth
        op = op.prev_op
    return None


def _consumer_dots(ws: aref.WarpSpecializeOp, who: str) -> list[tuple[Operation, int, nvgpu.SmemType]]:
    """(dot, operand index, buffer type) of each operand the consumers of
    `ws` compute in registers that wgmma reads from shared memory."""
    out = []
    for role, warps, _, region in ws.partition_specs():
        if role != PartitionRole.CONSUMER:
            continue
        dots = [o for o in region.walk() if staged_operand(o) or staged_rhs(o)]
        if dots:
            groups = warps // WARPS_PER_GROUP
            for d in dots:
                if staged_operand(d) and transposed_lhs(d) and groups != 1:
                    raise fail(d, f"{who}: a transposed lhs computed in registers is read by wgmma from shared "
                               f"memory, all of its K rows by each warp group, but {groups} warp groups hold them "
                               "here: give the consumer one warp group (a 64-row tile), or compute the transposed "
                               "product, whose B operand may be such a tile")
            rows = group_rows(region, groups, who)
            for d in dots:
                if staged_operand(d):
                    out.append((d, 0, operand_type(d, groups, rows)))
                if staged_rhs(d):
                    out.append((d, 1, rhs_type(d, groups, rows, who)))
    return out


def operand_types(ws: aref.WarpSpecializeOp, who: str) -> list[nvgpu.SmemType]:
    """The staging buffers the consumers of `ws` will need (for the
    shared-memory plan of `tawa-hopper-pipeline`)."""
    return [t for _, _, t in _consumer_dots(ws, who)]


def stage_operands(ws: aref.WarpSpecializeOp, kernel: func.FuncOp, who: str) -> int:
    """Allocates, before `ws` and after the kernel's other shared memory,
    one buffer per dot whose lhs needs it, and gives the dot its lhs
    through an `nvgpu.staged_operand` that names the buffer; returns how
    many.  Too much shared memory in all: a located error."""
    wanted = _consumer_dots(ws, who)
    if not wanted:
        return 0
    allocs = [o for o in kernel.body.block.ops if isinstance(o, nvgpu.SmemAllocOp)]
    plan = extend_plan(allocs, [t for _, _, t in wanted])
    if not plan.fits:  # one buffer where two would alternate (and a barrier more)
        wanted = [(d, i, nvgpu.SmemType([1, *t.get_shape()[1:]], t.element_type, t.swizzle.data) if i else t)
                  for d, i, t in wanted]
        plan = extend_plan(allocs, [t for _, _, t in wanted])
    if not plan.fits:
        raise fail(wanted[0][0], f"{who}: the shared-memory buffers of the {wanted[0][2].element_type} operands "
                   f"computed in registers (wgmma reads 8-bit and transposed A operands and every B operand from "
                   f"shared memory only) bring the kernel to {plan.total} bytes, more than the {MAX_SMEM_BYTES} a "
                   "block may use: use fewer stages")
    for (dot, index, t), placed in zip(wanted, plan.staging, strict=True):
        buf = nvgpu.SmemAllocOp(placed.offset, t)
        buf.result.name_hint = "operand"
        Rewriter.insert_op(buf, InsertPoint.before(ws))
        assert isinstance(dot, tile.DotOp | tile.DotAsyncOp)
        if index == 1:
            _stage(dot, 1, dot.operands[1], buf.result)
            continue
        value = staged_value(dot)
        direct = value is dot.lhs
        staged = _stage(dot, 0 if direct else None, value, buf.result)
        if not direct:  # the dot's own tile.trans of the staged tile (tawa-lower-tile reads it as one op)
            trans = dot.lhs.owner
            mine = tile.TransOp.build(operands=[staged.result], result_types=[dot.lhs.type])
            Rewriter.insert_op(mine, InsertPoint.before(dot))
            dot.operands[0] = mine.results[0]
            if not trans.results[0].uses:
                Rewriter.erase_op(trans)
    nvgpu.record_kernel_info(kernel, smem=plan.total)
    return len(wanted)


def _stage(dot: Operation, index: int | None, value: SSAValue, buffer: SSAValue) -> nvgpu.StagedOperandOp:
    """Inserts `nvgpu.staged_operand` of `value` via `buffer` before `dot`,
    which takes it as operand `index` (None: the caller rewires it)."""
    staged = nvgpu.StagedOperandOp(value, buffer)
    staged.location = dot.location
    staged.result.name_hint = f"{value.name_hint}_staged" if value.name_hint else "staged"
    Rewriter.insert_op(staged, InsertPoint.before(dot))
    if index is not None:
        dot.operands[index] = staged.result
    return staged


def emit_rhs_store(dot: Operation, value: SSAValue, buffer: SSAValue, row0: SSAValue, groups: int,
                   at: InsertPoint) -> nvgpu.WgmmaDescriptorOp:
    """Writes this warp group's rows (from `row0`) of the K×N fragment
    `value` (converted to the buffer's type) to the whole-tile `buffer`
    (of `dot`'s rhs), between the consumer partition's barriers (module
    docstring, "B computed in registers"), and returns the descriptor of
    the whole K×N tile, read as a slot's."""
    ft, bt = value.type, buffer.type
    assert isinstance(ft, nvgpu.FragmentType) and isinstance(bt, nvgpu.SmemType)
    ops: list[Operation] = []
    if ft.element_type != bt.element_type:
        conv = nvgpu.FragmentConvertOp.build(operands=[value], result_types=[ft.with_element_type(bt.element_type)])
        ops.append(conv)
        value = conv.result
    zero = arith.ConstantOp.from_int_and_width(0, row0.type)
    ops.append(zero)
    index = zero.result
    threads = groups * THREADS_PER_GROUP
    found = alternating_stage(dot) if bt.get_shape()[0] == 2 else None
    if found is not None:  # the buffer of this instance's parity: the previous instance read the other
        stage, depth = found
        if depth > 2:
            two = arith.ConstantOp.from_int_and_width(2, stage.type)
            parity = arith.RemUIOp(stage, two.result)
            ops += [two, parity]
            index = parity.result
        else:
            index = stage
    elif groups > 1:  # every warp group done reading the previous instance
        ops.append(nvgpu.NamedBarrierSyncOp(EPILOGUE_BARRIER, threads))
    desc = nvgpu.WgmmaDescriptorOp.build(
        operands=[buffer, index, zero.result],
        result_types=[nvgpu.WgmmaDescriptorType(bt.get_shape()[1:], bt.element_type, bt.swizzle.data)],
    )
    ops += [nvgpu.FragmentStoreSharedOp.build(operands=[value, buffer, index, row0]),
            nvgpu.FenceProxyAsyncOp(), nvgpu.NamedBarrierSyncOp(EPILOGUE_BARRIER, threads), desc]
    Rewriter.insert_op(ops, at)
    return desc


def emit_operand_store(value: SSAValue, buffer: SSAValue, group: SSAValue, groups: int,
                       at: InsertPoint, transposed: bool = False) -> nvgpu.WgmmaDescriptorOp:
    """Writes this warp group's fragment `value` (converted to the buffer's
    type) to its tile of `buffer`, makes it visible to wgmma, waits for the
    warp group's other threads, and returns the descriptor to read it by
    (module docstring): K-major rows×K, or with `transposed` the K×M tile's
    M columns (`{columns}`, wgmma's MN-major A).  `group` is the warp
    group's index among the partition's `groups`."""
    ft, bt = value.type, buffer.type
    assert isinstance(ft, nvgpu.FragmentType) and isinstance(bt, nvgpu.SmemType)
    if ft.element_type != bt.element_type:
        conv = nvgpu.FragmentConvertOp.build(operands=[value], result_types=[ft.with_element_type(bt.element_type)])
        Rewriter.insert_op(conv, at)
        value = conv.result
    zero = arith.ConstantOp.from_int_and_width(0, group.type)
    Rewriter.insert_op(zero, at)
    barrier: Operation
    if groups == 1:
        barrier = nvgpu.NamedBarrierSyncOp(group_barrier(0), THREADS_PER_GROUP)
    else:
        barrier = per_group(group_tests(group, groups, at),
                            [[nvgpu.NamedBarrierSyncOp(group_barrier(g), THREADS_PER_GROUP)] for g in range(groups)])
    rows, cols = bt.get_shape()[1:]
    desc = nvgpu.WgmmaDescriptorOp.build(
        operands=[buffer, group, zero.result],
        result_types=[nvgpu.WgmmaDescriptorType([rows, cols], bt.element_type, bt.swizzle.data)],
        properties={"columns": UnitAttr()} if transposed else {},
    )
    Rewriter.insert_op([
        nvgpu.FragmentStoreSharedOp.build(operands=[value, buffer, group, zero.result]),
        nvgpu.FenceProxyAsyncOp(),
        barrier,
        desc,
    ], at)
    return desc
