"""The abstract barrier protocol of a lowered kernel, and its exhaustive check.

Two halves, used by `tawa-verify-protocol` (docs/protocol.md):

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
* `Explorer` runs every interleaving of those traces on an abstract machine
  with mbarrier semantics (arrival counts, transaction bytes, phases, TMA
  completion as a separate asynchronous step) and returns the first
  `Violation` found by breadth-first search (hence a shortest trace):
  deadlock, phase aliasing, a slot overwritten or read while a load into it
  may be in flight, a staging tile written while a TMA store may still read
  it, too many arrivals, transaction-byte underflow.

TMA stores (`nvgpu.tma_store`) are bulk groups of the thread that issues
them: an asynchronous read of their staging tile that only that thread's
`nvgpu.tma_store_wait` retires.  A wait run by part of a warp group
retires the groups for the rest of it only once a named barrier follows
(the other threads know of the wait through the barrier), so a staging
write (`nvgpu.frag_store_shared`) is checked against the stores each warp
group may still have in flight at that point, its own and the others'.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.types import MBarrierType, SmemType, TmaDescriptorType, element_bytes
from tawa.interpreters.arith import TensorArithFunctions
from tawa.interpreters.dtypes import INDEX_BITS
from tawa.target.hopper import THREADS_PER_GROUP, THREADS_PER_WARP


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
    """The barrier slots and shared-memory stages of a kernel, numbered."""

    barriers: list[tuple[SSAValue, int]] = field(default_factory=list)
    slots: list[tuple[SSAValue, int]] = field(default_factory=list)
    _bar_ids: dict[tuple[SSAValue, int], int] = field(default_factory=dict)
    _slot_ids: dict[tuple[SSAValue, int], int] = field(default_factory=dict)

    def barrier(self, array: SSAValue, index: int) -> int:
        return _number(self.barriers, self._bar_ids, (array, index))

    def slot(self, array: SSAValue, index: int) -> int:
        return _number(self.slots, self._slot_ids, (array, index))


def _number(items: list[Any], ids: dict[Any, int], key: Any) -> int:
    if key not in ids:
        ids[key] = len(items)
        items.append(key)
    return ids[key]


# --------------------------------------------------------------------------- skeleton

_ASYNC_READS = (nvgpu.WgmmaDescriptorOp,)
_SYNC_READS = (nvgpu.SmemTileOp,)
_BULK_OPS = (nvgpu.FragmentStoreSharedOp, nvgpu.TmaStoreOp, nvgpu.TmaStoreWaitOp)
PROTOCOL_OPS = (
    nvgpu.MBarrierInitOp, nvgpu.MBarrierArriveOp, nvgpu.MBarrierArriveExpectTxOp,
    nvgpu.MBarrierWaitParityOp, nvgpu.MBarrierTryWaitParityOp, nvgpu.TmaLoadOp,
    nvgpu.NamedBarrierSyncOp, nvgpu.NamedBarrierArriveOp, nvgpu.WgmmaCommitGroupOp,
    nvgpu.WgmmaWaitGroupOp, *_ASYNC_READS, *_SYNC_READS, *_BULK_OPS,
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
    """The CTA a skeleton runs as: its block id, the grid of CTAs and the
    tile program's logical grid (what `nvgpu.launch_grid` returns)."""

    block_id: tuple[int, int, int] = (0, 0, 0)
    grid_dim: tuple[int, int, int] = (1, 1, 1)
    launch_grid: tuple[int, int, int] = (1, 1, 1)


class SkeletonRunner:
    """Extracts per-warp-group event traces of one kernel (see module docstring)."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
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

    def _protocol(self, op: Operation, mask: tuple[bool, ...] | None) -> None:
        n = THREADS_PER_GROUP if mask is None else sum(mask)
        if n == 0:
            return
        add = self._events.append
        objs = self.objects
        if isinstance(op, nvgpu.MBarrierTryWaitParityOp):
            raise SkeletonError(op, "mbarrier_try_wait_parity loops are not modelled: "
                                "run tawa-verify-protocol before tawa-prepare-ptx")
        if isinstance(op, nvgpu.MBarrierInitOp | nvgpu.MBarrierArriveOp |
                      nvgpu.MBarrierArriveExpectTxOp | nvgpu.MBarrierWaitParityOp):
            b = objs.barrier(*self._slot_of(op, op.barriers, op.index, "barrier"))
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
            b = objs.barrier(*self._slot_of(op, op.barriers, op.barrier_index, "barrier"))
            s = objs.slot(*self._slot_of(op, op.dest, op.stage, "stage"))
            desc = op.desc.type
            assert isinstance(desc, TmaDescriptorType)
            box = 1
            for d in desc.get_shape():
                box *= d
            add(Event(TMA, op, b, s, tx=n * box * element_bytes(desc.element_type), count=n))
        elif isinstance(op, _ASYNC_READS + _SYNC_READS):
            assert isinstance(op.source.type, SmemType)
            s = objs.slot(*self._slot_of(op, op.source, op.stage, "stage"))
            add(Event(READ, op, slot=s, is_async=isinstance(op, _ASYNC_READS)))
        elif isinstance(op, nvgpu.FragmentStoreSharedOp):
            add(Event(WRITE, op, slot=objs.slot(*self._slot_of(op, op.dest, op.stage, "stage"))))
        elif isinstance(op, nvgpu.TmaStoreOp):
            add(Event(BULK_STORE, op, slot=objs.slot(*self._slot_of(op, op.source, op.stage, "stage")),
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
            add(Event(kind, op, op.barrier_id.value.data, count=op.num_threads.value.data,
                      threads=warps * THREADS_PER_WARP))


def _lanes(x: Any) -> tuple[Any, ...]:
    return x.values if isinstance(x, Lanes) else (x,) * THREADS_PER_GROUP


def _collapse(values: tuple[Any, ...]) -> Any:
    first = values[0]
    return first if all(v == first for v in values) else Lanes(values)


# --------------------------------------------------------------------------- exploration


@dataclass(frozen=True)
class Step:
    """One transition: warp group `role` runs its block `block` (`events`),
    `role` arrives at a named barrier (`arrive_named`), or the TMA load
    `events[0]` completes (`role` = the role that issued it, `tma`)."""

    role: int
    events: tuple[Event, ...]
    kind: str = "block"


@dataclass
class Violation:
    """What went wrong, where (`op`), and the steps that lead there."""

    problem: str
    op: Operation
    message: str
    steps: list[Step]
    states: int = 0


class StateLimit(Exception):
    def __init__(self, states: int):
        super().__init__(states)
        self.states = states


@dataclass
class _Role:
    """A warp group's trace cut into atomic blocks: each starts at a blocking
    event (a wait or a named barrier sync) and runs to the next one."""

    blocks: list[tuple[Event, ...]]
    gates: list[Event | None]
    intended: list[int]
    """The phase each gate wait means (see `_intended_phases`)."""
    open_at: list[frozenset[int]]
    """Stages with async reads (wgmma) in flight at the start of each block
    (and one more entry for the end)."""
    open_in: list[list[frozenset[int]]]
    """...and before each event of each block."""
    stores_at: list[frozenset[int]]
    """Staging tiles a TMA store of this warp group may still read at the
    start of each block (and one more entry for the end)..."""
    stores_in: list[list[frozenset[int]]]
    """...and before each event of each block."""
    stores_left: tuple[Event, ...] = ()
    """This warp group's TMA stores no wait has retired when its trace
    ends: their reads would outlive the CTA's shared memory."""


def _cut(trace: Sequence[Event]) -> _Role:
    blocks: list[list[Event]] = [[]]
    for e in trace:
        if e.kind in BLOCKING and blocks[-1]:
            blocks.append([])
        blocks[-1].append(e)
    if not blocks[-1]:
        blocks.pop()
    gates = [b[0] if b[0].kind in BLOCKING else None for b in blocks]
    seen: dict[int, int] = {}
    intended = []
    for g in gates:
        k = 0
        if g is not None and g.kind == WAIT:
            last = seen.get(g.barrier, 0) - 1  # the latest phase this role knows complete
            k = last if (last - g.parity) % 2 == 0 else last + 1
            seen[g.barrier] = k + 1
        intended.append(k)
    groups: list[frozenset[int]] = []
    pending: set[int] = set()
    open_at, open_in = [], []
    for b in blocks:
        open_at.append(frozenset(pending).union(*groups))
        per_event = []
        for e in b:
            per_event.append(frozenset(pending).union(*groups))
            if e.kind == READ and e.is_async:
                pending.add(e.slot)
            elif e.kind == COMMIT:
                groups.append(frozenset(pending))
                pending = set()
            elif e.kind == WAIT_GROUP:
                groups = groups[len(groups) - e.count:] if e.count else []
        open_in.append(per_event)
    open_at.append(frozenset(pending).union(*groups))
    stores_at, stores_in, stores_left = _bulk_stores(blocks)
    return _Role([tuple(b) for b in blocks], gates, intended, open_at, open_in, stores_at, stores_in, stores_left)


def _bulk_stores(
    blocks: list[list[Event]],
) -> tuple[list[frozenset[int]], list[list[frozenset[int]]], tuple[Event, ...]]:
    """The staging tiles a role's TMA stores may still read, at the start of
    each block and before each event: a store is a bulk group until a wait
    retires it (`wait_group.read N` retires all but the N newest); a wait
    by part of the warp group (its elected thread) retires it for the whole
    group only once a named barrier follows.  And the stores still in
    flight at the end."""
    groups: list[Event] = []  # the groups in flight, oldest first
    unpublished: set[int] = set()  # retired by one thread, not yet known to the others
    at, per_block = [], []

    def reading() -> frozenset[int]:
        return frozenset(g.slot for g in groups) | unpublished

    for b in blocks:
        if b[0].kind == NAMED_SYNC:
            unpublished = set()
        at.append(reading())
        per_event = []
        for e in b:
            per_event.append(reading())
            if e.kind == BULK_STORE:
                groups.append(e)
            elif e.kind == BULK_WAIT:
                keep = max(0, len(groups) - e.count)
                retired, groups = groups[:keep], groups[keep:]
                if e.threads < THREADS_PER_GROUP:
                    unpublished.update(g.slot for g in retired)
        per_block.append(per_event)
    at.append(reading())
    return at, per_block, tuple(groups)


class _Found(Exception):
    def __init__(self, problem: str, op: Operation, message: str):
        super().__init__(message)
        self.problem, self.op, self.message = problem, op, message


class Explorer:
    """Breadth-first search over every interleaving of the roles' blocks
    and the TMA completions (see docs/protocol.md for the state and the
    steps).  `describe_barrier(b)` / `describe_slot(s)` name objects in
    messages; `role_name(r)` names warp groups."""

    def __init__(self, traces: Sequence[Sequence[Event]], n_barriers: int,
                 describe_barrier, describe_slot, role_name, max_states: int):
        self.roles = [_cut(t) for t in traces]
        self.nb = n_barriers
        self.bar = describe_barrier
        self.slot = describe_slot
        self.role_name = role_name
        self.max_states = max_states
        named = sorted({e.barrier for t in traces for e in t if e.kind in (NAMED_SYNC, NAMED_ARRIVE)})
        self.named_index = {n: i for i, n in enumerate(named)}

    # state: (positions, barriers, inflight, named, named_waits)
    #   barriers: flat (pending, tx, phase, count) per barrier slot; count 0 = not initialized
    #   inflight: TMA events (role, block, index) in issue order
    #   named: flat (generation, threads arrived) per named barrier
    #   named_waits: per role, the generation it arrived in, or -1

    def run(self) -> Violation | None:
        for r, role in enumerate(self.roles):
            if role.stores_left:
                store = role.stores_left[-1]
                return Violation("CTA ends during a TMA store", store.op,
                                 f"{self.role_name(r)} ends while its TMA store of {self.slot(store.slot)} may "
                                 "still read shared memory (no nvgpu.tma_store_wait 0 after its last store)", [])
        n = len(self.roles)
        init = ((0,) * n, (0,) * (4 * self.nb), (), (0,) * (2 * len(self.named_index)), (-1,) * n)
        parent: dict[Any, tuple[Any, Step] | None] = {init: None}
        queue = deque([init])
        while queue:
            state = queue.popleft()
            try:
                self._check_state(state)
                succs = list(self._successors(state))
            except _Found as found:
                return Violation(found.problem, found.op, found.message,
                                 self._path(parent, state, getattr(found, "step", None)),
                                 len(parent))
            if not succs and any(p < len(r.blocks) for p, r in zip(state[0], self.roles)):
                op, message = self._deadlock(state)
                return Violation("deadlock", op, message, self._path(parent, state, None), len(parent))
            for step, nxt in succs:
                if nxt not in parent:
                    parent[nxt] = (state, step)
                    queue.append(nxt)
            if len(parent) > self.max_states:
                raise StateLimit(len(parent))
        return None

    @staticmethod
    def _path(parent, state, last: Step | None) -> list[Step]:
        steps = [] if last is None else [last]
        while parent[state] is not None:
            state, step = parent[state]
            steps.append(step)
        return steps[::-1]

    # ------------------------------------------------------------------ checks

    def _check_state(self, state) -> None:
        pos, bars = state[0], state[1]
        for r, (p, role) in enumerate(zip(pos, self.roles)):
            if p >= len(role.blocks):
                continue
            gate = role.gates[p]
            if gate is None or gate.kind != WAIT:
                continue
            b = gate.barrier
            if bars[4 * b + 3] == 0:
                raise _Found("wait before init", gate.op,
                             f"{self.role_name(r)} waits on {self.bar(b)}, which is not initialized yet")
            phase = bars[4 * b + 2]
            k = role.intended[p]
            if phase >= k + 2:
                raise _Found(
                    "phase aliasing", gate.op,
                    f"{self.role_name(r)} waits on {self.bar(b)} with parity {gate.parity} "
                    f"for phase {k}, but the barrier has completed {phase} phases (phase {phase - 1} "
                    f"has the same parity): the wait cannot tell them apart")

    # ------------------------------------------------------------------ steps

    def _successors(self, state) -> Iterator[tuple[Step, Any]]:
        pos, bars, inflight, named, nwaits = state
        for r, (p, role) in enumerate(zip(pos, self.roles)):
            if p >= len(role.blocks):
                continue
            gate = role.gates[p]
            if gate is not None and gate.kind == WAIT:
                phase = bars[4 * gate.barrier + 2]
                if phase % 2 == gate.parity:
                    continue  # blocked: the phase with this parity has not completed
            elif gate is not None:  # a named barrier sync
                i = self.named_index[gate.barrier]
                if nwaits[r] < 0:
                    yield self._arrive_named(state, r, gate, i)
                    continue
                if named[2 * i] <= nwaits[r]:
                    continue
            yield self._run_block(state, r)
        seen_bars = set()
        for k, (r, p, i) in enumerate(inflight):
            e = self.roles[r].blocks[p][i]
            if e.barrier in seen_bars:
                continue  # completions on one barrier are explored in issue order
            seen_bars.add(e.barrier)
            yield self._complete(state, k, r, e)

    def _arrive_named(self, state, r: int, gate: Event, i: int):
        pos, bars, inflight, named, nwaits = state
        step = Step(r, (gate,), "arrive_named")
        named_l = list(named)
        gen, arrived = named_l[2 * i], named_l[2 * i + 1] + gate.threads
        if arrived > gate.count:
            self._fail(step, "named barrier over-arrival", gate.op,
                       f"{arrived} threads arrive at named barrier {gate.barrier}, which counts {gate.count}")
        waits = list(nwaits)
        waits[r] = gen
        named_l[2 * i: 2 * i + 2] = (gen + 1, 0) if arrived == gate.count else (gen, arrived)
        return step, (pos, bars, inflight, tuple(named_l), tuple(waits))

    def _fail(self, step: Step, problem: str, op: Operation, message: str, upto: int = 0):
        """Raises the violation; the trace's last step ends at its event `upto`."""
        events = step.events[: upto + 1]
        found = _Found(problem, op, message)
        found.step = Step(step.role, events, step.kind)  # type: ignore[attr-defined]
        raise found

    def _run_block(self, state, r: int):
        pos, bars, inflight, named, nwaits = state
        role = self.roles[r]
        p = pos[r]
        block = role.blocks[p]
        step = Step(r, block)
        bars_l = list(bars)
        infl = list(inflight)
        named_l = list(named)
        waits = list(nwaits)
        if role.gates[p] is not None and role.gates[p].kind == NAMED_SYNC:
            waits[r] = -1
        for i, e in enumerate(block):
            k = e.kind
            if k in (INIT, ARRIVE, EXPECT_TX, TMA):
                b4 = 4 * e.barrier
                if k == INIT:
                    if bars_l[b4 + 3]:
                        self._fail(step, "double init", e.op,
                                   f"{self.bar(e.barrier)} is initialized twice", i)
                    bars_l[b4: b4 + 4] = (e.count, 0, 0, e.count)
                    continue
                if bars_l[b4 + 3] == 0:
                    self._fail(step, "use before init", e.op,
                               f"{self.role_name(r)} uses {self.bar(e.barrier)} before it is initialized", i)
                if k == TMA:
                    self._check_overwrite(step, state, r, p, i, e, infl)
                    infl.append((r, p, i))
                    continue
                if k == EXPECT_TX:
                    bars_l[b4 + 1] += e.tx
                bars_l[b4] -= e.count
                if bars_l[b4] < 0:
                    self._fail(step, "too many arrivals", e.op,
                               f"{self.role_name(r)} arrives on {self.bar(e.barrier)} in phase "
                               f"{bars_l[b4 + 2]} after all of its {bars_l[b4 + 3]} expected arrivals", i)
                _complete_phase(bars_l, b4)
            elif k == WRITE:
                for r2, other in enumerate(self.roles):
                    reading = other.stores_in[p][i] if r2 == r else other.stores_at[state[0][r2]]
                    if e.slot in reading:
                        self._fail(step, "staging tile written during a TMA store", e.op,
                                   f"{self.role_name(r)} writes {self.slot(e.slot)} while a TMA store of "
                                   f"{self.role_name(r2)} may still read it (no nvgpu.tma_store_wait by its "
                                   "issuing thread, then a named barrier, before the write)", i)
            elif k in (READ, BULK_STORE):
                for (r2, p2, i2) in infl:
                    load = self.roles[r2].blocks[p2][i2]
                    if load.slot == e.slot:
                        self._fail(step, "read during load", e.op,
                                   f"{self.role_name(r)} reads {self.slot(e.slot)} while a TMA load "
                                   f"into it ({_where(load.op)}) may still be in flight", i)
            elif k == NAMED_ARRIVE:
                j = self.named_index[e.barrier]
                arrived = named_l[2 * j + 1] + e.threads
                if arrived > e.count:
                    self._fail(step, "named barrier over-arrival", e.op,
                               f"{arrived} threads arrive at named barrier {e.barrier}, which counts {e.count}", i)
                named_l[2 * j: 2 * j + 2] = (
                    (named_l[2 * j] + 1, 0) if arrived == e.count else (named_l[2 * j], arrived))
        new_pos = pos[:r] + (p + 1,) + pos[r + 1:]
        return step, (new_pos, tuple(bars_l), tuple(infl), tuple(named_l), tuple(waits))

    def _check_overwrite(self, step: Step, state, r: int, p: int, i: int, e: Event, infl) -> None:
        for (r2, p2, i2) in infl:
            if self.roles[r2].blocks[p2][i2].slot == e.slot:
                other = self.roles[r2].blocks[p2][i2]
                self._fail(step, "slot overwritten before it was released", e.op,
                           f"TMA load into {self.slot(e.slot)} while an earlier load into it "
                           f"({_where(other.op)}) may still be in flight", i)
        for r2, role in enumerate(self.roles):
            open_ = role.open_in[p][i] if r2 == r else role.open_at[state[0][r2]]
            if e.slot in open_:
                self._fail(step, "slot overwritten before it was released", e.op,
                           f"TMA load into {self.slot(e.slot)} while {self.role_name(r2)} may still "
                           f"read it (its wgmma reading it has not been waited for)", i)

    def _complete(self, state, k: int, r: int, e: Event):
        pos, bars, inflight, named, nwaits = state
        step = Step(r, (e,), "tma")
        bars_l = list(bars)
        b4 = 4 * e.barrier
        bars_l[b4 + 1] -= e.tx
        if bars_l[b4 + 1] < 0:
            self._fail(step, "transaction bytes underflow", e.op,
                       f"the TMA load into {self.slot(e.slot)} completes {e.tx} bytes on "
                       f"{self.bar(e.barrier)}, {-bars_l[b4 + 1]} more than its phase "
                       f"{bars_l[b4 + 2]} expects (expect_tx and the boxes' bytes differ)")
        _complete_phase(bars_l, b4)
        return step, (pos, tuple(bars_l), inflight[:k] + inflight[k + 1:], named, nwaits)

    # ------------------------------------------------------------------ deadlock

    def _deadlock(self, state) -> tuple[Operation, str]:
        pos, bars, _, named, _ = state
        parts, first = [], None
        for r, (p, role) in enumerate(zip(pos, self.roles)):
            if p >= len(role.blocks):
                continue
            gate = role.gates[p]
            assert gate is not None
            first = first or gate.op
            if gate.kind == WAIT:
                b4 = 4 * gate.barrier
                pending, tx, phase = bars[b4], bars[b4 + 1], bars[b4 + 2]
                why = f"{pending} arrival(s)"
                if tx:
                    why += f" and {tx} transaction bytes that no load delivers"
                parts.append(
                    f"{self.role_name(r)} waits on {self.bar(gate.barrier)} parity {gate.parity} "
                    f"(phase {role.intended[p]}; the barrier is in phase {phase}, missing {why})")
            else:
                i = self.named_index[gate.barrier]
                parts.append(f"{self.role_name(r)} waits at named barrier {gate.barrier} "
                             f"({named[2 * i + 1]} of {gate.count} threads arrived)")
        assert first is not None
        return first, "; ".join(parts)


def _complete_phase(bars: list[int], b4: int) -> None:
    if bars[b4] == 0 and bars[b4 + 1] == 0:
        bars[b4] = bars[b4 + 3]
        bars[b4 + 2] += 1


def _where(op: Operation) -> str:
    from tawa.diagnostics import location_of

    return location_of(op) or op.name
