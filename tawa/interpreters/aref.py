"""Semantics of the `aref` dialect and of asynchronous dots, with protocol checks.

`aref.warp_specialize` runs its partitions as concurrent tasks under a
`Schedule` (tawa.interpreters.schedule): each task has its own interpreter,
and tasks switch only at synchronization ops, so every run is reproducible
from its seed.  An aref is a ring of slots, each empty, full or borrowed:

* `aref.put` waits for its slot (put count mod depth) to be empty, fills it;
* `aref.get` waits for its slot (get count mod depth) to be full, borrows it;
* `aref.consumed` releases the oldest borrowed slot.

An op with an explicit slot (`aref.get %r[%stage, %phase]`, after
`tawa-assign-stage-phase`) must name the slot and phase its count gives.

Outside `aref.warp_specialize` nothing can wait, so a put into a full slot or
a get of an empty one is reported at once.  Inside, a state where no task can
proceed is a deadlock.  Either way the simulator also reports

* `aref.consumed` with no borrowed slot (a slot consumed twice),
* use of a value after the `aref.consumed` that released its slot,
* releasing a slot while a `tile.dot_async` that reads it is in flight,
* use of a `tile.dot_async` result before a `tile.dot_wait` completed it,
* a partition that ends holding borrowed slots or dots in flight.

Values in slots are the arrays the producer put; a get returns those very
arrays, which is how uses are traced back to slots.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func, scf
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import BlockArgument, Operation, Region, SSAValue

from tawa.diagnostics import TawaError, first_line, location_of
from tawa.dialects import aref, tile
from tawa.interpreters.errors import InterpreterError, simulation_error
from tawa.interpreters.machine import make_interpreter, tracker_of
from tawa.interpreters.schedule import Schedule, Scheduler, Task
from tawa.interpreters.tile import TileFunctions, get_launch, set_launch

EMPTY, FULL, BORROWED = "empty", "full", "borrowed"


@dataclass(eq=False)
class ArefState:
    """The run-time state of one aref: a ring of `depth` slots."""

    name: str
    depth: int
    slots: list[tuple[Any, ...] | None] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    puts: int = 0
    held: list[int] = field(default_factory=list)
    """The index of the put each slot holds (or last held)."""
    gets: int = 0
    releases: int = 0

    def __post_init__(self) -> None:
        self.slots = [None] * self.depth
        self.states = [EMPTY] * self.depth
        self.held = [-1] * self.depth

    def describe(self, slot: int) -> str:
        return f"slot {slot} of %{self.name} is {self.states[slot]}"


@dataclass(eq=False)
class _InFlightDot:
    op: Operation
    result: np.ndarray
    reads: set[int]


@dataclass(eq=False)
class TaskState:
    """Per-interpreter bookkeeping: the task (None when not concurrent),
    dots in flight, and which arrays are borrowed from or were released to
    which aref slot."""

    task: Task | None = None
    scheduler: Scheduler | None = None
    in_flight: deque[_InFlightDot] = field(default_factory=deque)
    borrowed: dict[int, tuple[ArefState, int]] = field(default_factory=dict)
    released: dict[int, tuple[np.ndarray, str]] = field(default_factory=dict)

    def sync(self, op: Operation, ready: Callable[[], bool], why: Callable[[], str]) -> None:
        if self.task is not None and self.scheduler is not None:
            self.scheduler.sync(self.task, op, ready, why)
        elif not ready():
            raise simulation_error(op, f"{op.name} cannot proceed and nothing else runs: {why()}")


def task_state(interpreter: Interpreter) -> TaskState:
    return interpreter.get_data(ArefFunctions, "task", TaskState)


class ProtocolChecker(Interpreter.Listener):
    """Before every op, rejects operands that were released or are unfinished
    dot results."""

    def __init__(self, state: TaskState):
        self.state = state

    def will_interpret_op(self, op: Operation, args: PythonValues) -> None:
        st = self.state
        if not st.released and not st.in_flight:
            return
        pending = {id(d.result): d for d in st.in_flight}
        for i, arg in enumerate(args):
            if not isinstance(arg, np.ndarray):
                continue
            if (gone := st.released.get(id(arg))) is not None:
                raise simulation_error(op, f"{op.name} uses a value of {gone[1]} after aref.consumed released it")
            if id(arg) in pending and not _may_take_unfinished(op, i):
                raise simulation_error(
                    op,
                    f"{op.name} uses the result of a tile.dot_async that no tile.dot_wait has completed",
                )

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        pass


def _may_take_unfinished(op: Operation, index: int) -> bool:
    """Unfinished dot results may be chained as an accumulator, carried by a
    loop, or completed by a wait."""
    if isinstance(op, tile.DotAsyncOp):
        return index == 2
    return isinstance(op, tile.DotWaitOp | scf.YieldOp | scf.ForOp)


def _defined_inside(value: SSAValue, region: Region) -> bool:
    node: Operation | None = (
        value.block.parent_op() if isinstance(value, BlockArgument) else value.owner  # type: ignore[assignment]
    )
    if isinstance(value, BlockArgument) and value.block.parent is region:
        return True
    while node is not None:
        if node.parent_region() is region:
            return True
        node = node.parent_op()
    return False


def free_values(region: Region) -> list[SSAValue]:
    """Values used in `region` but defined outside it, in first-use order."""
    seen: dict[SSAValue, None] = {}
    for op in region.walk():
        for v in op.operands:
            if v not in seen and not _defined_inside(v, region):
                seen[v] = None
    return list(seen)


@register_impls
class ArefFunctions(InterpreterFunctions):
    """aref ops, concurrent warp_specialize, and tile.dot_async / dot_wait."""

    def __init__(self, schedule: Schedule | None = None):
        self.schedule = schedule or Schedule()

    def attach(self, interpreter: Interpreter, state: TaskState | None = None) -> None:
        """Gives `interpreter` fresh protocol state (per kernel instance)."""
        state = TaskState() if state is None else state
        interpreter.set_data(ArefFunctions, "task", state)
        others = tuple(x for x in interpreter.listeners if not isinstance(x, ProtocolChecker))
        interpreter.listeners = (*others, ProtocolChecker(state))

    @impl(aref.WarpSpecializeOp)
    def run_warp_specialize(
        self, interpreter: Interpreter, op: aref.WarpSpecializeOp, args: PythonValues
    ) -> PythonValues:
        launch = get_launch(interpreter)
        program = ", ".join(map(str, launch.program_id))
        kernel = op.parent_op()
        while kernel is not None and not isinstance(kernel, func.FuncOp):
            kernel = kernel.parent_op()
        name = f"@{kernel.sym_name.data} " if kernel is not None else ""
        scheduler = Scheduler(
            self.schedule, f"{name}program ({program})", location_of(op) or "tawa.interpret"
        )
        for role, _warps, _regs, region in op.partition_specs():
            free = free_values(region)
            env = interpreter.get_values(free)

            def body(task: Task, role=role, region=region, free=free, env=env) -> None:
                sub = make_interpreter(interpreter.module, [self])
                set_launch(sub, launch)
                state = TaskState(task, scheduler)
                self.attach(sub, state)
                sub.push_scope(role)
                sub.set_values(zip(free, env))
                try:
                    with np.errstate(all="ignore"):
                        sub.run_ssacfg_region(region, (), role)
                except TawaError:
                    raise
                except Exception as err:
                    tracker = tracker_of(sub)
                    at = tracker.stack[-1] if tracker is not None and tracker.stack else op
                    msg = first_line(err)
                    raise InterpreterError(
                        f"{msg} (in '{at.name}', partition {role}, program ({program}))",
                        location_of(at) or "tawa.interpret",
                    ) from err
                check_finished(op, role, state)

            scheduler.add(role, body)
        scheduler.run()
        return ()

    @impl(aref.CreateOp)
    def run_create(self, interpreter: Interpreter, op: aref.CreateOp, args: PythonValues):
        t = op.result.type
        assert isinstance(t, aref.ArefType)
        return (ArefState(op.result.name_hint or "aref", t.depth.data),)

    @impl(aref.PutOp)
    def run_put(self, interpreter: Interpreter, op: aref.PutOp, args: PythonValues):
        ref, values = args[0], args[1 : 1 + len(op.values)]
        st = task_state(interpreter)
        _check_slot(op, args, ref, ref.puts)
        st.sync(
            op,
            lambda: ref.states[ref.puts % ref.depth] == EMPTY,
            lambda: f"for an empty slot ({ref.describe(ref.puts % ref.depth)})",
        )
        slot = ref.puts % ref.depth
        ref.slots[slot] = tuple(values)
        ref.states[slot] = FULL
        ref.held[slot] = ref.puts
        ref.puts += 1
        return ()

    @impl(aref.GetOp)
    def run_get(self, interpreter: Interpreter, op: aref.GetOp, args: PythonValues):
        ref = args[0]
        st = task_state(interpreter)
        n = ref.gets
        _check_slot(op, args, ref, n)
        slot = n % ref.depth
        st.sync(
            op,
            lambda: ref.states[slot] == FULL and ref.held[slot] == n,
            lambda: f"for a full slot ({ref.describe(slot)}, holding put {ref.held[slot]}, not yet {n})",
        )
        ref.states[slot] = BORROWED
        ref.gets += 1
        values = ref.slots[slot]
        assert values is not None
        for v in values:
            st.borrowed[id(v)] = (ref, slot)
        return values

    @impl(aref.ConsumedOp)
    def run_consumed(self, interpreter: Interpreter, op: aref.ConsumedOp, args: PythonValues):
        ref = args[0]
        st = task_state(interpreter)
        n = ref.releases
        _check_slot(op, args, ref, n)
        st.sync(op, lambda: True, lambda: "")
        slot = n % ref.depth
        if n >= ref.gets or ref.states[slot] != BORROWED:
            raise simulation_error(op, f"aref.consumed of %{ref.name} with no borrowed slot (consumed twice?)")
        values = ref.slots[slot]
        assert values is not None and ref.states[slot] == BORROWED
        ids = {id(v) for v in values}
        for dot in st.in_flight:
            if dot.reads & ids:
                raise simulation_error(
                    op,
                    f"aref.consumed releases slot {slot} of %{ref.name} while the "
                    f"{dot.op.name} reading it is in flight (complete it with tile.dot_wait first)",
                )
        for v in values:
            st.borrowed.pop(id(v), None)
            st.released[id(v)] = (v, f"slot {slot} of %{ref.name}")
        ref.slots[slot] = None
        ref.states[slot] = EMPTY
        ref.releases += 1
        return ()

    @impl(tile.DotAsyncOp)
    def run_dot_async(self, interpreter: Interpreter, op: tile.DotAsyncOp, args: PythonValues):
        (result,) = TileFunctions().run_dot(interpreter, op, args).values  # tile.dot's math
        reads = {id(a) for a in args[:2]}
        task_state(interpreter).in_flight.append(_InFlightDot(op, result, reads))
        return (result,)

    @impl(tile.DotWaitOp)
    def run_dot_wait(self, interpreter: Interpreter, op: tile.DotWaitOp, args: PythonValues):
        st = task_state(interpreter)
        while len(st.in_flight) > op.pending.value.data:
            st.in_flight.popleft()
        unfinished = {id(d.result) for d in st.in_flight}
        if any(id(a) in unfinished for a in args):
            raise simulation_error(op, "tile.dot_wait returns a dot result that is still in flight")
        return tuple(args)


def _check_slot(op: aref.PutOp | aref.GetOp | aref.ConsumedOp, args: PythonValues, ref: ArefState, n: int) -> None:
    """An explicit slot (`%r[%stage, %phase]`, from tawa-assign-stage-phase)
    must be the one the ring's own count gives: use n takes stage n mod depth
    in pass (n / depth) & 1."""
    if not op.has_slot():
        return
    stage, phase = args[-2], args[-1]
    want = (n % ref.depth, (n // ref.depth) & 1)
    if (stage, phase) != want:
        raise simulation_error(
            op,
            f"{op.name} of %{ref.name} names stage {stage} phase {phase}, but it is use {n} "
            f"of the ring: stage {want[0]} phase {want[1]}",
        )


def check_finished(op: Operation, role: str, st: TaskState) -> None:
    if st.in_flight:
        raise simulation_error(op, f"partition {role} ends with {len(st.in_flight)} tile.dot_async in flight")
    held = {(ref.name, slot) for ref, slot in st.borrowed.values()}
    if held:
        names = ", ".join(f"slot {s} of %{n}" for n, s in sorted(held))
        raise simulation_error(op, f"partition {role} ends holding {names} (missing aref.consumed)")
