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
* *Persistent sets* (`Explorer._persistent`, a partial-order reduction): in
  a state where the next steps of some group of warp groups touch nothing
  that any other warp group can still touch, and no TMA completion either,
  only that group's steps are expanded; the other warp groups' steps come
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
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Operation

from tawa.target.hopper import THREADS_PER_GROUP
from tawa.transforms.protocol_model import (
    ARRIVE,
    BLOCKING,
    BULK_STORE,
    BULK_WAIT,
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
    messages; `role_name(r)` names warp groups.  `reduce=False` turns the
    persistent-set reduction off (every enabled step of every state is
    explored); after `run`, `states` is the number of states visited.
    A violation found with the reduction is searched for again without it
    (`shortest=False`: not), so that its trace is a shortest one, as the
    full search reports it: the reduced state graph is a subgraph of the
    full one, so the full search finds a violation too, at the same or a
    smaller depth (if it runs out of `max_states` first, the reduced
    search's trace is reported)."""

    def __init__(self, traces: Sequence[Sequence[Event]], n_barriers: int,
                 describe_barrier, describe_slot, role_name, max_states: int,
                 reduce: bool = True, shortest: bool = True):
        self.roles = [_cut(t) for t in traces]
        self.nb = n_barriers
        self.bar = describe_barrier
        self.slot = describe_slot
        self.role_name = role_name
        self.max_states = max_states
        self.reduce = reduce
        self.shortest = shortest
        self.states = 0
        named = sorted({e.barrier for t in traces for e in t if e.kind in (NAMED_SYNC, NAMED_ARRIVE)})
        self.named_index = {n: i for i, n in enumerate(named)}
        self._footprints()

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
        init = ((0,) * n, (0,) * (4 * self.nb), (), (0,) * (2 * len(self.named_index)), (-1,) * n)
        parent: dict[Any, tuple[Any, Step] | None] = {init: None}
        queue = deque([init])
        while queue:
            state = queue.popleft()
            try:
                self._check_state(state)
                succs = list(self._successors(state, reduce))
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

    def _successors(self, state, reduce: bool) -> Iterator[tuple[Step, Any]]:
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
        queues: dict[int, list[int]] = {}  # barrier -> indices into inflight, in issue order
        for k, entry in enumerate(inflight):
            queues.setdefault(self._load_barrier(entry), []).append(k)
        chosen = self._persistent(state, moves, queues) if reduce and len(moves) + len(queues) > 1 else None
        for r, arrive in moves:
            if chosen is None or r in chosen:
                yield self._arrive_named(state, r, self.roles[r].gates[pos[r]]) if arrive \
                    else self._run_block(state, r)
        for b, ks in queues.items():  # completions on one barrier are explored in issue order
            if chosen is None or len(pos) + b in chosen:
                r, p, i = inflight[ks[0]]
                yield self._complete(state, ks[0], r, self.roles[r].blocks[p][i])

    # ------------------------------------------------------------------ reduction

    def _footprints(self) -> None:
        """The shared objects each step reads and writes, as bit masks.

        Objects: each mbarrier slot (its counts and phase, and the order of
        the TMA loads in flight on it), each named barrier, and per shared
        memory stage s: the TMA loads into s in flight ("load s"), the
        async reads (wgmma) of s a warp group has open ("open s") and its
        TMA stores that may still read s ("store s").  A block of role r at
        position p reads/writes (`_reads[r][p]`, `_writes[r][p]`): its
        gate's barrier (a wait reads it, including the phase-aliasing and
        wait-before-init checks; a named sync writes it, arriving), each
        event's barrier or named barrier (init, arrive, expect_tx: write)
        and stage (a TMA load writes "load s" and its barrier, and reads
        "open s" for the overwrite check; a read or a TMA store reads
        "load s"; a staging write reads "store s"), and writes "open s" /
        "store s" for the stages whose membership in the role's open reads /
        pending stores differs between the block's start and end (what the
        other roles' checks see of it; inside a block only the role itself
        looks).  `_segment_*[r][p]`: the union over blocks p .. up to the
        next block gated by an mbarrier wait, `_next_wait[r][p]` (`_reach`
        walks a role's future by these); `_gate[r][p]`: the object whose
        change can unblock the gate of block p; `_load[(r, p, i)]`: what
        the completion of that TMA load writes (its barrier and "load s")."""
        nb, nn = self.nb, len(self.named_index)
        slots = 1 + max((e.slot for role in self.roles for b in role.blocks for e in b), default=-1)

        def bar(b: int) -> int:
            return 1 << b

        def named(n: int) -> int:
            return 1 << (nb + self.named_index[n])

        def stage(kind: int, s: int) -> int:  # kind 0: load, 1: open, 2: store
            return 1 << (nb + nn + kind * slots + s)

        self._reads, self._writes, self._gate = [], [], []
        self._segment_reads, self._segment_writes, self._next_wait = [], [], []
        self._load: dict[tuple[int, int, int], int] = {}
        for r, role in enumerate(self.roles):
            reads, writes, gates = [], [], []
            for p, block in enumerate(role.blocks):
                rd = wr = 0
                for i, e in enumerate(block):
                    k = e.kind
                    if k == WAIT:
                        rd |= bar(e.barrier)
                    elif k in (NAMED_SYNC, NAMED_ARRIVE):
                        wr |= named(e.barrier)
                    elif k in (INIT, ARRIVE, EXPECT_TX):
                        wr |= bar(e.barrier)
                    elif k == TMA:
                        self._load[(r, p, i)] = bar(e.barrier) | stage(0, e.slot)
                        wr |= self._load[(r, p, i)]
                        rd |= stage(1, e.slot)
                    elif k in (READ, BULK_STORE):
                        rd |= stage(0, e.slot)
                    elif k == WRITE:
                        rd |= stage(2, e.slot)
                for s in role.open_at[p] ^ role.open_at[p + 1]:
                    wr |= stage(1, s)
                for s in role.stores_at[p] ^ role.stores_at[p + 1]:
                    wr |= stage(2, s)
                gate = role.gates[p]
                reads.append(rd)
                writes.append(wr)
                gates.append(0 if gate is None else
                             bar(gate.barrier) if gate.kind == WAIT else named(gate.barrier))
            n = len(role.blocks)
            next_wait, segment_reads, segment_writes = [n] * n, [0] * n, [0] * n
            upcoming, rd, wr = n, 0, 0
            for p in reversed(range(n)):
                next_wait[p], segment_reads[p], segment_writes[p] = upcoming, rd | reads[p], wr | writes[p]
                rd, wr = segment_reads[p], segment_writes[p]
                if role.gates[p] is not None and role.gates[p].kind == WAIT:
                    upcoming, rd, wr = p, 0, 0
            self._reads.append(reads)
            self._writes.append(writes)
            self._gate.append(gates)
            self._next_wait.append(next_wait)
            self._segment_reads.append(segment_reads)
            self._segment_writes.append(segment_writes)

    def _reach(self, r: int, state, others: int) -> tuple[int, int]:
        """What role r may still read and write (bit masks) on a path on
        which only steps outside a persistent-set candidate run, given that
        those write at most `others`: its blocks from its position up to
        the first gate it cannot pass on such a path, an mbarrier wait that
        is blocked now on a barrier not in `others` (then it stays blocked:
        only a write to the barrier changes its phase), or the named
        barrier it arrived at and waits on, if nobody of `others` arrives
        there.  A wait whose checks would fail (the barrier not initialized,
        or its phase already aliased) is not such a gate, so whether those
        checks fail is decided by steps in the result."""
        pos, bars, _, named, nwaits = state
        role = self.roles[r]
        p, n = pos[r], len(role.blocks)
        gate = role.gates[p] if p < n else None
        if (gate is not None and gate.kind == NAMED_SYNC and nwaits[r] >= 0
                and named[2 * self.named_index[gate.barrier]] <= nwaits[r]
                and not others & self._gate[r][p]):
            return 0, 0
        rd = wr = 0
        while p < n:
            gate = role.gates[p]
            if gate is not None and gate.kind == WAIT and not others & self._gate[r][p]:
                b4 = 4 * gate.barrier
                phase = bars[b4 + 2]
                if phase % 2 == gate.parity and bars[b4 + 3] and phase < role.intended[p] + 2:
                    break
            rd |= self._segment_reads[r][p]
            wr |= self._segment_writes[r][p]
            p = self._next_wait[r][p]
        return rd, wr

    def _persistent(self, state, moves: list[tuple[int, bool]],
                    queues: dict[int, list[int]]) -> set[int] | None:
        """The agents whose steps alone are explored from `state`: a
        persistent set (Godefroid), or None for all steps.  Agents: each
        role r (its next step), and for each barrier b with TMA loads in
        flight, the completion of the oldest (agent `len(roles) + b`;
        `queues`).

        A set T of enabled steps is persistent in a state s if no sequence
        of steps outside T that starts in s contains a step that depends on
        one in T.  Two steps of different agents are independent here when
        neither writes an object the other reads or writes (`_footprints`):
        then they commute to the same state (the TMA loads in flight are
        kept by barrier), neither enables or disables the other, and
        neither changes whether the other fails (every check a step makes
        reads only objects in its footprint).  T is built from a group G of
        agents, grown from one enabled agent to a fixpoint: T is the steps
        of G's enabled agents.  What the agents outside G may do without T
        is over-approximated: a role's steps up to the first gate that no
        write by them can open (`_reach`, to a fixpoint over their writes),
        a barrier's completions: all its loads in flight.  An agent outside
        G joins if that conflicts with T or writes the gate object of a
        blocked role in G (which could unblock it).  At the fixpoint, the
        steps outside T that can run are those of agents outside G (a
        blocked role of G stays blocked; an enabled agent of G moves only
        through its step in T; later completions on a barrier of G wait for
        its oldest), and they are independent of T.  The smallest T over
        the seeds is taken.

        Why nothing is lost (the traces are finite and every step makes
        progress, so the state graph is acyclic and the cycle proviso is
        moot): a violation is a failing step or a reachable state with a
        failing check (phase aliasing, wait before init: checks of a role's
        gate, part of its step's footprint; `_reach` stops only at gates
        whose checks pass and stay so) or without steps (deadlock).  Take a
        path w from s to one.  If w contains a step of T, the first such
        step is independent of the steps before it and moves to the front:
        the path starts with a step the search takes.  If not, every step
        of w and the failing one are independent of T: a deadlock is
        impossible (T's steps stay enabled), a failing step of G is its
        step in T, failing at s already (w changes nothing it reads), a
        failing check of a blocked role of G fails at s already (nothing
        on w writes its barrier), and any other failure still happens
        after any t in T first (t w).  Either way the search takes a step
        toward it, and the remaining work (steps left in all traces, loads
        in flight) decreases, so by induction it reaches the violation.
        The path can be longer than the shortest in the full graph when
        the violation is not reached through T (hence `shortest`)."""
        pos, inflight = state[0], state[2]
        n = len(self.roles)
        step_reads: dict[int, int] = {}
        step_writes: dict[int, int] = {}
        for r, _ in moves:
            step_reads[r], step_writes[r] = self._reads[r][pos[r]], self._writes[r][pos[r]]
        queue_writes: dict[int, int] = {}  # completions of barrier b: agent n + b
        for b, ks in queues.items():
            step_reads[n + b], step_writes[n + b] = 0, self._load[inflight[ks[0]]]
            queue_writes[n + b] = 0
            for k in ks:
                queue_writes[n + b] |= self._load[inflight[k]]
        live = [r for r, p in enumerate(pos) if p < len(self.roles[r].blocks)]
        best: set[int] | None = None
        for seed in step_reads:
            group = {seed}
            while True:
                t_reads = t_writes = gates = 0
                for a in group:
                    if a in step_reads:
                        t_reads |= step_reads[a]
                        t_writes |= step_writes[a]
                    else:  # a blocked role
                        gates |= self._gate[a][pos[a]]
                touched = t_reads | t_writes
                outside = [o for o in live if o not in group]
                completions = 0
                for c, wr in queue_writes.items():
                    if c not in group:
                        completions |= wr
                others, reach = completions, {}
                while True:  # what the roles outside may do, and write, to a fixpoint
                    reach = {o: self._reach(o, state, others) for o in outside}
                    grown = completions
                    for _, wr in reach.values():
                        grown |= wr
                    if grown == others:
                        break
                    others = grown
                joining = {o for o, (rd, wr) in reach.items() if wr & (touched | gates) or rd & t_writes}
                joining.update(c for c, wr in queue_writes.items()
                               if c not in group and wr & (touched | gates))
                if not joining:
                    break
                group |= joining
            chosen = group.intersection(step_reads)
            if best is None or len(chosen) < len(best):
                best = chosen
                if len(best) == 1:
                    break
        return None if best is None or len(best) == len(step_reads) else best

    def _arrive_named(self, state, r: int, gate: Event):
        pos, bars, inflight, named, nwaits = state
        i = self.named_index[gate.barrier]
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
                    infl.sort(key=self._load_barrier)  # stable: each barrier's in issue order
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

    def _load_barrier(self, entry: tuple[int, int, int]) -> int:
        r, p, i = entry
        return self.roles[r].blocks[p][i].barrier

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
