"""Who holds which stage: a check of each warp group's own trace that
`tawa-verify-protocol` runs before its search (docs/protocol.md, "Holding
a slot").

The ring protocol hands stages out and back through barriers.  A barrier
*announces* the stages of the TMA loads that complete on it: a warp group
that waits on it *acquires* them (a consumer's wait on a full barrier).  A
barrier *guards* the stages that a warp group loads into after waiting on
it, before its next wait (the producer's empty barrier): an arrival on it
*releases* them, since the producer may overwrite them once the phase
completes.  In program order, for each warp group:

* a release of a stage that one of its wgmma may still read (issued, and
  not yet retired by a `wgmma_wait_group`) is a violation: the stage can be
  overwritten under the read.  The search cannot see this one: a block
  runs atomically, so a release and the `wgmma_wait_group` after it in the
  same block look simultaneous to the other warp groups;
* a read of a stage after the warp group released it (and before it
  acquires it again) is a violation, for the same reason: a read in the
  same block as the release is hidden from the search;
* a warp group that ends with a stage acquired more often than released
  holds it: the next use of the slot (the next program of a persistent
  kernel) would wait forever, and a kernel that happens not to reuse it
  still breaks the protocol.  Only stages that some barrier guards count.

The same checks run at the aref level (`protocol_aref`), where the
agents are partitions, the readers `tile.dot_async` and the retiring op
`tile.dot_wait` (`Words`).  They depend only on each trace, so they cost
nothing next to the search.
`tawa-verify-protocol` reports them once the search has found no
violation at any problem size (a deadlock or an overwrite that the search
finds says more about what goes wrong), except a release of a stage the
agent does not hold (`NOT_HELD`, the aref level), which it reports at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tawa.verify.protocol_model import ARRIVE, COMMIT, EXPECT_TX, READ, TMA, WAIT, Event
from tawa.verify.protocol_search import NVGPU_WORDS, Step, Violation, Words, open_reads

NOT_HELD = "slot released that is not held"
"""The problem of a release of a stage its agent does not hold (`own_releases`)."""


def ring_stages(traces: Sequence[Sequence[Event]]) -> tuple[dict[int, frozenset[int]], dict[int, frozenset[int]]]:
    """(announces, guards): per barrier slot, the stages that waiting on it
    acquires, and the stages that arriving on it releases."""
    announces: dict[int, set[int]] = {}
    guards: dict[int, set[int]] = {}
    for trace in traces:
        waited: int | None = None  # the barrier of this warp group's latest wait
        for e in trace:
            if e.kind == WAIT:
                waited = e.barrier
            elif e.kind == TMA:
                announces.setdefault(e.barrier, set()).add(e.slot)
                if waited is not None:
                    guards.setdefault(waited, set()).add(e.slot)
    return ({b: frozenset(s) for b, s in announces.items()}, {b: frozenset(s) for b, s in guards.items()})


def check_slots(traces: Sequence[Sequence[Event]], overlaps: dict[int, frozenset[int]],
                describe_slot, role_name, words: Words = NVGPU_WORDS, own_releases: bool = False) -> Violation | None:
    """The first release of a stage still read by the releasing warp
    group's wgmma, the first read of a stage after its release, or the
    first warp group that ends holding a stage; `overlaps[s]`: the stages
    whose bytes overlap stage s (s included).  With `own_releases` (the
    aref level, where every release is of the agent's own slot; a
    cluster's consumers release their peers' stages too), also a release
    of a stage the agent does not hold."""
    announces, guards = ring_stages(traces)
    # Stages with a barrier that hands them back; a stage loaded without a
    # wait before it has none (the search reports what that breaks).
    guarded = frozenset().union(*guards.values())

    def touching(stages: frozenset[int]) -> frozenset[int]:
        return frozenset(t for s in stages for t in overlaps.get(s, (s,)))

    for r, trace in enumerate(traces):
        open_before = open_reads(trace)
        held: Counter[int] = Counter()
        acquired_at: dict[int, int] = {}  # stage -> the index of the wait that acquired it last
        released_at: dict[int, int] = {}  # stage -> the release that left it held by no one, until acquired again
        for i, e in enumerate(trace):
            if e.kind == WAIT and e.barrier in announces:
                for s in announces[e.barrier] & guarded:
                    held[s] += 1
                    acquired_at[s] = i
                    released_at.pop(s, None)
            elif e.kind == READ and (gone := sorted(touching(frozenset((e.slot,))) & released_at.keys())):
                s = gone[0]
                return Violation(
                    "slot read after it was released", e.op,
                    f"{role_name(r)} reads {describe_slot(s)} after releasing it, before acquiring it again: "
                    "the producer may refill the stage under the read; release it after its last read",
                    _steps(r, trace, acquired_at.get(s, released_at[s]), i))
            elif e.kind in (ARRIVE, EXPECT_TX) and e.barrier in guards:
                released = guards[e.barrier]
                still_read = sorted(touching(released) & open_before[i])
                if still_read:
                    s = still_read[0]
                    issued = max(j for j in range(i) if trace[j].kind == "read" and trace[j].slot == s)
                    return Violation(
                        f"slot released while a {words.reader} may still read it", e.op,
                        f"{role_name(r)} releases {describe_slot(s)} while the {words.reader} that reads it "
                        f"may still run (no {words.retire} has retired it): the producer may overwrite the "
                        "stage under the read; release the slot after the wait that retires its reader",
                        _steps(r, trace, acquired_at.get(s, issued), i))
                if own_releases and not any(held[s] > 0 for s in released):
                    s = min(released)
                    return Violation(
                        NOT_HELD, e.op,
                        f"{role_name(r)} releases {describe_slot(s)}, which it does not hold (released twice, "
                        "or never acquired): the producer may refill it under another reader",
                        _steps(r, trace, acquired_at.get(s, i), i))
                for s in released:
                    if held[s] > 0:
                        held[s] -= 1
                        if held[s] == 0:
                            released_at[s] = i
        holding = sorted(s for s, n in held.items() if n > 0)
        if holding:
            s = holding[0]
            first = acquired_at[s]
            return Violation(
                f"{words.agent} ends holding a slot", trace[first].op,
                f"{role_name(r)} acquires {describe_slot(s)} ({words.acquire}) "
                f"and ends without releasing it ({held[s]} acquisition{'s' if held[s] > 1 else ''} "
                "never released): the slot's next use waits forever",
                _steps(r, trace, first, len(trace) - 1))
    return None


def _steps(role: int, trace: Sequence[Event], first: int, last: int) -> list[Step]:
    """The warp group's events from `first` to `last`, one step each."""
    return [Step(role, (e,)) for e in trace[first:last + 1] if e.kind != COMMIT]
