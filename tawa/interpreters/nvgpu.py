"""Semantics of the `nvgpu` dialect's threads, memory and barriers.

Runs inside a CTA (tawa.interpreters.cta).  Shared memory is bytes: a
buffer `!nvgpu.smem<S x R x C x T, swizzle = W>` holds S stages of R x C
tiles, each stored as column chunks of W bytes per row
(`SmemType.chunk_columns`) with the hardware's swizzle of the absolute
address (`tawa.target.hopper.swizzled_address`); TMA writes and wgmma /
`nvgpu.smem_tile` read through that one mapping (`tile_addresses`).

mbarriers count arrivals and transaction bytes per phase: a phase
completes when its arrivals and its bytes are all in, and
`mbarrier_wait_parity p` passes once the phase of parity p has completed
(the current phase's parity differs from p).  A TMA load is in flight from
its issue until the scheduler completes it (tawa.interpreters.schedule's
`progress`): then its box (out-of-bounds elements 0) lands in shared memory
and its bytes count on its barrier.  Waits, arrivals, TMA issues, named
barriers and cluster barriers are scheduling points.

Thread-block clusters (tawa.interpreters.cta's `Cluster`):
`nvgpu.cluster_rank` is the CTA's rank (0 without clusters);
`nvgpu.mbarrier_arrive ... cta(%r)` arrives on the barrier at the same
shared-memory offset and index in the CTA of rank r of the cluster (its
own rank allowed); `nvgpu.tma_load ... multicast M` lands the box at the
same shared-memory addresses in every CTA whose rank bit is set in M, each
completing the box's bytes on its own barrier at the op's (array offset,
index), each copy in flight on its own; `nvgpu.cluster_sync` waits until
every thread of every CTA of the cluster has arrived (the CTA's threads
without clusters).

Errors: an uninitialised barrier, a wait on a barrier that can never
complete (a deadlock naming the barrier, its slot and phase and every
blocked warp group), more transaction bytes than the 20-bit count holds,
a global store outside every array, `setmaxnreg` by part of a warp group
or beyond the register file; a CTA rank (`cta`, a multicast mask bit)
outside the cluster, an arrival or multicast onto a peer's barrier that is
not initialised yet or into a peer that has already exited; a
`cluster_sync` that not every thread of the cluster reaches (a deadlock
saying how many have arrived).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import Float32Type
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.tma_boxes import box_shape
from tawa.dialects.nvgpu.types import element_bytes
from tawa.interpreters import simt
from tawa.interpreters.cta import (
    CtaState,
    OverArrival,
    ThreadBarrier,
    cta_name,
    cta_of,
    lanes_of,
    task_label,
    task_of,
)
from tawa.interpreters.dtypes import dtype_of, scalar_from_python
from tawa.interpreters.errors import simulation_error
from tawa.interpreters.simt import PerThread
from tawa.interpreters.system import SystemFunctions
from tawa.interpreters.tile import inside_box
from tawa.target.hopper import (
    MAX_MBARRIER_COUNT,
    THREADS_PER_GROUP,
    THREADS_PER_WARP,
    register_pool,
    swizzled_address,
)

# --------------------------------------------------------------------------- shared memory


@dataclass(frozen=True)
class SmemBuffer:
    """What `nvgpu.smem_alloc` returns: a buffer at a byte offset."""

    offset: int
    type: Any
    simulated = True

    def stages(self) -> int:
        return int(np.prod(self.type.get_shape()[:-2], dtype=np.int64)) if len(self.type.get_shape()) > 2 else 1


def tile_addresses(t: Any, base: int, swizzled: bool = True) -> np.ndarray:
    """Byte address of every element of an R x C tile of shared-memory
    type `t` (its last two dims) stored from `base`: column chunks of the
    swizzle span, swizzled (see the module docstring) unless `swizzled` is
    false."""
    rows, cols = t.get_shape()[-2:]
    eb = element_bytes(t.element_type)
    w = t.chunk_columns()
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    addr = base + (c // w) * rows * w * eb + r * w * eb + (c % w) * eb
    return swizzled_address(addr, t.swizzle.data) if swizzled else addr


def stage_base(buf: SmemBuffer, stage: int, op: Operation) -> int:
    if not 0 <= stage < buf.stages():
        raise simulation_error(op, f"{op.name}: stage {stage} out of range for {buf.type}")
    rows, cols = buf.type.get_shape()[-2:]
    return buf.offset + stage * rows * cols * element_bytes(buf.type.element_type)


def write_tile(smem: np.ndarray, addresses: np.ndarray, tile: np.ndarray) -> None:
    raw = np.ascontiguousarray(tile).view(np.uint8).reshape(*tile.shape, tile.itemsize)
    for k in range(tile.itemsize):
        smem[addresses + k] = raw[..., k]


def read_tile(smem: np.ndarray, addresses: np.ndarray, dtype: np.dtype) -> np.ndarray:
    raw = np.stack([smem[addresses + k] for k in range(dtype.itemsize)], axis=-1)
    return np.ascontiguousarray(raw).view(dtype).reshape(addresses.shape)


def row_addresses(buf: SmemBuffer, stage: int, row: int, rows: int, op: Operation) -> np.ndarray:
    """Byte addresses of rows [row, row + rows) of stage `stage` of `buf`."""
    t = buf.type
    total = t.get_shape()[-2]
    if not 0 <= row <= total - rows:
        raise simulation_error(op, f"{op.name}: rows [{row}, {row + rows}) outside the {total} rows of {t}")
    return tile_addresses(t, stage_base(buf, stage, op))[row : row + rows]


def read_rows(smem: np.ndarray, buf: SmemBuffer, stage: int, row: int, rows: int, op: Operation) -> np.ndarray:
    """Rows [row, row + rows) of stage `stage` of `buf`, as a tile."""
    return read_tile(smem, row_addresses(buf, stage, row, rows, op), dtype_of(buf.type.element_type))


# --------------------------------------------------------------------------- mbarriers


@dataclass(eq=False)
class MBarrier:
    count: int | None = None
    pending: int = 0
    tx: int = 0
    phase: int = 0
    """Phases completed so far; the current one has parity phase % 2."""

    def describe(self) -> str:
        if self.count is None:
            return "not initialised"
        return (
            f"in phase {self.phase} (parity {self.phase % 2}): {self.pending} of {self.count} "
            f"arrivals and {self.tx} transaction bytes outstanding"
        )

    def _settle(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count  # type: ignore[assignment]

    def arrive(self, n: int = 1) -> None:
        for _ in range(n):
            self.pending -= 1
            self._settle()

    def complete_tx(self, nbytes: int) -> None:
        self.tx -= nbytes
        if self.pending == 0:
            self._settle()


@dataclass(frozen=True)
class BarrierRef:
    """A barrier of an `nvgpu.mbarrier<N>` array: (array offset, index)."""

    offset: int
    index: int


def barrier(cta: CtaState, buf: Any, index: Any, op: Operation, init: bool = False) -> tuple[MBarrier, str]:
    if not isinstance(buf, SmemBuffer) or not isinstance(buf.type, nvgpu.MBarrierType):
        raise simulation_error(op, f"{op.name}: not an mbarrier array")
    if not 0 <= index < buf.type.count.data:
        raise simulation_error(op, f"{op.name}: barrier index {index} out of range for {buf.type}")
    key = (buf.offset, index)
    name = f"{_value_name(getattr(op, 'barriers', op.operands[0]))}[{index}]"
    b = cta.barriers.get(key)
    if b is None:
        b = cta.barriers[key] = MBarrier()
    if b.count is None and not init:
        raise simulation_error(op, f"{op.name}: barrier {name} used before nvgpu.mbarrier_init")
    return b, name


def peer(cta: CtaState, rank: int, op: Operation) -> CtaState:
    """The CTA of rank `rank` in `cta`'s cluster."""
    size = cta.peers.size
    if not 0 <= rank < size:
        raise simulation_error(op, f"{op.name} in {cta_name(cta)}: CTA rank {rank} is outside its cluster of {size} "
                    f"CTA{'s' * (size != 1)} (ranks 0..{size - 1})")
    return cta.peers.ctas[rank]


def multicast_ranks(cta: CtaState, mask: int, op: Operation) -> list[CtaState]:
    """The CTAs whose rank bit is set in multicast `mask`."""
    size = cta.peers.size
    ranks = [r for r in range(mask.bit_length()) if mask >> r & 1]
    bad = [r for r in ranks if r >= size]
    if bad:
        raise simulation_error(op, f"{op.name} in {cta_name(cta)}: multicast mask {mask:#b} names rank {bad[0]}, outside its "
                    f"cluster of {size} CTA{'s' * (size != 1)} (ranks 0..{size - 1})")
    return [cta.peers.ctas[r] for r in ranks]


def remote_barrier(cta: CtaState, dest: CtaState, buf: Any, index: Any, op: Operation) -> tuple[MBarrier, str]:
    """The barrier `buf[index]` of `dest`, a CTA of `cta`'s cluster, that an
    arrival or a transfer from `cta` lands on: one of `cta`'s own as
    `barrier` has it; a peer's must be initialised and the peer not exited."""
    if dest is cta:
        return barrier(cta, buf, index, op)
    what = f"{op.name} from {cta_name(cta)} into {cta_name(dest)} (rank {dest.rank})"
    if dest.exited:
        raise simulation_error(op, f"{what}, which has already exited (undefined behaviour on the GPU): "
                    "end the kernel with nvgpu.cluster_sync")
    b, name = barrier(dest, buf, index, op, init=True)
    if b.count is None:
        raise simulation_error(op, f"{what} lands on its barrier {name}, which it has not initialised yet "
                    "(initialise the barriers, then nvgpu.cluster_sync, before peers use them)")
    return b, name


def _value_name(v: Any) -> str:
    return f"%{v.name_hint}" if v.name_hint else "%<mbarrier>"


@dataclass(eq=False)
class TmaLoad:
    """A TMA load in flight."""

    cta: CtaState
    box: np.ndarray
    addresses: np.ndarray
    bar: MBarrier
    nbytes: int

    def complete(self) -> None:
        write_tile(self.cta.smem, self.addresses, self.box)
        self.bar.complete_tx(self.nbytes)


@dataclass(frozen=True)
class TmaMap:
    """What `nvgpu.tma_descriptor` names: boxes of `type` over `array`."""

    array: np.ndarray
    type: Any
    simulated = True

    def box(self, coords: tuple[int, ...], shape: tuple[int, ...] | None = None) -> np.ndarray:
        """The box at `coords` (out-of-bounds elements 0): the descriptor's
        tile, or a box of `shape`."""
        shape = tuple(self.type.get_shape()) if shape is None else shape
        out = np.zeros((1,) * (self.array.ndim - len(shape)) + shape, dtype=self.array.dtype)
        if (found := inside_box(self.array.shape, coords, shape)) is not None:
            src, dst, _ = found
            out[dst] = self.array[src]
        return out.reshape(shape)


@dataclass(frozen=True)
class BulkStore:
    """A TMA store whose read of shared memory bytes [span) may be in flight."""

    span: tuple[int, int]
    op: Operation


def bulk_groups(cta: CtaState) -> dict[int, list[BulkStore]]:
    """The bulk groups of TMA stores each thread has in flight (kept on the
    CTA: bulk groups are per-thread hardware state)."""
    groups = getattr(cta, "bulk_stores", None)
    if groups is None:
        groups = {}
        cta.bulk_stores = groups  # type: ignore[attr-defined]
    return groups


def open_stores(cta: CtaState) -> dict[int, list[BulkStore]]:
    """The TMA box stores each thread has issued since its last
    `tma_store_commit` (the bulk group it has not closed yet)."""
    stores = getattr(cta, "open_bulk_stores", None)
    if stores is None:
        stores = {}
        cta.open_bulk_stores = stores  # type: ignore[attr-defined]
    return stores


def check_bulk_reads(cta: CtaState, addresses: np.ndarray, op: Operation) -> None:
    """A write of shared memory `addresses` while a TMA store may still read
    them (no `tma_store_wait` of its issuing thread, ordered before the write
    by a barrier) is an error: the store could send the new values."""
    lo, hi = int(addresses.min()), int(addresses.max()) + 1
    for thread, stores in [*bulk_groups(cta).items(), *open_stores(cta).items()]:
        for store in stores:
            if store.span[0] < hi and lo < store.span[1]:
                raise simulation_error(op, f"{op.name} writes shared memory [{lo}, {hi}) that the TMA store "
                            f"issued by thread {thread} may still read (wait for it with "
                            "nvgpu.tma_store_wait first)")


# --------------------------------------------------------------------------- ops


def _n_lanes(interpreter: Interpreter) -> int:
    return lanes_of(interpreter).count()


def _uniform(interpreter: Interpreter, op: Operation, args: PythonValues) -> tuple[Any, ...]:
    lanes = lanes_of(interpreter)
    return tuple(lanes.uniform(a, lambda i=i: f"{op.name}: operand #{i}") for i, a in enumerate(args))


@register_impls
class NvgpuFunctions(SystemFunctions, InterpreterFunctions):
    """Thread ids, shared memory, mbarriers, TMA, named barriers, fences."""

    # ids ------------------------------------------------------------------

    @impl(nvgpu.ThreadIdOp)
    def run_thread_id(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (cta_of(interpreter).ids,)

    @impl(nvgpu.LaneIdOp)
    def run_lane_id(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (cta_of(interpreter).ids_of(lambda t: t % THREADS_PER_WARP),)

    @impl(nvgpu.WarpIdOp)
    def run_warp_id(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (cta_of(interpreter).ids_of(lambda t: t // THREADS_PER_WARP),)

    @impl(nvgpu.WarpGroupIdOp)
    def run_warp_group_id(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (cta_of(interpreter).ids_of(lambda t: t // THREADS_PER_GROUP),)

    @impl(nvgpu.ElectOneOp)
    def run_elect_one(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        cta, idx = cta_of(interpreter), lanes_of(interpreter).indices()
        out = np.full(cta.threads, False, dtype=object)
        for warp in {int(t) // THREADS_PER_WARP for t in idx}:
            out[min(t for t in idx if t // THREADS_PER_WARP == warp)] = True
        return (PerThread(out),)

    @impl(nvgpu.BlockIdOp)
    def run_block_id(self, interpreter: Interpreter, op: nvgpu.BlockIdOp, args: PythonValues):
        return (cta_of(interpreter).launch.program_id[op.axis.value.data],)

    @impl(nvgpu.ClusterRankOp)
    def run_cluster_rank(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (cta_of(interpreter).rank,)

    @impl(nvgpu.GridDimOp)
    def run_grid_dim(self, interpreter: Interpreter, op: nvgpu.GridDimOp, args: PythonValues):
        return (cta_of(interpreter).cta_grid[op.axis.value.data],)

    @impl(nvgpu.LaunchGridOp)
    def run_launch_grid(self, interpreter: Interpreter, op: nvgpu.LaunchGridOp, args: PythonValues):
        return (cta_of(interpreter).grid[op.axis.value.data],)

    # shared memory ----------------------------------------------------------

    @impl(nvgpu.SmemAllocOp)
    def run_smem_alloc(self, interpreter: Interpreter, op: nvgpu.SmemAllocOp, args: PythonValues):
        return (SmemBuffer(op.offset.value.data, op.result.type),)

    @impl(nvgpu.SmemTileOp)
    def run_smem_tile(self, interpreter: Interpreter, op: nvgpu.SmemTileOp, args: PythonValues):
        buf, stage = _uniform(interpreter, op, args)
        rows = buf.type.get_shape()[-2]
        tile = read_rows(cta_of(interpreter).smem, buf, stage, 0, rows, op)
        tile.flags.writeable = False
        return (tile,)

    # staged for the lowering (tawa-stage-stores, tawa-stage-operands) -----

    @impl(nvgpu.StagedStoreOp)
    def run_staged_store(self, interpreter: Interpreter, op: nvgpu.StagedStoreOp, args: PythonValues):
        """What `tile.store` does (the staging buffer and tensor map say how
        the lowering will store the tile, not what): the box written in
        place, elements outside the array dropped; with `add`, what
        `tile.atomic_add` does (the box added in f32)."""
        value, array, *offsets = args[:2 + len(op.offsets)]
        if not array.flags.writeable:
            raise InterpretationError(f"{op.name}: the destination array is read-only")
        box = inside_box(array.shape, offsets, value.shape)
        if box is not None:
            src, dst, shape = box
            if op.add is not None:
                array[src] += value.reshape(shape)[dst].astype(np.float32)
            else:
                array[src] = value.reshape(shape)[dst]
        return ()

    @impl(nvgpu.StagedOperandOp)
    def run_staged_operand(self, interpreter: Interpreter, op: nvgpu.StagedOperandOp, args: PythonValues):
        """The tile itself (the buffer is where the lowering will put it)."""
        return (args[0],)

    # mbarriers --------------------------------------------------------------

    @impl(nvgpu.MBarrierInitOp)
    def run_mbarrier_init(self, interpreter: Interpreter, op: nvgpu.MBarrierInitOp, args: PythonValues):
        buf, index = _uniform(interpreter, op, args)
        b, name = barrier(cta_of(interpreter), buf, index, op, init=True)
        if _n_lanes(interpreter) != 1:
            raise simulation_error(op, f"nvgpu.mbarrier_init of {name} by {_n_lanes(interpreter)} threads (one must do it)")
        b.count = b.pending = op.count.value.data
        b.tx = b.phase = 0
        return ()

    @impl(nvgpu.MBarrierArriveOp)
    def run_mbarrier_arrive(self, interpreter: Interpreter, op: nvgpu.MBarrierArriveOp, args: PythonValues):
        """One arrival per active lane, on the CTA's own barrier or, with
        `cta(%r)`, on the one at the same offset and index in the CTA of
        rank r of its cluster, r being each lane's own (lanes may signal
        different CTAs; see `remote_barrier` for the errors)."""
        buf, index = _uniform(interpreter, op, args[:2])
        cta, lanes = cta_of(interpreter), lanes_of(interpreter)
        if len(args) < 3:
            arrivals = {cta.rank: lanes.count()}
        elif isinstance(args[2], PerThread):
            arrivals = Counter(int(args[2].values[t]) for t in lanes.indices())
        else:
            arrivals = {int(args[2]): lanes.count()}
        dests = [(peer(cta, rank, op), n) for rank, n in sorted(arrivals.items())]
        task_of(interpreter).sync(op, lambda: True, lambda: "")
        for dest, n in dests:
            b, _ = remote_barrier(cta, dest, buf, index, op)
            b.arrive(n)
        return ()

    @impl(nvgpu.MBarrierArriveExpectTxOp)
    def run_mbarrier_arrive_expect_tx(self, interpreter: Interpreter, op: nvgpu.MBarrierArriveExpectTxOp, args: PythonValues):
        buf, index = _uniform(interpreter, op, args)
        task_of(interpreter).sync(op, lambda: True, lambda: "")
        b, name = barrier(cta_of(interpreter), buf, index, op)
        n = _n_lanes(interpreter)
        b.tx += op.bytes.value.data * n
        if b.tx > MAX_MBARRIER_COUNT:
            raise simulation_error(op, f"{op.name}: {b.tx} transaction bytes pending on {name}, more than the 20-bit count holds")
        b.arrive(n)
        return ()

    @impl(nvgpu.MBarrierWaitParityOp)
    def run_mbarrier_wait_parity(self, interpreter: Interpreter, op: nvgpu.MBarrierWaitParityOp, args: PythonValues):
        buf, index, parity = _uniform(interpreter, op, args)
        b, name = barrier(cta_of(interpreter), buf, index, op)
        if parity not in (0, 1):
            raise simulation_error(op, f"{op.name}: parity must be 0 or 1, got {parity}")
        task_of(interpreter).sync(
            op,
            lambda: b.phase % 2 != parity,
            lambda: f"for barrier {name} (slot {index}) to complete its phase of parity {parity}; it is {b.describe()}",
        )
        return ()

    @impl(nvgpu.MBarrierTimedWaitParityOp)
    def run_mbarrier_timed_wait_parity(self, interpreter: Interpreter, op: nvgpu.MBarrierTimedWaitParityOp,
                                       args: PythonValues):
        """As `mbarrier_wait_parity`, but the wait times out (true) where
        that one would be a deadlock: when no task can proceed, the
        scheduler resumes it unsatisfied (`Scheduler.sync`'s `timeout`)."""
        buf, index, parity = _uniform(interpreter, op, args)
        b, name = barrier(cta_of(interpreter), buf, index, op)
        if parity not in (0, 1):
            raise simulation_error(op, f"{op.name}: parity must be 0 or 1, got {parity}")

        def ready() -> bool:
            return b.phase % 2 != parity

        state = task_of(interpreter)
        if state.task is None or state.scheduler is None:
            return (not ready(),)
        why = f"for barrier {name} (slot {index}) to complete its phase of parity {parity}"
        return (not state.scheduler.sync(state.task, op, ready, lambda: f"{why}; it is {b.describe()}", timeout=True),)

    @impl(nvgpu.MBarrierTryWaitParityOp)
    def run_mbarrier_try_wait_parity(self, interpreter: Interpreter, op: nvgpu.MBarrierTryWaitParityOp, args: PythonValues):
        buf, index, parity = _uniform(interpreter, op, args)
        task_of(interpreter).sync(op, lambda: True, lambda: "")
        b, _ = barrier(cta_of(interpreter), buf, index, op)
        return (b.phase % 2 != parity,)

    @impl(nvgpu.FenceMBarrierInitOp)
    def run_fence_mbarrier_init(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return ()

    @impl(nvgpu.FenceProxyAsyncOp)
    def run_fence_proxy_async(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return ()

    @impl(nvgpu.FenceCtaOp)
    def run_fence_cta(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        # The simulator runs a thread's memory accesses in program order.
        return ()

    # named barriers ---------------------------------------------------------

    @impl(nvgpu.NamedBarrierSyncOp)
    def run_named_barrier_sync(self, interpreter: Interpreter, op: nvgpu.NamedBarrierSyncOp, args: PythonValues):
        nb, generation = _named_arrive(interpreter, op)
        task_of(interpreter).sync(
            op,
            lambda: nb.generation > generation,
            lambda: f"at named barrier {op.barrier_id.value.data} ({nb.arrived} of "
            f"{op.num_threads.value.data} threads arrived)",
        )
        return ()

    @impl(nvgpu.ClusterSyncOp)
    def run_cluster_sync(self, interpreter: Interpreter, op: nvgpu.ClusterSyncOp, args: PythonValues):
        """The active lanes arrive at the cluster barrier and wait until
        every thread of every CTA of the cluster has arrived (one
        generation of the barrier)."""
        cta = cta_of(interpreter)
        cluster, state = cta.peers, task_of(interpreter)
        state.sync(op, lambda: True, lambda: "")
        expected, barrier = cluster.threads(), cluster.barrier
        try:
            generation = barrier.arrive(_n_lanes(interpreter), expected)
        except OverArrival as over:
            raise simulation_error(op, f"{op.name} in {cta_name(cta)}: {over.arrived} threads arrived at the "
                        f"cluster barrier, which expects the {expected} of the cluster") from None
        whom = "cluster" if cluster.size > 1 else "CTA"
        state.sync(
            op,
            lambda: barrier.generation > generation,
            lambda: f"for the {expected} threads of the {whom} ({barrier.arrived} of {expected} arrived)",
        )
        return ()

    @impl(nvgpu.CounterArriveOp)
    def run_counter_arrive(self, interpreter: Interpreter, op: nvgpu.CounterArriveOp, args: PythonValues):
        """The op's PTX, step by step: every thread at the named barrier;
        the leader's wrapping increment of the i32 at `address` in global
        memory (the simulator runs one CTA's memory accesses at a time,
        so it is atomic, and what earlier CTAs stored is visible); the
        barrier again, after which every thread reads the leader's
        outcome."""
        address, leader, counts = args
        cta, bar = cta_of(interpreter), op.barrier_id.value.data
        self._meet(interpreter, op)
        idx = lanes_of(interpreter).indices()
        leaders = [int(t) for t in idx if (leader.values[t] if isinstance(leader, PerThread) else leader)]
        if len(leaders) > 1 or (leaders and bar in cta.arrivals):
            raise simulation_error(op, f"{op.name}: more than one leader thread in {cta_name(cta)}")
        if leaders:
            at = address.values[leaders[0]] if isinstance(address, PerThread) else address
            count = int(counts.values[leaders[0]] if isinstance(counts, PerThread) else counts)
            old, bad = cta.memory.gather(np.array([int(at)], dtype=np.int64), 4)
            if bad is not None:
                raise simulation_error(op, f"{op.name}: address {int(at):#x} is no element of a memref")
            value = int(old[0])
            if not 0 <= value < count:
                raise simulation_error(op, f"{op.name} in {cta_name(cta)}: the counter holds {value}, outside "
                                           f"[0, {count}): it was not zeroed, or programs of another count share it")
            cta.memory.scatter(np.array([int(at)], dtype=np.int64), np.array([0 if value == count - 1 else value + 1]), 4)
            cta.arrivals[bar] = value == count - 1
        self._meet(interpreter, op)
        if bar not in cta.arrivals:
            raise simulation_error(op, f"{op.name}: no leader thread in {cta_name(cta)}")
        last = cta.arrivals[bar]
        self._meet(interpreter, op)  # everyone has read the outcome before the slot is reused
        cta.arrivals.pop(bar, None)
        return (last,)

    @staticmethod
    def _meet(interpreter: Interpreter, op: nvgpu.CounterArriveOp) -> None:
        nb, generation = _named_arrive(interpreter, op)
        task_of(interpreter).sync(
            op,
            lambda: nb.generation > generation,
            lambda: f"at named barrier {op.barrier_id.value.data} ({nb.arrived} of "
            f"{op.num_threads.value.data} threads arrived) in {op.name}",
        )

    @impl(nvgpu.LoadGlobalScalarOp)
    def run_load_global_scalar(self, interpreter: Interpreter, op: nvgpu.LoadGlobalScalarOp, args: PythonValues):
        """The 32-bit element at `address` where `in_bounds` holds, else 0
        (the address is then not read); an address in bounds that is no
        element of a memref is an out-of-bounds load."""
        address, in_bounds = args
        f32 = op.result.type == Float32Type()
        if not in_bounds:
            return (scalar_from_python(0, op.result.type),)
        values, _ = cta_of(interpreter).memory.gather(np.array([int(address)], dtype=np.int64), 4)
        if values is None:
            raise simulation_error(op, f"{op.name}: address {int(address):#x} is no element of a memref "
                                       "(an out-of-bounds load)")
        return (scalar_from_python(float(values[0]) if f32 else int(values[0]), op.result.type),)

    @impl(nvgpu.NamedBarrierArriveOp)
    def run_named_barrier_arrive(self, interpreter: Interpreter, op: nvgpu.NamedBarrierArriveOp, args: PythonValues):
        _named_arrive(interpreter, op)
        return ()

    # TMA ----------------------------------------------------------------------

    @impl(nvgpu.TmaDescriptorOp)
    def run_tma_descriptor(self, interpreter: Interpreter, op: nvgpu.TmaDescriptorOp, args: PythonValues):
        return (TmaMap(args[0], op.result.type),)

    @impl(nvgpu.TmaLoadOp)
    def run_tma_load(self, interpreter: Interpreter, op: nvgpu.TmaLoadOp, args: PythonValues):
        def place(desc, coords, dest, stage):
            box = desc.box(coords)
            addresses = tile_addresses(dest.type, stage_base(dest, stage, op))
            if box.size == addresses.size:  # a box with leading 1s fills one tile
                box = box.reshape(addresses.shape)
            if box.shape != addresses.shape:
                raise simulation_error(op, f"{op.name}: a {box.shape} box into {addresses.shape} tiles of {dest.type}")
            return box, addresses

        return _issue_tma_load(interpreter, op, args, place)

    @impl(nvgpu.TmaStoreOp)
    def run_tma_store(self, interpreter: Interpreter, op: nvgpu.TmaStoreOp, args: PythonValues):
        """The box lands in global memory at once (clipped to the array); the
        read of the staging stage stays in flight, one bulk group per issuing
        thread, until that thread's `tma_store_wait` retires it: a write into
        it before then is reported (`check_bulk_reads`)."""
        src, stage, desc, *coords = _uniform(interpreter, op, args)
        cta = cta_of(interpreter)
        task_of(interpreter).sync(op, lambda: True, lambda: "")
        t = src.type
        addresses = tile_addresses(t, stage_base(src, stage, op))
        tile = read_tile(cta.smem, addresses, dtype_of(t.element_type))
        shape = desc.type.get_shape()
        if (found := inside_box(desc.array.shape, tuple(coords), shape)) is not None:
            _land(desc.array, found, tile, op.add is not None)
        groups = bulk_groups(cta)
        span = (int(addresses.min()), int(addresses.max()) + element_bytes(t.element_type))
        for thread in lanes_of(interpreter).indices():
            groups.setdefault(int(thread), []).append(BulkStore(span, op))
        return ()

    @impl(nvgpu.TmaLoadBoxOp)
    def run_tma_load_box(self, interpreter: Interpreter, op: nvgpu.TmaLoadBoxOp, args: PythonValues):
        """As `tma_load`, for the descriptor's box (a column chunk of the
        tile) into its place in the stage."""
        def place(desc, coords, dest, stage):
            addresses = _box_addresses(dest, stage, op)
            return desc.box(coords, box_shape(desc.type)).reshape(addresses.shape), addresses

        return _issue_tma_load(interpreter, op, args, place)

    @impl(nvgpu.TmaStoreBoxOp)
    def run_tma_store_box(self, interpreter: Interpreter, op: nvgpu.TmaStoreBoxOp, args: PythonValues):
        """As `tma_store`, for one box; its read stays in flight in the
        thread's open bulk group until `tma_store_commit` closes it."""
        src, stage, desc, *coords = _uniform(interpreter, op, args)
        cta = cta_of(interpreter)
        task_of(interpreter).sync(op, lambda: True, lambda: "")
        t = src.type
        addresses = _box_addresses(src, stage, op)
        tile = read_tile(cta.smem, addresses, dtype_of(t.element_type))
        shape = box_shape(desc.type)
        if (found := inside_box(desc.array.shape, tuple(coords), shape)) is not None:
            _land(desc.array, found, tile, op.add is not None)
        span = (int(addresses.min()), int(addresses.max()) + element_bytes(t.element_type))
        for thread in lanes_of(interpreter).indices():
            open_stores(cta).setdefault(int(thread), []).append(BulkStore(span, op))
        return ()

    @impl(nvgpu.TmaStoreCommitOp)
    def run_tma_store_commit(self, interpreter: Interpreter, op: nvgpu.TmaStoreCommitOp, args: PythonValues):
        """The executing threads' open stores become one bulk group each."""
        task_of(interpreter).sync(op, lambda: True, lambda: "")
        cta = cta_of(interpreter)
        groups, pending = bulk_groups(cta), open_stores(cta)
        for thread in lanes_of(interpreter).indices():
            stores = pending.pop(int(thread), [])
            if stores:
                span = (min(s.span[0] for s in stores), max(s.span[1] for s in stores))
                groups.setdefault(int(thread), []).append(BulkStore(span, stores[0].op))
        return ()

    @impl(nvgpu.TmaStoreWaitOp)
    def run_tma_store_wait(self, interpreter: Interpreter, op: nvgpu.TmaStoreWaitOp, args: PythonValues):
        """Retires the executing threads' bulk groups but the newest `pending`."""
        task_of(interpreter).sync(op, lambda: True, lambda: "")
        groups, keep = bulk_groups(cta_of(interpreter)), op.pending.value.data
        for thread in lanes_of(interpreter).indices():
            mine = groups.get(int(thread), [])
            del mine[: max(0, len(mine) - keep)]
        return ()

    # registers, global memory ----------------------------------------------

    @impl(nvgpu.SetMaxNRegOp)
    def run_setmaxnreg(self, interpreter: Interpreter, op: nvgpu.SetMaxNRegOp, args: PythonValues):
        cta, lanes = cta_of(interpreter), lanes_of(interpreter)
        groups = whole_groups(op, lanes.mask)
        count = op.count.value.data
        for g in groups:
            cta.regs[g] = count
        total = sum(cta.regs.get(g, 0) for g in range(cta.threads // THREADS_PER_GROUP)) * THREADS_PER_GROUP
        pool = register_pool(cta.threads)
        if len(cta.regs) == cta.threads // THREADS_PER_GROUP and total > pool:
            raise simulation_error(op, f"setmaxnreg: the warp groups ask for {total} registers, the CTA holds {pool} "
                        "(setmaxnreg.inc would wait for ever)")
        state = task_of(interpreter)
        if state.task is not None:
            from tawa.dialects.aref import PartitionRole

            state.task.role = PartitionRole.PRODUCER if op.action.data.value == "dec" else PartitionRole.CONSUMER
            state.task.label = task_label(cta, f"{state.task.role} ({', '.join(f'warp group {g}' for g in groups)})")
        return ()

    @impl(nvgpu.MemrefBaseOp)
    def run_memref_base(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (cta_of(interpreter).memory.address_of(args[0]),)

    @impl(nvgpu.MemrefStrideOp)
    def run_memref_stride(self, interpreter: Interpreter, op: nvgpu.MemrefStrideOp, args: PythonValues):
        # A size-1 dimension's stride is arbitrary in NumPy: only index 0 of
        # it is ever addressed, and the memory's element map ignores it too.
        array, d = args[0], op.dim.value.data
        return (int(array.strides[d] // array.itemsize) if array.shape[d] != 1 else 0,)

    @impl(memref.DimOp)
    def run_dim(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        array, index = args
        if not 0 <= index < array.ndim:
            raise InterpretationError(f"memref.dim: index {index} out of range for rank {array.ndim}")
        return (int(array.shape[index]),)


def _land(array: np.ndarray, found: tuple, tile: np.ndarray, add: bool) -> None:
    """A TMA store's box (`found`: `inside_box`'s clipped part) lands in
    `array`: written, or with `add` added in f32 (each element's add atomic:
    the simulator runs one thread's store at a time)."""
    dst, part, padded = found
    if add:
        array[dst] += tile.reshape(padded)[part].astype(np.float32)
    else:
        array[dst] = tile.reshape(padded)[part]


def _box_addresses(buf: SmemBuffer, stage: int, op: nvgpu.TmaLoadBoxOp | nvgpu.TmaStoreBoxOp) -> np.ndarray:
    """Byte addresses of the elements of a box op's column chunk: a tile of
    the chunk's columns at its offset into the stage."""
    t = buf.type
    rows = t.get_shape()[-2]
    chunk = nvgpu.SmemType([rows, t.chunk_columns()], t.element_type, t.swizzle.data)
    return tile_addresses(chunk, stage_base(buf, stage, op) + op.offset.value.data)


def whole_groups(op: Operation, mask: np.ndarray) -> list[int]:
    groups = mask.reshape(-1, THREADS_PER_GROUP)
    partial = [g for g, m in enumerate(groups) if m.any() and not m.all()]
    if partial:
        raise simulation_error(op, f"{op.name} by part of warp group {partial[0]} ({int(groups[partial[0]].sum())} threads)")
    return [g for g, m in enumerate(groups) if m.all()]


def _named_arrive(interpreter: Interpreter, op: Any) -> tuple[ThreadBarrier, int]:
    cta, lanes = cta_of(interpreter), lanes_of(interpreter)
    task_of(interpreter).sync(op, lambda: True, lambda: "")
    nb = cta.named.setdefault(op.barrier_id.value.data, ThreadBarrier())
    warps = {int(t) // THREADS_PER_WARP for t in lanes.indices()}
    count = op.num_threads.value.data
    try:
        return nb, nb.arrive(len(warps) * THREADS_PER_WARP, count)
    except OverArrival as over:
        raise simulation_error(op, f"{op.name}: {over.arrived} threads arrived at named barrier "
                    f"{op.barrier_id.value.data}, which expects {count}") from None


simt.LANE_AWARE.update({nvgpu.ElectOneOp, nvgpu.MBarrierArriveOp, nvgpu.CounterArriveOp})
simt.BLOCKING.update({nvgpu.MBarrierWaitParityOp, nvgpu.MBarrierTimedWaitParityOp, nvgpu.NamedBarrierSyncOp,
                      nvgpu.CounterArriveOp,
                      nvgpu.ClusterSyncOp})


def _issue_tma_load(interpreter: Interpreter, op: nvgpu.TmaLoadOp | nvgpu.TmaLoadBoxOp, args: PythonValues,
                    place: Callable[[Any, tuple[Any, ...], Any, Any], tuple[Any, Any]]) -> tuple[()]:
    """A TMA load (one per lane of the issuing threads) of the box `place`
    reads and the shared-memory addresses it writes, into this CTA or every
    CTA of its multicast, each completing on that CTA's barrier."""
    desc, *rest = _uniform(interpreter, op, args)
    coords = tuple(rest[: len(op.coords)])
    dest, stage, bars, bar_index = rest[len(op.coords) :]
    cta = cta_of(interpreter)
    ctas = [cta] if op.multicast is None else multicast_ranks(cta, op.multicast.value.data, op)
    task_of(interpreter).sync(op, lambda: True, lambda: "")
    bars_of = [remote_barrier(cta, c, bars, bar_index, op)[0] for c in ctas]
    box, addresses = place(desc, coords, dest, stage)
    for _ in range(_n_lanes(interpreter)):
        for c, b in zip(ctas, bars_of):
            cta.peers.transfers.append(TmaLoad(c, box, addresses, b, box.nbytes))
    return ()
