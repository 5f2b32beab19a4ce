"""The protocol proof at the aref level: the events of each partition of an
`aref.warp_specialize`, for `tawa-verify-protocol` (and the check that
`tawa-assign-stage-phase` runs on what it assigns; docs/protocol.md,
section 6).

An aref of depth D is modelled as the rings that `tawa-lower-aref` makes
of it: per slot s a *full* barrier (one arrival per putting partition, and
the payload's bytes) and an *empty* barrier (one arrival per partition that
gets from the aref), both ready before any step, as the lowered kernel's
barriers are once initialized.  Each partition is one agent (its warp
groups act together at this level), and its ops become the events of
`protocol_model`:

| op | events |
|---|---|
| `aref.put %r[s, p]` | wait on empty[s] with parity 1 - p, then an expect_tx of the payload's bytes on full[s] and a load of them into slot s that lands on full[s] asynchronously |
| `aref.get %r[s, p]` | wait on full[s] with parity p |
| `aref.consumed %r[s, p]` | an arrival on empty[s] |
| `tile.dot_async` | an asynchronous read of the slot of each operand borrowed from an aref, then a commit (each dot is a group) |
| `tile.dot_wait N` | retires all groups but the N newest |
| any other use of a borrowed value | a read of its slot |

A put modelled as an asynchronous load adds interleavings (the slot is full
only once its bytes land) and loses none: a partition reads a slot only
after its get, which waits for the full barrier.  Ops without a slot (before
`tawa-assign-stage-phase`) take the one their count gives: use n of a
ring's puts (gets, releases) in a partition takes stage n mod D in pass
(n / D) & 1.  A value borrowed from a slot is followed through `scf.yield`
and loop arguments (`_slot_values`): its uses anywhere are reads of the
slot it came from at run time.

The search (`protocol_search.Explorer`) and the slot checks
(`protocol_slots.check_slots`) then run on these traces as on the lowered
kernel's: a deadlock, a slot refilled while a partition may still read it
(a use after `aref.consumed`, or a release before the `tile.dot_wait` that
retires its reader), a release too many, a partition that ends holding a
slot.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import func, scf
from xdsl.ir import Operation, SSAValue

from tawa.dialects import aref, tile
from tawa.dialects.aref import ArefType
from tawa.dialects.nvgpu.types import tensor_bytes
from tawa.verify.protocol_model import (
    ARRIVE,
    COMMIT,
    EXPECT_TX,
    READ,
    TMA,
    WAIT,
    WAIT_GROUP,
    Event,
    SkeletonError,
    SkeletonRunner,
)
from tawa.verify.protocol_search import Words

AREF_WORDS = Words(load="put", reader="tile.dot_async", retire="tile.dot_wait", agent="partition",
                   acquire="aref.get")
SLOT_OPS = (aref.PutOp, aref.GetOp, aref.ConsumedOp)


@dataclass(frozen=True)
class Borrowed:
    """The value of an SSA value borrowed from a slot: the stage it reads."""

    slot: int


class ArefSkeletonRunner(SkeletonRunner):
    """The events of each partition (a role) of the kernel's one
    `aref.warp_specialize` (module docstring)."""

    def __init__(self, kernel: func.FuncOp):
        specialized = [o for o in kernel.walk() if isinstance(o, aref.WarpSpecializeOp)]
        if len(specialized) != 1:
            raise SkeletonError(kernel, f"the aref-level proof takes one aref.warp_specialize per kernel, "
                                        f"@{kernel.sym_name.data} has {len(specialized)}")
        self.ws = specialized[0]
        self.partitions = self.ws.partition_specs()
        regions = [region for *_, region in self.partitions]
        self.borrowed = _slot_values(self.ws)
        self.readers: dict[Operation, tuple[SSAValue, ...]] = {}
        """Ops that use borrowed values (not to carry them), and which."""
        for v in self.borrowed:
            for use in v.uses:
                user = use.operation
                if isinstance(user, scf.YieldOp) or isinstance(user, scf.ForOp) and use.index >= 3:
                    continue  # carried on (`_slot_values` follows it)
                if isinstance(user, aref.GetOp | aref.ConsumedOp):
                    continue
                self.readers.setdefault(user, ())
                if v not in self.readers[user]:
                    self.readers[user] += (v,)
        # Per aref: the partitions that put into it and those that get from it.
        self.putters: Counter[SSAValue] = Counter()
        self.getters: Counter[SSAValue] = Counter()
        for region in regions:
            ops = list(region.walk())
            for ref in {o.aref for o in ops if isinstance(o, aref.PutOp)}:
                self.putters[ref] += 1
            for ref in {o.aref for o in ops if isinstance(o, aref.GetOp)}:
                self.getters[ref] += 1
        self._uses: Counter[tuple[int, int]] = Counter()
        self._slot_events: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._slot_info: dict[int, tuple[Any, ...]] = {}
        super().__init__(kernel)
        # An unnamed slot's stage and phase come from a count of the partition's uses (`_uses`),
        # not from the values a loop iteration reads: such iterations are run every time.
        self.memo_loops = all(o.has_slot() for o in kernel.walk() if isinstance(o, SLOT_OPS))
        self.depth = max((v.type.depth.data for v in {*self.putters, *self.getters}
                          if isinstance(v.type, ArefType)), default=1)

    @property
    def roles(self) -> int:
        return len(self.partitions)

    def role_kind(self, r: int) -> str:
        return str(self.partitions[r][0])

    # ------------------------------------------------------------------ hooks

    def is_protocol(self, op: Operation) -> bool:
        return isinstance(op, SLOT_OPS + (tile.DotAsyncOp, tile.DotWaitOp)) or op in self.readers

    def protocol_operands(self, op: Operation) -> Iterable[SSAValue]:
        if isinstance(op, SLOT_OPS):
            return (op.aref,) + ((op.stage, op.phase) if op.has_slot() else ())
        return self.readers.get(op, ())

    def key_operands(self, op: Operation) -> Iterable[SSAValue]:
        return self.protocol_operands(op)

    def special_value(self, op: Operation) -> tuple[str, Any] | None:
        if isinstance(op, aref.CreateOp):
            return "handle", op.result
        if isinstance(op, tile.ProgramIdOp):
            return "launch", ("block_id", op.axis.value.data)
        if isinstance(op, tile.NumProgramsOp):
            return "launch", ("launch_grid", op.axis.value.data)
        return None

    def region_choice(self, op: Operation) -> Callable[[int], int | None] | None:
        if op is self.ws:
            return lambda role: role if role < len(self.partitions) else None
        return None

    # ------------------------------------------------------------------ events

    def trace(self, role, args, launch) -> list[Event]:
        self._uses.clear()
        return super().trace(role, args, launch)

    def _events_of(self, ins: tuple[Any, ...], mask: tuple[bool, ...] | None) -> None:
        op = ins[1]
        info = self._slot_info.get(id(op))
        if info is None:
            if not isinstance(op, SLOT_OPS):
                super()._events_of(ins, mask)
                return
            slotted = op.has_slot()
            info = self._slot_info[id(op)] = (
                op.aref, op.aref.type.depth.data, id(op.stage) if slotted else None,
                id(op.phase) if slotted else None, (id(op.aref), SLOT_OPS.index(type(op))), isinstance(op, aref.GetOp))
        ref, depth, stage_id, phase_id, count_key, is_get = info
        if stage_id is not None:
            stage = self._uniform(op, stage_id, "the slot's stage")
            phase = self._uniform(op, phase_id, "the slot's phase")
            if not 0 <= stage < depth or phase not in (0, 1):
                raise SkeletonError(op, f"{op.name} names stage {stage} phase {phase}, outside the ring of "
                                        f"depth {depth} (stages 0..{depth - 1}, phases 0 and 1)")
        else:  # use n of this kind in this partition: stage n mod D, phase (n / D) & 1
            n = self._uses[count_key]
            self._uses[count_key] = n + 1
            stage, phase = n % depth, (n // depth) & 1
        made_key = (id(op), stage, phase)
        made = self._slot_events.get(made_key)
        if made is None:
            events = tuple(self._slot_op_events(op, stage, phase))
            token = Borrowed(self.objects.slot(ref, stage)) if is_get else None
            made = self._slot_events[made_key] = (events, token, tuple(id(r) for r in op.results))
        self._events.extend(made[0])
        if is_get:
            self._vals.update((r, made[1]) for r in made[2])

    def _slot_op_events(self, op: Operation, stage: int, phase: int) -> list[Event]:
        ref = op.aref
        depth = ref.type.depth.data
        objs = self.objects
        full, empty = objs.barrier(ref, stage), objs.barrier(ref, depth + stage)
        if isinstance(op, aref.PutOp):
            size = sum(tensor_bytes(t) for t in ref.type.types)
            return [Event(WAIT, op, empty, parity=1 - phase), Event(EXPECT_TX, op, full, count=1, tx=size),
                    Event(TMA, op, full, objs.slot(ref, stage), tx=size, count=1)]
        if isinstance(op, aref.GetOp):
            return [Event(WAIT, op, full, parity=phase)]
        return [Event(ARRIVE, op, empty, count=1)]

    def _protocol(self, op: Operation, mask: tuple[bool, ...] | None) -> None:
        add = self._events.append
        values = (self._value(v) for v in self.readers.get(op, ()))
        slots = list(dict.fromkeys(x.slot for x in values if isinstance(x, Borrowed)))  # each stage once
        if isinstance(op, tile.DotAsyncOp):
            for s in slots:
                add(Event(READ, op, slot=s, is_async=True))
            add(Event(COMMIT, op))
        elif isinstance(op, tile.DotWaitOp):
            add(Event(WAIT_GROUP, op, count=op.pending.value.data))
        else:
            for s in slots:
                add(Event(READ, op, slot=s))

    def initial_counts(self) -> list[int]:
        """Per barrier of `objects`, the arrivals of each of its phases: a
        full barrier counts the partitions that put into its aref, an empty
        one those that get from it (at least 1: a ring nobody empties
        deadlocks the producer, which the search reports)."""
        counts = []
        for ref, index in self.objects.barriers:
            depth = ref.type.depth.data  # type: ignore[attr-defined]
            counts.append(max(1, self.putters[ref] if index < depth else self.getters[ref]))
        return counts


def _slot_values(ws: aref.WarpSpecializeOp) -> set[SSAValue]:
    """The values that may hold a value borrowed from a slot: the results of
    `aref.get`, and the loop arguments, loop results and if results that
    carry one (to a fixpoint)."""
    values: set[SSAValue] = {r for o in ws.walk() if isinstance(o, aref.GetOp) for r in o.results}
    loops = [o for o in ws.walk() if isinstance(o, scf.ForOp)]
    yields = [o for o in ws.walk() if isinstance(o, scf.YieldOp)]
    while True:
        grown: set[SSAValue] = set()
        for loop in loops:
            for i, init in enumerate(loop.iter_args):
                if init in values:
                    grown.update((loop.body.block.args[i + 1], loop.results[i]))
        for y in yields:
            parent = y.parent_op()
            for i, v in enumerate(y.operands):
                if v not in values:
                    continue
                if isinstance(parent, scf.ForOp):
                    grown.update((parent.body.block.args[i + 1], parent.results[i]))
                elif isinstance(parent, scf.IfOp):
                    grown.add(parent.results[i])
        if grown <= values:
            return values
        values |= grown


def describe_event(e: Event, slot: Callable[[int], str], bar: Callable[[int], str]) -> str | None:
    """An aref-level event in a counterexample (None: no line of its own)."""
    op = e.op
    if isinstance(op, aref.PutOp):
        if e.kind == WAIT:
            return f"aref.put waits for {_slot_of_barrier(bar(e.barrier))} to be empty (parity {e.parity})"
        if e.kind == TMA:
            return f"aref.put fills {slot(e.slot)} ({e.tx} bytes; full once they land)"
        return None
    if isinstance(op, aref.GetOp):
        return f"aref.get waits for {_slot_of_barrier(bar(e.barrier))} to be full (parity {e.parity})"
    if isinstance(op, aref.ConsumedOp):
        return f"aref.consumed releases {_slot_of_barrier(bar(e.barrier))}"
    if e.kind == READ:
        return f"{op.name} reads {slot(e.slot)}" + (" (in flight)" if e.is_async else "")
    if e.kind == WAIT_GROUP:
        return f"tile.dot_wait {e.count}"
    if e.kind == COMMIT:
        return None
    return None


def _slot_of_barrier(name: str) -> str:
    """`slot 1 of %r` from a barrier's name `%r full[1]` / `%r empty[1]`."""
    ref, _, which = name.partition(" ")
    return f"slot {which[which.index('[') + 1:-1]} of {ref}"


def describe_barrier(names: Callable[[SSAValue], str], runner: ArefSkeletonRunner, b: int) -> str:
    ref, index = runner.objects.barriers[b]
    depth = ref.type.depth.data  # type: ignore[attr-defined]
    kind, s = ("full", index) if index < depth else ("empty", index - depth)
    return f"{names(ref)} {kind}[{s}]"


def describe_slot(names: Callable[[SSAValue], str], runner: ArefSkeletonRunner, s: int) -> str:
    ref, index = runner.objects.slots[s]
    return f"slot {index} of {names(ref)}"


