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
from tawa.transforms.protocol_model import (
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
    consecutive: bool = False
    """Whether its waits on each barrier mean consecutive phases (-1 or 0,
    then one more each time): then when it reaches a wait for phase k, the
    barrier has completed at least k phases (it passed its wait for k-1)."""


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
    consecutive = True
    for g in gates:
        k = 0
        if g is not None and g.kind == WAIT:
            last = seen.get(g.barrier, 0) - 1  # the latest phase this role knows complete
            k = last if (last - g.parity) % 2 == 0 else last + 1
            consecutive = consecutive and (k == last + 1 or k == -1 and g.barrier not in seen)
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
    return _Role([tuple(b) for b in blocks], gates, intended, open_at, open_in, stores_at, stores_in, stores_left,
                 consecutive)


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
                 reduce: bool = True, shortest: bool = True, layout: Layout | None = None,
                 fine: bool | None = None):
        self.roles = [_cut(t) for t in traces]
        self.nb = n_barriers
        self.role_cta = tuple(layout.role_cta) if layout else (0,) * len(self.roles)
        self.barrier_cta = tuple(layout.barrier_cta) if layout else (0,) * n_barriers
        self.ctas = 1 + max(self.role_cta, default=0)
        self.cta_roles = tuple(tuple(r for r, c in enumerate(self.role_cta) if c == cta)
                               for cta in range(self.ctas))
        self.transient_tx = self.ctas > 1
        """Whether a load may complete bytes before its phase's expect_tx (a
        peer's multicast can): the count may go negative while arrivals are
        missing (module docstring)."""
        self._stage_overlaps(traces, layout.slot_range if layout else ())
        self._fine = self.ctas > 1 if fine is None else fine
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
        init = ((0,) * n, (0,) * (4 * self.nb), (), (0,) * (2 * len(self.named_index)), (-1,) * n)
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
        for k, entry in enumerate(inflight):
            queues.setdefault(self._queue_key(entry), []).append(k)
        chosen = self._persistent(state, moves, queues, hint) if reduce and len(moves) + len(queues) > 1 else None
        for r, arrive in moves:
            if chosen is None or r in chosen:
                yield self._arrive_named(state, r, self.roles[r].gates[pos[r]]) if arrive \
                    else self._run_block(state, r)
        for q, ks in queues.items():  # completions of one queue are explored in issue order
            if chosen is None or len(pos) + q in chosen:
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
        change can unblock the gate of block p (with fine footprints,
        `_gate_arrivals[r][p]`: "may arrive on b" for a wait on b, which
        the segments of a role that arrives on b write: a phase that misses
        arrivals completes only if someone may still arrive); `_load[(r, p, i)]`: what
        the completion of that TMA load writes (its barrier and "load s").

        In a cluster, the stages' objects are per piece of memory
        (`_atoms`: aliasing stages share pieces), and each CTA that
        another CTA's events reach has an object "exit c": the last block
        of each of its roles writes it (the CTA may exit after it), an
        event on its barriers by a role of another CTA, and the completion
        of such a load, read it.  Those writes commute with each other
        (`_commuting`: which role finishes first does not matter).

        Finer footprints (`fine`, the default in a cluster, where the
        coarse ones make nearly every step of the six or more warp groups
        depend on every other):
        * "open s" and "store s" are objects of each role (only the role
          writes its own; a TMA issue's or a staging write's check reads
          every role's);
        * a barrier b is three objects: its counts and phase ("b"), whether
          it is initialized ("init b": init writes it, every check of it
          reads it) and, if all arrivals on b count the same threads,
          "arrive b", which those arrivals write instead of "b".  Their
          writes commute (from any state two such arrivals reach the same
          counts and phase in either order, and whichever comes second
          fails if one does: too many arrivals, or the last arrival of a
          phase with surplus bytes); everything else on b (waits, gates,
          expect_tx, load completions) reads "arrive b" too;
        * the loads in flight complete per barrier *and issuing role*, each
          such queue in issue order (`_load_order`; agents `_queue_key`), so
          a TMA issue (which appends to its own queue and checks only "init
          b" and the stage) commutes with the completion of a load on the
          same barrier (which pops from the front of a queue): the issue
          writes only "load s"; the completion writes "b" and "load s" and
          reads "arrive b".  What a role may still do (`_segment_*`)
          includes the completions of the loads it will issue;
        * a warp group's arrival at a named barrier is a step of its own
          that writes the barrier, while the block it runs once the barrier
          opens does not (nobody's step closes it again); the arrivals at a
          named barrier that each user syncs on once per generation commute
          (`_symmetric_named`)."""
        nb, nn, nr = self.nb, len(self.named_index), len(self.roles)
        fine = self._fine
        pieces = 1 + max((a for atoms in self._atoms for a in atoms), default=-1)
        atoms = self._atoms
        per_role = nr if fine else 1
        counts: dict[int, set[int]] = {}
        for role in self.roles:
            for block in role.blocks:
                for e in block:
                    if e.kind == ARRIVE:
                        counts.setdefault(e.barrier, set()).add(e.count)
        commuting_arrivals = {b for b, c in counts.items() if fine and len(c) == 1}
        load_base = nb + nn
        open_base = load_base + pieces
        store_base = open_base + pieces * per_role
        arrive_base = store_base + pieces * per_role
        init_base = arrive_base + nb
        exit_base = init_base + nb

        def bar(b: int) -> int:
            return 1 << b

        def arrivals(b: int) -> int:  # what reads the barrier b reads: its "arrive b" too
            return 1 << (arrive_base + b) if b in commuting_arrivals else 0

        def init(b: int) -> int:  # whether b is initialized: part of "b" unless fine
            return 1 << (init_base + b) if fine else bar(b)

        def named(n: int) -> int:
            return 1 << (nb + self.named_index[n])

        def stage(base: int, s: int, role: int = 0) -> int:
            mask = 0
            for a in atoms[s]:
                mask |= 1 << (base + role * pieces + a)
            return mask

        def every_role(base: int, s: int) -> int:
            mask = 0
            for q in range(per_role):
                mask |= stage(base, s, q)
            return mask

        def exit_(cta: int) -> int:
            return 1 << (exit_base + cta)

        def loading(b: int) -> int:  # "may load on b": only in what a role may still do (fine)
            return 1 << (exit_base + self.ctas + b)

        role_cta, barrier_cta = self.role_cta, self.barrier_cta
        targets = {barrier_cta[e.barrier] for r, role in enumerate(self.roles) for b in role.blocks for e in b
                   if e.kind in (INIT, ARRIVE, EXPECT_TX, TMA) and barrier_cta[e.barrier] != role_cta[r]}
        self._commuting = 0
        for cta in targets:
            self._commuting |= exit_(cta)
        for b in commuting_arrivals:
            self._commuting |= arrivals(b)
        self._symmetric = self._symmetric_named() if fine else {}
        self._gate_named = {n: named(n) for n in self.named_index}
        for n in self._symmetric:
            self._commuting |= named(n)
        self._reads, self._writes, self._gate, self._arrival = [], [], [], []
        self._gate_loads, self._segment_arrivals = [], []
        self._senses: list[list[tuple[int, int, int]]] = []
        """Per role and position, what of `_reach`'s `others`, `short` and
        `arrivals` its result can depend on (the gates from there on)."""
        self._segment_reads, self._segment_writes, self._next_wait = [], [], []
        self._load: dict[tuple[int, int, int], int] = {}
        self._load_reads: dict[tuple[int, int, int], int] = {}
        """What the completion of a TMA load reads: "exit c" for a load into
        another CTA, "arrive b" (fine footprints)."""
        for r, role in enumerate(self.roles):
            reads, writes, gates, arrival, later, gate_loads, counts_ = [], [], [], [], [], [], []
            own = r if fine else 0
            for p, block in enumerate(role.blocks):
                rd = wr = 0
                arrive_wr = 0
                later_rd = later_wr = 0  # the completions of the loads the block issues (fine)
                arrives = 0  # the threads it arrives with, per barrier (`_ARRIVALS` fields; fine)
                for i, e in enumerate(block):
                    k = e.kind
                    if k in (INIT, ARRIVE, EXPECT_TX, TMA) and barrier_cta[e.barrier] != role_cta[r]:
                        rd |= exit_(barrier_cta[e.barrier])
                        if k == TMA:
                            self._load_reads[(r, p, i)] = exit_(barrier_cta[e.barrier])
                    if k == WAIT:
                        rd |= bar(e.barrier) | arrivals(e.barrier) | init(e.barrier)
                    elif k in (NAMED_SYNC, NAMED_ARRIVE):
                        if fine and i == 0 and k == NAMED_SYNC:
                            arrive_wr = named(e.barrier)  # the arrival step's, not the block's
                        else:
                            wr |= named(e.barrier)
                    elif k == ARRIVE and e.barrier in commuting_arrivals:
                        wr |= arrivals(e.barrier)
                        rd |= init(e.barrier)
                    elif k == INIT:
                        wr |= bar(e.barrier) | init(e.barrier)
                        rd |= arrivals(e.barrier)
                    elif k in (ARRIVE, EXPECT_TX):
                        wr |= bar(e.barrier)
                        rd |= arrivals(e.barrier) | init(e.barrier)
                    if fine and k in (ARRIVE, EXPECT_TX):
                        arrives += e.count << (_ARRIVALS * e.barrier)
                    elif k == TMA:
                        self._load[(r, p, i)] = bar(e.barrier) | stage(load_base, e.slot)
                        if arrivals(e.barrier):
                            self._load_reads[(r, p, i)] = self._load_reads.get((r, p, i), 0) | arrivals(e.barrier)
                        if fine:
                            wr |= stage(load_base, e.slot)
                            rd |= init(e.barrier)
                            later_wr |= self._load[(r, p, i)] | loading(e.barrier)
                            later_rd |= self._load_reads.get((r, p, i), 0)
                        else:
                            wr |= self._load[(r, p, i)]
                        rd |= every_role(open_base, e.slot)
                    elif k in (READ, BULK_STORE):
                        rd |= stage(load_base, e.slot)
                    elif k == WRITE:
                        rd |= every_role(store_base, e.slot)
                for s in role.open_at[p] ^ role.open_at[p + 1]:
                    wr |= stage(open_base, s, own)
                for s in role.stores_at[p] ^ role.stores_at[p + 1]:
                    wr |= stage(store_base, s, own)
                if p == len(role.blocks) - 1 and role_cta[r] in targets:
                    wr |= exit_(role_cta[r])
                gate = role.gates[p]
                reads.append(rd)
                writes.append(wr)
                arrival.append((0, arrive_wr) if arrive_wr else (rd, wr))
                later.append((later_rd, later_wr | arrive_wr))
                gates.append(0 if gate is None else
                             bar(gate.barrier) | arrivals(gate.barrier) | init(gate.barrier) if gate.kind == WAIT
                             else named(gate.barrier))
                gate_loads.append(loading(gate.barrier) if fine and gate is not None and gate.kind == WAIT else 0)
                counts_.append(arrives)
            n = len(role.blocks)
            next_wait, segment_reads, segment_writes = [n] * n, [0] * n, [0] * n
            segment_arrivals = [0] * n
            upcoming, rd, wr, ac = n, 0, 0, 0
            for p in reversed(range(n)):
                next_wait[p] = upcoming
                segment_reads[p] = rd | reads[p] | later[p][0]
                segment_writes[p] = wr | writes[p] | later[p][1]
                segment_arrivals[p] = ac + counts_[p]
                rd, wr, ac = segment_reads[p], segment_writes[p], segment_arrivals[p]
                if role.gates[p] is not None and (role.gates[p].kind == WAIT
                                                  or role.gates[p].barrier in self._symmetric):
                    upcoming, rd, wr, ac = p, 0, 0, 0
            self._reads.append(reads)
            self._writes.append(writes)
            self._arrival.append(arrival)
            self._gate.append(gates)
            self._gate_loads.append(gate_loads)
            senses, o_mask, b_mask, f_mask = [(0, 0, 0)] * (n + 1), 0, 0, 0
            for p in reversed(range(n)):
                o_mask |= gates[p] | gate_loads[p]
                gate = role.gates[p]
                if gate is not None and gate.kind == WAIT:
                    b_mask |= 1 << gate.barrier
                    f_mask |= _FIELD << (_ARRIVALS * gate.barrier)
                senses[p] = (o_mask, b_mask, f_mask)
            self._senses.append(senses)
            self._segment_arrivals.append(segment_arrivals)
            self._next_wait.append(next_wait)
            self._segment_reads.append(segment_reads)
            self._segment_writes.append(segment_writes)

    def _symmetric_named(self) -> dict[int, tuple[int, ...]]:
        """The named barriers whose arrivals commute: used only through
        syncs (no bare arrive), each role with one thread count, and the
        barrier's count the sum of them over the roles that use it.  Each
        role then arrives once per generation (it waits for the generation
        before it can arrive again), and only the arrival of the last user
        completes it, so two roles' pending arrivals land in the same
        generation in either order and neither can over-arrive; and a
        generation completes only once every user has arrived (`_reach`).
        By barrier, its users."""
        threads: dict[int, dict[int, set[int]]] = {}
        counts: dict[int, set[int]] = {}
        bare: set[int] = set()
        for r, role in enumerate(self.roles):
            for block in role.blocks:
                for e in block:
                    if e.kind == NAMED_ARRIVE:
                        bare.add(e.barrier)
                    elif e.kind == NAMED_SYNC:
                        threads.setdefault(e.barrier, {}).setdefault(r, set()).add(e.threads)
                        counts.setdefault(e.barrier, set()).add(e.count)
        return {n: tuple(per_role) for n, per_role in threads.items()
                if n not in bare and all(len(t) == 1 for t in per_role.values()) and len(counts[n]) == 1
                and sum(min(t) for t in per_role.values()) == min(counts[n])}

    def _reach(self, r: int, state, others: int, opening: frozenset[int] = frozenset(),
               short: int = 0, arrivals: int = 0) -> tuple[int, int, int]:
        """What role r may still read and write (bit masks) on a path on
        which only steps outside a persistent-set candidate run, given that
        those write at most `others`: its blocks from its position up to
        the first gate it cannot pass on such a path, an mbarrier wait that
        is blocked now on a barrier not in `others` (then it stays blocked:
        only a write to the barrier changes its phase) or, with fine
        footprints, whose phase misses more arrivals than `others` may
        still make on it (`arrivals`: threads per barrier, `_ARRIVALS`
        fields; completions alone do not complete it), or misses more
        bytes than the loads in flight outside the candidate carry
        (`short`, a bit per barrier) while nobody of `others` may arrive
        or load on it, or the named
        barrier it arrived at and waits on, if nobody of `others` arrives
        there (for a barrier of `_symmetric`: if its generation is not in
        `opening`, those whose every user can still arrive on such a path).
        A wait whose checks would fail (the barrier not initialized, or its
        phase already aliased) is not such a gate, so whether those checks
        fail is decided by steps in the result.  And the threads it may
        arrive with on each barrier (`_ARRIVALS` fields; fine footprints)."""
        pos, bars, _, named, nwaits = state
        role = self.roles[r]
        p, n = pos[r], len(role.blocks)
        gate = role.gates[p] if p < n else None
        if (gate is not None and gate.kind == NAMED_SYNC and nwaits[r] >= 0
                and named[2 * self.named_index[gate.barrier]] <= nwaits[r]
                and (gate.barrier not in opening if gate.barrier in self._symmetric
                     else not others & self._gate[r][p])):
            return 0, 0, 0
        rd = wr = ac = 0
        symmetric = self._symmetric
        counting = self._fine and role.consecutive
        while p < n:
            gate = role.gates[p]
            if gate is not None and gate.kind == WAIT and counting:
                b4, b = 4 * gate.barrier, gate.barrier
                phase, k = bars[b4 + 2], role.intended[p]
                if bars[b4 + 3] and phase <= k and (
                        not others & self._gate[r][p]
                        or bars[b4] + (k - phase) * bars[b4 + 3] > (arrivals >> _ARRIVALS * b) & _FIELD
                        or k == phase and not bars[b4] and short >> b & 1 and not others & self._gate_loads[r][p]):
                    break
            elif gate is not None and gate.kind == WAIT:
                b4 = 4 * gate.barrier
                phase = bars[b4 + 2]
                if (phase % 2 == gate.parity and bars[b4 + 3] and phase < role.intended[p] + 2
                        and (not others & self._gate[r][p]
                             or self._fine and (bars[b4] > (arrivals >> _ARRIVALS * gate.barrier) & _FIELD
                                                or short >> gate.barrier & 1
                                                and not others & self._gate_loads[r][p]
                                                and not (arrivals >> _ARRIVALS * gate.barrier) & _FIELD))):
                    break
            elif gate is not None and gate.barrier in symmetric and gate.barrier not in opening:
                # a sync the role has yet to pass, whose generation cannot complete on such a path
                if p != pos[r] or nwaits[r] < 0:
                    wr |= self._gate[r][p]  # it arrives
                    break
                if named[2 * self.named_index[gate.barrier]] <= nwaits[r]:
                    break  # arrived, and the generation has not completed
            rd |= self._segment_reads[r][p]
            wr |= self._segment_writes[r][p]
            ac += self._segment_arrivals[r][p]
            p = self._next_wait[r][p]
        return rd, wr, ac

    def _persistent(self, state, moves: list[tuple[int, bool]],
                    queues: dict[int, list[int]], hint: int = -1) -> set[int] | None:
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
        for r, arrive in moves:
            step_reads[r], step_writes[r] = (self._arrival[r][pos[r]] if arrive else
                                             (self._reads[r][pos[r]], self._writes[r][pos[r]]))
        queue_writes: dict[int, int] = {}  # completions of queue b (`_queue_key`): agent n + b
        queue_reads: dict[int, int] = {}
        load_reads = self._load_reads
        for b, ks in queues.items():
            step_reads[n + b], step_writes[n + b] = load_reads.get(inflight[ks[0]], 0), self._load[inflight[ks[0]]]
            queue_writes[n + b] = queue_reads[n + b] = 0
            for k in ks:
                queue_writes[n + b] |= self._load[inflight[k]]
                if load_reads:
                    queue_reads[n + b] |= load_reads.get(inflight[k], 0)
        live = [r for r, p in enumerate(pos) if p < len(self.roles[r].blocks)]
        reaches: dict[tuple[int, int, frozenset[int], int, int], tuple[int, int, int]] = {}  # memoized
        senses = self._senses
        waiting = self._waiting(state) if self._symmetric else None
        # Fine footprints: the bytes each completion queue carries, per barrier; a barrier is
        # *settled* when its phase has all arrivals and its loads in flight carry at most the
        # bytes it misses (then no order of their completions completes it early: they commute).
        queue_bar: dict[int, int] = {}
        queue_bytes: dict[int, int] = {}
        in_flight: dict[int, int] = {}
        settled = short_base = 0
        bars = state[1]
        if self._fine:
            for q, ks in queues.items():
                b = self._load_barrier(inflight[ks[0]])
                carried = sum(self._load_event(inflight[k]).tx for k in ks)
                queue_bar[n + q], queue_bytes[n + q] = b, carried
                in_flight[b] = in_flight.get(b, 0) + carried
            for b, carried in in_flight.items():
                if bars[4 * b] == 0 and 0 < carried <= bars[4 * b + 1]:
                    settled |= 1 << b
            for b in range(self.nb):  # phases with all arrivals that their loads in flight cannot complete
                if bars[4 * b] == 0 and bars[4 * b + 1] > in_flight.get(b, 0):
                    short_base |= 1 << b

        def joining_of(group: set[int], any_: bool = False) -> set[int]:
            """The agents outside `group` that must join it (see above);
            `any_`: only whether there are any (a non-empty subset, found
            as soon as the fixpoint's reach so far conflicts: it only
            grows)."""
            t_reads = t_writes = t_completes = gates = 0
            for a in group:
                if a in step_reads:
                    t_reads |= step_reads[a]
                    if a < n:
                        t_writes |= step_writes[a]
                    else:
                        t_completes |= step_writes[a]
                else:  # a blocked role
                    gates |= self._gate[a][pos[a]]
            conflicts = t_reads | ((t_writes | t_completes) & ~self._commuting) | gates
            queue_conflicts = t_reads | (t_writes & ~self._commuting) | (t_completes & ~self._commuting & ~settled) | gates
            t_writes |= t_completes
            short = short_base
            if queue_bar:
                held: dict[int, int] = {}  # bytes in flight on a barrier that the group's queues carry
                for a in group:
                    if a in queue_bar:
                        held[queue_bar[a]] = held.get(queue_bar[a], 0) + queue_bytes[a]
                for b, carried in held.items():
                    if bars[4 * b] == 0 and bars[4 * b + 1] > in_flight[b] - carried:
                        short |= 1 << b
            outside = [o for o in live if o not in group]
            completions = 0
            for c, wr in queue_writes.items():
                if c not in group:
                    completions |= wr
                    if any_ and (wr & queue_conflicts or queue_reads[c] & t_writes):
                        return {c}
            others, reach, opening, arrivals = completions, {}, frozenset(), 0
            while True:  # what the roles outside may do, and write, to a fixpoint
                reach = {}
                for o in outside:
                    o_mask, b_mask, f_mask = senses[o][pos[o]]
                    key = (o, others & o_mask, opening, short & b_mask, arrivals & f_mask)
                    if (got := reaches.get(key)) is None:
                        got = reaches[key] = self._reach(o, state, others, opening, short, arrivals)
                    reach[o] = got
                if any_:
                    for o, (rd, wr, _) in reach.items():
                        if wr & conflicts or rd & t_writes:
                            return {o}
                grown, counted = completions, 0
                for _, wr, ac in reach.values():
                    grown |= wr
                    counted += ac
                opened = self._opening(waiting, reach) if waiting else opening
                if grown == others and opened == opening and counted == arrivals:
                    break
                others, opening, arrivals = grown, opened, counted
            joining = {o for o, (rd, wr, _) in reach.items() if wr & conflicts or rd & t_writes}
            joining.update(c for c, wr in queue_writes.items()
                           if c not in group and (wr & queue_conflicts or queue_reads[c] & t_writes))
            return joining

        if self._fine:  # first any agent that is a persistent set on its own (the usual case)
            seeds = list(step_reads)
            if hint in step_reads:
                seeds.remove(hint)
                seeds.insert(0, hint)
            for seed in seeds:
                if not joining_of({seed}, True):
                    return {seed}
        best: set[int] | None = None
        for seed in step_reads:
            group = {seed}
            while joining := joining_of(group):
                group |= joining
            chosen = group.intersection(step_reads)
            if best is None or len(chosen) < len(best):
                best = chosen
                if len(best) == 1:
                    break
        return None if best is None or len(best) == len(step_reads) else best

    def _opening(self, waiting: dict[int, tuple[int, ...] | None],
                 reach: dict[int, tuple[int, int, int]]) -> frozenset[int]:
        """The barriers of `_symmetric` whose generation may complete on a
        path of steps by the roles of `reach` only (what they may do): every
        user has arrived already or may arrive (its reach writes the
        barrier; a user that has finished, or is not in `reach`, does not
        arrive).  Users wait for the generation they arrived in, so a
        user's next arrival is in the current generation."""
        gate_named = self._gate_named
        out = []
        for n, users in waiting.items():
            if users is None:
                continue
            bit = gate_named[n]
            for u in users:
                got = reach.get(u)
                if got is None or not got[1] & bit:
                    break
            else:
                out.append(n)
        return frozenset(out)

    def _waiting(self, state) -> dict[int, tuple[int, ...] | None]:
        """Per barrier of `_symmetric`, the users that have yet to arrive in
        its current generation (None if one of them has finished: the
        generation never completes)."""
        pos, nwaits = state[0], state[4]
        out: dict[int, tuple[int, ...] | None] = {}
        for n, users in self._symmetric.items():
            left: list[int] | None = []
            for u in users:
                p = pos[u]
                role = self.roles[u]
                if p >= len(role.blocks):
                    left = None
                    break
                gate = role.gates[p]
                if not (gate is not None and gate.kind == NAMED_SYNC and gate.barrier == n and nwaits[u] >= 0):
                    left.append(u)
            out[n] = None if left is None else tuple(left)
        return out

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
                                   f"{self.role_name(r)} reads {self.slot(e.slot)} while a TMA load "
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
        r, p, i = entry
        b = self.roles[r].blocks[p][i].barrier
        return b * len(self.roles) + r if self._fine else b

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
                           f"TMA load into {self.slot(e.slot)} while an earlier load into it "
                           f"({_where(other.op)}) may still be in flight", i)
        for r2, role in enumerate(self.roles):
            open_ = role.open_in[p][i] if r2 == r else role.open_at[state[0][r2]]
            if self._hits(e.slot, open_):
                self._fail(step, "slot overwritten before it was released", e.op,
                           f"TMA load into {self.slot(e.slot)} while {self.role_name(r2)} may still "
                           f"read it (its wgmma reading it has not been waited for)", i)

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


_ARRIVALS = 32
"""Bits per barrier of a count of arrivals packed in an int (`_reach`)."""
_FIELD = (1 << _ARRIVALS) - 1


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
