"""The search's reduction (`protocol_reduction`) against the full search, on
protocols where consumer warp groups synchronize with each other through
named barriers: identical consumers that each arrive at a barrier another
warp group syncs on, and consumers that take turns (each syncs on its own
barrier and arrives at the next one's, as the lowered attention's do).
Arrivals at such barriers commute only while no generation can complete
early (`PersistentSets._settled_named`); a reduction that assumed more
would lose an over-arrival, a deadlock or an overwrite in some interleaving,
which these random protocols, each broken now and then, and the mutants of
lowered kernels with two and three consumer warp groups would show."""

from __future__ import annotations

import dataclasses
import functools
import random
from pathlib import Path

import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr

import tawa
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.verify.protocol_model import (
    ARRIVE,
    COMMIT,
    EXPECT_TX,
    INIT,
    NAMED_ARRIVE,
    NAMED_SYNC,
    READ,
    TMA,
    WAIT,
    WAIT_GROUP,
    Event,
    Launch,
    SkeletonRunner,
)
from tawa.verify.protocol_reduction import PersistentSets
from tawa.verify.protocol_search import Explorer
from tawa.verify.verify_protocol import _size_arguments

ROOT = Path(__file__).resolve().parents[2]
GROUP = 128  # threads of a warp group


def _ev(kind: str, barrier: int = -1, **fields) -> Event:
    return Event(kind, arith.ConstantOp(IntegerAttr(0, IndexType())), barrier, **fields)


def _named_protocol(rng: random.Random, consumers: int, turns: bool) -> list[list[Event]]:
    """A 2-slot ring (warp group 0 loads; full barriers 0, 1, empty
    barriers 2, 3 counting every consumer) whose consumers synchronize
    through named barriers: with `turns`, consumer c syncs on barrier 2 + c
    before its wgmma and then arrives at the next consumer's (the last
    one arrives at the first's once up front); without, the consumers are
    identical and each arrives at barrier 1 after its release, on which the
    producer syncs before its next load.  Each event is left out, repeated
    or changed now and then."""
    def sometimes(p: float) -> bool:
        return rng.random() < p

    everyone = GROUP * (consumers + 1)
    producer = [_ev(INIT, 0, count=1), _ev(INIT, 1, count=1), _ev(INIT, 2, count=consumers),
                _ev(INIT, 3, count=consumers), _ev(NAMED_SYNC, 0, count=everyone, threads=GROUP)]
    traces = [producer] + [[_ev(NAMED_SYNC, 0, count=everyone, threads=GROUP)] for _ in range(consumers)]
    if turns:
        traces[consumers].append(_ev(NAMED_ARRIVE, 2, count=2 * GROUP, threads=GROUP))
    for i in range(rng.randint(1, 3)):
        slot, parity = i % 2, (i // 2) % 2
        if i > 0 and not turns and sometimes(0.95):
            producer.append(_ev(NAMED_SYNC, 1, count=everyone, threads=GROUP))
        if sometimes(0.95):
            producer.append(_ev(WAIT, 2 + slot, parity=1 - parity))
        producer += [_ev(EXPECT_TX, slot, count=1, tx=64), _ev(TMA, slot, slot=slot, tx=64, count=1)]
        for c in range(1, consumers + 1):
            trace = traces[c]
            trace.append(_ev(WAIT, slot, parity=parity if sometimes(0.97) else 1 - parity))
            if turns:
                trace.append(_ev(NAMED_SYNC, 1 + c, count=2 * GROUP, threads=GROUP))
            trace += [_ev(READ, slot=slot, is_async=True), _ev(COMMIT)]
            if turns:
                trace.append(_ev(NAMED_ARRIVE, 2 + c % consumers, count=2 * GROUP, threads=GROUP))
            release = [_ev(WAIT_GROUP, count=0), _ev(ARRIVE, 2 + slot, count=1)]
            if sometimes(0.05):
                release.reverse()  # the release before the wgmma's wait
            trace += release
            if not turns and i < 2:
                trace.append(_ev(NAMED_ARRIVE, 1, count=everyone, threads=GROUP))
    for trace in traces:  # break one event now and then
        if sometimes(0.3):
            i = rng.randrange(len(trace))
            e = trace[i]
            change = rng.randrange(4)
            if change == 0:
                del trace[i]
            elif change == 1:
                trace.insert(i, e)
            elif e.kind in (NAMED_SYNC, NAMED_ARRIVE):
                trace[i] = dataclasses.replace(e, count=e.count + GROUP * rng.choice((-1, 1)))
            elif e.kind == WAIT:
                trace[i] = dataclasses.replace(e, parity=1 - e.parity)
    return traces


def _explorer(traces, barriers: int = 4, **options) -> Explorer:
    return Explorer(traces, barriers, str, str, str, max_states=400_000, shortest=False, **options)


@pytest.mark.parametrize("turns", [False, True], ids=["identical consumers", "consumers taking turns"])
def test_the_reduced_search_agrees_with_the_full_search_on_named_barriers(turns: bool):
    rng = random.Random(3)
    found = set()
    for _ in range(60):
        traces = _named_protocol(rng, rng.choice((2, 3)), turns)
        full = _explorer(traces, reduce=False)
        violation = full.run()
        reduced = _explorer(traces)
        assert (reduced.run() is None) == (violation is None), traces
        if violation is None:
            assert 0 < reduced.states <= full.states
        found.add(violation.problem if violation else "none")
    assert "none" in found and len(found) >= 4  # proofs, and several kinds of violation


def test_arrivals_at_named_barriers_reduce_the_search():
    """Correct protocols of three consumers taking turns: the reduced search
    visits a fraction of the full search's states (the turns' arrivals
    commute while their generation cannot complete early)."""
    rng = random.Random(1)
    ratios = []
    while len(ratios) < 5:
        traces = _named_protocol(rng, 3, True)
        full = _explorer(traces, reduce=False)
        if full.run() is None:
            reduced = _explorer(traces)
            assert reduced.run() is None
            ratios.append(reduced.states / full.states)
    assert max(ratios) < 0.5, ratios



@pytest.mark.parametrize(("example", "kernel"), [
    ("gemm.mlir", "gemm"),
    pytest.param("attention_fwd_d64.mlir", "attention_fwd_d64", marks=pytest.mark.slow),
])
def test_a_walk_resumed_where_it_stopped_reaches_what_a_new_walk_reaches(example, kernel, monkeypatch):
    """The fixpoint of `_persistent` goes on with each warp group's walk
    from the gate where the last round stopped it (`_reach(resume=...)`):
    on random protocols of consumers taking turns or not, broken or not,
    and on a lowered kernel's warp groups, every resumed walk gives what a
    walk from the warp group's position gives."""
    reach = PersistentSets._reach
    resumed = []

    def checked(self, r, state, others, opening=frozenset(), short=0, arrivals=0, named_arrivals=0, resume=()):
        inputs = (others, opening, short, arrivals, named_arrivals)
        got = reach(self, r, state, *inputs, resume)
        stopped = self._stopped
        if resume:
            assert reach(self, r, state, *inputs) == got and self._stopped == stopped
            resumed.append(r)
        self._stopped = stopped
        return got

    monkeypatch.setattr(PersistentSets, "_reach", checked)
    rng = random.Random(7)
    for _ in range(40):
        _explorer(_named_protocol(rng, rng.choice((2, 3)), rng.random() < 0.5)).run()
    traces, barriers = _lowered_traces(example, kernel, 3, 2)
    assert _explorer(traces, barriers).run() is None
    assert len(resumed) > 100

# --------------------------------------------------------------------------- lowered kernels


@functools.cache
def _lowered_traces(example: str, kernel: str, trips: int, programs: int,
                    **options) -> tuple[tuple[tuple[Event, ...], ...], int]:
    """The traces of every warp group of `kernel` in `example` lowered with
    `options`, at `trips` ring trips and `programs` programs per CTA, and
    its barrier count."""
    module = tawa.parse((ROOT / "examples" / example).read_text(), example)
    HopperPipelinePass(prepare=False, **options).apply(tawa.context(), module)
    op = next(o for o in module.walk() if isinstance(o, func.FuncOp) and o.sym_name.data == kernel)
    runner = SkeletonRunner(op)
    sizes = _size_arguments(runner)
    args = [trips * sizes.get(p, 1) for p in op.body.block.args]
    roles = runner.threads // GROUP
    traces = tuple(tuple(runner.trace(r, args, Launch(launch_grid=(programs, 1, 1)))) for r in range(roles))
    return traces, len(runner.objects.barriers)


def _mutants(traces, barriers: int, rng: random.Random, count: int, roles=None):
    """Mutants of `traces`: in one warp group (of `roles`), an event (a
    named barrier's half the time, if it has any) dropped, repeated or
    moved, a wait's parity flipped, an arrival moved to another barrier,
    or a count changed."""
    for _ in range(count):
        mutant = [list(t) for t in traces]
        t = mutant[rng.choice(roles or range(len(mutant)))]
        named = [i for i, e in enumerate(t) if e.kind in (NAMED_SYNC, NAMED_ARRIVE)]
        i = rng.choice(named) if named and rng.random() < 0.5 else rng.randrange(len(t))
        e = t[i]
        change = rng.randrange(5)
        if change == 0:
            del t[i]
        elif change == 1:
            t.insert(rng.randrange(len(t)), e)
        elif change == 2:
            j = rng.randrange(len(t))
            t[i], t[j] = t[j], e
        elif e.kind == WAIT:
            t[i] = dataclasses.replace(e, parity=1 - e.parity)
        elif e.barrier >= 0 and e.kind in (ARRIVE, EXPECT_TX, TMA):
            t[i] = dataclasses.replace(e, barrier=rng.randrange(barriers))
        else:
            t[i] = dataclasses.replace(e, count=max(0, e.count + rng.choice((-1, 1)) * (GROUP if e.threads else 1)))
        yield mutant


@pytest.mark.slow
@pytest.mark.parametrize(("example", "kernel", "options", "size", "roles", "distinct"), [
    # two identical consumer warp groups (the thread epilogue: no store of one thread of the CTA)
    ("gemm.mlir", "gemm", (("stages", 2), ("epilogue", "threads")), (3, 2), (1, 2), 1),
    # three consumer warp groups taking turns through named barriers
    ("attention_fwd_d64.mlir", "attention_fwd_d64", (), (2, 1), (1, 2, 3), 3),
], ids=["gemm-identical-consumers", "attention-d64-turns"])
def test_the_reduced_search_agrees_with_the_full_search_on_broken_kernels(example, kernel, options, size, roles,
                                                                          distinct):
    """Mutants of one consumer warp group's trace (trips and programs per
    CTA: `size`)."""
    traces, barriers = _lowered_traces(example, kernel, *size, **dict(options))
    assert len({tuple(e.semantic_key() for e in traces[r]) for r in roles}) == distinct
    rng = random.Random(13)
    found = set()
    for mutant in _mutants(traces, barriers, rng, 40, roles):
        full = Explorer(mutant, barriers, str, str, str, 2_000_000, reduce=False, shortest=False)
        violation = full.run()
        reduced = Explorer(mutant, barriers, str, str, str, 2_000_000, shortest=False)
        assert (reduced.run() is None) == (violation is None)
        found.add(violation.problem if violation else "none")
    assert "none" in found and len(found) >= 4
