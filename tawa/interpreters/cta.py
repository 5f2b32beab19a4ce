"""Running thread-level kernels on the CPU, one CTA at a time.

A kernel below `tawa-persistent` (it uses `nvgpu` ops) runs as a grid of
CTAs.  Each CTA has its own shared memory (bytes, poisoned with 0xFF so
that reading a slot before its TMA lands gives NaNs), mbarriers, named
barriers and wgmma queues (`CtaState`), and a `Scheduler` whose tasks are
sets of the CTA's threads (tawa.interpreters.simt): each warp group first
(they run independently on the GPU, so a branch on the warp group never
waits for the other branch to end); the partitions of an
`aref.warp_specialize`; the two sides of an `scf.if` that diverges within a
warp group into branches that wait on each other.

The grid: a persistent kernel (`nvgpu.launch_grid`) runs `ctas` CTAs
(default 2, at most the number of programs) that loop over the logical
grid; otherwise one CTA per program, `nvgpu.block_id` being the program id.
CTAs run one after another: nothing but global memory connects them.

Thread-block clusters (`#nvgpu.kernel<..., cluster = N>`, N > 1): the CTAs
N·c .. N·c + N - 1 along grid axis x form a cluster, a CTA's rank being its
x mod N.  The CTAs of one cluster run concurrently in one `Scheduler` (they
arrive on each other's mbarriers, multicast TMA boxes into each other's
shared memory and meet at `nvgpu.cluster_sync`: `Cluster`); clusters run
one after another.  A persistent cluster kernel launches what the GPU
launches on `ctas` (default 2) clusters' worth of SMs:
`persistent_ctas(grid, N · ctas, N)` CTAs, whole clusters; a
non-persistent one needs grid x to be a multiple of N.  A CTA *exits* when
its last warp group returns: then a TMA load still in flight into it, or a
wgmma in flight, is an error, and so is any later arrival or multicast
from a peer into it (undefined behaviour on the GPU; a cluster kernel
ends with `nvgpu.cluster_sync`).  A kernel without clusters is a cluster
of one (rank 0; `nvgpu.cluster_sync` syncs the CTA).

Global memory is the NumPy arrays of the memref arguments; addresses
(`nvgpu.memref_base` and the arithmetic on it) live in a flat address space
where each array gets its own 2^40-byte window (`GlobalMemory`), so a store
to an address outside every array is an error, not a silent corruption.
Byte offsets in a window are the array's own: element (i0, ..., in) is at
Σ iₖ·strideₖ, so a strided NumPy view (rows contiguous, other strides
positive: what `nvgpu.memref_stride` reports) is addressed in place, as the
GPU addresses a strided torch view, and an address between its elements
(in a gap of a column slice) is outside it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation, Region
from xdsl.utils.exceptions import InterpretationError

from tawa.diagnostics import TawaError, first_line, location_of
from tawa.dialects import aref, nvgpu
from tawa.dialects.aref import PartitionRole
from tawa.dialects.nvgpu.kernel_info import kernel_info, persistent_ctas
from tawa.interpreters.aref import ArefFunctions, TaskState, check_finished, free_values
from tawa.interpreters.errors import InterpreterError, SimulationError
from tawa.interpreters.machine import make_interpreter, run_program, tracker_of
from tawa.interpreters.scf import TileScfFunctions
from tawa.interpreters.schedule import Schedule, Scheduler, Task, program_order
from tawa.interpreters.simt import LANE_AWARE, Lanes, PerThread, SimtInterpreter, can_block, merge
from tawa.interpreters.tile import Launch, set_launch
from tawa.target.hopper import THREADS_PER_GROUP, THREADS_PER_WARP

DEFAULT_CTAS = 2
"""CTAs of a persistent kernel on the CPU (clusters of a cluster kernel):
two, so that programs are shared out and each runs several of them."""


def is_thread_level(kernel: func.FuncOp) -> bool:
    """Whether `kernel` needs the CTA simulator (it uses nvgpu ops)."""
    return any(op.dialect_name() == "nvgpu" for op in kernel.walk())


# --------------------------------------------------------------------------- global memory


@dataclass(eq=False)
class GlobalMemory:
    """A flat address space over the memref arrays: array i starts at
    (i + 1) << 40."""

    arrays: list[np.ndarray] = field(default_factory=list)
    views: dict[int, np.ndarray] = field(default_factory=dict)
    """For a strided (not C-contiguous) array, by window: the row-major
    index of the element at each element offset of its span, -1 in gaps."""

    WINDOW = 1 << 40

    def address_of(self, array: np.ndarray) -> int:
        for i, a in enumerate(self.arrays):
            if a is array:
                return (i + 1) * self.WINDOW
        if not array.flags.c_contiguous:
            self.views[len(self.arrays) + 1] = _element_map(array)
        self.arrays.append(array)
        return len(self.arrays) * self.WINDOW

    def _elements(self, w: int, offsets: np.ndarray) -> np.ndarray:
        """The row-major index in window `w`'s array of the element at each
        element offset, -1 where none is."""
        array, table = self.arrays[w - 1], self.views.get(w)
        if table is None:
            return np.where(offsets < array.size, offsets, -1)
        inside = offsets < table.size
        return np.where(inside, table[np.where(inside, offsets, 0)], -1)

    def _locate(self, addresses: np.ndarray, itemsize: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(array window, row-major element index, whether at an element of
        that array) of every address."""
        window, offset = np.divmod(addresses, self.WINDOW)
        ok = (window >= 1) & (window <= len(self.arrays)) & (offset % itemsize == 0)
        index = np.full(addresses.shape, -1, dtype=np.int64)
        for w in np.unique(window[ok]):
            array = self.arrays[int(w) - 1]
            mine = ok & (window == w)
            if array.itemsize != itemsize:
                ok[mine] = False
                continue
            index[mine] = self._elements(int(w), offset[mine] // itemsize)
        return window, index, ok & (index >= 0)

    def scatter(self, addresses: np.ndarray, values: np.ndarray, itemsize: int) -> int | None:
        """Stores `values[i]` at byte `addresses[i]`; returns None, or the
        first i outside every array (or not at an element of one), before
        storing anything."""
        window, index, ok = self._locate(addresses, itemsize)
        if not ok.all():
            return int(np.flatnonzero(~ok)[0])
        for w in np.unique(window):
            array = self.arrays[int(w) - 1]
            mine = window == w
            array[np.unravel_index(index[mine], array.shape)] = values[mine].astype(array.dtype)
        return None

    def gather(self, addresses: np.ndarray, itemsize: int) -> tuple[np.ndarray | None, int | None]:
        """The values at byte `addresses` (as float64), or (None, the first
        i outside every array or not at an element of one)."""
        window, index, ok = self._locate(addresses, itemsize)
        if not ok.all():
            return None, int(np.flatnonzero(~ok)[0])
        out = np.zeros(addresses.shape, dtype=np.float64)
        for w in np.unique(window):
            array = self.arrays[int(w) - 1]
            mine = window == w
            out[mine] = array[np.unravel_index(index[mine], array.shape)].astype(np.float64)
        return out, None


def _element_map(array: np.ndarray) -> np.ndarray:
    """For a strided view: at each element offset from its element 0 (Σ
    index·stride), the row-major index of the element there, -1 between
    elements.  Its rows must be contiguous and its other strides positive,
    as the runtime requires of an array the kernel addresses."""
    shape, itemsize = array.shape, array.itemsize
    strides = [st for n, st in zip(shape, array.strides) if n != 1]
    if (
        strides and strides[-1] != itemsize and shape[-1] != 1
    ) or any(st <= 0 or st % itemsize for st in strides):
        raise InterpretationError(
            f"a memref the kernel addresses must have contiguous rows and positive strides, got byte strides "
            f"{array.strides} for shape {shape}"
        )
    offsets = np.zeros((), dtype=np.int64)
    for n, st in zip(shape, array.strides):
        offsets = np.add.outer(offsets, np.arange(n, dtype=np.int64) * (st // itemsize if n != 1 else 0))
    table = np.full(int(offsets.max(initial=0)) + 1, -1, dtype=np.int64)
    table[offsets.reshape(-1)] = np.arange(array.size, dtype=np.int64)
    return table


# --------------------------------------------------------------------------- per-CTA state


class OverArrival(Exception):
    """More threads arrived at a `ThreadBarrier` than it expects (`.arrived`)."""

    def __init__(self, arrived: int):
        super().__init__(arrived)
        self.arrived = arrived


@dataclass(eq=False)
class ThreadBarrier:
    """A barrier that counts threads: a named barrier (`bar.sync id, n`) or
    the cluster barrier of `nvgpu.cluster_sync`; `arrived` threads so far of
    generation `generation`."""

    arrived: int = 0
    generation: int = 0

    def arrive(self, threads: int, expected: int) -> int:
        """`threads` more arrive at the barrier of `expected` threads; returns
        the generation they wait to see end (it ends, and the count starts
        again, when the last of the `expected` arrives).  Raises
        `OverArrival` when more than `expected` have arrived."""
        generation = self.generation
        self.arrived += threads
        if self.arrived > expected:
            raise OverArrival(self.arrived)
        if self.arrived == expected:
            self.arrived = 0
            self.generation += 1
        return generation


@dataclass(eq=False)
class Cluster:
    """The CTAs of one thread-block cluster, `ctas[r]` being the CTA of rank
    r, which share a scheduler, the TMA loads in flight into any of them
    (`transfers`, oldest first; each has its destination CTA as `.cta`) and
    the cluster barrier of `nvgpu.cluster_sync` (`barrier`)."""

    size: int
    ctas: list[CtaState] = field(default_factory=list)
    transfers: list[Any] = field(default_factory=list)
    barrier: ThreadBarrier = field(default_factory=ThreadBarrier)

    def progress(self, force: bool, rng: Any) -> bool:
        """Completes TMA transfers in flight into the cluster's CTAs: all
        when `force`, else each with probability 1/2 (drawn from `rng`, the
        scheduler's seeded one), oldest first."""
        done = False
        for t in list(self.transfers):
            if force or rng.random() < 0.5:
                self.transfers.remove(t)
                t.complete()
                done = True
        return done

    def threads(self) -> int:
        """Threads of the whole cluster (what `nvgpu.cluster_sync` waits for)."""
        return sum(c.threads for c in self.ctas)


@dataclass(eq=False)
class CtaState:
    """Everything the threads of one CTA share."""

    threads: int
    launch: Launch
    cta_grid: tuple[int, int, int]
    grid: tuple[int, int, int]
    smem: np.ndarray
    memory: GlobalMemory
    scheduler: Scheduler
    functions: list[InterpreterFunctions]
    module: ModuleOp
    barriers: dict[tuple[int, int], Any] = field(default_factory=dict)
    named: dict[int, ThreadBarrier] = field(default_factory=dict)
    arrivals: dict[int, bool] = field(default_factory=dict)
    """`nvgpu.counter_arrive` by named barrier: whether the leader's arrival
    was the last, between the op's two barriers."""
    wgmma: dict[int, Any] = field(default_factory=dict)
    regs: dict[int, int] = field(default_factory=dict)
    cluster: Cluster | None = None
    """Its thread-block cluster (None: a cluster of this CTA alone)."""
    rank: int = 0
    """Its rank in the cluster (`nvgpu.cluster_rank`)."""
    live: int = 0
    """Warp-group tasks of the CTA still running (`run_grid`)."""
    exited: bool = False
    """Whether all of its threads have returned (`exit_cta`)."""
    ids: PerThread = field(init=False)
    """Every thread's id (`nvgpu.thread_id`)."""

    def __post_init__(self) -> None:
        self.ids = PerThread(np.array(range(self.threads), dtype=object))
        if self.cluster is None:
            self.cluster = Cluster(1, [self])

    @property
    def peers(self) -> Cluster:
        """Its cluster (never None)."""
        assert self.cluster is not None
        return self.cluster

    @property
    def transfers(self) -> list[Any]:
        """The TMA loads in flight into this CTA, oldest first."""
        return [t for t in self.peers.transfers if t.cta is self]

    def progress(self, force: bool) -> bool:
        """Completes TMA transfers in flight into the CTA's whole cluster
        (`Cluster.progress`)."""
        return self.peers.progress(force, self.scheduler._rng)

    def ids_of(self, fn: Any) -> PerThread:
        """`fn(thread id)` of every thread (lane, warp, warp group)."""
        return PerThread(np.array([fn(t) for t in range(self.threads)], dtype=object))

    def group_lanes(self, g: int) -> Lanes:
        """The threads of warp group g."""
        return Lanes(np.arange(self.threads) // THREADS_PER_GROUP == g)


def cta_of(interpreter: Interpreter) -> CtaState:
    cta = interpreter.get_data(CtaFunctions, "cta", lambda: None)
    if cta is None:
        raise InterpretationError("nvgpu ops run only inside a CTA (tawa.interpret of a thread-level kernel)")
    return cta


def lanes_of(interpreter: Interpreter) -> Lanes:
    assert isinstance(interpreter, SimtInterpreter) and interpreter.lanes is not None
    return interpreter.lanes


def task_of(interpreter: Interpreter) -> TaskState:
    return interpreter.get_data(ArefFunctions, "task", TaskState)


def describe_lanes(mask: np.ndarray) -> str:
    groups = sorted({int(t) // THREADS_PER_GROUP for t in np.flatnonzero(mask)})
    n = int(mask.sum())
    if len(groups) == 1:
        where = f"warp group {groups[0]}"
    else:
        where = f"warp groups {', '.join(map(str, groups))}"
    return where if n == THREADS_PER_GROUP * len(groups) else f"{n} thread{'s' * (n != 1)} of {where}"


def new_interpreter(cta: CtaState, task: Task | None, mask: np.ndarray) -> SimtInterpreter:
    """An interpreter for a task of `cta` running the lanes of `mask`."""

    interp = make_interpreter(cta.module, cta.functions, interpreter_class=SimtInterpreter)
    assert isinstance(interp, SimtInterpreter)
    interp.lanes = Lanes(mask)
    interp.set_data(CtaFunctions, "cta", cta)
    set_launch(interp, cta.launch)
    arefs = next(f for f in cta.functions if isinstance(f, ArefFunctions))
    arefs.attach(interp, TaskState(task, cta.scheduler))
    return interp


def run_region_task(
    cta: CtaState, parent: Interpreter, op: Operation,
    regions: list[tuple[np.ndarray, Region, PartitionRole]],
) -> list[PythonValues]:
    """Runs each region as a concurrent task for its lanes; waits for all of
    them (the calling task blocks); returns their results."""
    state = task_of(parent)
    results: list[PythonValues] = [() for _ in regions]
    children = []
    for k, (mask, region, role) in enumerate(regions):
        free = free_values(region)
        env = parent.get_values(free)

        def body(task: Task, k=k, mask=mask, region=region, free=free, env=env) -> None:
            sub = new_interpreter(cta, task, mask)
            sub.push_scope(str(task.role))
            sub.set_values(zip(free, env))
            try:
                with np.errstate(all="ignore"):
                    results[k] = sub.run_ssacfg_region(region, (), str(task.role))
            except TawaError:
                raise
            except Exception as err:

                tracker = tracker_of(sub)
                at = tracker.stack[-1] if tracker is not None and tracker.stack else op
                raise InterpreterError(
                    f"{first_line(err)} (in '{at.name}', {task.label}, {cta_name(cta)})",
                    location_of(at) or "tawa.interpret",
                ) from err
            check_finished(op, str(task.role), task_of(sub))

        task = cta.scheduler.spawn(role, body)
        task.label = task_label(cta, f"{role} ({describe_lanes(mask)})")
        children.append(task)
    if state.task is None:
        raise InterpretationError(f"{op.name}: concurrent branches outside a CTA task")
    state.sync(op, lambda: all(c.done for c in children), lambda: "for its branches to finish")
    return results


def cta_name(cta: CtaState) -> str:
    return f"CTA ({', '.join(map(str, cta.launch.program_id))})"


def task_label(cta: CtaState, label: str) -> str:
    """How messages name a task of `cta`: by `label` alone, prefixed with
    the CTA when the CTAs of a cluster share its scheduler."""
    return label if cta.peers.size == 1 else f"{cta_name(cta)} {label}"


# --------------------------------------------------------------------------- ops that shape tasks


@register_impls
class CtaFunctions(InterpreterFunctions):
    """`scf` over lanes and `aref.warp_specialize` as tasks of a CTA."""

    @impl(scf.IfOp)
    def run_if(self, interpreter: Interpreter, op: scf.IfOp, args: PythonValues) -> PythonValues:
        (cond,) = args
        if not isinstance(cond, PerThread):
            return TileScfFunctions.run_if(self, interpreter, op, args).values  # type: ignore[arg-type]
        lanes = lanes_of(interpreter)
        on, off = lanes.where(cond)
        if not off.any() or not on.any():
            return TileScfFunctions.run_if(self, interpreter, op, (bool(on.any()),)).values  # type: ignore[arg-type]
        branches = [(on, op.true_region), (off, op.false_region)]
        if all(can_block(r) for _, r in branches):
            role = task_of(interpreter).task.role if task_of(interpreter).task else PartitionRole.CONSUMER
            then, other = run_region_task(cta_of(interpreter), interpreter, op, [(m, r, role) for m, r in branches])
            return merge(on, then, other, lanes)
        # At most one branch can wait: run the other first (a valid order).
        branches.sort(key=lambda b: can_block(b[1]))
        out = {}
        saved = lanes.mask
        try:
            for mask, region in branches:
                lanes.mask = mask
                out[id(region)] = interpreter.run_ssacfg_region(region, (), "scf.if")
        finally:
            lanes.mask = saved
        return merge(on, out[id(op.true_region)], out[id(op.false_region)], lanes)

    @impl(scf.ForOp)
    def run_for(self, interpreter: Interpreter, op: scf.ForOp, args: PythonValues) -> PythonValues:
        lanes = lanes_of(interpreter)
        bounds = [lanes.uniform(a, lambda k=k: f"scf.for {k}") for k, a in zip(("lower bound", "upper bound", "step"), args[:3])]
        return TileScfFunctions.run_for(self, interpreter, op, (*bounds, *args[3:])).values  # type: ignore[arg-type]

    @impl(aref.WarpSpecializeOp)
    def run_warp_specialize(self, interpreter: Interpreter, op: aref.WarpSpecializeOp, args: PythonValues):
        cta = cta_of(interpreter)
        lanes = lanes_of(interpreter)
        regions = []
        start = 0
        for role, warps, _regs, region in op.partition_specs():
            # A partition lowered to threads (no tile or aref op left: mbarriers
            # count the arriving lanes, fragments are per thread) runs as one
            # task per warp group, like the CTA's (run_grid); one that is not,
            # as one task.
            lowered = not any(o.dialect_name() in ("tile", "aref") for o in region.walk() if o is not region.parent_op())
            threads = warps * THREADS_PER_WARP
            mask = np.zeros(cta.threads, dtype=bool)
            # PartitionRole: the producer runs on one elected thread (its
            # first), consumers on all of their warp groups.
            end = start + 1 if role == PartitionRole.PRODUCER else start + threads
            mask[start:end] = True
            start += threads
            for part in _warp_group_masks(cta.threads, split=lowered and role != PartitionRole.PRODUCER):
                if (part & mask & lanes.mask).any():
                    regions.append((part & mask & lanes.mask, region, role))
        if start != cta.threads:
            raise InterpretationError(f"aref.warp_specialize has {start} threads, the CTA {cta.threads}")
        run_region_task(cta, interpreter, op, regions)
        return ()


LANE_AWARE.update({aref.WarpSpecializeOp})


# --------------------------------------------------------------------------- the grid


def cta_threads(kernel: func.FuncOp) -> int:
    info = kernel_info(kernel)
    if info.threads:
        return info.threads
    for op in kernel.walk():
        if isinstance(op, aref.WarpSpecializeOp):
            return sum(w for _, w, _, _ in op.partition_specs()) * THREADS_PER_WARP
    return THREADS_PER_GROUP


def smem_bytes(kernel: func.FuncOp) -> int:
    end = 0
    for op in kernel.walk():
        if isinstance(op, nvgpu.SmemAllocOp):
            t = op.result.type
            size = t.count.data * 8 if isinstance(t, nvgpu.MBarrierType) else t.num_bytes()
            end = max(end, op.offset.value.data + size)
    return end


def run_grid(
    module: ModuleOp,
    kernel: func.FuncOp,
    grid: tuple[int, int, int],
    args: PythonValues,
    functions: list[InterpreterFunctions],
    schedule: Schedule,
    ctas: int | None = None,
    order: str = "grid",
) -> None:
    """Runs thread-level `kernel` over logical grid `grid` (see the module
    docstring for the CTA grid and clusters): one scheduler per cluster,
    whose tasks are the warp groups of all of its CTAs; clusters one after
    another, in `order` (`tawa.interpret`).  `ctas`: CTAs of a persistent kernel (clusters of a persistent
    cluster kernel), default `DEFAULT_CTAS`."""

    name = f"@{kernel.sym_name.data}"
    where = location_of(kernel) or "tawa.interpret"
    size = kernel_info(kernel).cluster
    persistent = any(isinstance(op, nvgpu.LaunchGridOp) for op in kernel.walk())
    if persistent:
        cta_grid = (persistent_ctas(grid, size * (ctas or DEFAULT_CTAS), size), 1, 1)
    else:
        if grid[0] % size:
            raise InterpreterError(
                f"{name} runs in clusters of {size} CTAs along grid axis x: its grid x ({grid[0]}) "
                f"must be a multiple of {size}",
                where,
            )
        cta_grid = grid
    threads = cta_threads(kernel)
    specialized = any(isinstance(op, aref.WarpSpecializeOp) for op in kernel.walk())
    memory = GlobalMemory()
    smem = smem_bytes(kernel)
    clusters = itertools.product(range(cta_grid[2]), range(cta_grid[1]), range(cta_grid[0] // size))
    for z, y, c in program_order(clusters, order, schedule):
        x0 = c * size
        if size == 1:
            what = f"{name} CTA ({x0}, {y}, {z})"
        else:
            what = f"{name} cluster of CTAs ({x0}, {y}, {z}) .. ({x0 + size - 1}, {y}, {z})"
        scheduler = Scheduler(schedule, what, where)
        cluster = Cluster(size)
        for rank in range(size):
            launch = Launch((x0 + rank, y, z), cta_grid)
            cta = CtaState(
                threads, launch, cta_grid, grid, np.full(smem, 0xFF, dtype=np.uint8), memory, scheduler,
                functions, module, cluster=cluster, rank=rank,
            )
            cluster.ctas.append(cta)

            # One task per warp group: on the GPU warp groups run independently,
            # and code that branches on the warp group (the partitions, the
            # ping-pong hand-over of `tawa.transforms.lower.pingpong`) must not wait
            # for the other branch to end, as a divergent scf.if in one task would.
            # Not while the partitions are still aref.warp_specialize regions,
            # whose aref ops belong to a partition, not to a warp group.
            for g, mask in enumerate(_warp_group_masks(threads, split=not specialized)):
                def root(task: Task, cta=cta, mask=mask) -> None:
                    run_program(new_interpreter(cta, task, mask), kernel, cta.launch, args)
                    cta.live -= 1
                    if not cta.live:
                        exit_cta(cta, kernel)

                scheduler.add(PartitionRole.CONSUMER, root)
                cta.live += 1
                scheduler.tasks[-1].label = task_label(
                    cta, f"warp group {g}" if mask.sum() < threads else f"all {threads} threads"
                )
        scheduler.progress = lambda force, cluster=cluster, scheduler=scheduler: cluster.progress(
            force, scheduler._rng
        )
        scheduler.run()


def _warp_group_masks(threads: int, split: bool = True) -> list[np.ndarray]:
    """The lanes of each warp group of a CTA of `threads` threads (one mask
    of all of them when they are fewer than a warp group, or not `split`)."""
    if not split:
        return [np.ones(threads, dtype=bool)]
    masks = []
    for start in range(0, threads, THREADS_PER_GROUP):
        mask = np.zeros(threads, dtype=bool)
        mask[start:start + THREADS_PER_GROUP] = True
        masks.append(mask)
    return masks


def exit_cta(cta: CtaState, kernel: func.FuncOp) -> None:
    """The last warp group of `cta` has returned: the CTA exits (its shared
    memory and barriers are gone; peers may no longer arrive on them)."""
    finish_cta(cta, kernel)
    cta.exited = True


def finish_cta(cta: CtaState, kernel: func.FuncOp) -> None:
    """A CTA may not end with TMA loads in flight into it or wgmma in flight."""
    where = location_of(kernel) or "tawa.interpret"
    if cta.transfers:
        raise SimulationError(f"{cta_name(cta)} ends with {len(cta.transfers)} TMA load(s) in flight", where)
    for wg, queue in sorted(cta.wgmma.items()):
        if queue.in_flight():
            raise SimulationError(f"{cta_name(cta)}: warp group {wg} ends with wgmma in flight", where)
