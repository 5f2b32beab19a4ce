"""tawa-verify-protocol: every example's lowered protocol is proved at every
ring depth that fits; the broken protocols of Inputs/protocol_*.mlir, and
consumers that release a slot before the wgmma reading it is retired or
never release their last one (persistent or not), are rejected with a
counterexample trace of MLIR-style notes; the model's checks one by one on
hand-written traces; the search's persistent-set reduction, with the
footprints of one CTA and with the finer ones of clusters, finds every kind
of violation the full search finds, agrees with it on random traces, and
visits fewer states on a lowered GEMM."""

from __future__ import annotations

import dataclasses
import functools
import io
import random
import re
from pathlib import Path

import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.printer import Printer

import tawa
from tawa.diagnostics import TawaError
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.verify.protocol_model import (
    ARRIVE,
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
    Launch,
    SkeletonRunner,
)
from tawa.verify.protocol_search import Explorer
from tawa.verify.verify_protocol import VerifyProtocolPass, _scaled_bytes, _size_arguments

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
BROKEN = ROOT / "tests" / "filecheck" / "transforms" / "Inputs"


def _text(module) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


@pytest.mark.parametrize(("example", "stages"), [
    pytest.param(example, stages, id=f"{example.stem}-{stages}",
                 marks=[] if (example.stem, stages) == ("gemm", 2) else [pytest.mark.slow])
    for stages in (1, 2, 3, 4) for example in EXAMPLES
])
def test_examples_are_proved(example: Path, stages: int):
    """Fast tier: the GEMM at ring depth 2; the other examples and depths
    are slow."""
    module = tawa.parse(example.read_text(), example.name)
    try:
        HopperPipelinePass(stages=stages, prepare=False).apply(tawa.context(), module)
    except TawaError as err:
        assert "shared memory" in err.message  # only depths that do not fit are skipped
        pytest.skip(f"{example.name} does not fit at stages={stages}")
    before = _text(module)
    VerifyProtocolPass().apply(tawa.context(), module)
    assert _text(module) == before


@pytest.mark.parametrize(
    "name, problem",
    [
        ("dropped_release", "deadlock"),
        ("count_short", "deadlock"),
        ("initial_parity", "deadlock"),
        ("expect_tx", "transaction bytes underflow"),
        ("runs_ahead", "too many arrivals"),
    ],
)
def test_broken_protocols_are_rejected_with_a_trace(name: str, problem: str):
    path = BROKEN / f"protocol_{name}.mlir"
    module = tawa.parse(path.read_text(), path.name)
    with pytest.raises(TawaError) as info:
        VerifyProtocolPass().apply(tawa.context(), module)
    err = info.value
    assert err.where.startswith(f"protocol_{name}.mlir:")
    assert err.message.startswith(f"tawa-verify-protocol: {problem} in @gemm")
    notes = err.details
    assert re.match(rf"protocol_{name}\.mlir:\d+:\d+: note: counterexample \(", notes[0]), notes[0]
    assert re.match(rf"protocol_{name}\.mlir:\d+:\d+: note:   1\. wg0 mbarrier_init ", notes[1]), notes[1]
    assert all(re.match(r"\S+:\d+:\d+: note: ", line) for line in notes)


def test_state_limit_is_a_located_error():
    path = BROKEN / "protocol_dropped_release.mlir"
    module = tawa.parse(path.read_text(), path.name)
    with pytest.raises(TawaError, match="more than 3 states; raise max-states"):
        VerifyProtocolPass(max_states=3).apply(tawa.context(), module)


def test_unstructured_control_flow_is_a_located_error():
    """After tawa-prepare-ptx the loops are branches between blocks, which
    the model does not read: a one-line error says where to run the pass."""
    path = ROOT / "examples" / "gemm.mlir"
    module = tawa.parse(path.read_text(), path.name)
    HopperPipelinePass().apply(tawa.context(), module)
    with pytest.raises(TawaError, match=r"unstructured .* before tawa-prepare-ptx") as info:
        VerifyProtocolPass().apply(tawa.context(), module)
    assert info.value.where.startswith("gemm.mlir:")


def test_a_store_left_in_flight_at_the_end_is_one_located_line():
    """A check at the kernel's end reports no trace of events: the error is
    the one line at the undrained TMA store, without a notes header."""
    path = ROOT / "examples" / "gemm.mlir"
    module = tawa.parse(path.read_text(), path.name)
    HopperPipelinePass.of(epilogue="auto", staging="subtiled", prepare=False).apply(tawa.context(), module)
    text = _text(module).replace("tma_store_wait 0", "tma_store_wait 1", 1)
    broken = tawa.parse(text, "undrained.mlir")
    with pytest.raises(TawaError, match="CTA ends during a TMA store in @gemm") as info:
        VerifyProtocolPass().apply(tawa.context(), broken)
    assert info.value.where.startswith("undrained.mlir:")
    assert info.value.details == []


# --------------------------------------------------------------------------- the model


def _op():
    return arith.ConstantOp(IntegerAttr(0, IndexType()))


def _explorer(*traces: list[Event], **options) -> Explorer:
    return Explorer(traces, 4, lambda b: f"b{b}", lambda s: f"s{s}",
                    lambda r: f"wg{r}", max_states=10_000, **options)


def _explore(*traces: list[Event]):
    return _explorer(*traces).run()


def _sync(barrier: int = 0, count: int = 256):
    return Event(NAMED_SYNC, _op(), barrier, count=count, threads=128)


def test_phase_aliasing():
    # wg0 completes two phases of b0 before wg1 waits for the first one.
    wait = Event(WAIT, _op(), 0, parity=0)
    v = _explore(
        [Event(INIT, _op(), 0, count=1), _sync(), Event(ARRIVE, _op(), 0, count=1),
         Event(ARRIVE, _op(), 0, count=1)],
        [_sync(), wait],
    )
    assert v is not None and v.problem == "phase aliasing" and v.op is wait.op
    assert "for phase 0, but the barrier has completed 2 phases" in v.message


def test_parity_handshake_passes():
    # The same two phases, each waited for before the next is produced.
    v = _explore(
        [Event(INIT, _op(), 0, count=1), Event(INIT, _op(), 1, count=1), _sync(),
         Event(ARRIVE, _op(), 0, count=1), Event(WAIT, _op(), 1, parity=0),
         Event(ARRIVE, _op(), 0, count=1)],
        [_sync(), Event(WAIT, _op(), 0, parity=0), Event(ARRIVE, _op(), 1, count=1),
         Event(WAIT, _op(), 0, parity=1)],
    )
    assert v is None


def test_read_while_a_load_is_in_flight():
    # The consumer reads stage s0 without waiting for the full barrier.
    read = Event(READ, _op(), slot=0)
    v = _explore(
        [Event(INIT, _op(), 0, count=1), _sync(), Event(ARRIVE, _op(), 0, count=1),
         Event(TMA, _op(), 0, 0, tx=64)],
        [_sync(), read],
    )
    assert v is not None and v.problem == "read during load" and v.op is read.op
    # The shortest trace: init+sync arrivals, the producer's block, the read.
    assert [s.kind for s in v.steps][-2:] == ["block", "block"]


# --------------------------------------------------------------------------- the reduction


def _init(*barriers: int, count: int = 1) -> list[Event]:
    return [Event(INIT, _op(), b, count=count) for b in barriers]


def _load(b: int, s: int, tx: int = 64) -> list[Event]:
    return [Event(EXPECT_TX, _op(), b, count=1, tx=tx), Event(TMA, _op(), b, s, tx=tx, count=1)]


def _wait(b: int, parity: int) -> Event:
    return Event(WAIT, _op(), b, parity=parity)


def _arrive(b: int) -> Event:
    return Event(ARRIVE, _op(), b, count=1)


# One hand-written protocol per kind of violation the search reports (beside
# those of the tests above); each has exactly that one kind.
VIOLATIONS = {
    "deadlock": ([*_init(0), _sync(), _wait(0, 0)], [_sync()]),
    "phase aliasing": ([*_init(0), _sync(), _arrive(0), _arrive(0)], [_sync(), _wait(0, 0)]),
    "read during load": ([*_init(0), _sync(), _arrive(0), Event(TMA, _op(), 0, 0, tx=64)],
                         [_sync(), Event(READ, _op(), slot=0)]),
    # wg0 refills s0 after wg1's release, but wg1's wgmma may still read it.
    "slot overwritten before it was released": (
        [*_init(0, 1), _sync(), *_load(0, 0), _wait(1, 0), *_load(0, 0)],
        [_sync(), _wait(0, 0), Event(READ, _op(), slot=0, is_async=True), Event(COMMIT, _op()),
         _arrive(1), _sync(3, 128), Event(WAIT_GROUP, _op(), count=0)],
    ),
    "too many arrivals": ([*_init(0), _sync(), *_load(0, 0)], [_sync(), _arrive(0)]),
    "transaction bytes underflow": ([*_init(0), _sync(), Event(EXPECT_TX, _op(), 0, count=1, tx=32),
                                     Event(TMA, _op(), 0, 0, tx=64)], [_sync()]),
    "wait before init": ([*_init(0)], [_wait(0, 0)]),
    "use before init": ([*_init(0)], [_arrive(0)]),
    "double init": ([*_init(0)], [*_init(0)]),
    "named barrier over-arrival": ([_sync(count=192)], [_sync(count=192)]),
    # wg0's store of s0 is pending at its second named sync, when wg1 writes s0.
    "staging tile written during a TMA store": (
        [_sync(), Event(BULK_STORE, _op(), slot=0, threads=1), _sync(2, 128),
         Event(BULK_WAIT, _op(), count=0, threads=128)],
        [_sync(), Event(WRITE, _op(), slot=0)],
    ),
}


@pytest.mark.parametrize("problem", VIOLATIONS)
def test_the_reduced_search_finds_each_violation(problem: str):
    traces = VIOLATIONS[problem]
    full = _explorer(*traces, reduce=False).run()
    assert full is not None and full.problem == problem
    for fine in (False, True):
        reduced = _explorer(*traces, shortest=False, fine=fine).run()
        assert reduced is not None and reduced.problem == problem and reduced.op is full.op
    if problem not in ("deadlock", "phase aliasing", "wait before init"):  # checks of a state
        assert reduced.steps[-1].events[-1].op is full.op


def _random_protocol(rng: random.Random) -> list[list[Event]]:
    """A few trips of a 2-slot ring (warp group 0 loads, 1 and 2 consume,
    sometimes through a staged TMA store), each event of which is left out
    or changed now and then."""
    def sometimes(p: float) -> bool:
        return rng.random() < p

    producer = [*_init(0, 1), *_init(2, 3, count=2), _sync(count=384)]
    consumers: list[list[Event]] = [[_sync(count=384)], [_sync(count=384)]]
    for i in range(rng.randint(1, 3)):
        slot, parity = i % 2, (i // 2) % 2
        if sometimes(0.95):
            producer.append(_wait(2 + slot, 1 - parity))
        producer += _load(slot, slot, tx=64 if sometimes(0.95) else 32)
        staged = sometimes(0.5)
        for c, trace in enumerate(consumers):
            if sometimes(0.95):
                trace.append(_wait(slot, parity))
            trace += [Event(READ, _op(), slot=slot, is_async=True), Event(COMMIT, _op())]
            if sometimes(0.9):
                trace.append(Event(WAIT_GROUP, _op(), count=0))
            if sometimes(0.95):
                trace.append(_arrive(2 + slot))
            if staged:
                trace += [_sync(1), Event(WRITE, _op(), slot=2 + i % 2), _sync(1)]
                if c == 0:
                    trace += [Event(BULK_STORE, _op(), slot=2 + i % 2, threads=1),
                              Event(BULK_WAIT, _op(), count=rng.choice((0, 1, 1)), threads=1)]
            if sometimes(0.05):
                trace.append(Event(NAMED_ARRIVE, _op(), 1, count=256, threads=128))
    consumers[0].append(Event(BULK_WAIT, _op(), count=0, threads=1))
    return [producer, *consumers]


def test_the_reduced_search_agrees_with_the_full_search_on_random_protocols():
    rng = random.Random(11)
    found = set()
    for _ in range(150):
        traces = _random_protocol(rng)
        full = _explorer(*traces, reduce=False)
        violation = full.run()
        for fine in (False, True):  # the footprints of one CTA, and the finer ones of clusters
            reduced = _explorer(*traces, shortest=False, fine=fine)
            assert (reduced.run() is None) == (violation is None)
            if violation is None:
                assert 0 < reduced.states <= full.states
        if violation is not None:
            found.add(violation.problem)
    assert len(found) >= 4  # several kinds of violation



def test_a_barriers_bytes_matter_up_to_a_scale():
    """The proof's key (`_scaled_bytes`) divides each barrier's transaction
    bytes by their greatest common divisor: scaling one barrier's bytes
    leaves every search the same (the same violation or none, the same
    states), so two kernels that differ only so share one proof."""
    rng = random.Random(5)
    found = set()
    for _ in range(60):
        traces = _random_protocol(rng)
        factor = {b: rng.choice((1, 2, 3, 256)) for b in range(4)}
        scaled = [[dataclasses.replace(e, tx=e.tx * factor[e.barrier]) if e.tx else e for e in t] for t in traces]
        assert _scaled_bytes(scaled) == _scaled_bytes(traces)
        a, b = _explorer(*traces), _explorer(*scaled)
        va, vb = a.run(), b.run()
        assert (va and va.problem) == (vb and vb.problem) and a.states == b.states
        found.add(va.problem if va else "none")
    assert "none" in found and len(found) >= 3  # proved protocols and several kinds of violation
    # Bytes that differ between the expect_tx and the load on one barrier keep their ratio.
    matched = [[*_init(0), _sync(count=256), *_load(0, 0, tx=64)], [_sync(count=256), _wait(0, 0)]]
    short = [[*_init(0), _sync(count=256), Event(EXPECT_TX, _op(), 0, count=1, tx=64),
              Event(TMA, _op(), 0, 0, tx=32, count=1)], [_sync(count=256), _wait(0, 0)]]
    assert _scaled_bytes(matched) != _scaled_bytes(short)
    assert _explore(*matched) is None and _explore(*short).problem == "deadlock"

@functools.cache
def _gemm_traces() -> tuple[list[list[Event]], int]:
    """The lowered GEMM's traces with the subtiled TMA-store epilogue (2
    stages, 3 k-steps, 2 programs per CTA), and its barrier count."""
    example = ROOT / "examples" / "gemm.mlir"
    module = tawa.parse(example.read_text(), example.name)
    HopperPipelinePass.of(stages=2, staging="subtiled", prepare=False).apply(tawa.context(), module)
    kernel = next(o for o in module.walk() if isinstance(o, func.FuncOp) and o.body.blocks)
    runner = SkeletonRunner(kernel)
    sizes = _size_arguments(runner)
    args = [3 * sizes.get(p, 1) for p in kernel.body.block.args]
    traces = [runner.trace(r, args, Launch(launch_grid=(2, 1, 1))) for r in range(3)]
    return traces, len(runner.objects.barriers)


def test_the_reduction_visits_fewer_states_on_a_gemm():
    # E.g. the consumers' epilogue steps (named barriers, staging writes,
    # stores) are independent of the producer's loads and their completions.
    traces, barriers = _gemm_traces()
    full, reduced = (Explorer(traces, barriers, str, str, str, 10**6, reduce=r) for r in (False, True))
    assert full.run() is None and reduced.run() is None
    assert 0 < reduced.states < full.states


@pytest.mark.slow
def test_the_reduced_search_agrees_with_the_full_search_on_broken_gemms():
    # Mutants of the GEMM's traces: an event dropped, repeated or moved, a
    # wait's parity flipped, a count or a barrier changed.
    traces, barriers = _gemm_traces()
    rng = random.Random(7)
    found = set()
    for _ in range(40):
        mutant = [list(t) for t in traces]
        t = rng.choice(mutant)
        i = rng.randrange(len(t))
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
            t[i] = dataclasses.replace(e, count=max(0, e.count + rng.choice((-1, 1))))
        full = Explorer(mutant, barriers, str, str, str, 10**6, reduce=False, shortest=False)
        violation = full.run()
        for fine in (False, True):
            reduced = Explorer(mutant, barriers, str, str, str, 10**6, shortest=False, fine=fine)
            assert (reduced.run() is None) == (violation is None)
        found.add(violation.problem if violation else "none")
    assert "none" in found and len(found) >= 5  # proofs, and several kinds of violation


# --------------------------------------------------------------------------- holding a slot


def _broken_gemm(mutation: str, persistent: bool, epilogue: str = "auto") -> tuple[str, str]:
    """examples/gemm.mlir lowered (stages=2, `epilogue`) with its consumer's
    protocol broken at the aref level, right after tawa-pipeline, then
    printed (so that the verifier sees every op at a line): the text, and
    the line of the op the error must point at ("release": the consumer's
    first mbarrier_arrive; "acquire": its last wait on a full barrier)."""
    from xdsl.dialects import scf
    from xdsl.rewriter import Rewriter

    from tawa.dialects import aref, nvgpu, tile
    from tawa.transforms.pipeline.assign_stage_phase import AssignStagePhasePass
    from tawa.transforms.pipeline.pipeline import PipelinePass

    module = tawa.parse((ROOT / "examples" / "gemm.mlir").read_text(), "gemm.mlir")
    pipeline = HopperPipelinePass(stages=2, persistent=persistent, prepare=False, epilogue=epilogue)
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for step in pipeline.planned_steps(module):
        if isinstance(step, VerifyProtocolPass):
            continue
        if isinstance(step, AssignStagePhasePass):  # its aref-level proof rejects the mutant already
            step = AssignStagePhasePass(verify=False)
        step.apply(ctx, module)
        if not isinstance(step, PipelinePass):
            continue
        loop = next(o for o in module.walk() if isinstance(o, scf.ForOp)
                    and any(isinstance(x, tile.DotAsyncOp) for x in o.body.walk()))
        if mutation == "release before the wgmma's wait":
            # The consumer releases slot i-1 before the tile.dot_wait 1 that retires its wgmma.
            wait = next(o for o in loop.body.block.ops if isinstance(o, tile.DotWaitOp))
            release = next(o for o in loop.body.block.ops if isinstance(o, scf.IfOp)
                           and any(isinstance(x, aref.ConsumedOp) for x in o.walk()))
            for op in (release.cond.owner, release):
                op.detach()
                loop.body.block.insert_op_before(op, wait)
        else:  # "drop the last release": the aref.consumed after the loop
            after = loop.next_op
            while not any(isinstance(x, aref.ConsumedOp) for x in after.walk()):
                after = after.next_op
            Rewriter.erase_op(next(x for x in after.walk() if isinstance(x, aref.ConsumedOp)))
    text = _text(module)
    located = tawa.parse(text, "broken.mlir")
    ops = list(located.walk())
    if mutation == "release before the wgmma's wait":
        target = next(o for o in ops if o.name == "nvgpu.mbarrier_arrive")
    else:
        full = {o.barriers for o in ops if isinstance(o, nvgpu.TmaLoadOp)}
        target = [o for o in ops if o.name == "nvgpu.mbarrier_wait_parity" and o.barriers in full][-1]
    return text, target.location.line.data


@pytest.mark.parametrize("epilogue", ["auto", "threads"], ids=["tma-store", "identical-consumers"])
@pytest.mark.parametrize("persistent", [True, False], ids=["persistent", "one-program-per-CTA"])
@pytest.mark.parametrize("mutation, problem", [
    ("release before the wgmma's wait", "slot released while a wgmma may still read it"),
    ("drop the last release", "warp group ends holding a slot"),
])
def test_broken_consumer_protocols_are_rejected(mutation, problem, persistent, epilogue, monkeypatch):
    """The consumer releases a slot before the wgmma_wait_group that retires
    its reader (the search saw the release and the retirement in one atomic
    block), or never releases the last slot of a program (nothing waits for
    it in a kernel of one program per CTA).  A persistent kernel without its
    last release deadlocks in its next program, which the search reports.
    With the thread epilogue the two consumer warp groups run identical
    protocols, both broken the same way."""
    monkeypatch.setenv("TAWA_PROOF_CACHE", "0")
    text, line = _broken_gemm(mutation, persistent, epilogue)
    module = tawa.parse(text, "broken.mlir")
    with pytest.raises(TawaError) as info:
        VerifyProtocolPass().apply(tawa.context(), module)
    err = info.value
    if persistent and mutation == "drop the last release":
        problem = "deadlock"
    else:
        assert err.where.startswith(f"broken.mlir:{line}:"), (err.where, line)
    assert err.message.startswith(f"tawa-verify-protocol: {problem} in @gemm ("), err.message
    assert re.match(r"broken\.mlir:\d+:\d+: note: (counterexample|the events of warp group 1)", err.details[0])
    assert len(err.details) > 3 and all(re.match(r"broken\.mlir:\d+:\d+: note: ", n) for n in err.details)
    if mutation == "release before the wgmma's wait":
        assert "mbarrier_arrive" in err.details[-1] and any("wgmma_descriptor reads" in n for n in err.details)


# --------------------------------------------------------------------------- one of two identical consumers


@functools.cache
def _identical_consumers_gemm(persistent: bool) -> str:
    """examples/gemm.mlir lowered (stages=2) with the thread epilogue, before
    the verifier, printed: its two consumer warp groups (1 and 2) run
    identical protocols."""
    module = tawa.parse((ROOT / "examples" / "gemm.mlir").read_text(), "gemm.mlir")
    HopperPipelinePass(stages=2, epilogue="threads", persistent=persistent, prepare=False).apply(
        tawa.context(), module)
    return _text(module)


def _for_one_warp_group(text: str, op: str, occurrence: int, group: int, flip: bool = False) -> str:
    """`text` with the `occurrence`-th line of `op` run by every warp group
    but `group` (an `scf.if` on `nvgpu.warp_group_id` around it), or with
    `flip`, that wait run by `group` with the other parity."""
    lines = text.split("\n")
    i = [j for j, line in enumerate(lines) if line.lstrip().startswith(op + " ")][occurrence]
    line = lines[i]
    indent = line[: len(line) - len(line.lstrip())]
    head = ["%one_wg = nvgpu.warp_group_id", f"%one_id = arith.constant {group} : index"]
    if flip:
        wait, parity, tail = re.match(r"(\s*\S+ \S+\[\S+\]), (%\w+) (:.*)", line).groups()
        new = [*head, "%one_is = arith.cmpi eq, %one_wg, %one_id : index", "%one_1 = arith.constant 1 : index",
               f"%one_flipped = arith.xori {parity}, %one_1 : index",
               f"%one_parity = arith.select %one_is, %one_flipped, {parity} : index"]
        lines[i: i + 1] = [indent + x for x in new] + [f"{wait}, %one_parity {tail}"]
    else:
        new = [*head, "%one_not = arith.cmpi ne, %one_wg, %one_id : index", "scf.if %one_not {"]
        lines[i: i + 1] = [indent + x for x in new] + ["  " + line, indent + "}"]
    return "\n".join(lines)


def _line_of(module, name: str, occurrence: int = 0) -> int:
    return [o for o in module.walk() if o.name == name][occurrence].location.line.data


@pytest.mark.parametrize("persistent", [True, False], ids=["persistent", "one-program-per-CTA"])
@pytest.mark.parametrize("mutation", ["no release in the loop", "no last release", "full wait's parity flipped",
                                      "no wgmma wait before the release"])
def test_one_of_two_identical_consumers_breaking_the_protocol_is_found(mutation, persistent, monkeypatch):
    """Warp group 2 alone breaks the protocol that warp group 1 runs
    correctly: the violation is found at the op it makes go wrong (a
    reduction that treated the two consumers as interchangeable, or that
    took their steps as independent where they are not, could hide it)."""
    monkeypatch.setenv("TAWA_PROOF_CACHE", "0")
    text = _identical_consumers_gemm(persistent)
    if mutation == "no release in the loop":
        text = _for_one_warp_group(text, "nvgpu.mbarrier_arrive", 0, 2)
    elif mutation == "no last release":
        text = _for_one_warp_group(text, "nvgpu.mbarrier_arrive", 1, 2)
    elif mutation == "full wait's parity flipped":
        text = _for_one_warp_group(text, "nvgpu.mbarrier_wait_parity", 1, 2, flip=True)
    else:
        text = _for_one_warp_group(text, "nvgpu.wgmma_wait_group", 0, 2)
    module = tawa.parse(text, "broken.mlir")
    with pytest.raises(TawaError) as info:
        VerifyProtocolPass().apply(tawa.context(), module)
    err = info.value
    # (problem, the op the error points at, and its occurrence)
    problem, at = {
        "no release in the loop": ("deadlock", ("nvgpu.mbarrier_wait_parity", 0)),  # the producer's empty wait
        "no last release": (("deadlock", ("nvgpu.mbarrier_wait_parity", 0)) if persistent else
                            ("warp group ends holding a slot", ("nvgpu.mbarrier_wait_parity", 1))),
        "full wait's parity flipped": ("read during load", ("nvgpu.wgmma_descriptor", 0)),
        "no wgmma wait before the release": ("slot overwritten before it was released", ("nvgpu.tma_load", 0)),
    }[mutation]
    assert err.message.startswith(f"tawa-verify-protocol: {problem} in @gemm ("), err.message
    assert err.where.startswith(f"broken.mlir:{_line_of(module, *at)}:"), err.where
    if problem != "warp group ends holding a slot":
        assert re.match(r"broken\.mlir:\d+:\d+: note: counterexample \(", err.details[0]), err.details[0]
    if problem in ("read during load", "warp group ends holding a slot"):
        assert "warp group 2" in err.message
