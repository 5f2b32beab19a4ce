"""`tawa-lower-aref`: arefs become shared-memory rings guarded by mbarriers.

Runs after `tawa-assign-stage-phase`, which gives every put, get and release
its ring slot (`%r[%stage, %phase]`).  For every aref of depth D and payload
tiles T1..Tn:

* **the plan** (an analysis, `tawa.analysis.smem_plan`): each Ti gets a
  `D x Ti` buffer in shared memory, swizzled with the widest of 128B, 64B
  and 32B that divides its rows and aligned to that pattern (the layout TMA
  writes and wgmma reads; the TMA descriptors take the buffer's swizzle),
  then a `full` and an `empty` array of D mbarriers.  This pass allocates
  them where the plan says and fails with the size when the plan does not
  fit;
* **barrier setup** (once per kernel): `full[s]` expects one arrival (the
  producer's `arrive.expect_tx`) plus the bytes of all n TMA boxes;
  `empty[s]` expects one arrival per consumer warp group; thread 0
  initialises them, fences them (mbarrier-init and proxy fences), and one
  CTA-wide barrier follows, before the roles split;
* **one `RewritePattern` per aref op**, on its slot:
  - `aref.put` of loads: wait `empty[stage]` with parity phase ^ 1 (a fresh
    barrier passes), `arrive.expect_tx` on `full[stage]`, one TMA load per
    tile into the stage (the loads are erased; their memrefs get TMA
    descriptors);
  - `aref.get`: wait `full[stage]` with parity phase; the values become
    `nvgpu.smem_tile` views of the stage;
  - `aref.consumed`: one thread per consumer warp group arrives on
    `empty[stage]`;
* **slot views carried by control flow** (`tawa.transforms.lower.slot_views`): a view
  that an `scf.for` carries to its next iteration or an `scf.if` yields
  is carried as its stage index, and the view is made again where it
  arrives, so that every view the dots read is an `nvgpu.smem_tile` of a
  ring buffer.

The producer's partition body later runs on one thread (thread 0 of its warp
group, `tawa-materialize-partitions`), since TMA and barrier arrivals are
issued by one thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, TensorType
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.analysis.smem_plan import plan_shared_memory
from tawa.dialects import aref, nvgpu, tile
from tawa.dialects.aref import PartitionRole
from tawa.target.hopper import MAX_SMEM_BYTES, THREADS_PER_GROUP, THREADS_PER_WARP, WARPS_PER_GROUP
from tawa.transforms.lower.slot_views import arrivals, carry_slot_views
from tawa.transforms.pipeline.cache_hints import L2_HINT
from tawa.transforms.pipeline.cluster import MULTICAST, multicast_loads
from tawa.transforms.utils import InheritLocation, const, fail, guarded, kernel_of

NAME = "tawa-lower-aref"
SlotOp = aref.PutOp | aref.GetOp | aref.ConsumedOp


@dataclass
class Ring:
    """The shared-memory form of one aref, as SSA values of the kernel."""

    depth: int
    buffers: list[SSAValue]
    tiles: list[TensorType]
    full: SSAValue
    empty: SSAValue
    tx_bytes: int
    read_by_threads: bool = False
    """Some tile of a slot is used by something other than a dot (math on a
    delivered tile): the consumer threads read it themselves, so every one
    of them releases the slot — an elected thread's arrival would not cover
    the other warps' reads, which a wgmma's completion does."""
    cluster: int = 1
    """CTAs whose TMA loads write a slot (`tawa-cluster`: the ring carries a
    multicast tile): each of their consumers releases it on all of them."""


@dataclass
class Rings:
    """What the patterns share: the rings of the arefs, TMA descriptors made
    so far (one per memref and box), and where kernel-level ops go."""

    of: dict[SSAValue, Ring]
    entry: InsertPoint
    tmaps: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = field(default_factory=dict)
    rank: SSAValue | None = None
    """The CTA's rank in its cluster (clustered kernels)."""
    bands: dict[SSAValue, tuple[SSAValue, SSAValue]] = field(default_factory=dict)
    """Per multicast buffer: its view as `D·N` bands of `rows / N` rows, and
    the first row of this CTA's band (rank · rows / N)."""

    def band(self, buf: SSAValue, cluster: int) -> tuple[SSAValue, SSAValue]:
        """The band view of ring buffer `buf` and this CTA's first row in a
        tile (`bands`), made at the kernel's entry on first use."""
        if buf not in self.bands:
            alloc = buf.owner
            t = buf.type
            assert isinstance(alloc, nvgpu.SmemAllocOp) and isinstance(t, nvgpu.SmemType) and self.rank is not None
            stages, rows, *rest = t.get_shape()
            view = nvgpu.SmemAllocOp(alloc.offset.value.data,
                                     nvgpu.SmemType((stages * cluster, rows // cluster, *rest), t.element_type,
                                                    t.swizzle.data))
            row0 = arith.MuliOp(self.rank, const(rows // cluster, self.entry))
            Rewriter.insert_op([view, row0], self.entry)
            view.result.name_hint = f"{buf.name_hint}_bands" if buf.name_hint else "bands"
            row0.result.name_hint = "band_row0"
            self.bands[buf] = (view.result, row0.result)
        return self.bands[buf]

    def slot(self, op: SlotOp) -> tuple[Ring, SSAValue, SSAValue]:
        assert op.stage is not None and op.phase is not None  # checked by the pass
        return self.of[op.aref], op.stage, op.phase


@dataclass
class LowerPut(RewritePattern):
    rings: Rings

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aref.PutOp, rewriter: PatternRewriter) -> None:
        ring, stage, phase = self.rings.slot(op)
        at = InsertPoint.before(op)
        loads = []
        for value in op.values:
            load = value.owner
            if not isinstance(load, tile.LoadOp) or load.parent_block() is not op.parent_block():
                raise fail(op, f"{NAME}: aref.put needs values loaded by tile.load in the same block")
            if load.result.uses.get_length() > 1:
                raise fail(load, f"{NAME}: a loaded tile that travels through an aref has other uses")
            loads.append(load)
        flipped = arith.XOrIOp(phase, const(1, at))
        rewriter.insert([
            flipped,
            nvgpu.MBarrierWaitParityOp.build(operands=[ring.empty, stage, flipped.result]),
            nvgpu.MBarrierArriveExpectTxOp.build(
                operands=[ring.full, stage], properties={"bytes": IntegerAttr(ring.tx_bytes, 32)}
            ),
        ], at)
        for load, buf in zip(loads, ring.buffers, strict=True):
            hint = load.attributes.get(L2_HINT)  # tawa-cache-hints
            props = {"l2": hint} if hint is not None else {}
            if MULTICAST in load.attributes:  # tawa-cluster: this CTA's band, to every CTA
                dest, row0 = self.rings.band(buf, ring.cluster)
                *outer, row, col = load.offsets
                band_stage = arith.MuliOp(stage, const(ring.cluster, at))
                band = arith.AddiOp(band_stage.result, self.rings.rank)
                band_row = arith.AddiOp(row, row0)
                rewriter.insert([band_stage, band, band_row], at)
                coords, dest_stage = [*outer, band_row.result, col], band.result
                props["multicast"] = IntegerAttr((1 << ring.cluster) - 1, 16)
            else:
                dest, coords, dest_stage = buf, list(load.offsets), stage
            desc = self._tma_descriptor(load, dest)
            rewriter.insert(
                nvgpu.TmaLoadOp.build(operands=[desc, coords, dest, dest_stage, ring.full, stage],
                                      properties=props), at
            )
        rewriter.erase(op)
        for load in loads:
            rewriter.erase(load)

    def _tma_descriptor(self, load: tile.LoadOp, buf: SSAValue) -> SSAValue:
        src = load.source
        mt, bt = src.type, buf.type
        assert isinstance(mt, MemRefType) and isinstance(bt, nvgpu.SmemType)
        tile_shape = bt.get_shape()[1:]
        box = (1,) * (mt.get_num_dims() - len(tile_shape)) + tuple(tile_shape)
        key = (src, box)
        if key not in self.rings.tmaps:
            d = nvgpu.TmaDescriptorOp.build(
                operands=[src], result_types=[nvgpu.TmaDescriptorType(box, bt.element_type, bt.swizzle.data)]
            )
            d.result.name_hint = f"tmap_{src.name_hint}" if src.name_hint else None
            Rewriter.insert_op(d, self.rings.entry)
            self.rings.tmaps[key] = d.result
        return self.rings.tmaps[key]


@dataclass
class LowerGet(RewritePattern):
    rings: Rings

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aref.GetOp, rewriter: PatternRewriter) -> None:
        ring, stage, phase = self.rings.slot(op)
        wait = nvgpu.MBarrierWaitParityOp.build(operands=[ring.full, stage, phase])
        views = [
            nvgpu.SmemTileOp.build(operands=[buf, stage], result_types=[t])
            for buf, t in zip(ring.buffers, ring.tiles, strict=True)
        ]
        for old, view in zip(op.values, views, strict=True):
            view.result.name_hint = old.name_hint
        rewriter.replace(op, [wait, *views], [v.result for v in views])


@dataclass
class LowerConsumed(RewritePattern):
    rings: Rings

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aref.ConsumedOp, rewriter: PatternRewriter) -> None:
        ring, stage, _ = self.rings.slot(op)
        at = InsertPoint.before(op)
        if ring.cluster == 1:
            arrives = [nvgpu.MBarrierArriveOp.build(operands=[ring.empty, stage, []])]
        else:  # on every CTA whose loads write the slot (tawa-cluster)
            arrives = [nvgpu.MBarrierArriveOp.build(operands=[ring.empty, stage, const(r, at)])
                       for r in range(ring.cluster)]
        if ring.read_by_threads:
            # Every consumer thread arrives, after a proxy fence: its
            # generic-proxy reads of the slot come before the producer's next
            # TMA write into it (an async-proxy access).
            rewriter.replace(op, [nvgpu.FenceProxyAsyncOp(), *arrives], [])
            return
        # One elected thread (thread 0 of each consumer warp group) arrives:
        # the wgmma that read the slot has completed for the whole warp group.
        tid = nvgpu.ThreadIdOp()
        lane = arith.RemUIOp(tid.result, const(THREADS_PER_GROUP, at))
        leader = arith.CmpiOp(lane.result, const(0, at), "eq")
        rewriter.replace(op, [tid, lane, leader, guarded(leader.result, arrives)], [])


def _read_by_threads(ws: aref.WarpSpecializeOp, ref: SSAValue) -> bool:
    """Whether a value some `aref.get` of `ref` returns has a use other than
    as a dot operand, where it arrives through the `scf.for` and `scf.if`
    that carry it (see `Ring.read_by_threads`)."""
    for get in ws.walk():
        if isinstance(get, aref.GetOp) and get.aref is ref:
            for v in get.values:
                for use in arrivals(v):
                    if not (isinstance(use.operation, tile.DotOp | tile.DotAsyncOp) and use.index < 2):
                        return True
    return False


@dataclass(frozen=True)
class LowerArefPass(ModulePass):
    """Lowers arefs to shared-memory rings with full/empty mbarriers and TMA loads."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            self._lower(ws)

    def _lower(self, ws: aref.WarpSpecializeOp) -> None:
        kernel = kernel_of(ws, NAME)
        for o in ws.walk():
            if isinstance(o, SlotOp) and not o.has_slot():
                raise fail(o, f"{NAME}: {o.name} has no stage and phase; run tawa-assign-stage-phase first")
        specs = ws.partition_specs()
        creates = [o for o in kernel.body.block.ops if isinstance(o, aref.CreateOp)]
        plan = plan_shared_memory(creates, who=NAME)
        if not plan.fits:
            raise fail(
                kernel,
                f"{NAME}: the aref rings need {plan.total} bytes of shared memory, more than "
                f"the {MAX_SMEM_BYTES} a block may use; use fewer stages",
            )
        entry = InsertPoint.before(ws)
        cluster = nvgpu.kernel_info(kernel).cluster
        shared_rings = {o.aref for o in ws.walk() if isinstance(o, aref.PutOp) and multicast_loads(list(o.values))}
        rings: dict[SSAValue, Ring] = {}
        for create, layout in plan.rings.items():
            allocs = [nvgpu.SmemAllocOp(p.offset, p.type) for p in (*layout.buffers, layout.full, layout.empty)]
            Rewriter.insert_op(allocs, entry)
            values = [a.result for a in allocs]
            rings[create.result] = Ring(
                layout.depth, values[:-2], list(layout.tiles), values[-2], values[-1], layout.tx_bytes,
                read_by_threads=_read_by_threads(ws, create.result),
                cluster=cluster if create.result in shared_rings else 1,
            )
        nvgpu.record_kernel_info(kernel, smem=plan.total)
        consumer_groups = sum(w // WARPS_PER_GROUP for role, w, _, _ in specs if role == PartitionRole.CONSUMER)
        threads = sum(w for _, w, _, _ in specs) * THREADS_PER_WARP
        self._init_barriers(rings, consumer_groups, threads, entry, clustered=cluster > 1)
        shared = Rings(rings, entry)
        if cluster > 1:
            shared.rank = next((o.result for o in kernel.body.block.ops if isinstance(o, nvgpu.ClusterRankOp)), None)
            if shared.rank is None:
                rank = nvgpu.ClusterRankOp()
                Rewriter.insert_op(rank, entry)
                rank.result.name_hint = "rank"
                shared.rank = rank.result
            # No CTA leaves while a peer may still arrive on its barriers.
            Rewriter.insert_op(nvgpu.ClusterSyncOp(), InsertPoint.after(ws))
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [InheritLocation(p) for p in (LowerPut(shared), LowerGet(shared), LowerConsumed(shared))],
                dce_enabled=False,
            ),
            apply_recursively=False,
        )
        for _, _, _, region in specs:
            walker.rewrite_region(region)
        for _, _, _, region in specs:
            carry_slot_views(region)
        for c in creates:
            Rewriter.erase_op(c)

    def _init_barriers(self, rings: dict[SSAValue, Ring], consumer_groups: int, threads: int, at: InsertPoint,
                       clustered: bool = False) -> None:
        if not rings and not clustered:
            return  # no barrier to initialise (a kernel whose consumers load for themselves): no fences, no sync
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
                        operands=[ring.empty, idx.result],
                        properties={"count": IntegerAttr(
                            consumer_groups * (THREADS_PER_GROUP if ring.read_by_threads else 1) * ring.cluster, 32)},
                    ),
                ])
        body.add_ops([nvgpu.FenceMBarrierInitOp(), nvgpu.FenceProxyAsyncOp(), scf.YieldOp()])
        Rewriter.insert_op(scf.IfOp(is_first.result, [], Region(body)), at)
        if clustered:  # the peers' barriers too are initialised before anyone arrives on them
            Rewriter.insert_op(nvgpu.ClusterSyncOp(), at)
            return
        Rewriter.insert_op(
            nvgpu.NamedBarrierSyncOp.build(
                properties={"barrier_id": IntegerAttr(0, 32), "num_threads": IntegerAttr(threads, 32)}
            ),
            at,
        )
