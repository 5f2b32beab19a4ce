"""`tawa-lower-aref`: arefs become shared-memory rings guarded by mbarriers.

For every aref of depth D and payload tiles T1..Tn:

* each Ti gets a `D x Ti` buffer in shared memory, 1024-byte aligned and
  128B-swizzled (the layout TMA writes and wgmma reads);
* a `full` and an `empty` array of D mbarriers: `full[s]` expects one arrival
  (the producer's `arrive.expect_tx`) plus the bytes of all n TMA boxes;
  `empty[s]` expects one arrival per consumer warp group;
* thread 0 initialises the barriers, fences them (mbarrier-init and proxy
  fences), and one CTA-wide barrier follows, before the roles split.

Inside the partitions every put, get and release counts its aref's uses
(counters threaded through loops and ifs); use n goes to stage n mod D with
phase (n / D) & 1:

* `aref.put` of loads: wait `empty[s]` with parity phase ^ 1 (a fresh barrier
  passes), `arrive.expect_tx` on `full[s]`, one TMA load per tile into stage s;
* `aref.get`: wait `full[s]` with parity phase; the values become
  `nvgpu.smem_tile` views of stage s;
* `aref.consumed`: one thread per consumer warp group arrives on `empty[s]`.

The producer's partition body runs on one thread (thread 0 of its warp
group), since TMA and barrier arrivals are issued by one thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, TensorType, i32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.diagnostics import TawaError, location_of

from tawa.dialects import aref, nvgpu, tile

# H100: 227 KB of shared memory per block (opt-in maximum).
MAX_SMEM_BYTES = 232448
# The dynamic shared memory base is only 16-byte aligned; the kernel rounds it
# up to 1024 bytes and asks for this much slack.
SMEM_ALIGN_SLACK = 1024
SWIZZLE = 128
PRODUCER = "producer"
SMEM_TOO_BIG = "use fewer stages"


def fail(op: Operation | None, message: str) -> TawaError:
    """A one-line error located at `op` (or its closest located ancestor)."""
    where = location_of(op) if op is not None else None
    return TawaError(message, where or "tawa-opt")


def const(value: int, at: InsertPoint, type: Attribute | None = None) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, IndexType() if type is None else type))
    Rewriter.insert_op(c, at)
    return c.result


@dataclass
class Ring:
    """The shared-memory form of one aref."""

    depth: int
    buffers: list[SSAValue]
    tiles: list[TensorType]
    full: SSAValue
    empty: SSAValue
    tx_bytes: int


@dataclass
class SmemPlan:
    """Bump allocation of the kernel's dynamic shared memory."""

    next_offset: int = 0
    ops: list[Operation] = field(default_factory=list)

    def alloc(self, t: nvgpu.SmemType | nvgpu.MBarrierType) -> SSAValue:
        op = nvgpu.SmemAllocOp(0, t)
        align = op.alignment()
        offset = -(-self.next_offset // align) * align
        op = nvgpu.SmemAllocOp(offset, t)
        self.next_offset = offset + op.num_bytes()
        self.ops.append(op)
        return op.result


def _ring_for(create: aref.CreateOp, plan: SmemPlan) -> Ring:
    t = create.result.type
    assert isinstance(t, aref.ArefType)
    depth = t.depth.data
    buffers, tiles, tx = [], [], 0
    for payload in t.types:
        assert isinstance(payload, TensorType)
        shape = tuple(payload.get_shape())
        et = payload.get_element_type()
        row_bytes = shape[-1] * nvgpu.element_bytes(et)
        if len(shape) != 2 or row_bytes % SWIZZLE:
            raise fail(
                create,
                f"tawa-lower-aref: a {payload} slot is not supported yet: tiles must be 2-D with "
                f"rows of a multiple of {SWIZZLE} bytes (128B-swizzle spans)",
            )
        smem = nvgpu.SmemType([depth, *shape], et, SWIZZLE)
        buffers.append(plan.alloc(smem))
        tiles.append(payload)
        tx += smem.num_bytes() // depth
    full = plan.alloc(nvgpu.MBarrierType(depth))
    empty = plan.alloc(nvgpu.MBarrierType(depth))
    return Ring(depth, buffers, tiles, full, empty, tx)


class CounterThreading:
    """Numbers every use of every aref in one partition: each put/get/release
    learns its use count as an SSA value (counters are threaded through
    `scf.for` iter_args and `scf.if` results)."""

    KINDS = {aref.PutOp: "put", aref.GetOp: "get", aref.ConsumedOp: "release"}

    def __init__(self) -> None:
        self.count_of: dict[Operation, SSAValue] = {}

    def run(self, block: Block) -> None:
        zero = const(0, InsertPoint.at_start(block))
        keys = self._keys(block)
        self._block(block, {k: zero for k in keys})

    def _keys(self, node: Block | Region | Operation) -> list[tuple[SSAValue, str]]:
        ops: Iterable[Operation] = node.walk()
        keys: dict[tuple[SSAValue, str], None] = {}
        for op in ops:
            if type(op) in self.KINDS:
                keys[(op.operands[0], self.KINDS[type(op)])] = None
        return list(keys)

    def _block(self, block: Block, counts: dict) -> dict:
        for op in list(block.ops):
            if type(op) in self.KINDS:
                key = (op.operands[0], self.KINDS[type(op)])
                self.count_of[op] = counts[key]
                inc = arith.AddiOp(counts[key], const(1, InsertPoint.before(op)))
                Rewriter.insert_op(inc, InsertPoint.before(op))
                counts = {**counts, key: inc.result}
            elif isinstance(op, scf.ForOp) and (keys := self._keys(op)):
                counts = self._for(op, keys, counts)
            elif isinstance(op, scf.IfOp) and (keys := self._keys(op)):
                counts = self._if(op, keys, counts)
            elif op.regions and self._keys(op):
                raise fail(op, f"tawa-lower-aref: aref ops inside '{op.name}' are not supported")
        return counts

    def _for(self, loop: scf.ForOp, keys: list, counts: dict) -> dict:
        body = loop.body.block
        n_old = len(loop.iter_args)
        args = [body.insert_arg(IndexType(), len(body.args)) for _ in keys]
        inner = self._block(body, {**counts, **dict(zip(keys, args))})
        old_yield = body.last_op
        assert isinstance(old_yield, scf.YieldOp)
        Rewriter.replace_op(old_yield, scf.YieldOp(*old_yield.operands, *(inner[k] for k in keys)))
        new_loop = scf.ForOp(
            loop.lb, loop.ub, loop.step, [*loop.iter_args, *(counts[k] for k in keys)],
            loop.detach_region(loop.body),
        )
        Rewriter.insert_op(new_loop, InsertPoint.before(loop))
        for old, new in zip(loop.results, new_loop.results[:n_old]):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(loop)
        return {**counts, **dict(zip(keys, new_loop.results[n_old:]))}

    def _if(self, op: scf.IfOp, keys: list, counts: dict) -> dict:
        n_old = len(op.results)
        regions = [op.detach_region(r) for r in list(op.regions)]
        if len(regions) == 1:
            regions.append(Region())
        for region in regions:
            if not region.blocks:
                region.add_block(Block([scf.YieldOp()]))
            blk = region.block
            inner = self._block(blk, dict(counts))
            y = blk.last_op
            assert isinstance(y, scf.YieldOp)
            Rewriter.replace_op(y, scf.YieldOp(*y.operands, *(inner[k] for k in keys)))
        new_if = scf.IfOp(
            op.cond, [*(r.type for r in op.results), *(IndexType() for _ in keys)], *regions
        )
        Rewriter.insert_op(new_if, InsertPoint.before(op))
        for old, new in zip(op.results, new_if.results[:n_old]):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(op)
        return {**counts, **dict(zip(keys, new_if.results[n_old:]))}


def stage_and_phase(count: SSAValue, depth: int, at: InsertPoint) -> tuple[SSAValue, SSAValue]:
    """Stage `count mod depth` and phase `(count / depth) & 1`, computed in
    32 bits: a 64-bit division by a depth that is not a power of two is a
    subroutine call on the GPU, a 32-bit one by a constant is a multiply.
    (Counts stay far below 2^32: one per k-step of a CTA.)"""
    c32 = arith.IndexCastOp(count, i32)
    d = arith.ConstantOp(IntegerAttr(depth, i32))
    one = arith.ConstantOp(IntegerAttr(1, i32))
    stage32 = arith.RemUIOp(c32.result, d.result)
    rnd = arith.DivUIOp(c32.result, d.result)
    phase32 = arith.AndIOp(rnd.result, one.result)
    stage = arith.IndexCastOp(stage32.result, IndexType())
    phase = arith.IndexCastOp(phase32.result, IndexType())
    Rewriter.insert_op([c32, d, one, stage32, rnd, phase32, stage, phase], at)
    stage.result.name_hint, phase.result.name_hint = "stage", "phase"
    return stage.result, phase.result


@dataclass(frozen=True)
class LowerArefPass(ModulePass):
    """Lowers arefs to shared-memory rings with full/empty mbarriers and TMA loads."""

    name = "tawa-lower-aref"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            self._lower(ws)

    def _lower(self, ws: aref.WarpSpecializeOp) -> None:
        kernel = ws.parent_op()
        if not isinstance(kernel, func.FuncOp):
            raise fail(ws, "tawa-lower-aref: aref.warp_specialize must be at the top of a kernel")
        specs = ws.partition_specs()
        consumer_groups = sum(w // 4 for role, w, _, _ in specs if role != PRODUCER)
        plan = SmemPlan()
        creates = [o for o in kernel.body.block.ops if isinstance(o, aref.CreateOp)]
        rings = {c.result: _ring_for(c, plan) for c in creates}
        total = plan.next_offset + SMEM_ALIGN_SLACK
        if total > MAX_SMEM_BYTES:
            raise fail(
                kernel,
                f"tawa-lower-aref: the aref rings need {total} bytes of shared memory, more than "
                f"the {MAX_SMEM_BYTES} a block may use; {SMEM_TOO_BIG}",
            )
        entry = InsertPoint.before(ws)
        Rewriter.insert_op(plan.ops, entry)
        kernel.attributes["nvgpu.smem_bytes"] = IntegerAttr(total, 32)
        self._init_barriers(rings, consumer_groups, sum(w for _, w, _, _ in specs) * 32, entry)
        tmaps: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}
        for role, _, _, region in specs:
            threading = CounterThreading()
            threading.run(region.block)
            for o in list(region.walk()):
                if o in threading.count_of:
                    self._lower_op(o, threading.count_of[o], rings, tmaps, entry)
        for c in creates:
            Rewriter.erase_op(c)

    def _init_barriers(self, rings: dict, consumer_groups: int, threads: int, at: InsertPoint) -> None:
        tid = nvgpu.ThreadIdOp()
        Rewriter.insert_op(tid, at)
        is_first = arith.CmpiOp(tid.result, const(0, at), "eq")
        Rewriter.insert_op(is_first, at)
        body = Block()
        for ring in rings.values():
            for s in range(ring.depth):
                idx = arith.ConstantOp(IntegerAttr(s, IndexType()))
                body.add_ops([
                    idx,
                    nvgpu.MBarrierInitOp.build(operands=[ring.full, idx.result], properties={"count": IntegerAttr(1, 32)}),
                    nvgpu.MBarrierInitOp.build(
                        operands=[ring.empty, idx.result], properties={"count": IntegerAttr(consumer_groups, 32)}
                    ),
                ])
        body.add_ops([nvgpu.FenceMBarrierInitOp(), nvgpu.FenceProxyAsyncOp(), scf.YieldOp()])
        Rewriter.insert_op(scf.IfOp(is_first.result, [], Region(body)), at)
        Rewriter.insert_op(
            nvgpu.NamedBarrierSyncOp.build(
                properties={"barrier_id": IntegerAttr(0, 32), "num_threads": IntegerAttr(threads, 32)}
            ),
            at,
        )

    def _lower_op(self, op: Operation, count: SSAValue, rings: dict, tmaps: dict, entry: InsertPoint) -> None:
        ring: Ring = rings[op.operands[0]]
        at = InsertPoint.before(op)
        stage, phase = stage_and_phase(count, ring.depth, at)
        if isinstance(op, aref.PutOp):
            flipped = arith.XOrIOp(phase, const(1, at))
            Rewriter.insert_op(flipped, at)
            Rewriter.insert_op([
                nvgpu.MBarrierWaitParityOp.build(operands=[ring.empty, stage, flipped.result]),
                nvgpu.MBarrierArriveExpectTxOp.build(
                    operands=[ring.full, stage], properties={"bytes": IntegerAttr(ring.tx_bytes, 32)}
                ),
            ], at)
            for value, buf in zip(op.operands[1:], ring.buffers, strict=True):
                load = value.owner
                if not isinstance(load, tile.LoadOp) or load.parent_block() is not op.parent_block():
                    raise fail(op, "tawa-lower-aref: aref.put needs values loaded by tile.load in the same block")
                desc = self._tma_descriptor(load, buf, tmaps, entry)
                Rewriter.insert_op(
                    nvgpu.TmaLoadOp.build(operands=[desc, list(load.offsets), buf, stage, ring.full, stage]), at
                )
            loads = [v.owner for v in op.operands[1:]]
            Rewriter.erase_op(op)
            for load in loads:
                assert isinstance(load, tile.LoadOp)
                if load.result.uses:
                    raise fail(load, "tawa-lower-aref: a loaded tile that travels through an aref has other uses")
                Rewriter.erase_op(load)
            return
        if isinstance(op, aref.GetOp):
            Rewriter.insert_op(nvgpu.MBarrierWaitParityOp.build(operands=[ring.full, stage, phase]), at)
            views = [
                nvgpu.SmemTileOp.build(operands=[buf, stage], result_types=[t])
                for buf, t in zip(ring.buffers, ring.tiles, strict=True)
            ]
            Rewriter.insert_op(views, at)
            for old, view in zip(op.values, views, strict=True):
                view.result.name_hint = old.name_hint
                old.replace_all_uses_with(view.result)
            Rewriter.erase_op(op)
            return
        assert isinstance(op, aref.ConsumedOp)
        # One elected thread (thread 0 of each consumer warp group) arrives.
        tid = nvgpu.ThreadIdOp()
        lane = arith.RemUIOp(tid.result, const(128, at))
        leader = arith.CmpiOp(lane.result, const(0, at), "eq")
        Rewriter.insert_op([tid, lane, leader], at)
        then = Block()
        then.add_ops([nvgpu.MBarrierArriveOp.build(operands=[ring.empty, stage]), scf.YieldOp()])
        Rewriter.insert_op(scf.IfOp(leader.result, [], Region(then)), at)
        Rewriter.erase_op(op)

    def _tma_descriptor(self, load: tile.LoadOp, buf: SSAValue, tmaps: dict, entry: InsertPoint) -> SSAValue:
        src = load.source
        mt = src.type
        bt = buf.type
        assert isinstance(mt, MemRefType) and isinstance(bt, nvgpu.SmemType)
        tile_shape = bt.get_shape()[1:]
        box = (1,) * (mt.get_num_dims() - len(tile_shape)) + tuple(tile_shape)
        key = (src, box)
        if key not in tmaps:
            d = nvgpu.TmaDescriptorOp.build(
                operands=[src], result_types=[nvgpu.TmaDescriptorType(box, bt.element_type, SWIZZLE)]
            )
            d.result.name_hint = f"tmap_{src.name_hint}" if src.name_hint else None
            Rewriter.insert_op(d, entry)
            tmaps[key] = d.result
        return tmaps[key]
