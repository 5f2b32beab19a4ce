"""`tawa-verify-protocol`: a compile-time proof of a kernel's mbarrier protocol.

For every kernel of the lowered (nvgpu) IR, for a set of problem sizes, the
pass extracts the barrier events of each warp group by running the kernel's
control skeleton (`protocol_model.SkeletonRunner`) and explores every
interleaving of them (`protocol_search.Explorer`, up to a partial-order
reduction that loses no violation), proving: no deadlock, no phase
aliasing, no TMA load into a stage that a reader may still read (or that
is read while the load may be in flight), no arrivals beyond a barrier's
count, transaction bytes that match the loads.  A violation is a
`TawaError` located at the offending op whose details (`TawaError.details`,
printed by tawa-opt after the error line) are a shortest counterexample
trace.  The IR is unchanged.

Problem sizes: the ring loops' trip counts t = 0 .. max-trips (default 2D+1
for the deepest ring D; docs/protocol.md argues why that covers every trip
count), with 1 and 2 programs per CTA for persistent kernels (and, for
t < D, enough programs that D+1 ring iterations span all their boundaries).  An index
argument that bounds a loop with barrier ops is set to t × that loop's
step.  A kernel with thread-block clusters (`#nvgpu.kernel<..., cluster = N>`)
is explored as one cluster: the skeleton runs for each of its N CTAs (rank
0..N-1, the block ids the runtime gives the first cluster) and the search
interleaves all their warp groups (docs/protocol.md, section 5).

At the aref level (a kernel still holding its `aref.warp_specialize`, its
slots named or not), `verify_aref_kernel` runs the same search and checks
on the partitions' aref events (`protocol_aref`: each aref as the full and
empty barriers `tawa-lower-aref` makes of it); `tawa-assign-stage-phase`
runs it on the slots it names.  docs/protocol.md describes the model
(section 6: the aref level).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from math import gcd
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerType, ModuleOp
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.printer import Printer

from tawa.cache import ProofStore
from tawa.diagnostics import TawaError, location_of
from tawa.dialects import aref, nvgpu
from tawa.dialects.nvgpu.kernel_info import KernelInfoAttr, kernel_info, persistent_ctas
from tawa.dialects.nvgpu.types import MBarrierType
from tawa.target.hopper import NAMED_BARRIERS, THREADS_PER_GROUP
from tawa.transforms.utils import fail
from tawa.verify import protocol_aref, protocol_model, protocol_reduction, protocol_search, protocol_slots
from tawa.verify.protocol_aref import AREF_WORDS, ArefSkeletonRunner
from tawa.verify.protocol_model import (
    CLUSTER_BARRIER,
    COMMIT,
    INIT,
    PROTOCOL_OPS,
    UNKNOWN,
    Event,
    Launch,
    SkeletonError,
    SkeletonRunner,
)
from tawa.verify.protocol_search import NVGPU_WORDS, Explorer, Layout, StateLimit, Step, Violation
from tawa.verify.protocol_slots import check_slots

NAME = "tawa-verify-protocol"


@dataclass(frozen=True)
class VerifyProtocolPass(ModulePass):
    """Proves each kernel's mbarrier protocol free of deadlock, phase
    aliasing and stage overwrites, over all interleavings (IR unchanged)."""

    name = NAME

    max_trips: int = 0
    """Largest ring trip count explored; 0: 2D+1 for the deepest ring D."""
    max_states: int = 200000
    """States explored per problem size before giving up (a located error)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = _Names(op)
        for kernel in [o for o in op.walk() if isinstance(o, func.FuncOp) and o.body.blocks]:
            ops = list(kernel.walk())
            if any(isinstance(o, aref.WarpSpecializeOp) for o in ops):
                if barrier := next((o for o in ops if isinstance(o, PROTOCOL_OPS)), None):
                    raise fail(barrier, f"{NAME}: @{kernel.sym_name.data} is between tawa-lower-aref and "
                                        "tawa-materialize-partitions (barrier ops inside aref.warp_specialize): "
                                        "verify the protocol at the aref level, before tawa-lower-aref, or "
                                        "after tawa-materialize-partitions")
                verify_aref_kernel(kernel, names, self.max_trips, self.max_states)
            elif any(isinstance(o, PROTOCOL_OPS) for o in ops):
                if len(kernel.body.blocks) > 1 or any(len(r.blocks) > 1 for o in kernel.walk() for r in o.regions):
                    raise fail(kernel, f"{NAME}: the kernel's control flow is unstructured (branches between "
                                       "blocks); verify the protocol before tawa-prepare-ptx "
                                       "(tawa-hopper-pipeline{prepare=false})")
                verify_kernel(kernel, names, self.max_trips, self.max_states)


class _Names:
    """SSA names as `tawa-opt` prints them (computed on the first error)."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self._names: dict[SSAValue, str] | None = None

    def __call__(self, v: SSAValue) -> str:
        if self._names is None:
            printer = Printer(stream=io.StringIO())
            printer.print_op(self.module)
            self._names = dict(printer._ssa_values)  # noqa: SLF001 - the printer's own numbering
        return "%" + self._names.get(v, "?")


def verify_kernel(kernel: func.FuncOp, names: _Names, max_trips: int, max_states: int) -> None:
    """Explores the protocol of `kernel` (lowered: nvgpu barrier ops) at
    every problem size; raises a `TawaError` with a counterexample trace on
    the first violation."""
    attr = kernel.attributes.get("nvgpu.kernel")
    info = attr.info if isinstance(attr, KernelInfoAttr) else None
    if info is None or not info.threads:
        raise fail(kernel, f"{NAME}: @{kernel.sym_name.data} has no #nvgpu.kernel thread count "
                           "(run tawa-materialize-partitions first)")
    roles = -(-info.threads // THREADS_PER_GROUP)
    depth = max((o.result.type.count.data for o in kernel.walk()
                 if isinstance(o, nvgpu.SmemAllocOp) and isinstance(o.result.type, MBarrierType)),
                default=1)
    runner = SkeletonRunner(kernel)
    _explore(kernel, names, runner, roles, depth, info.persistent, max_trips, max_states,
             _Describe(names, runner, roles), aref_level=False)


def verify_aref_kernel(kernel: func.FuncOp, names: _Names | None = None, max_trips: int = 0,
                       max_states: int = 200000) -> None:
    """The same proof for a kernel at the aref level (an
    `aref.warp_specialize`, its slots assigned or not): each partition is
    an agent, each aref the rings `tawa-lower-aref` makes of it
    (`protocol_aref`; docs/protocol.md section 6)."""
    names = names or _Names(kernel)
    try:
        runner = ArefSkeletonRunner(kernel)
    except SkeletonError as err:
        raise fail(err.op, f"{NAME}: {err}") from None
    info = kernel_info(kernel)
    _explore(kernel, names, runner, runner.roles, runner.depth, info.persistent, max_trips, max_states,
             _ArefDescribe(names, runner), aref_level=True)


def _explore(kernel: func.FuncOp, names: _Names, runner: SkeletonRunner, roles: int, depth: int,
             persistent: bool, max_trips: int, max_states: int, describe: Any, aref_level: bool) -> None:
    """The problem sizes of `kernel` (docs/protocol.md section 3), each
    explored by the search, then the slot checks; raises the first
    violation."""
    trips = max_trips or 2 * depth + 1
    # The aref level: one CTA of a cluster (the rings are per CTA; their
    # cluster-wide arrivals are the lowering's, proved on the lowered kernel).
    cluster = 1 if aref_level else runner.cluster
    sizes = _size_arguments(runner)
    params = kernel.body.block.args
    objects = runner.objects
    explored: set[Any] = set()
    words = AREF_WORDS if aref_level else NVGPU_WORDS
    held: tuple[Violation, str] | None = None  # protocol_slots' first violation: reported after the search
    for t in range(trips + 1):
        for programs in _programs_per_cta(t, depth) if persistent else (1,):
            args = [t * sizes[p] if p in sizes else (t if isinstance(p.type, IndexType | IntegerType)
                                                     else UNKNOWN) for p in params]
            launches = _launches(persistent, programs, runner.cluster)[:1 if aref_level else None]
            try:
                traces = [runner.trace(r, args, launch) for launch in launches for r in range(roles)]
            except SkeletonError as err:
                raise fail(err.op, f"{NAME}: {err}") from None
            key = tuple(tuple(e.key() for e in tr) for tr in traces)
            if key in explored:
                continue
            explored.add(key)
            scenario = ", ".join(
                [f"{p.name_hint or names(p)} = {a}" for p, a in zip(params, args) if p in sizes]
                + ([f"{programs} program{'s' if programs > 1 else ''} per CTA"] if persistent else [])
                + ([f"{cluster} CTAs per cluster"] if cluster > 1 else [])
            )
            layout = Layout(tuple(c for c in range(cluster) for _ in range(roles)), tuple(objects.barrier_cta),
                            tuple(None if span is None else (cta, *span)
                                  for cta, span in zip(objects.slot_cta, objects.slot_range)))
            if held is None:
                violation = check_slots(traces, _overlaps(layout), describe.slot, describe.role, words,
                                        own_releases=aref_level)
                if violation is not None:
                    held = (violation, scenario)
                    if violation.problem == protocol_slots.NOT_HELD:
                        raise _error(kernel, *held, describe)  # clearer than what it leads to
            initial = runner.initial_counts() if isinstance(runner, ArefSkeletonRunner) else []
            proof = (_scaled_bytes(traces), len(objects.barriers), max_states, cluster, layout.barrier_cta,
                     _aliases(layout), tuple(initial))
            if proof in _PROVED or proof in _STORE:
                continue  # the same protocol was explored before (another kernel or compile of it)
            explorer = Explorer(traces, len(objects.barriers), describe.barrier, describe.slot,
                                describe.role, max_states, layout=layout, initial=initial, words=words,
                                shortest=not aref_level)  # the aref level: the reduced search's trace
            try:
                violation = explorer.run()
            except StateLimit:
                raise fail(kernel, f"{NAME}: @{kernel.sym_name.data} ({scenario}): more than "
                                   f"{max_states} states; raise max-states") from None
            if violation is not None:
                raise _error(kernel, violation, scenario, describe, shortest=not aref_level)
            if len(_PROVED) >= _PROVED_LIMIT:
                _PROVED.clear()
            _PROVED.add(proof)
            _STORE.add(proof)
    if held is not None:
        raise _error(kernel, *held, describe)


def _scaled_bytes(traces: list[list[Event]]) -> tuple[tuple[tuple[Any, ...], ...], ...]:
    """The traces by their semantics (`Event.semantic_key`), each event's
    transaction bytes divided by the greatest common divisor of those on
    its barrier.  The search adds and subtracts a barrier's bytes only with
    bytes of the same barrier and compares the sums with zero or with each
    other (`protocol_search`, `protocol_reduction`), so scaling one
    barrier's bytes by a positive factor maps states to states, steps to
    steps and violations to violations: two kernels that differ only in
    their tiles' bytes (attention with two or three consumer warp groups
    at the aref level, one producer and one consumer partition either way)
    have one proof."""
    keys = [[e.semantic_key() for e in trace] for trace in traces]
    unit: dict[int, int] = {}
    for trace in keys:
        for k in trace:
            if k[5]:
                unit[k[1]] = gcd(unit.get(k[1], 0), k[5])
    return tuple(tuple(k[:5] + (k[5] // unit[k[1]],) + k[6:] if k[5] else k for k in trace) for trace in keys)


_PROVED: set[Any] = set()
"""Event sequences (by their semantics, per role, each barrier's bytes up
to a scale: `_scaled_bytes`, with the barrier count, the state limit, the
cluster size, the CTA of each barrier and which stages overlap) whose
exploration found no violation, in this process: a kernel compiled again,
or another kernel with the same protocol, is not explored again.  Only
successes are kept (a violation's trace names ops)."""
_PROVED_LIMIT = 4096
_STORE = ProofStore("protocol", [Path(__file__), Path(protocol_model.__file__), Path(protocol_search.__file__),
                                 Path(protocol_reduction.__file__), Path(protocol_slots.__file__),
                                 Path(protocol_aref.__file__)])
"""The same proofs on disk, for the next process (`tawa.cache.ProofStore`:
keyed by the event sequences and this checker's source)."""


def _programs_per_cta(t: int, depth: int) -> tuple[int, ...]:
    """1 and 2 programs per CTA; for t < D also enough programs that a
    window of D+1 ring iterations spans all their boundaries (the ring
    counter runs on across programs; docs/protocol.md)."""
    if 0 < t < depth:
        return (1, 2, -(-(depth + 1) // t) + 1)
    return (1, 2)


def _launches(persistent: bool, programs: int, cluster: int) -> list[Launch]:
    """The CTAs whose warp groups are explored: one CTA, or the first
    cluster, with the block ids, grid and rank the runtime gives them
    (persistent kernels: `programs` programs per CTA, so the first cluster
    runs `programs` cluster programs of `cluster` side-by-side programs;
    `nvgpu.persistent_ctas`)."""
    if cluster == 1:
        return [Launch(launch_grid=(programs, 1, 1)) if persistent else Launch()]
    grid = (programs * cluster, 1, 1) if persistent else (cluster, 1, 1)
    ctas = persistent_ctas(grid, cluster, cluster) if persistent else cluster
    return [Launch(block_id=(c, 0, 0), grid_dim=(ctas, 1, 1), launch_grid=grid, rank=c) for c in range(cluster)]


def _overlaps(layout: Layout) -> dict[int, frozenset[int]]:
    """Per stage that overlaps another, the stages it overlaps (itself included)."""
    out: dict[int, set[int]] = {}
    for s, t in _aliases(layout):
        out.setdefault(s, {s}).add(t)
        out.setdefault(t, {t}).add(s)
    return {s: frozenset(ts) for s, ts in out.items()}


def _aliases(layout: Layout) -> tuple[tuple[int, int], ...]:
    """The pairs of stages whose bytes overlap (what the proof depends on
    of the stages' addresses)."""
    spans = layout.slot_range
    return tuple((s, t) for s, a in enumerate(spans) if a is not None for t, b in enumerate(spans[:s])
                 if b is not None and a[0] == b[0] and a[1] < b[2] and b[1] < a[2])


def _indexed(names: _Names, item: tuple[SSAValue, int]) -> str:
    return f"{names(item[0])}[{item[1]}]"


class _Describe:
    """Names of barriers, stages and warp groups in messages and traces; in
    a cluster kernel each names its CTA (`%7[0]@cta1`, `CTA 1 warp group 0`,
    `cta1.wg0`)."""

    def __init__(self, names: _Names, runner: SkeletonRunner, roles: int):
        self.names, self.objects, self.roles, self.cluster = names, runner.objects, roles, runner.cluster

    def _at(self, cta: int) -> str:
        return f"@cta{cta}" if self.cluster > 1 else ""

    def barrier(self, b: int) -> str:
        return _indexed(self.names, self.objects.barriers[b]) + self._at(self.objects.barrier_cta[b])

    def slot(self, s: int) -> str:
        return _indexed(self.names, self.objects.slots[s]) + self._at(self.objects.slot_cta[s])

    def role(self, r: int) -> str:
        if self.cluster == 1:
            return f"warp group {r}"
        return f"CTA {r // self.roles} warp group {r % self.roles}"

    def who(self, r: int) -> str:
        if self.cluster == 1:
            return f"wg{r}"
        return f"cta{r // self.roles}.wg{r % self.roles}"


class _ArefDescribe:
    """Names of the aref level: barriers as `%ref full[1]` / `%ref empty[1]`,
    stages as `slot 1 of %ref`, agents as partitions."""

    def __init__(self, names: _Names, runner: ArefSkeletonRunner):
        self.names, self.runner = names, runner
        kinds = [runner.role_kind(r) for r in range(runner.roles)]
        self._short = [k if kinds.count(k) == 1 else f"{k}{kinds[:r].count(k)}" for r, k in enumerate(kinds)]

    def barrier(self, b: int) -> str:
        return protocol_aref.describe_barrier(self.names, self.runner, b)

    def slot(self, s: int) -> str:
        return protocol_aref.describe_slot(self.names, self.runner, s)

    def role(self, r: int) -> str:
        return f"the {self._short[r]} partition"

    def who(self, r: int) -> str:
        return self._short[r]


def _size_arguments(runner: SkeletonRunner) -> dict[SSAValue, int]:
    """Kernel arguments that bound a loop running barrier ops, with the
    loop's step (the largest where several loops share one)."""
    params = set(runner.kernel.body.block.args)
    sizes: dict[SSAValue, int] = {}
    for loop in runner.executed:
        if not hasattr(loop, "ub"):
            continue
        step_op = loop.step.owner
        step = step_op.value.value.data if isinstance(step_op, arith.ConstantOp) else 1
        for arg in _reaching_arguments(loop.ub, params):
            sizes[arg] = max(sizes.get(arg, 1), step)
    return sizes


def _reaching_arguments(v: SSAValue, params: set[SSAValue]) -> set[SSAValue]:
    found, work, seen = set(), [v], set()
    while work:
        x = work.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in params and isinstance(x.type, IndexType | IntegerType):
            found.add(x)
        elif isinstance(x, OpResult) and not x.op.regions:
            work.extend(x.op.operands)
    return found


# --------------------------------------------------------------------------- reporting


def _error(kernel: func.FuncOp, v: Violation, scenario: str, describe: Any, shortest: bool = True) -> TawaError:
    """The error at the violating op; its details are the counterexample as
    MLIR-style notes, one per event, each at the event's op."""
    err = fail(v.op, f"{NAME}: {v.problem} in @{kernel.sym_name.data} ({scenario}): {v.message}")
    if not v.steps:  # found by a check at the kernel's end, which names its op
        return err
    if v.states:
        found = "shortest of" if shortest else "found among"
        head = f"counterexample ({len(v.steps)} steps, {found} {v.states} states explored)"
    else:  # a check of one warp group's trace (protocol_slots)
        head = f"the events of {describe.role(v.steps[0].role)} that break it ({len(v.steps)})"
    err.details.append(f"{_loc(kernel)}: note: {head}:")
    for i, step in enumerate(v.steps, 1):
        for j, (op, line) in enumerate(_describe_step(step, describe.barrier, describe.slot, describe.who(step.role))):
            err.details.append(f"{_loc(op)}: note: {f'{i}.' if j == 0 else '':>4} {line}")
    return err


def _describe_step(step: Step, bar, slot, who: str) -> list[tuple[Operation, str]]:
    """The lines of a step: each event's op and what it does."""
    if step.kind == "tma":
        e = step.events[0]
        if isinstance(e.op, aref.PutOp):
            return [(e.op, f"{who}'s aref.put into {slot(e.slot)} lands ({e.tx} bytes): the slot is full")]
        return [(e.op, f"{who} TMA load into {slot(e.slot)} completes ({e.tx} bytes on {bar(e.barrier)})")]
    if step.kind == "arrive_named":
        e = step.events[0]
        if e.barrier == CLUSTER_BARRIER:
            return [(e.op, f"{who} cluster_sync: arrives ({e.threads} threads)")]
        return [(e.op, f"{who} named_barrier_sync {e.barrier % NAMED_BARRIERS}, {e.count}: arrives "
                       f"({e.threads} threads)")]
    lines: list[tuple[Operation, str]] = []
    inits: list[Event] = []
    for e in step.events:
        if e.kind == INIT:
            inits.append(e)
            continue
        if inits:
            lines.append(_describe_inits(who, inits, bar))
            inits = []
        if e.kind == COMMIT and len(step.events) > 1:
            continue
        if e.op.dialect_name() in ("aref", "tile") or e.kind == "read" and e.op.dialect_name() != "nvgpu":
            text = protocol_aref.describe_event(e, slot, bar)
            if text is not None:
                lines.append((e.op, f"{who} {text}"))
            continue
        lines.append((e.op, f"{who} {_describe_event(e, bar, slot)}"))
    if inits:
        lines.append(_describe_inits(who, inits, bar))
    return lines or [(step.events[0].op if step.events else None, f"{who} (no barrier ops)")]


def _describe_inits(who: str, inits: list[Event], bar) -> tuple[Operation, str]:
    listed = ", ".join(f"{bar(e.barrier)} count {e.count}" for e in inits)
    return inits[0].op, f"{who} mbarrier_init {listed}"


def _describe_event(e: Event, bar, slot) -> str:
    k = e.kind
    if k == "arrive":
        return f"mbarrier_arrive {bar(e.barrier)} ({e.count} thread{'s' if e.count > 1 else ''})"
    if k == "expect_tx":
        return f"mbarrier_arrive_expect_tx {bar(e.barrier)}, {e.tx} bytes"
    if k == "wait":
        return f"mbarrier_wait_parity {bar(e.barrier)}, parity {e.parity}"
    if k == "tma":
        return f"tma_load into {slot(e.slot)} on {bar(e.barrier)} ({e.tx} bytes, in flight)"
    if k == "read":
        return f"{e.op.name.removeprefix('nvgpu.')} reads {slot(e.slot)}"
    if k == "wait_group":
        return f"wgmma_wait_group {e.count}"
    if k == "commit":
        return "wgmma_commit_group"
    if k == "write":
        return f"frag_store_shared writes {slot(e.slot)}"
    if k == "bulk_store":
        return f"tma_store reads {slot(e.slot)} (a bulk group, in flight)"
    if k == "bulk_wait":
        return f"tma_store_wait {e.count} ({e.threads} thread{'s' if e.threads > 1 else ''})"
    if k == "named_sync":
        if e.barrier == CLUSTER_BARRIER:
            return "cluster_sync: passes"
        return f"named_barrier_sync {e.barrier % NAMED_BARRIERS}, {e.count}: passes"
    return f"named_barrier_arrive {e.barrier % NAMED_BARRIERS}, {e.count} ({e.threads} threads)"


def _loc(op: Operation | None) -> str:
    return (location_of(op) or op.name) if op is not None else NAME
