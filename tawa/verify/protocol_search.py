"""The exhaustive search of `tawa-verify-protocol`: every interleaving of the
warp groups' barrier-event traces (`protocol_model.SkeletonRunner`) on an
abstract machine with mbarrier semantics (arrival counts, transaction bytes,
phases, TMA completion as a separate asynchronous step), by breadth-first
search; `Explorer.run` returns the first `Violation` it reaches, with the
steps that lead there: deadlock, phase aliasing, a slot overwritten or read
while a load into it may be in flight, a staging tile written while a TMA
store may still read it, too many arrivals, transaction-byte underflow.

Two reductions keep the search small without losing a violation:

* *Blocks* (`_cut`): a warp group's events from one blocking event (a wait,
  a named barrier sync) to the next run as one atomic step (a Lipton
  reduction, docs/protocol.md section 2).
* *Persistent sets* (`protocol_reduction.PersistentSets`, a partial-order reduction): in
  a state where the next steps of some group of warp groups touch nothing
  that any other warp group can still touch, and no TMA completion either
  (arrivals at a named barrier that cannot complete its generation early
  touch each other's barrier without conflict), only that group's steps
  are expanded; the other warp groups' steps come
  later on every path, in the same order, so no interleaving of them is
  lost, only their redundant orderings against the group.  Why that keeps
  every deadlock and every violation reachable is in the docstring of
  `_persistent` and in docs/protocol.md section 2.

TMA stores (`nvgpu.tma_store`) are bulk groups of the thread that issues
them: an asynchronous read of their staging tile that only that thread's
`nvgpu.tma_store_wait` retires.  A wait run by part of a warp group
retires the groups for the rest of it only once a named barrier follows
(the other threads know of the wait through the barrier), so a staging
write (`nvgpu.frag_store_shared`) is checked against the stores each warp
group may still have in flight at that point, its own and the others'.

Thread-block clusters (`Layout`): the traces are those of every warp group
of every CTA of one cluster, and the objects (barrier slots, stages) of all
CTAs are numbered together; the layout says which CTA each role and each
barrier belongs to and which bytes of its CTA's shared memory each stage
covers (two stages overlap when their bytes do, whatever views name them).
An event of a role on a barrier of another CTA (a remote arrival, the
peer's part of a multicast load) is checked against that CTA: it must have
initialized the barrier (else "peer barrier used before init"), and must
not have finished (else "CTA exits while a peer may still access it"); the
same holds when a multicast load lands.  In a cluster a load may complete
its bytes before the expect_tx of its phase (the peer's half of a multicast
often does): a barrier's transaction count may go below zero while the
phase still misses arrivals, and it is an underflow only once it has them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Operation

from tawa.target.hopper import NAMED_BARRIERS, THREADS_PER_GROUP
from tawa.verify.protocol_model import (
    ARRIVE,
    BLOCKING,
    BULK_STORE,
    BULK_WAIT,
    CLUSTER_BARRIER,
    COMMIT,
    EXPECT_TX,
    INIT,
    NAMED_ARRIVE,
    NAMED_SYNC,
    READ,
    TMA,
    WAIT,
    WAIT_GROUP,
    WRITE,
    Event,
)
from tawa.verify.protocol_reduction import PersistentSets


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


@dataclass(frozen=True)
class Layout:
    """Where the objects of the traces live, for a cluster of CTAs (or
    stages that alias): the CTA of each role (`role_cta`) and of each
    barrier slot (`barrier_cta`), and per stage its CTA and bytes
    (`slot_range`: (cta, lo, hi), or None for a stage that overlaps no
    other).  Without a layout: one CTA, every stage its own bytes."""

    role_cta: tuple[int, ...]
    barrier_cta: tuple[int, ...]
    slot_range: tuple[tuple[int, int, int] | None, ...] = ()

    def key(self) -> tuple[Any, ...]:
        return (self.role_cta, self.barrier_cta, self.slot_range)


@dataclass(frozen=True)
class Words:
    """What the messages call the model's objects: the lowered kernel's
    (`NVGPU_WORDS`) or the aref level's (`protocol_aref.AREF_WORDS`)."""

    load: str = "TMA load"
    """What fills a stage asynchronously."""
    reader: str = "wgmma"
    """What reads a stage until a later op retires it."""
    retire: str = "wgmma_wait_group"
    """The op that retires readers."""
    agent: str = "warp group"
    """Who runs a trace."""
    acquire: str = "waits on the barrier its loads complete on"
    """How an agent takes a stage."""


NVGPU_WORDS = Words()


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
    """The phase each gate wait means (`intended_phases`)."""
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
    consecutive: bool = False
    """Whether each of its waits means the phase after the last one it
    knows complete (-1 or 0 first): then when it reaches a wait for phase
    k, the barrier has completed at least k phases (this role passed a
    wait for k-1: `intended_phases`)."""


def intended_phases(trace: Sequence[Event]) -> dict[int, tuple[int, int]]:
    """The phase each wait of a role means, and how many phases of its
    barrier the role knows complete when it reaches the wait: {event
    index: (k, known)}.  A wait of parity p on barrier b means k, the next
    phase of parity p after the latest phase of b the role waited for."""
    seen: dict[int, int] = {}
    phases: dict[int, tuple[int, int]] = {}
    for i, e in enumerate(trace):
        if e.kind == WAIT:
            last = seen.get(e.barrier, 0) - 1  # the latest phase this role knows complete
            k = last if (last - e.parity) % 2 == 0 else last + 1
            phases[i] = (k, last + 1)
            seen[e.barrier] = max(seen.get(e.barrier, 0), k + 1)
    return phases


def _cut(trace: Sequence[Event]) -> _Role:
    """`trace` cut into blocks, with the phase each wait means and the
    phases the role knows complete there (`intended_phases`)."""
    phases = intended_phases(trace)
    blocks: list[list[Event]] = [[]]
    starts = [0]  # the trace index of each block's first event
    for i, e in enumerate(trace):
        if e.kind in BLOCKING and blocks[-1]:
            blocks.append([])
            starts.append(i)
        blocks[-1].append(e)
    if not blocks[-1]:
        blocks.pop()
        starts.pop()
    gates = [b[0] if b[0].kind in BLOCKING else None for b in blocks]
    intended = []
    consecutive = True
    for g, start in zip(gates, starts):
        k = 0
        if g is not None and g.kind == WAIT:
            k, known = phases[start]
            # Phase k − 1 is known complete (this role waited for it).
            consecutive = consecutive and (k == known or k == -1 and known == 0)
        intended.append(k)
    reads = open_reads(trace)
    open_at = [reads[start] for start in starts] + [reads[-1]]
    open_in = [reads[start: start + len(b)] for b, start in zip(blocks, starts)]
    stores_at, stores_in, stores_left = _bulk_stores(blocks)
    return _Role([tuple(b) for b in blocks], gates, intended, open_at, open_in, stores_at, stores_in, stores_left,
                 consecutive)


def open_reads(trace: Sequence[Event]) -> list[frozenset[int]]:
    """The stages with async reads (wgmma) in flight before each event of
    `trace`, and after the last: a read stays open until the
    `wgmma_wait_group` that leaves fewer groups pending than were committed
    after it."""
    groups: list[frozenset[int]] = []
    pending: set[int] = set()
    current: frozenset[int] = frozenset()
    out = []
    for e in trace:
        out.append(current)
        if e.kind == READ and e.is_async:
            pending.add(e.slot)
            current = current | {e.slot}
        elif e.kind == COMMIT:
            groups.append(frozenset(pending))  # the open stages stay the same
            pending = set()
        elif e.kind == WAIT_GROUP:
            groups = groups[len(groups) - e.count:] if e.count else []
            current = frozenset(pending).union(*groups)
    out.append(current)
    return out


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
    reading: frozenset[int] = frozenset()

    def now() -> frozenset[int]:
        return frozenset(g.slot for g in groups) | unpublished

    for b in blocks:
        if b[0].kind == NAMED_SYNC and unpublished:
            unpublished = set()
            reading = now()
        at.append(reading)
        per_event = []
        for e in b:
            per_event.append(reading)
            if e.kind == BULK_STORE:
                groups.append(e)
                reading = reading | {e.slot}
            elif e.kind == BULK_WAIT:
                keep = max(0, len(groups) - e.count)
                retired, groups = groups[:keep], groups[keep:]
                if e.threads < THREADS_PER_GROUP:
                    unpublished.update(g.slot for g in retired)
                reading = now()
        per_block.append(per_event)
    at.append(reading)
    return at, per_block, tuple(groups)


class _Found(Exception):
    def __init__(self, problem: str, op: Operation, message: str):
        super().__init__(message)
        self.problem, self.op, self.message = problem, op, message


class Explorer(PersistentSets):
    """Breadth-first search over every interleaving of the roles' blocks
    and the TMA completions (see docs/protocol.md for the state and the
    steps).  `describe_barrier(b)` / `describe_slot(s)` name objects in
    messages; `role_name(r)` names warp groups.  `reduce=False` turns the
    persistent-set reduction off (every enabled step of every state is
    explored); after `run`, `states` is the number of states visited.
    A violation found with the reduction is searched for again without it
    (`shortest=False`: not), so that its trace is a shortest one, as the
    full search reports it: the reduced state graph is a subgraph of the
    full one, so the full search finds a violation too, at the same or a
    smaller depth (if it runs out of `max_states` first, the reduced
    search's trace is reported).  `fine=False` reduces with the coarse
    footprints of `PersistentSets._footprints` (fewer refinements, more
    states; the tests compare both with the full search)."""

    def __init__(self, traces: Sequence[Sequence[Event]], n_barriers: int,
                 describe_barrier, describe_slot, role_name, max_states: int,
                 reduce: bool = True, shortest: bool = True, layout: Layout | None = None,
                 fine: bool = True, initial: Sequence[int] = (), words: Words = NVGPU_WORDS):
        self.role_cta = tuple(layout.role_cta) if layout else (0,) * len(traces)
        self.roles = [_cut(t) for t in traces]
        self.nb = n_barriers
        self.barrier_cta = tuple(layout.barrier_cta) if layout else (0,) * n_barriers
        self.ctas = 1 + max(self.role_cta, default=0)
        self.cta_roles = tuple(tuple(r for r, c in enumerate(self.role_cta) if c == cta)
                               for cta in range(self.ctas))
        self.transient_tx = self.ctas > 1
        """Whether a load may complete bytes before its phase's expect_tx (a
        peer's multicast can): the count may go negative while arrivals are
        missing (module docstring)."""
        self._stage_overlaps(traces, layout.slot_range if layout else ())
        self._fine = fine
        self.bar = describe_barrier
        self.slot = describe_slot
        self.role_name = role_name
        self.max_states = max_states
        self.reduce = reduce
        self.shortest = shortest
        self.states = 0
        self.initial = tuple(initial)
        """Per barrier, the arrivals it expects before any step (0: not
        initialized; the aref level's rings exist from the start)."""
        self.words = words
        named = sorted({e.barrier for t in traces for e in t if e.kind in (NAMED_SYNC, NAMED_ARRIVE)})
        self.named_index = {n: i for i, n in enumerate(named)}
        self._footprints()

    def _stage_overlaps(self, traces: Sequence[Sequence[Event]],
                        ranges: Sequence[tuple[int, int, int] | None]) -> None:
        """`_overlap[s]`: the stages whose bytes meet those of stage s (s
        included); `_atoms[s]`: the pieces of memory stage s covers (the
        footprints' objects per stage), one per stage unless stages alias."""
        n = max(1 + max((e.slot for t in traces for e in t), default=-1), len(ranges))
        spans = list(ranges) + [None] * (n - len(ranges))
        overlap = [{s} for s in range(n)]
        for s, a in enumerate(spans):
            for t in range(s):
                b = spans[t]
                if a is not None and b is not None and a[0] == b[0] and a[1] < b[2] and b[1] < a[2]:
                    overlap[s].add(t)
                    overlap[t].add(s)
        self._overlap = [frozenset(o) for o in overlap]
        self._aliased = any(len(o) > 1 for o in overlap)
        if not self._aliased:
            self._atoms = [(s,) for s in range(n)]
            return
        cuts: dict[int, set[int]] = {}
        for span in spans:
            if span is not None:
                cuts.setdefault(span[0], set()).update(span[1:])
        pieces: dict[tuple[int, int], int] = {}
        for cta, points in sorted(cuts.items()):
            ordered = sorted(points)
            for lo in ordered[:-1]:
                pieces[(cta, lo)] = len(pieces)
        self._atoms = []
        for span in spans:
            if span is None:
                self._atoms.append((len(pieces) + len(self._atoms),))
            else:
                cta, lo, hi = span
                self._atoms.append(tuple(i for (c, x), i in pieces.items() if c == cta and lo <= x < hi))

    def _hits(self, s: int, stages) -> bool:
        """Whether stage s overlaps one of `stages` (a set of stages)."""
        return s in stages if not self._aliased else not self._overlap[s].isdisjoint(stages)

    def _exited(self, state, cta: int) -> bool:
        """Whether every warp group of `cta` has finished (it may have exited)."""
        pos = state[0]
        return all(pos[q] >= len(self.roles[q].blocks) for q in self.cta_roles[cta])

    # state: (positions, barriers, inflight, named, named_waits)
    #   barriers: flat (pending, tx, phase, count) per barrier slot; count 0 = not initialized
    #   inflight: TMA events (role, block, index), by barrier, each barrier's in issue order
    #     (loads on different barriers complete independently: one state for their orders)
    #   named: flat (generation, threads arrived) per named barrier
    #   named_waits: per role, the generation it arrived in, or -1

    def run(self) -> Violation | None:
        violation = self._search(self.reduce)
        if violation is not None and self.reduce and self.shortest:
            states = self.states
            try:
                violation = self._search(False) or violation
            except StateLimit:
                pass
            self.states = states
        return violation

    def _search(self, reduce: bool) -> Violation | None:
        for r, role in enumerate(self.roles):
            if role.stores_left:
                store = role.stores_left[-1]
                return Violation("CTA ends during a TMA store", store.op,
                                 f"{self.role_name(r)} ends while its TMA store of {self.slot(store.slot)} may "
                                 "still read shared memory (no nvgpu.tma_store_wait 0 after its last store)", [])
        n = len(self.roles)
        bars = [0] * (4 * self.nb)
        for b, count in enumerate(self.initial):
            bars[4 * b: 4 * b + 4] = (count, 0, 0, count)
        init = ((0,) * n, tuple(bars), (), (0,) * (2 * len(self.named_index)), (-1,) * n)
        parent: dict[Any, tuple[Any, Step] | None] = {init: None}
        hints: dict[Any, int] = {}  # the agent whose step reached a state (`_persistent` tries it first)
        queue = deque([init])
        while queue:
            state = queue.popleft()
            try:
                self._check_state(state)
                succs = list(self._successors(state, reduce, hints.pop(state, -1)))
            except _Found as found:
                self.states = len(parent)
                return Violation(found.problem, found.op, found.message,
                                 self._path(parent, state, getattr(found, "step", None)),
                                 len(parent))
            if not succs and any(p < len(r.blocks) for p, r in zip(state[0], self.roles)):
                self.states = len(parent)
                op, message = self._deadlock(state)
                return Violation("deadlock", op, message, self._path(parent, state, None), len(parent))
            for step, nxt in succs:
                if nxt not in parent:
                    parent[nxt] = (state, step)
                    queue.append(nxt)
                    if self._fine:
                        hints[nxt] = self._agent(step)
            if len(parent) > self.max_states:
                raise StateLimit(len(parent))
        self.states = len(parent)
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

    def _agent(self, step: Step) -> int:
        """The agent that takes `step` (`_persistent`)."""
        if step.kind != "tma":
            return step.role
        e = step.events[0]
        return len(self.roles) + (e.barrier * len(self.roles) + step.role if self._fine else e.barrier)

    def _successors(self, state, reduce: bool, hint: int = -1) -> Iterator[tuple[Step, Any]]:
        pos, bars, inflight, named, nwaits = state
        moves = []  # (role, whether its step is the arrival at a named barrier)
        for r, (p, role) in enumerate(zip(pos, self.roles)):
            if p >= len(role.blocks):
                continue
            gate = role.gates[p]
            if gate is not None and gate.kind == WAIT:
                phase = bars[4 * gate.barrier + 2]
                if phase % 2 == gate.parity:
                    continue  # blocked: the phase with this parity has not completed
            elif gate is not None:  # a named barrier sync
                if nwaits[r] < 0:
                    moves.append((r, True))
                    continue
                if named[2 * self.named_index[gate.barrier]] <= nwaits[r]:
                    continue
            moves.append((r, False))
        queues: dict[int, list[int]] = {}  # `_queue_key` -> indices into inflight, in issue order
        queue_of = self._queue_of
        for k, entry in enumerate(inflight):
            queues.setdefault(queue_of[entry], []).append(k)
        chosen = self._persistent(state, moves, queues, hint) if reduce and len(moves) + len(queues) > 1 else None
        for r, arrive in moves:
            if chosen is None or r in chosen:
                yield self._arrive_named(state, r, self.roles[r].gates[pos[r]]) if arrive \
                    else self._run_block(state, r)
        for q, ks in queues.items():  # completions of one queue are explored in issue order
            if chosen is None or len(pos) + q in chosen:
                r, p, i = inflight[ks[0]]
                yield self._complete(state, ks[0], r, self.roles[r].blocks[p][i])

    def _arrive_named(self, state, r: int, gate: Event):
        pos, bars, inflight, named, nwaits = state
        i = self.named_index[gate.barrier]
        step = Step(r, (gate,), "arrive_named")
        named_l = list(named)
        gen, arrived = named_l[2 * i], named_l[2 * i + 1] + gate.threads
        if arrived > gate.count:
            self._fail(step, "named barrier over-arrival", gate.op,
                       f"{arrived} threads arrive at {_named(gate.barrier)}, which counts {gate.count}")
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
                if self.ctas > 1 and self.barrier_cta[e.barrier] != self.role_cta[r]:
                    self._check_peer(step, state, r, i, e, bars_l[b4 + 3])
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
                    infl.sort(key=self._load_order)
                    continue
                if k == EXPECT_TX:
                    bars_l[b4 + 1] += e.tx
                bars_l[b4] -= e.count
                if bars_l[b4] < 0:
                    self._fail(step, "too many arrivals", e.op,
                               f"{self.role_name(r)} arrives on {self.bar(e.barrier)} in phase "
                               f"{bars_l[b4 + 2]} after all of its {bars_l[b4 + 3]} expected arrivals", i)
                if bars_l[b4 + 1] < 0 and bars_l[b4] == 0:  # only with transient_tx
                    self._fail(step, "transaction bytes underflow", e.op,
                               f"{self.role_name(r)} makes the last arrival of phase {bars_l[b4 + 2]} on "
                               f"{self.bar(e.barrier)}, whose loads have completed {-bars_l[b4 + 1]} bytes more "
                               "than the phase expects (expect_tx and the boxes' bytes differ)", i)
                _complete_phase(bars_l, b4)
            elif k == WRITE:
                for r2, other in enumerate(self.roles):
                    reading = other.stores_in[p][i] if r2 == r else other.stores_at[state[0][r2]]
                    if self._hits(e.slot, reading):
                        self._fail(step, "staging tile written during a TMA store", e.op,
                                   f"{self.role_name(r)} writes {self.slot(e.slot)} while a TMA store of "
                                   f"{self.role_name(r2)} may still read it (no nvgpu.tma_store_wait by its "
                                   "issuing thread, then a named barrier, before the write)", i)
            elif k in (READ, BULK_STORE):
                for (r2, p2, i2) in infl:
                    load = self.roles[r2].blocks[p2][i2]
                    if load.slot == e.slot or self._aliased and load.slot in self._overlap[e.slot]:
                        self._fail(step, "read during load", e.op,
                                   f"{self.role_name(r)} reads {self.slot(e.slot)} while a {self.words.load} "
                                   f"into it ({_where(load.op)}) may still be in flight", i)
            elif k == NAMED_ARRIVE:
                j = self.named_index[e.barrier]
                arrived = named_l[2 * j + 1] + e.threads
                if arrived > e.count:
                    self._fail(step, "named barrier over-arrival", e.op,
                               f"{arrived} threads arrive at {_named(e.barrier)}, which counts {e.count}", i)
                named_l[2 * j: 2 * j + 2] = (
                    (named_l[2 * j] + 1, 0) if arrived == e.count else (named_l[2 * j], arrived))
        new_pos = pos[:r] + (p + 1,) + pos[r + 1:]
        return step, (new_pos, tuple(bars_l), tuple(infl), tuple(named_l), tuple(waits))

    def _check_peer(self, step: Step, state, r: int, i: int, e: Event, count: int) -> None:
        """Event i of `step` by role r acts on a barrier (and, for a load, a
        stage) of another CTA: that CTA must still be there and must have
        initialized the barrier (`count`: the barrier's, 0 if not)."""
        cta = self.barrier_cta[e.barrier]
        what = (f"multicasts into {self.slot(e.slot)} (on {self.bar(e.barrier)})" if e.kind == TMA
                else f"arrives on {self.bar(e.barrier)}")
        if self._exited(state, cta):
            self._fail(step, "CTA exits while a peer may still access it", e.op,
                       f"{self.role_name(r)} {what} after every warp group of CTA {cta} has finished: "
                       f"CTA {cta} may have exited (no nvgpu.cluster_sync at the end of the kernel, after "
                       "the last remote arrival and multicast)", i)
        if count == 0:
            self._fail(step, "peer barrier used before init", e.op,
                       f"{self.role_name(r)} {what}, which CTA {cta} may not have initialized yet "
                       "(no nvgpu.cluster_sync between the barrier inits and the first remote arrival "
                       "or multicast)", i)

    def _load_event(self, entry: tuple[int, int, int]) -> Event:
        r, p, i = entry
        return self.roles[r].blocks[p][i]

    def _load_barrier(self, entry: tuple[int, int, int]) -> int:
        return self._load_event(entry).barrier

    def _queue_key(self, entry: tuple[int, int, int]) -> int:
        """The queue of a load in flight: its barrier, or with fine
        footprints its barrier and issuing role (`_footprints`): the loads
        of one queue complete in issue order, queues independently."""
        return self._queue_of[entry]  # made with the footprints

    def _load_order(self, entry: tuple[int, int, int]):
        """The order of the loads in flight: by queue, each in issue order
        (a stable sort; with fine footprints by program order, the same
        thing within one role), so that the loads of several roles on one
        barrier are one state however their issues interleaved."""
        return (self._queue_key(entry), entry[1], entry[2]) if self._fine else self._queue_key(entry)

    def _check_overwrite(self, step: Step, state, r: int, p: int, i: int, e: Event, infl) -> None:
        for (r2, p2, i2) in infl:
            other = self.roles[r2].blocks[p2][i2]
            if other.slot == e.slot or self._aliased and other.slot in self._overlap[e.slot]:
                self._fail(step, "slot overwritten before it was released", e.op,
                           f"{self.words.load} into {self.slot(e.slot)} while an earlier one into it "
                           f"({_where(other.op)}) may still be in flight", i)
        for r2, role in enumerate(self.roles):
            open_ = role.open_in[p][i] if r2 == r else role.open_at[state[0][r2]]
            if self._hits(e.slot, open_):
                self._fail(step, "slot overwritten before it was released", e.op,
                           f"{self.words.load} into {self.slot(e.slot)} while {self.role_name(r2)} may still "
                           f"read it (its {self.words.reader} reading it has not been retired by a "
                           f"{self.words.retire})", i)

    def _complete(self, state, k: int, r: int, e: Event):
        pos, bars, inflight, named, nwaits = state
        step = Step(r, (e,), "tma")
        bars_l = list(bars)
        b4 = 4 * e.barrier
        if self.ctas > 1 and self.barrier_cta[e.barrier] != self.role_cta[r] and self._exited(state, self.barrier_cta[e.barrier]):
            cta = self.barrier_cta[e.barrier]
            self._fail(step, "CTA exits while a peer may still access it", e.op,
                       f"the multicast of {self.role_name(r)} into {self.slot(e.slot)} lands after every warp "
                       f"group of CTA {cta} has finished: CTA {cta} may have exited (no nvgpu.cluster_sync "
                       "at the end of the kernel, after the last remote arrival and multicast)")
        bars_l[b4 + 1] -= e.tx
        if bars_l[b4 + 1] < 0 and not (self.transient_tx and bars_l[b4] > 0):
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
                if tx > 0:
                    why += f" and {tx} transaction bytes that no load delivers"
                elif tx < 0:
                    why += f"; {-tx} bytes of its loads have already landed"
                parts.append(
                    f"{self.role_name(r)} waits on {self.bar(gate.barrier)} parity {gate.parity} "
                    f"(phase {role.intended[p]}; the barrier is in phase {phase}, missing {why})")
            else:
                i = self.named_index[gate.barrier]
                parts.append(f"{self.role_name(r)} waits at {_named(gate.barrier)} "
                             f"({named[2 * i + 1]} of {gate.count} threads arrived)")
        assert first is not None
        return first, "; ".join(parts)


def _complete_phase(bars: list[int], b4: int) -> None:
    if bars[b4] == 0 and bars[b4 + 1] == 0:
        bars[b4] = bars[b4 + 3]
        bars[b4 + 2] += 1


def _named(barrier: int) -> str:
    """A named barrier (of its CTA: ids of CTA c > 0 are offset by
    c · NAMED_BARRIERS), or the cluster barrier, in messages."""
    if barrier == CLUSTER_BARRIER:
        return "nvgpu.cluster_sync"
    cta, n = divmod(barrier, NAMED_BARRIERS)
    return f"named barrier {n}" + (f" (CTA {cta})" if cta else "")


def _where(op: Operation) -> str:
    from tawa.diagnostics import location_of

    return location_of(op) or op.name
