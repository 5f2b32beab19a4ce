"""The barrier events of a lowered kernel's warp groups, for its protocol check.

`tawa-verify-protocol` (docs/protocol.md) proves a kernel's mbarrier
protocol in two steps; this module is the first:

* `SkeletonRunner` extracts, for a chosen problem size, the sequence of
  barrier events of each warp group (`Event`s: mbarrier init / arrive /
  expect_tx / wait, TMA loads, shared-memory reads, wgmma groups, named
  barriers, the TMA-store epilogue's staging writes, bulk stores and their
  waits) by executing the kernel's *control skeleton* concretely: the
  index and integer arithmetic, loops and ifs that decide which barrier
  ops run.  Only what the protocol depends on is evaluated (a backward slice
  from the barrier ops); arithmetic goes through tawa's CPU interpreter
  (`tawa.interpreters.arith`), so its semantics are the interpreter's.
  Values that differ between the threads of a warp group (`thread_id`,
  `lane_id`, `warp_id` and what derives from them) are `Lanes`; an `scf.if`
  on them runs its regions for the threads that take them, and an arrive
  counts the threads that execute it.
* A kernel with thread-block clusters (`#nvgpu.kernel<..., cluster = N>`)
  is run once per CTA of one cluster (`Launch.rank`): barriers and
  shared-memory stages are per CTA (`Objects` numbers them over the whole
  cluster and records each one's CTA), a remote arrival
  (`mbarrier_arrive ... cta(%r)`) is an arrival on CTA r's barrier, a
  multicast `tma_load` is one load per CTA of its mask, and
  `cluster_sync` is a barrier over every thread of the cluster
  (`CLUSTER_BARRIER`).
* `protocol_search.Explorer` runs every interleaving of those traces on an
  abstract machine with mbarrier semantics and reports the first violation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.kernel_info import kernel_info
from tawa.dialects.nvgpu.types import MBarrierType, SmemType, TmaDescriptorType, element_bytes
from tawa.interpreters.arith import TensorArithFunctions
from tawa.interpreters.dtypes import INDEX_BITS
from tawa.target.hopper import MBARRIER_BYTES, NAMED_BARRIERS, THREADS_PER_GROUP, THREADS_PER_WARP


class SkeletonError(Exception):
    """The protocol depends on something the skeleton cannot compute."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


class _Unknown:
    """A value the skeleton does not compute (data, memref sizes, ...)."""

    def __repr__(self) -> str:
        return "?"


UNKNOWN = _Unknown()



MAX_LOOP_TRIPS = 1 << 16
"""The most iterations of one loop the skeleton runner unrolls: the checked
problem sizes run a ring loop at most 2D+1 times and a program loop a few
times, so more means a bound the kernel cannot have meant (a lower bound of
-2^63), which would otherwise never finish."""

@dataclass(frozen=True)
class Lanes:
    """A value that differs between the threads of a warp group (one per lane)."""

    values: tuple[Any, ...]


# --------------------------------------------------------------------------- events

INIT, ARRIVE, EXPECT_TX, WAIT, TMA, READ, COMMIT, WAIT_GROUP, NAMED_SYNC, NAMED_ARRIVE = (
    "init", "arrive", "expect_tx", "wait", "tma", "read", "commit", "wait_group",
    "named_sync", "named_arrive",
)
WRITE, BULK_STORE, BULK_WAIT = "write", "bulk_store", "bulk_wait"
BLOCKING = (WAIT, NAMED_SYNC)
CLUSTER_BARRIER = -1
"""The named-barrier id of `nvgpu.cluster_sync` (a `named_sync` over every
thread of the cluster); the named barriers of CTA c (c > 0) are numbered
id + c · NAMED_BARRIERS, so that each CTA has its own."""


@dataclass(frozen=True)
class Event:
    """One barrier-relevant step of one warp group.

    `barrier` is a barrier slot (index into `Objects.barriers`), or a named
    barrier id; `slot` a shared-memory stage (index into `Objects.slots`);
    `count` the threads that arrive (init: the expected arrivals; named
    barriers: the barrier's thread count; wait_group: groups left pending);
    `tx` transaction bytes; `threads` the threads a named barrier counts."""

    kind: str
    op: Operation
    barrier: int = -1
    slot: int = -1
    parity: int = 0
    count: int = 0
    tx: int = 0
    threads: int = 0
    is_async: bool = False

    def key(self) -> tuple[Any, ...]:
        return (self.kind, id(self.op), self.barrier, self.slot, self.parity, self.count,
                self.tx, self.threads)

    def semantic_key(self) -> tuple[Any, ...]:
        """What the exploration depends on (not which op it reports)."""
        return (self.kind, self.barrier, self.slot, self.parity, self.count, self.tx, self.threads,
                self.is_async)


@dataclass
class Objects:
    """The barrier slots and shared-memory stages of a kernel (of every CTA
    of its cluster), numbered in the order they are first used.

    A barrier slot is identified by its CTA and byte address, a stage by its
    CTA and byte range, so that two `smem_alloc` views of the same memory
    (a buffer of B tiles and the same bytes as twice as many half tiles)
    name the same objects; `barriers` / `slots` keep the (array, index) by
    which each was first named, `barrier_cta` / `slot_cta` its CTA, and
    `slot_range` its bytes [lo, hi) in its CTA's shared memory (None when
    the array is not an `smem_alloc`: it overlaps no other stage)."""

    barriers: list[tuple[SSAValue, int]] = field(default_factory=list)
    slots: list[tuple[SSAValue, int]] = field(default_factory=list)
    barrier_cta: list[int] = field(default_factory=list)
    slot_cta: list[int] = field(default_factory=list)
    slot_range: list[tuple[int, int] | None] = field(default_factory=list)
    _bar_ids: dict[Any, int] = field(default_factory=dict)
    _slot_ids: dict[Any, int] = field(default_factory=dict)

    def barrier(self, array: SSAValue, index: int, cta: int = 0) -> int:
        alloc = array.owner if isinstance(array, OpResult) else None
        key = ((cta, alloc.offset.value.data + MBARRIER_BYTES * index)
               if isinstance(alloc, nvgpu.SmemAllocOp) else (cta, array, index))
        if key not in self._bar_ids:
            self.barrier_cta.append(cta)
        return _number(self.barriers, self._bar_ids, key, (array, index))

    def slot(self, array: SSAValue, index: int, cta: int = 0) -> int:
        alloc = array.owner if isinstance(array, OpResult) else None
        span: tuple[int, int] | None = None
        if isinstance(alloc, nvgpu.SmemAllocOp) and isinstance(array.type, SmemType):
            stage = alloc.num_bytes() // array.type.get_shape()[0]
            lo = alloc.offset.value.data + stage * index
            span = (lo, lo + stage)
        key = (cta, span) if span is not None else (cta, array, index)
        if key not in self._slot_ids:
            self.slot_cta.append(cta)
            self.slot_range.append(span)
        return _number(self.slots, self._slot_ids, key, (array, index))


def _number(items: list[Any], ids: dict[Any, int], key: Any, name: Any) -> int:
    if key not in ids:
        ids[key] = len(items)
        items.append(name)
    return ids[key]


# --------------------------------------------------------------------------- skeleton

_ASYNC_READS = (nvgpu.WgmmaDescriptorOp,)
_SYNC_READS = (nvgpu.SmemTileOp,)
_BULK_OPS = (nvgpu.FragmentStoreSharedOp, nvgpu.TmaStoreOp, nvgpu.TmaStoreWaitOp)
PROTOCOL_OPS = (
    nvgpu.MBarrierInitOp, nvgpu.MBarrierArriveOp, nvgpu.MBarrierArriveExpectTxOp,
    nvgpu.MBarrierWaitParityOp, nvgpu.MBarrierTryWaitParityOp, nvgpu.TmaLoadOp,
    nvgpu.NamedBarrierSyncOp, nvgpu.NamedBarrierArriveOp, nvgpu.WgmmaCommitGroupOp,
    nvgpu.WgmmaWaitGroupOp, nvgpu.ClusterSyncOp, *_ASYNC_READS, *_SYNC_READS, *_BULK_OPS,
)
_LANE_IDS = (nvgpu.ThreadIdOp, nvgpu.LaneIdOp, nvgpu.WarpIdOp)


def _protocol_operands(op: Operation) -> Iterable[SSAValue]:
    """The operands of a protocol op that the protocol depends on (not the
    TMA coordinates or wgmma rows: where the data goes within a stage)."""
    if isinstance(op, nvgpu.TmaLoadOp):
        return (op.desc, op.dest, op.stage, op.barriers, op.barrier_index)
    if isinstance(op, nvgpu.WgmmaDescriptorOp | nvgpu.SmemTileOp | nvgpu.TmaStoreOp):
        return (op.source, op.stage)
    if isinstance(op, nvgpu.FragmentStoreSharedOp):
        return (op.dest, op.stage)
    if isinstance(op, nvgpu.WgmmaWaitGroupOp):
        return ()
    return op.operands


@dataclass(frozen=True)
class Launch:
    """The CTA a skeleton runs as: its block id, the grid of CTAs, the tile
    program's logical grid (what `nvgpu.launch_grid` returns) and its rank
    in its cluster (`nvgpu.cluster_rank`; its barriers and stages are that
    CTA's)."""

    block_id: tuple[int, int, int] = (0, 0, 0)
    grid_dim: tuple[int, int, int] = (1, 1, 1)
    launch_grid: tuple[int, int, int] = (1, 1, 1)
    rank: int = 0


class SkeletonRunner:
    """Extracts per-warp-group event traces of one kernel (see module docstring)."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        info = kernel_info(kernel)
        self.cluster = info.cluster
        """CTAs per cluster (1: no clusters)."""
        self.threads = info.threads or 0
        self.objects = Objects()
        self._arith = Interpreter(ModuleOp([]), index_bitwidth=INDEX_BITS)
        self._arith.register_implementations(TensorArithFunctions())
        self._cache: dict[tuple[Any, ...], Any] = {}
        self._protocol_regions: set[Operation] = set()
        self.relevant: set[SSAValue] = set()
        self.executed: set[Operation] = set()
        self._analyze()

    # ------------------------------------------------------------------ slice

    def _analyze(self) -> None:
        """Which values the protocol depends on, and which loops and ifs must run."""
        work: list[SSAValue] = []
        for op in self.kernel.walk():
            if isinstance(op, PROTOCOL_OPS):
                work.extend(_protocol_operands(op))
                parent = op.parent_op()
                while parent is not None and parent is not self.kernel:
                    self._protocol_regions.add(parent)
                    parent = parent.parent_op()
        structured = [o for o in self.kernel.walk() if isinstance(o, scf.ForOp | scf.IfOp)]
        while True:
            while work:
                v = work.pop()
                if v in self.relevant:
                    continue
                self.relevant.add(v)
                work.extend(self._depends_on(v))
            grown = False
            for o in structured:
                if o in self.executed:
                    continue
                if o in self._protocol_regions or any(
                    r in self.relevant for inner in o.walk() for r in inner.results
                ):
                    self.executed.add(o)
                    grown = True
                    work.extend(
                        (o.lb, o.ub, o.step) if isinstance(o, scf.ForOp) else (o.cond,)
                    )
            if not grown and not work:
                return

    @staticmethod
    def _depends_on(v: SSAValue) -> Iterable[SSAValue]:
        if isinstance(v, OpResult):
            op = v.op
            if isinstance(op, scf.ForOp):
                i = v.index
                yield from (op.lb, op.ub, op.step, op.iter_args[i], op.body.block.args[i + 1])
                yield op.body.block.last_op.operands[i]  # type: ignore[union-attr]
            elif isinstance(op, scf.IfOp):
                yield op.cond
                for region in (op.true_region, op.false_region):
                    if region.blocks:
                        yield region.block.last_op.operands[v.index]  # type: ignore[union-attr]
            else:
                yield from op.operands
        elif isinstance(v, BlockArgument):
            owner = v.block.parent_op()
            if isinstance(owner, scf.ForOp):
                if v.index == 0:
                    yield from (owner.lb, owner.step)
                else:
                    yield owner.iter_args[v.index - 1]
                    yield owner.body.block.last_op.operands[v.index - 1]  # type: ignore[union-attr]

    # ------------------------------------------------------------------ running

    def trace(self, role: int, args: Sequence[Any], launch: Launch) -> list[Event]:
        """The events of warp group `role`, for kernel arguments `args`
        (UNKNOWN for those the skeleton need not know) and `launch`."""
        self._role = role
        self._launch = launch
        if not 0 <= launch.rank < self.cluster:
            raise ValueError(f"CTA rank {launch.rank} outside a cluster of {self.cluster}")
        self._events: list[Event] = []
        self._vals: dict[SSAValue, Any] = dict(zip(self.kernel.body.block.args, args))
        first = role * THREADS_PER_GROUP
        self._tids = tuple(range(first, first + THREADS_PER_GROUP))
        self._run_block(self.kernel.body.block, None)
        return self._events

    def _run_region(self, region: Region, args: Sequence[Any], mask: tuple[bool, ...] | None):
        block = region.block
        self._vals.update(zip(block.args, args))
        return self._run_block(block, mask)

    def _run_block(self, block: Block, mask: tuple[bool, ...] | None) -> tuple[Any, ...]:
        vals = self._vals
        for op in block.ops:
            if isinstance(op, scf.YieldOp | func.ReturnOp):
                return tuple(vals.get(v, UNKNOWN) for v in op.operands)
            if isinstance(op, PROTOCOL_OPS):
                self._protocol(op, mask)
            elif isinstance(op, scf.ForOp):
                if op in self.executed:
                    self._for(op, mask)
            elif isinstance(op, scf.IfOp):
                if op in self.executed:
                    self._if(op, mask)
            elif any(r in self.relevant for r in op.results):
                vals.update(zip(op.results, self._evaluate(op)))
        return ()

    def _value(self, v: SSAValue) -> Any:
        return self._vals.get(v, UNKNOWN)

    def _uniform(self, op: Operation, v: SSAValue, what: str) -> Any:
        x = self._value(v)
        if isinstance(x, Lanes):
            raise SkeletonError(op, f"{what} differs between the threads of a warp group")
        if x is UNKNOWN:
            raise SkeletonError(
                op, f"{what} depends on values the protocol checker does not compute (data)"
            )
        return x

    def _for(self, op: scf.ForOp, mask: tuple[bool, ...] | None) -> None:
        lb = self._uniform(op, op.lb, "the loop's lower bound")
        ub = self._uniform(op, op.ub, "the loop's upper bound")
        step = self._uniform(op, op.step, "the loop's step")
        if step <= 0:
            raise SkeletonError(op, f"the loop's step must be positive, got {step}")
        carried = tuple(self._value(v) for v in op.iter_args)
        trips = len(range(lb, ub, step))
        if trips > MAX_LOOP_TRIPS:
            raise SkeletonError(op, f"the loop runs {trips} times (from {lb} to {ub} step {step}) at a problem "
                                f"size the protocol is checked for; more than {MAX_LOOP_TRIPS} is not a kernel's loop")
        for i in range(lb, ub, step):
            carried = self._run_region(op.body, (i, *carried), mask)
        self._vals.update(zip(op.results, carried))

    def _if(self, op: scf.IfOp, mask: tuple[bool, ...] | None) -> None:
        cond = self._value(op.cond)
        if cond is UNKNOWN:
            if op in self._protocol_regions:
                raise SkeletonError(
                    op, "whether barrier ops run depends on values the protocol checker "
                    "does not compute (data)"
                )
            self._vals.update((r, UNKNOWN) for r in op.results)
            return
        if not isinstance(cond, Lanes):
            region = op.true_region if cond else op.false_region
            out = self._run_region(region, (), mask) if region.blocks else ()
            self._vals.update(zip(op.results, out))
            return
        active = mask or (True,) * THREADS_PER_GROUP
        taken = tuple(bool(c) and m for c, m in zip(cond.values, active))
        not_taken = tuple(not c and m for c, m in zip(cond.values, active))
        outs: list[tuple[Any, ...] | None] = []
        for region, sub in ((op.true_region, taken), (op.false_region, not_taken)):
            outs.append(self._run_region(region, (), sub) if region.blocks and any(sub) else None)
        for i, r in enumerate(op.results):
            t = outs[0][i] if outs[0] is not None else UNKNOWN
            f = outs[1][i] if outs[1] is not None else UNKNOWN
            if outs[0] is None:
                self._vals[r] = f
            elif outs[1] is None:
                self._vals[r] = t
            elif UNKNOWN in (t, f):
                self._vals[r] = UNKNOWN
            else:
                tl, fl = (_lanes(x) for x in (t, f))
                self._vals[r] = _collapse(
                    tuple(a if c else b for a, b, c in zip(tl, fl, cond.values))
                )

    def _evaluate(self, op: Operation) -> tuple[Any, ...]:
        if isinstance(op, nvgpu.SmemAllocOp | nvgpu.TmaDescriptorOp):
            return (op.results[0],)  # a handle: the SSA value names the array
        if isinstance(op, nvgpu.WarpGroupIdOp):
            return (self._role,)
        if isinstance(op, nvgpu.ClusterRankOp):
            return (self._launch.rank,)
        if isinstance(op, _LANE_IDS):
            tids = self._tids
            if isinstance(op, nvgpu.LaneIdOp):
                return (Lanes(tuple(t % THREADS_PER_WARP for t in tids)),)
            if isinstance(op, nvgpu.WarpIdOp):
                return (Lanes(tuple(t // THREADS_PER_WARP for t in tids)),)
            return (Lanes(tids),)
        if isinstance(op, nvgpu.BlockIdOp | nvgpu.GridDimOp | nvgpu.LaunchGridOp):
            table = {nvgpu.BlockIdOp: self._launch.block_id, nvgpu.GridDimOp: self._launch.grid_dim,
                     nvgpu.LaunchGridOp: self._launch.launch_grid}[type(op)]
            return (table[op.axis.value.data],)
        if op.dialect_name() != "arith" or op.regions:
            return tuple(UNKNOWN for _ in op.results)
        inputs = tuple(self._value(v) for v in op.operands)
        if UNKNOWN in inputs:
            return tuple(UNKNOWN for _ in op.results)
        if not any(isinstance(x, Lanes) for x in inputs):
            return (self._arith_op(op, inputs),)
        lanes = [_lanes(x) for x in inputs]
        return (_collapse(tuple(self._arith_op(op, tuple(x)) for x in zip(*lanes))),)

    def _arith_op(self, op: Operation, inputs: tuple[Any, ...]) -> Any:
        key = (op, inputs)
        if (hit := self._cache.get(key)) is not None:
            return hit
        try:
            (out,) = self._arith.run_op(op, inputs)
        except Exception as err:  # division by zero and the like, on our chosen sizes
            raise SkeletonError(op, f"'{op.name}' failed on the checker's sizes: {err}") from None
        if isinstance(out, float):
            out = UNKNOWN
        self._cache[key] = out
        return out

    # ------------------------------------------------------------------ events

    def _slot_of(self, op: Operation, array: SSAValue, index: SSAValue, what: str) -> tuple[int, int]:
        i = self._uniform(op, index, f"the {what} index")
        t = array.type
        depth = t.count.data if isinstance(t, MBarrierType) else t.get_shape()[0]  # type: ignore[union-attr]
        if not 0 <= i < depth:
            raise SkeletonError(op, f"{what} index {i} is out of range for {t} (0..{depth - 1})")
        return (array, i)  # type: ignore[return-value]

    def _rank(self, op: Operation, v: SSAValue, what: str) -> int:
        r = self._uniform(op, v, what)
        if not 0 <= r < self.cluster:
            raise SkeletonError(op, f"{what} is {r}, but the cluster has {self.cluster} CTA"
                                f"{'s' if self.cluster > 1 else ''} (ranks 0..{self.cluster - 1})")
        return r

    def _protocol(self, op: Operation, mask: tuple[bool, ...] | None) -> None:
        n = THREADS_PER_GROUP if mask is None else sum(mask)
        if n == 0:
            return
        add = self._events.append
        objs = self.objects
        cta = self._launch.rank
        if isinstance(op, nvgpu.MBarrierTryWaitParityOp):
            raise SkeletonError(op, "mbarrier_try_wait_parity loops are not modelled: "
                                "run tawa-verify-protocol before tawa-prepare-ptx")
        if isinstance(op, nvgpu.MBarrierInitOp | nvgpu.MBarrierArriveOp |
                      nvgpu.MBarrierArriveExpectTxOp | nvgpu.MBarrierWaitParityOp):
            dest = cta
            if isinstance(op, nvgpu.MBarrierArriveOp) and op.cta is not None:
                dest = self._rank(op, op.cta, "the arrival's CTA rank")
            b = objs.barrier(*self._slot_of(op, op.barriers, op.index, "barrier"), dest)
            if isinstance(op, nvgpu.MBarrierInitOp):
                if n != 1:
                    raise SkeletonError(op, f"mbarrier_init runs on {n} threads; one must initialize it")
                add(Event(INIT, op, b, count=op.count.value.data))
            elif isinstance(op, nvgpu.MBarrierArriveOp):
                add(Event(ARRIVE, op, b, count=n))
            elif isinstance(op, nvgpu.MBarrierArriveExpectTxOp):
                add(Event(EXPECT_TX, op, b, count=n, tx=n * op.bytes.value.data))
            else:
                parity = self._uniform(op, op.parity, "the wait's parity")
                if parity not in (0, 1):
                    raise SkeletonError(op, f"the wait's parity must be 0 or 1, got {parity}")
                add(Event(WAIT, op, b, parity=parity))
        elif isinstance(op, nvgpu.TmaLoadOp):
            bar = self._slot_of(op, op.barriers, op.barrier_index, "barrier")
            stage = self._slot_of(op, op.dest, op.stage, "stage")
            desc = op.desc.type
            assert isinstance(desc, TmaDescriptorType)
            box = 1
            for d in desc.get_shape():
                box *= d
            tx = n * box * element_bytes(desc.element_type)
            dests = (cta,)
            if op.multicast is not None:
                mask_bits = op.multicast.value.data
                dests = tuple(r for r in range(mask_bits.bit_length()) if mask_bits >> r & 1)
                if dests[-1] >= self.cluster:
                    raise SkeletonError(op, f"the multicast mask {mask_bits} names CTA rank {dests[-1]}, but "
                                        f"the cluster has {self.cluster} CTA{'s' if self.cluster > 1 else ''}")
            for dest in dests:  # the box lands in each CTA of the mask, on that CTA's barrier
                add(Event(TMA, op, objs.barrier(*bar, dest), objs.slot(*stage, dest), tx=tx, count=n))
        elif isinstance(op, _ASYNC_READS + _SYNC_READS):
            assert isinstance(op.source.type, SmemType)
            s = objs.slot(*self._slot_of(op, op.source, op.stage, "stage"), cta)
            add(Event(READ, op, slot=s, is_async=isinstance(op, _ASYNC_READS)))
        elif isinstance(op, nvgpu.FragmentStoreSharedOp):
            add(Event(WRITE, op, slot=objs.slot(*self._slot_of(op, op.dest, op.stage, "stage"), cta)))
        elif isinstance(op, nvgpu.TmaStoreOp):
            add(Event(BULK_STORE, op, slot=objs.slot(*self._slot_of(op, op.source, op.stage, "stage"), cta),
                      threads=n))
        elif isinstance(op, nvgpu.TmaStoreWaitOp):
            add(Event(BULK_WAIT, op, count=op.pending.value.data, threads=n))
        elif isinstance(op, nvgpu.WgmmaCommitGroupOp):
            add(Event(COMMIT, op))
        elif isinstance(op, nvgpu.WgmmaWaitGroupOp):
            self._vals.update((r, UNKNOWN) for r in op.results)
            add(Event(WAIT_GROUP, op, count=op.pending.value.data))
        elif isinstance(op, nvgpu.NamedBarrierSyncOp | nvgpu.NamedBarrierArriveOp):
            tids = self._tids if mask is None else [t for t, m in zip(self._tids, mask) if m]
            warps = len({t // THREADS_PER_WARP for t in tids})
            kind = NAMED_SYNC if isinstance(op, nvgpu.NamedBarrierSyncOp) else NAMED_ARRIVE
            add(Event(kind, op, op.barrier_id.value.data + NAMED_BARRIERS * cta, count=op.num_threads.value.data,
                      threads=warps * THREADS_PER_WARP))
        elif isinstance(op, nvgpu.ClusterSyncOp):
            # barrier.cluster.arrive + wait: each executing thread arrives (not
            # whole warps: the instructions are not .aligned), the barrier
            # counts every thread of every CTA of the cluster.
            add(Event(NAMED_SYNC, op, CLUSTER_BARRIER, count=self.cluster * self.threads, threads=n))


def _lanes(x: Any) -> tuple[Any, ...]:
    return x.values if isinstance(x, Lanes) else (x,) * THREADS_PER_GROUP


def _collapse(values: tuple[Any, ...]) -> Any:
    first = values[0]
    return first if all(v == first for v in values) else Lanes(values)
