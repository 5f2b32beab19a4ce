"""The persistent-set reduction of `tawa-verify-protocol`'s search
(`protocol_search.Explorer`, which inherits it): in a state where the next
steps of some group of warp groups touch nothing that any other warp group
(or TMA completion) can still touch, only that group's steps are expanded.

`PersistentSets._footprints` computes, once per search, what each step
reads and writes as bit masks over the shared objects (barrier slots, named
barriers, stages, and in a cluster the CTAs' exits); `_persistent` picks
the group to expand in a state from those footprints and from what each
other warp group may still do (`_reach`).  Why that keeps every deadlock
and every violation reachable: `_persistent`'s docstring and
docs/protocol.md section 2; the fine footprints that every search uses
(the coarse ones remain for the tests, `Explorer(fine=False)`):
`_footprints` and docs/protocol.md section 5.

Arrivals at a named barrier that some warp group only arrives at (a bare
`named_barrier_arrive`, as the consumers of the lowered attention take
turns: each syncs on its own barrier and arrives at the next one's) do not
commute in general: an arrival that completes a generation decides where
the next one lands, and a second arrival of one warp group in a generation
over-arrives in one order and not in the other.  They do commute in a
state where the threads arrived so far, plus those of every arrival that
may come first, stay within the barrier's count: then no order completes
the generation before the last of them and none over-arrives
(`_settled_named`).  `_persistent` counts, with what each other warp group
may still do, the threads it may still arrive with at each such barrier
(every arrival, its own repeated ones too), and a warp group's sync at
such a barrier stops what it may do when those cannot complete the
current generation (`_unfilled`).  With that, every state of the searches
of the examples' default compiles has a persistent set of one step: the
reduced state graph is one path per problem size.

No symmetry reduction: the consumer warp groups of the lowered kernels are
not interchangeable (one thread of the CTA issues the TMA stores, the
turns' barriers differ, each consumer has its own rows and staging), and
the persistent sets already leave one interleaving where they would be.

The mixin reads the search's fields (`roles`, `nb`, `named_index`,
`role_cta`, `barrier_cta`, `ctas`, `cta_roles`, `_atoms`, `_fine`, ...) and
its step helpers (`_load_event`, `_queue_key`, `_exited`, ...); it holds
no state of its own beyond the footprints it computes.
"""

from __future__ import annotations

from tawa.verify.protocol_model import (
    ARRIVE,
    BULK_STORE,
    EXPECT_TX,
    INIT,
    NAMED_ARRIVE,
    NAMED_SYNC,
    READ,
    TMA,
    WAIT,
    WRITE,
)

_ARRIVALS = 32
"""Bits per barrier of a count of arrivals packed in an int (`_reach`)."""
_FIELD = (1 << _ARRIVALS) - 1
_PLAIN, _WAIT, _SYMMETRIC, _COUNTED = range(4)
"""The gates `_reach` tells apart (`PersistentSets._walk`): none or another
named sync, an mbarrier wait, a sync of `_symmetric`, of `_counted`."""


class PersistentSets:
    """The footprints of a search's steps and the choice of a persistent
    set per state (module docstring)."""

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

        Finer footprints (`fine`, the default; first made for clusters,
        where the coarse ones make nearly every step of the six or more
        warp groups depend on every other; every refinement below holds in
        one CTA as well):
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
          (`_symmetric_named`), and those at another named barrier whose
          arrivals all count the same threads commute in a state where
          they cannot complete its generation early (`_named_limits_of`,
          `_settled_named`)."""
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
        self._segment_reads, self._segment_writes, self._next_wait = [], [], []
        self._suffix_reads: list[list[int]] = []
        """Per role and position, the union of what its blocks from there on
        read (with the completions of the loads they issue)..."""
        self._suffix_writes: list[list[int]] = []
        """...and write (with their arrivals at named syncs): `_reach` never
        gives more, whatever the state."""
        self._load: dict[tuple[int, int, int], int] = {}
        self._load_bytes: dict[tuple[int, int, int], tuple[int, int]] = {}
        """The barrier and the bytes of each TMA load."""
        self._queue_of: dict[tuple[int, int, int], int] = {}
        """The completion queue of each TMA load (`_queue_key`)."""
        self._load_reads: dict[tuple[int, int, int], int] = {}
        """What the completion of a TMA load reads: "exit c" for a load into
        another CTA, "arrive b" (fine footprints)."""
        self._named_limits = self._named_limits_of() if fine else ()
        counted = self._counted = {n: (i, count) for n, i in self.named_index.items()
                                   for j, _, count in self._named_limits if i == j}
        self._step_named: list[list[int]] = []
        """Per role and block, the threads its step arrives with at each named
        barrier (`_ARRIVALS` fields by `named_index`; fine footprints: the
        named arrivals in the block, not its gate's)."""
        self._arrival_named: list[list[int]] = []
        """...and those of the arrival step at its gate (a named sync)."""
        self._segment_named: list[list[int]] = []
        self._block_arrivals: list[list[int]] = []
        self._walk: list[list[tuple[int, ...]]] = []
        """Per role and block, what `_reach` reads of it, in one tuple: its
        gate (`_WAIT`, `_SYMMETRIC`, `_COUNTED` or `_PLAIN`; barrier,
        parity, intended phase, `_gate`, `_gate_loads`), the segment from
        it (`_segment_*`, `_next_wait`), its gate's arrival
        (`_arrival_named`) and, for `_COUNTED`, the barrier's named index
        and count."""
        """Per role and block, the threads it arrives with on each mbarrier
        (`_ARRIVALS` fields; fine footprints)."""
        for r, role in enumerate(self.roles):
            reads, writes, gates, arrival, later, gate_loads, counts_ = [], [], [], [], [], [], []
            step_named, arrival_named = [], []
            own = r if fine else 0
            for p, block in enumerate(role.blocks):
                rd = wr = 0
                arrive_wr = 0
                named_threads = gate_threads = 0
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
                        field_ = e.threads << (_ARRIVALS * self.named_index[e.barrier])
                        if fine and i == 0 and k == NAMED_SYNC:
                            arrive_wr = named(e.barrier)  # the arrival step's, not the block's
                            gate_threads += field_
                        else:
                            wr |= named(e.barrier)
                            named_threads += field_
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
                        self._load_bytes[(r, p, i)] = (e.barrier, e.tx)
                        self._queue_of[(r, p, i)] = e.barrier * nr + r if fine else e.barrier
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
                step_named.append(named_threads)
                arrival_named.append(gate_threads)
            n = len(role.blocks)
            next_wait, segment_reads, segment_writes = [n] * n, [0] * n, [0] * n
            segment_arrivals, segment_named = [0] * n, [0] * n
            upcoming, rd, wr, ac, nac = n, 0, 0, 0, 0
            for p in reversed(range(n)):
                next_wait[p] = upcoming
                segment_reads[p] = rd | reads[p] | later[p][0]
                segment_writes[p] = wr | writes[p] | later[p][1]
                segment_arrivals[p] = ac + counts_[p]
                segment_named[p] = nac + step_named[p] + arrival_named[p]
                rd, wr, ac, nac = segment_reads[p], segment_writes[p], segment_arrivals[p], segment_named[p]
                if role.gates[p] is not None and (role.gates[p].kind == WAIT
                                                  or role.gates[p].barrier in self._symmetric
                                                  or role.gates[p].barrier in counted):
                    upcoming, rd, wr, ac, nac = p, 0, 0, 0, 0
            self._reads.append(reads)
            self._writes.append(writes)
            self._arrival.append(arrival)
            self._gate.append(gates)
            self._gate_loads.append(gate_loads)
            self._segment_arrivals.append(segment_arrivals)
            self._block_arrivals.append(counts_)
            self._step_named.append(step_named)
            self._arrival_named.append(arrival_named)
            self._segment_named.append(segment_named)
            self._next_wait.append(next_wait)
            self._segment_reads.append(segment_reads)
            self._segment_writes.append(segment_writes)
            # Everything the role may still do, whatever gates it passes: a bound on `_reach`
            # (its segments, the arrival at each named sync it waits at) for `_persistent`'s test.
            suffix_reads, suffix_writes = [0] * (n + 1), [0] * (n + 1)
            for p in reversed(range(n)):
                gate = role.gates[p]
                suffix_reads[p] = suffix_reads[p + 1] | reads[p] | later[p][0]
                suffix_writes[p] = (suffix_writes[p + 1] | writes[p] | later[p][1]
                                    | (gates[p] if gate is not None and gate.kind == NAMED_SYNC else 0))
            self._suffix_reads.append(suffix_reads)
            self._suffix_writes.append(suffix_writes)
            walk = []
            for p, gate in enumerate(role.gates):
                kind, barrier, parity, limit = _PLAIN, -1, 0, (0, 0)
                if gate is not None and gate.kind == WAIT:
                    kind, barrier, parity = _WAIT, gate.barrier, gate.parity
                elif gate is not None and gate.barrier in self._symmetric:
                    kind, barrier = _SYMMETRIC, gate.barrier
                elif gate is not None and gate.barrier in counted:
                    kind, barrier, limit = _COUNTED, gate.barrier, counted[gate.barrier]
                walk.append((kind, barrier, parity, role.intended[p], gates[p], gate_loads[p], segment_reads[p],
                             segment_writes[p], segment_arrivals[p], segment_named[p], next_wait[p],
                             arrival_named[p], *limit))
            self._walk.append(walk)

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

    def _named_limits_of(self) -> tuple[tuple[int, int, int], ...]:
        """The named barriers outside `_symmetric` whose arrivals all count
        the same threads (`count`): (index in `named_index`, its footprint
        bit, count).  Two arrivals at such a barrier commute in a state
        where the threads already arrived, plus theirs, plus those of every
        other arrival there that may come first, stay within the count
        (`_persistent`'s *settled* named barriers)."""
        counts: dict[int, set[int]] = {}
        for role in self.roles:
            for block in role.blocks:
                for e in block:
                    if e.kind in (NAMED_SYNC, NAMED_ARRIVE):
                        counts.setdefault(e.barrier, set()).add(e.count)
        nb = self.nb
        return tuple((self.named_index[n], 1 << (nb + self.named_index[n]), min(c))
                     for n, c in sorted(counts.items()) if n not in self._symmetric and len(c) == 1)

    def _reach(self, r: int, state, others: int, opening: frozenset[int] = frozenset(),
               short: int = 0, arrivals: int = 0, named_arrivals: int = 0,
               resume: tuple[int, ...] = ()) -> tuple[int, int, int, int]:
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
        arrive with on each barrier (`_ARRIVALS` fields; fine footprints),
        and at each named barrier (`_ARRIVALS` fields by `named_index`;
        every arrival counted, its own repeated ones too).

        Every gate it stops at stops it for fewer inputs only (each input
        can only open a gate: more writes, arrivals, opened generations),
        so with inputs that contain those of an earlier call, the walk goes
        on from where that one stopped: `resume`, `_stopped` after that
        call (the gate's position and what the walk had gathered before
        it); `_stopped` is () where the walk stopped before its first block
        (a later call starts again) and None where it ran to the end of the
        trace (a later call gives the same)."""
        pos, bars, _, named, nwaits = state
        role = self.roles[r]
        n = len(role.blocks)
        gate = role.gates[pos[r]] if pos[r] < n else None
        # the arrival at its gate when it has made it already (in the first segment's count)
        arrived = (self._arrival_named[r][pos[r]] if gate is not None and gate.kind == NAMED_SYNC and nwaits[r] >= 0
                   else 0)
        self._stopped = None
        if resume:
            p, rd, wr, ac, nac = resume
        else:
            p = pos[r]
            if (gate is not None and gate.kind == NAMED_SYNC and nwaits[r] >= 0
                    and named[2 * self.named_index[gate.barrier]] <= nwaits[r]
                    and (gate.barrier not in opening if gate.barrier in self._symmetric
                         else not others & self._gate[r][p]
                         or gate.barrier in self._counted and self._unfilled(gate.barrier, named, named_arrivals))):
                self._stopped = ()
                return 0, 0, 0, 0
            rd = wr = ac = nac = 0
        counting = self._fine and role.consecutive
        fine = self._fine
        walk = self._walk[r]
        first, arrived_first = pos[r], nwaits[r] >= 0
        while p < n:
            (kind, b, parity, k, gate_mask, gate_loads, seg_rd, seg_wr, seg_ac, seg_nac, nxt, arrival,
             named_i, named_count) = walk[p]
            if kind == _WAIT:
                b4 = 4 * b
                phase = bars[b4 + 2]
                if counting:
                    if bars[b4 + 3] and phase <= k and (
                            not others & gate_mask
                            or bars[b4] + (k - phase) * bars[b4 + 3] > (arrivals >> _ARRIVALS * b) & _FIELD
                            or k == phase and not bars[b4] and short >> b & 1 and not others & gate_loads):
                        self._stopped = (p, rd, wr, ac, nac)
                        break
                elif (phase % 2 == parity and bars[b4 + 3] and phase < k + 2
                      and (not others & gate_mask
                           or fine and (bars[b4] > (arrivals >> _ARRIVALS * b) & _FIELD
                                        or short >> b & 1
                                        and not others & gate_loads
                                        and not (arrivals >> _ARRIVALS * b) & _FIELD))):
                    self._stopped = (p, rd, wr, ac, nac)
                    break
            elif kind == _SYMMETRIC and b not in opening:
                # a sync the role has yet to pass, whose generation cannot complete on such a path
                if p != first or not arrived_first:
                    self._stopped = (p, rd, wr, ac, nac)
                    wr |= gate_mask  # it arrives
                    break
                if named[2 * self.named_index[b]] <= nwaits[r]:
                    self._stopped = (p, rd, wr, ac, nac)
                    break  # arrived, and the generation has not completed
            elif kind == _COUNTED and (p != first or not arrived_first):
                # `_unfilled`:
                if named[2 * named_i + 1] + (named_arrivals >> _ARRIVALS * named_i & _FIELD) < named_count:
                    # a sync it has yet to arrive at, whose generation cannot complete on such a path
                    self._stopped = (p, rd, wr, ac, nac)
                    wr |= gate_mask
                    nac += arrival
                    break
            rd |= seg_rd
            wr |= seg_wr
            ac += seg_ac
            nac += seg_nac
            p = nxt
        return rd, wr, ac, nac - arrived if nac else 0

    def _unfilled(self, barrier: int, named: tuple[int, ...], named_arrivals: int) -> bool:
        """Whether the current generation of a named barrier of `_counted`
        cannot complete on a path of steps outside a persistent-set
        candidate: the threads arrived so far and every arrival the roles
        outside may make there (`named_arrivals`) fall short of its count.
        Then no sync there passes on such a path."""
        i, count = self._counted[barrier]
        return named[2 * i + 1] + (named_arrivals >> _ARRIVALS * i & _FIELD) < count

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
        neither writes an object the other reads or writes (`_footprints`),
        or where both write one only as arrivals that commute in the
        states in question (a named barrier of `_named_limits_of` that is
        settled for T: `_settled_named`, which bounds every arrival
        outside T may make before T's): then they commute to the same
        state (the TMA loads in flight are kept by barrier), neither
        enables or disables the other, and neither changes whether the
        other fails (every check a step makes reads only objects in its
        footprint).  T is built from a group G of
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
        named = state[3]
        queue_writes: dict[int, int] = {}  # completions of queue b (`_queue_key`): agent n + b
        queue_reads: dict[int, int] = {}
        load_reads, load = self._load_reads, self._load
        for b, ks in queues.items():
            step_reads[n + b], step_writes[n + b] = load_reads.get(inflight[ks[0]], 0), load[inflight[ks[0]]]
            written = read = 0
            for k in ks:
                written |= load[inflight[k]]
                if load_reads:
                    read |= load_reads.get(inflight[k], 0)
            queue_writes[n + b], queue_reads[n + b] = written, read
        live = [r for r, p in enumerate(pos) if p < len(self.roles[r].blocks)]
        named_limits = self._named_limits
        # What only `joining_of` reads, made on its first call (`alone` often decides first).
        step_named: dict[int, int] = {}  # the threads of a role's step at each named barrier
        step_arrivals: dict[int, int] = {}  # ...and on each mbarrier
        waiting: dict[int, tuple[int, ...] | None] | None = None
        queue_bar: dict[int, int] = {}
        queue_bytes: dict[int, int] = {}
        in_flight: dict[int, int] = {}
        settled = short_base = 0
        bars = state[1]
        prepared = False

        def prepare() -> None:
            nonlocal waiting, settled, short_base, prepared
            prepared = True
            for r, arrive in moves:
                if named_limits:
                    step_named[r] = (self._arrival_named if arrive else self._step_named)[r][pos[r]]
                if self._fine and not arrive:
                    step_arrivals[r] = self._block_arrivals[r][pos[r]]
            waiting = self._waiting(state) if self._symmetric else None
            # Fine footprints: the bytes each completion queue carries, per barrier; a barrier is
            # *settled* when its phase has all arrivals and its loads in flight carry at most the
            # bytes it misses (then no order of their completions completes it early: they commute).
            if self._fine:
                load_bytes = self._load_bytes
                for q, ks in queues.items():
                    b = load_bytes[inflight[ks[0]]][0]
                    carried = 0
                    for k in ks:
                        carried += load_bytes[inflight[k]][1]
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
            if not prepared:
                prepare()
            t_reads = t_writes = t_completes = gates = t_named = 0
            for a in group:
                if a in step_reads:
                    t_reads |= step_reads[a]
                    if a < n:
                        t_writes |= step_writes[a]
                        t_named += step_named.get(a, 0)
                    else:
                        t_completes |= step_writes[a]
                else:  # a blocked role
                    gates |= self._gate[a][pos[a]]
            writing = (t_writes | t_completes) & ~self._commuting
            conflicts = t_reads | writing | gates
            queue_conflicts = t_reads | (t_writes & ~self._commuting) | (t_completes & ~self._commuting & ~settled) | gates
            t_writes |= t_completes
            limits = [limit for limit in named_limits if t_named >> (_ARRIVALS * limit[0]) & _FIELD] if t_named else ()
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
            # The fixpoint starts from the next steps of the enabled roles outside: what each may
            # do includes its next step, so it is the same least fixpoint, in fewer rounds.
            others, reach, opening, arrivals, named_arrivals = completions, {}, frozenset(), 0, 0
            for o in outside:
                if o in step_writes:
                    others |= step_writes[o]
                    arrivals += step_arrivals.get(o, 0)
                    named_arrivals += step_named.get(o, 0)
            # Each round's inputs contain the last round's: each walk goes on from where it stopped
            # (`_reach`), and one that ran to its trace's end stays as it is.
            walks: dict[int, tuple[tuple[int, ...] | None, tuple[int, int, int, int]]] = {}
            while True:  # what the roles outside may do, and write, to a fixpoint
                reach = {}
                for o in outside:
                    last = walks.get(o)
                    if last is not None and last[0] is None:
                        reach[o] = last[1]
                        continue
                    got = self._reach(o, state, others, opening, short, arrivals, named_arrivals,
                                      last[0] if last is not None else ())
                    walks[o] = (self._stopped, got)
                    reach[o] = got
                if limits:  # named barriers whose arrivals commute with the group's: see `_settled_named`
                    conflicts = t_reads | (writing & ~self._settled_named(limits, t_named, reach, named)) | gates
                if any_:
                    for o, (rd, wr, _, _) in reach.items():
                        if wr & conflicts or rd & t_writes:
                            return {o}
                grown, counted, named_counted = completions, 0, 0
                for _, wr, ac, nac in reach.values():
                    grown |= wr
                    counted += ac
                    named_counted += nac
                opened = self._opening(waiting, reach) if waiting else opening
                if (grown == others and opened == opening and counted == arrivals
                        and named_counted == named_arrivals):
                    break
                others, opening, arrivals, named_arrivals = grown, opened, counted, named_counted
            if any_:  # every reach of the last round and every queue passed the checks above
                return set()
            joining = {o for o, (rd, wr, _, _) in reach.items() if wr & conflicts or rd & t_writes}
            joining.update(c for c, wr in queue_writes.items()
                           if c not in group and (wr & queue_conflicts or queue_reads[c] & t_writes))
            return joining

        suffix_reads, suffix_writes, commuting = self._suffix_reads, self._suffix_writes, self._commuting

        def alone(seed: int) -> bool:
            """Whether `{seed}` is persistent already by what the others may do
            at all: `joining_of({seed}, True)` with each live role's reach
            replaced by everything its remaining blocks touch (a superset of
            any `_reach`, so no conflict there means none at the fixpoint) and
            the conflicts of no named barrier waived (`_settled_named` only
            removes some), the completions checked as there."""
            rd, wr = step_reads[seed], step_writes[seed]
            conflicts = rd | (wr & ~commuting)
            for o in live:
                if o != seed and (suffix_writes[o][pos[o]] & conflicts or suffix_reads[o][pos[o]] & wr):
                    return False
            if seed >= n and not prepared:
                prepare()
            queue_conflicts = conflicts if seed < n else rd | (wr & ~commuting & ~settled)
            for c, cw in queue_writes.items():
                if c != seed and (cw & queue_conflicts or queue_reads[c] & wr):
                    return False
            return True

        if self._fine:  # first any agent that is a persistent set on its own (the usual case)
            seeds = list(step_reads)
            if hint in step_reads:
                seeds.remove(hint)
                seeds.insert(0, hint)
            for seed in seeds:
                if alone(seed) or not joining_of({seed}, True):
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

    @staticmethod
    def _settled_named(limits, t_named: int, reach: dict[int, tuple[int, int, int, int]],
                       named: tuple[int, ...]) -> int:
        """The named barriers (footprint bits) at which the arrivals of a
        persistent-set candidate's steps (`t_named`) commute with every
        arrival that the roles outside may make there (`reach`): those
        whose threads arrived so far in the current generation, plus the
        candidate's, plus all of the outside roles' (each of their
        arrivals, repeated ones too), stay within the barrier's count.
        Then no order of those arrivals completes the generation before
        the last of them, none over-arrives, and each lands in the current
        generation (what a sync records): any two of them, taken in either
        order, reach the same state and pass the same checks."""
        outside = 0
        for got in reach.values():
            outside += got[3]
        bits = 0
        for i, bit, count in limits:
            shift = _ARRIVALS * i
            if named[2 * i + 1] + (t_named >> shift & _FIELD) + (outside >> shift & _FIELD) <= count:
                bits |= bit
        return bits

    def _opening(self, waiting: dict[int, tuple[int, ...] | None],
                 reach: dict[int, tuple[int, int, int, int]]) -> frozenset[int]:
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
