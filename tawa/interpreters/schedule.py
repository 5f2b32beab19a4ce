"""Deterministic interleaving of concurrent warp-group tasks.

`aref.warp_specialize` runs each partition as a task (a thread with its own
interpreter), but only one task runs at a time: a task gives up control at
every synchronization op (aref put/get/consumed, dot_async/dot_wait) and the
`Scheduler` picks which task goes next among those that can proceed, by a
policy:

* `random` (seeded): any runnable task, chosen by a seeded RNG;
* `producer-first`: the producer whenever it can run (it races ahead until
  the ring is full);
* `consumer-first`: a consumer whenever it can run (it drains every slot as
  soon as it is filled).

If no task can proceed while some have not finished, that is a deadlock; it
is reported with the op every blocked task waits at, unless some task waits
with a timeout (a bounded wait, the watchdog's): then the first of those
resumes, its wait unsatisfied, as the GPU's would once its time is up.

Running tasks may `spawn` more (a CTA's threads diverging into branches that
wait on each other run as concurrent tasks: tawa.interpreters.simt), and a
`progress` hook lets work that belongs to no task (TMA transfers in flight)
complete at scheduling points: at random ones under `random`, at every one
otherwise, and always before a state is declared a deadlock.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from xdsl.ir import Operation

from tawa.diagnostics import TawaError, location_of
from tawa.dialects.aref import PartitionRole
from tawa.interpreters.errors import SimulationError

POLICIES = ("random", "producer-first", "consumer-first")


@dataclass(frozen=True)
class Schedule:
    """How concurrent partitions interleave in the simulator."""

    policy: str = "random"
    seed: int = 0
    max_steps: int = 1_000_000
    """Scheduling decisions allowed per warp_specialize (guards against livelock)."""

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise TawaError(f"unknown schedule policy '{self.policy}' (choose from {', '.join(POLICIES)})")



T = TypeVar("T")
ORDERS = ("grid", "reversed", "shuffled")
"""The orders `tawa.interpret` may run a grid's programs (CTAs, clusters) in."""


def program_order(ids: Iterable[T], order: str, schedule: Schedule | None) -> list[T]:
    """`ids` in `order`: as given (`grid`), `reversed`, or `shuffled` by
    `schedule`'s seed.  A GPU promises no order between programs."""
    if order not in ORDERS:
        raise TawaError(f"unknown program order '{order}' (choose from {', '.join(ORDERS)})")
    ids = list(ids)
    if order == "reversed":
        ids.reverse()
    elif order == "shuffled":
        random.Random((schedule or Schedule()).seed).shuffle(ids)
    return ids

class _Abort(BaseException):
    """Unwinds a task after another task failed (not an Exception: nothing
    between the scheduler and the task's entry point may swallow it)."""


@dataclass(eq=False)
class Task:
    index: int
    role: PartitionRole
    body: Callable[[Task], None]
    waiting: tuple[Operation, Callable[[], bool], Callable[[], str]] | None = None
    timed: bool = False
    """Whether its wait may end unsatisfied (`Scheduler.sync` with `timeout`)."""
    timed_out: bool = False
    started: bool = False
    done: bool = False
    label: str = ""
    """How messages name the task (default: its role)."""

    def __post_init__(self) -> None:
        self.label = self.label or str(self.role)


@dataclass(eq=False)
class Scheduler:
    schedule: Schedule
    where: str
    """Names the kernel instance in messages, e.g. `@gemm program (0, 1)`."""
    location: str = "tawa.interpret"
    """Source location that errors are reported at (the warp_specialize op)."""
    tasks: list[Task] = field(default_factory=list)
    failure: BaseException | None = None
    progress: Callable[[bool], bool] | None = None
    """Completes background work (`progress(force)`; with force false it may
    complete only some); returns whether anything changed."""
    _cv: threading.Condition = field(default_factory=threading.Condition)
    _turn: Task | None = None
    _steps: int = 0
    _threads: list[threading.Thread] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.schedule.seed)

    def add(self, role: PartitionRole, body: Callable[[Task], None], label: str = "") -> None:
        self.tasks.append(Task(len(self.tasks), role, body, label=label))

    # ------------------------------------------------------------------ driving

    def run(self) -> None:
        """Runs every task to completion, or raises the first failure."""
        for t in self.tasks:
            self._start(t)
        with self._cv:
            self._switch()
            while self.failure is None and not all(t.done for t in self.tasks):
                self._cv.wait()
        while self._threads:
            self._threads.pop().join()
        if self.failure is not None:
            raise self.failure

    def spawn(self, role: PartitionRole, body: Callable[[Task], None]) -> Task:
        """Adds a task while the scheduler runs (called by the running task;
        the new one starts when the scheduler picks it)."""
        task = Task(len(self.tasks), role, body)
        with self._cv:
            self.tasks.append(task)
        self._start(task)
        return task

    def _start(self, task: Task) -> None:
        th = threading.Thread(target=self._thread_main, args=(task,), daemon=True, name=str(task.role))
        self._threads.append(th)
        th.start()

    def _thread_main(self, task: Task) -> None:
        try:
            with self._cv:
                self._wait_for_turn(task)
            task.started = True
            task.body(task)
            with self._cv:
                task.done = True
                self._switch()
        except _Abort:
            pass
        except BaseException as err:  # noqa: BLE001 - reported by run()
            with self._cv:
                if self.failure is None:
                    self.failure = err
                task.done = True
                self._cv.notify_all()

    def _wait_for_turn(self, task: Task) -> None:
        while self._turn is not task and self.failure is None:
            self._cv.wait()
        if self.failure is not None:
            raise _Abort

    def sync(
        self, task: Task, op: Operation, ready: Callable[[], bool], why: Callable[[], str], timeout: bool = False
    ) -> bool:
        """Called by `task` at a synchronization op: lets the scheduler choose
        who runs next; returns once `task` is chosen with `ready()` true.
        With `timeout`, the wait may also end unsatisfied, as a bounded wait
        on the GPU ends when its time is up: when no task can proceed (a
        deadlock), the first such waiter is resumed instead of a deadlock
        being reported.  Returns whether `ready()` held."""
        with self._cv:
            task.waiting = (op, ready, why)
            task.timed, task.timed_out = timeout, False
            self._switch()
            self._wait_for_turn(task)
            task.waiting = None
            task.timed = False
            return not task.timed_out

    def _runnable(self) -> list[Task]:
        return [
            t for t in self.tasks
            if not t.done and (not t.started or t.waiting is None or t.timed_out or t.waiting[1]())
        ]

    def _switch(self) -> None:
        """Picks the next task (caller holds the lock)."""
        self._steps += 1
        if self._steps > self.schedule.max_steps:
            self._fail(SimulationError(
                f"{self.where}: more than {self.schedule.max_steps} scheduling steps (livelock?)",
                self.location,
            ))
            return
        if self.progress is not None and self.schedule.policy != "random":
            self.progress(True)
        elif self.progress is not None and self._rng.random() < 0.5:
            self.progress(False)
        runnable = self._runnable()
        while not runnable and self.progress is not None and self.progress(True):
            runnable = self._runnable()
        if not runnable:
            timed = [t for t in self.tasks if not t.done and t.waiting is not None and t.timed]
            if timed:
                timed[0].timed_out = True
                runnable = timed[:1]
        if not runnable:
            if not all(t.done for t in self.tasks):
                self._fail(SimulationError(self._deadlock_message(), self.location))
            self._turn = None
            self._cv.notify_all()
            return
        self._turn = self._pick(runnable)
        self._cv.notify_all()

    def _pick(self, runnable: list[Task]) -> Task:
        policy = self.schedule.policy
        if policy == "producer-first":
            return min(runnable, key=lambda t: (t.role != PartitionRole.PRODUCER, t.index))
        if policy == "consumer-first":
            return min(runnable, key=lambda t: (t.role == PartitionRole.PRODUCER, t.index))
        return self._rng.choice(runnable)

    def _fail(self, err: BaseException) -> None:
        if self.failure is None:
            self.failure = err
        self._turn = None
        self._cv.notify_all()

    def _deadlock_message(self) -> str:
        parts = []
        for t in self.tasks:
            if t.done:
                parts.append(f"{t.label} has finished")
            elif t.waiting is not None:
                op, _, why = t.waiting
                loc = location_of(op)
                parts.append(f"{t.label} waits at {op.name}{f' ({loc})' if loc else ''} {why()}")
        return f"deadlock in {self.where}: " + "; ".join(parts)
