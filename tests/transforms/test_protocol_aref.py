"""The protocol proof at the aref level (tawa/verify/protocol_aref.py,
docs/protocol.md section 6): the events each partition's aref ops make; the
examples' aref-level IR proved as the pipeline makes it; consumers that
release a slot before the `tile.dot_wait` retiring its reader, never
release their last slot, read a slot after releasing it or release one
twice rejected by `tawa-assign-stage-phase` (persistent kernels and kernels
of one program per CTA), located at the op with the partition's events as
notes; slots named or left to their counts alike; the levels the pass
refuses."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from xdsl.dialects import func, scf
from xdsl.printer import Printer
from xdsl.rewriter import Rewriter

import tawa
from tawa.diagnostics import TawaError
from tawa.dialects import aref, tile
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.pipeline.assign_stage_phase import AssignStagePhasePass
from tawa.transforms.pipeline.pipeline import PipelinePass
from tawa.verify.protocol_aref import ArefSkeletonRunner
from tawa.verify.protocol_model import ARRIVE, COMMIT, EXPECT_TX, READ, TMA, UNKNOWN, WAIT, WAIT_GROUP, Launch
from tawa.verify.verify_protocol import VerifyProtocolPass, verify_aref_kernel

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
AREF_GEMM = ROOT / "tests" / "filecheck" / "verify" / "Inputs" / "aref_gemm.mlir"


def _text(module) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def _chunk(name: str) -> str:
    """The `--split-input-file` chunk of Inputs/aref_gemm.mlir that defines @name."""
    return next(c for c in AREF_GEMM.read_text().split("// -----") if f"@{name}(" in c)


def _aref_level(text: str, *, mutate=None, verify: bool = True, **options):
    """`text` through tawa-hopper-pipeline's steps up to tawa-assign-stage-phase
    (`mutate(module)` right after tawa-pipeline); the module."""
    module = tawa.parse(text, "k.mlir")
    pipeline = HopperPipelinePass(**options)
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for step in pipeline.planned_steps(module):
        if isinstance(step, AssignStagePhasePass):
            AssignStagePhasePass(verify=verify).apply(ctx, module)
            return module
        step.apply(ctx, module)
        if isinstance(step, PipelinePass) and mutate is not None:
            mutate(module)
    raise AssertionError("no tawa-assign-stage-phase step")


def _kernel(module) -> func.FuncOp:
    return next(o for o in module.walk() if isinstance(o, func.FuncOp))


# --------------------------------------------------------------------------- events


def test_each_aref_op_makes_the_events_of_its_ring():
    """put: wait on empty[s] with the other parity, expect_tx and an
    asynchronous fill of the slot on full[s]; get: wait on full[s]; a
    tile.dot_async: a read of each borrowed slot (once) and a commit;
    tile.dot_wait N: retire all but N groups; consumed: an arrival on
    empty[s].  Slots left to their counts: use n takes stage n mod D."""
    module = tawa.parse(_chunk("gemm"), "g.mlir")
    runner = ArefSkeletonRunner(_kernel(module))
    assert runner.roles == 2 and runner.depth == 2
    args = [UNKNOWN, UNKNOWN, 3 * 64]  # K: three trips of the ring of depth 2
    producer, consumer = (runner.trace(r, args, Launch()) for r in range(2))
    full = [runner.objects.barrier(*runner.objects.barriers[e.barrier]) for e in producer if e.kind == TMA]
    assert [e.kind for e in producer] == [WAIT, EXPECT_TX, TMA] * 3
    assert [e.parity for e in producer if e.kind == WAIT] == [1, 1, 0]  # third put: slot 0 in pass 1
    assert all(e.tx == (128 + 256) * 64 * 2 for e in producer if e.kind in (EXPECT_TX, TMA))
    assert full[0] == full[2] != full[1]
    kinds = [e.kind for e in consumer]
    assert kinds == [WAIT, READ, COMMIT, WAIT_GROUP,  # k = 0: no release yet
                     WAIT, READ, COMMIT, WAIT_GROUP, ARRIVE,
                     WAIT, READ, COMMIT, WAIT_GROUP, ARRIVE,
                     WAIT_GROUP, ARRIVE]  # after the loop: dot_wait 0, the last release
    reads = [e for e in consumer if e.kind == READ]
    assert all(e.is_async for e in reads) and [e.slot for e in reads] == [0, 1, 0]
    assert [e.count for e in consumer if e.kind == WAIT_GROUP] == [1, 1, 1, 0]
    assert runner.initial_counts() == [1, 1, 1, 1]


def test_named_slots_and_counted_slots_give_the_same_events():
    text = _chunk("gemm")
    counted = _kernel(tawa.parse(text, "g.mlir"))
    named_module = tawa.parse(text, "g.mlir")
    AssignStagePhasePass(verify=False).apply(tawa.context(), named_module)
    named = _kernel(named_module)
    assert any(isinstance(o, aref.GetOp) and o.has_slot() for o in named.walk())
    for trips in (0, 1, 2, 5):
        args = [UNKNOWN, UNKNOWN, trips * 64]
        a, b = ArefSkeletonRunner(counted), ArefSkeletonRunner(named)
        for role in (0, 1):
            assert ([e.semantic_key() for e in a.trace(role, args, Launch())]
                    == [e.semantic_key() for e in b.trace(role, args, Launch())])


def test_a_slot_value_carried_by_a_loop_is_still_that_slot():
    """A borrowed value yielded to the next iteration and read there after
    its release is a read after release: the values are followed through
    loop arguments."""
    text = """
func.func @carried(%A: memref<?x?xbf16>, %K: index) {
  %r = aref.create : !aref.ref<[tensor<64x64xbf16>], depth = 2>
  aref.warp_specialize partition producer warps(4) regs(40) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    scf.for %k = %c0 to %K step %c64 {
      %a = tile.load %A[%c0, %k] : memref<?x?xbf16> -> tensor<64x64xbf16>
      aref.put %r, %a : !aref.ref<[tensor<64x64xbf16>], depth = 2>
    }
  } partition consumer warps(4) regs(232) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = tile.zeros : tensor<64x64xbf16>
    %last = scf.for %k = %c0 to %K step %c64 iter_args(%prev = %zero) -> (tensor<64x64xbf16>) {
      %a = aref.get %r : !aref.ref<[tensor<64x64xbf16>], depth = 2>
      aref.consumed %r : !aref.ref<[tensor<64x64xbf16>], depth = 2>
      scf.yield %a : tensor<64x64xbf16>
    }
    %twice = arith.addf %last, %last : tensor<64x64xbf16>
  }
  func.return
}
"""
    module = tawa.parse(text, "carried.mlir")
    with pytest.raises(TawaError) as info:
        VerifyProtocolPass().apply(tawa.context(), module)
    err = info.value
    assert err.message.startswith("tawa-verify-protocol: slot read after it was released in @carried (K = 64)")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "arith.addf" in t)
    assert err.where.startswith(f"carried.mlir:{line}:"), err.where  # the read after the loop
    assert "arith.addf reads slot 0 of %r" in err.details[-1]


# --------------------------------------------------------------------------- the examples


@pytest.mark.parametrize(("example", "options"), [
    pytest.param(example, options, id=f"{example.stem}-{'-'.join(f'{k}={v}' for k, v in options.items()) or 'defaults'}",
                 marks=[] if (example.stem, options) == ("gemm", {}) else [pytest.mark.slow])
    for example in EXAMPLES for options in ({}, {"persistent": True}, {"stages": 3})
])
def test_examples_are_proved_at_the_aref_level(example: Path, options: dict):
    """tawa-assign-stage-phase proves each example's slots (fast tier: the
    GEMM at its defaults), and tawa-verify-protocol proves them again
    without changing the IR."""
    module = _aref_level(example.read_text(), **options)
    before = _text(module)
    VerifyProtocolPass().apply(tawa.context(), module)
    assert _text(module) == before


# --------------------------------------------------------------------------- broken consumers


def _release_before_wait(module) -> None:
    """The consumer releases slot k-1 before the tile.dot_wait 1 that retires its dot."""
    loop = next(o for o in module.walk() if isinstance(o, scf.ForOp)
                and any(isinstance(x, tile.DotAsyncOp) for x in o.body.walk()))
    wait = next(o for o in loop.body.block.ops if isinstance(o, tile.DotWaitOp))
    release = next(o for o in loop.body.block.ops if isinstance(o, scf.IfOp)
                   and any(isinstance(x, aref.ConsumedOp) for x in o.walk()))
    for op in (release.cond.owner, release):
        op.detach()
        loop.body.block.insert_op_before(op, wait)


def _drop_last_release(module) -> None:
    """The aref.consumed after the main loop is gone."""
    loop = next(o for o in module.walk() if isinstance(o, scf.ForOp)
                and any(isinstance(x, tile.DotAsyncOp) for x in o.body.walk()))
    after = loop.next_op
    while not any(isinstance(x, aref.ConsumedOp) for x in after.walk()):
        after = after.next_op
    Rewriter.erase_op(next(x for x in after.walk() if isinstance(x, aref.ConsumedOp)))


@pytest.mark.parametrize("persistent", [False, True], ids=["one-program-per-CTA", "persistent"])
@pytest.mark.parametrize("mutation, problem, at", [
    (_release_before_wait, "slot released while a tile.dot_async may still read it", "aref.consumed"),
    (_drop_last_release, "partition ends holding a slot", "aref.get"),
], ids=["release-before-dot-wait", "drop-last-release"])
def test_broken_consumers_are_rejected_at_the_aref_level(mutation, problem, at, persistent, monkeypatch):
    """The two holes of the lowered proof's atomic blocks, caught before
    lowering: tawa-assign-stage-phase rejects them (the compile stops
    there), and tawa-verify-protocol on the printed aref-level IR locates
    the error at the offending op's line, the partition's events as notes.
    A persistent kernel that drops its last release deadlocks in its next
    program, which the search reports first."""
    monkeypatch.setenv("TAWA_PROOF_CACHE", "0")
    gemm = (ROOT / "examples" / "gemm.mlir").read_text()
    with pytest.raises(TawaError) as info:
        _aref_level(gemm, mutate=mutation, stages=2, persistent=persistent)
    assert info.value.message.startswith("tawa-verify-protocol: ")
    text = _text(_aref_level(gemm, mutate=mutation, verify=False, stages=2, persistent=persistent))
    module = tawa.parse(text, "broken.mlir")
    with pytest.raises(TawaError) as info:
        VerifyProtocolPass().apply(tawa.context(), module)
    err = info.value
    if persistent and mutation is _drop_last_release:
        problem, at = "deadlock", "aref.put"
    assert err.message.startswith(f"tawa-verify-protocol: {problem} in @gemm ("), err.message
    line = int(err.where.split(":")[1])
    op_text = re.sub(r"^(%\w+(, %\w+)* = )?", "", text.splitlines()[line - 1].strip())
    assert op_text.startswith(at), op_text
    assert all(re.match(r"broken\.mlir:\d+:\d+: note: ", n) for n in err.details) and len(err.details) > 3
    if mutation is _release_before_wait:
        assert "aref.consumed releases slot 0" in err.details[-1]
        assert any("tile.dot_async reads slot 0" in n for n in err.details)


@pytest.mark.parametrize("name, problem", [
    ("release_before_wait", "slot released while a tile.dot_async may still read it"),
    ("no_last_release", "partition ends holding a slot"),
    ("read_after_release", "slot read after it was released"),
    ("released_twice", "slot released that is not held"),
])
def test_hand_written_broken_consumers(name: str, problem: str):
    """Inputs/aref_gemm.mlir's broken consumers (slots left to their
    counts), in-process: each error at its op, in one line."""
    module = tawa.parse(_chunk(name), "aref_gemm.mlir")
    with pytest.raises(TawaError) as info:
        verify_aref_kernel(_kernel(module))
    assert info.value.message.startswith(f"tawa-verify-protocol: {problem} in @{name} (")
    assert re.fullmatch(r"aref_gemm\.mlir:\d+:\d+", info.value.where)
    assert "\n" not in info.value.message


def test_the_correct_gemm_is_proved_and_the_check_can_be_turned_off():
    module = tawa.parse(_chunk("gemm"), "g.mlir")
    verify_aref_kernel(_kernel(module))
    broken = tawa.parse(_chunk("release_before_wait"), "b.mlir")
    AssignStagePhasePass(verify=False).apply(tawa.context(), broken)  # no error
    with pytest.raises(TawaError, match="slot released while a tile.dot_async"):
        AssignStagePhasePass().apply(tawa.context(), broken)  # idempotent: verifies the named slots


# --------------------------------------------------------------------------- what the pass refuses


def test_ir_between_lower_aref_and_materialize_partitions_is_refused():
    module = tawa.parse((ROOT / "examples" / "gemm.mlir").read_text(), "gemm.mlir")
    tawa_opt_steps = ["tawa-warp-specialize", "tawa-pipeline", "tawa-assign-stage-phase", "tawa-lower-aref"]
    from tawa.transforms import get_all_passes

    passes = get_all_passes()
    for name in tawa_opt_steps:
        passes[name]()().apply(tawa.context(), module)
    with pytest.raises(TawaError, match="between tawa-lower-aref and tawa-materialize-partitions"):
        VerifyProtocolPass().apply(tawa.context(), module)


def test_a_stage_outside_the_ring_is_a_located_error():
    module = tawa.parse(_chunk("gemm"), "g.mlir")
    AssignStagePhasePass(verify=False).apply(tawa.context(), module)
    text = _text(module)
    # The consumer's get names stage 2 of a ring of depth 2.
    get = next(line for line in text.splitlines() if "aref.get %r[" in line)
    stage = re.search(r"aref\.get %r\[(%\w+),", get).group(1)
    bad = text.replace(get, get.replace(f"[{stage},", "[%c2_bad,")).replace(
        "%zero = tile.zeros", "%c2_bad = arith.constant 2 : index\n      %zero = tile.zeros")
    with pytest.raises(TawaError) as info:
        VerifyProtocolPass().apply(tawa.context(), tawa.parse(bad, "bad.mlir"))
    assert "names stage 2 phase" in info.value.message and "depth 2" in info.value.message
    assert info.value.where.startswith("bad.mlir:")


# --------------------------------------------------------------------------- in tawa-hopper-pipeline


def _pipeline_error(monkeypatch, mutation) -> TawaError:
    """examples/gemm.mlir through `HopperPipelinePass(stages=2).apply`
    with `mutation` applied right after tawa-pipeline (in the compile and
    in its aref-level diagnosis alike); the error."""
    monkeypatch.setenv("TAWA_PROOF_CACHE", "0")
    plain = PipelinePass.apply

    def mutated(self, ctx, module):
        plain(self, ctx, module)
        mutation(module)

    monkeypatch.setattr(PipelinePass, "apply", mutated)
    module = tawa.parse((ROOT / "examples" / "gemm.mlir").read_text(), "k.mlir")  # as `_aref_level`'s
    with pytest.raises(TawaError) as info:
        HopperPipelinePass(stages=2).apply(tawa.context(), module)
    return info.value


@pytest.mark.parametrize("mutation", [_release_before_wait, _drop_last_release],
                         ids=["release-before-dot-wait", "drop-last-release"])
def test_the_pipeline_reports_a_broken_slot_use_at_the_aref_level(mutation, monkeypatch):
    """tawa-hopper-pipeline runs tawa-assign-stage-phase without its proof
    and proves the lowered kernel; where a later step fails, the aref-level
    proof's error is the compile's: the same problem, op, scenario and
    notes as tawa-assign-stage-phase{verify=true} gives at that point."""
    monkeypatch.setenv("TAWA_PROOF_CACHE", "0")
    gemm = (ROOT / "examples" / "gemm.mlir").read_text()
    with pytest.raises(TawaError) as info:
        _aref_level(gemm, mutate=mutation, stages=2)
    expected = info.value
    err = _pipeline_error(monkeypatch, mutation)
    assert (err.message, err.where, err.details) == (expected.message, expected.where, expected.details)
    assert err.message.startswith("tawa-verify-protocol: ") and "partition" in err.message


def test_a_later_error_stands_where_the_aref_level_proof_finds_none(monkeypatch):
    """A failing step after tawa-assign-stage-phase whose kernel the
    aref-level proof proves: the step's own error."""
    from tawa.transforms.lower.lower_aref import LowerArefPass

    def refuse(self, ctx, module):
        raise TawaError("tawa-lower-aref: refused", "gemm.mlir:1:1")

    monkeypatch.setattr(LowerArefPass, "apply", refuse)
    module = tawa.parse((ROOT / "examples" / "gemm.mlir").read_text(), "gemm.mlir")
    with pytest.raises(TawaError, match="tawa-lower-aref: refused"):
        HopperPipelinePass(stages=2).apply(tawa.context(), module)


def test_a_compile_that_succeeds_skips_the_aref_level_proof(monkeypatch):
    """The lowered kernel's proof stands for the aref-level one: a compile
    that succeeds never runs `verify_aref_kernel`."""
    from tawa.transforms.pipeline import assign_stage_phase

    def unexpected(*args, **kwargs):
        raise AssertionError("the aref-level proof ran")

    monkeypatch.setattr(assign_stage_phase, "verify_aref_kernel", unexpected)
    module = tawa.parse((ROOT / "examples" / "gemm.mlir").read_text(), "gemm.mlir")
    HopperPipelinePass(stages=2, prepare=False).apply(tawa.context(), module)
