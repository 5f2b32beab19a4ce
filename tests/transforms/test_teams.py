"""Teams of consumers (ping-pong; `tawa-hopper-pipeline{teams=2}`,
tawa/transforms/teams.py) on the CPU simulators: the 64x256 GEMM whose two
consumer warp groups take turns over the programs of their CTA.

* Every pass from `tawa-persistent` (which divides the programs among the
  teams) to the last structured IR computes what the tile program computes:
  bit for bit up to `tawa-lower-aref` (the same tile ops), within bf16
  rounding after; several programs per CTA, under each schedule.
* The lowered kernel over trip counts around its 4-deep ring (0, 1, D-1,
  D, D+1, 2D+1), an odd and an even number of programs per CTA, and bit for
  bit against the kernel of one team (the same programs, one after another).
* Each team's ring position is right only with the other teams' skips: a
  skip one short deadlocks the aref-level simulator, and the lowered waits
  are right only with the turns (`tawa-verify-protocol` finds the phase
  aliasing without them).
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import pytest
from example_cases import lowered_gemm, simulate_gemm
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import InsertPoint, Rewriter

import tawa
from tawa.diagnostics import TawaError
from tawa.dialects import aref, nvgpu
from tawa.interpreters.errors import SimulationError
from tawa.interpreters.schedule import Schedule
from tawa.kernels.gemm import GemmConfig, gemm_source
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.pingpong import TURNS
from tawa.transforms.prepare_ptx import PreparePtxPass
from tawa.transforms.verify_protocol import VerifyProtocolPass

SOURCE = gemm_source(GemmConfig(64, 256))
TILE = (64, 256)
SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=7)]
EXACT = {"tawa-persistent", "tawa-assign-stage-phase", "tawa-lower-aref"}


@cache
def after_each_pass(teams: int = 2, stages: int = 4) -> dict[str, ModuleOp]:
    """The 64x256 GEMM after each pass of the pipeline with `teams`."""
    pipeline = HopperPipelinePass(prepare=False, teams=teams, stages=stages)
    module = tawa.parse(SOURCE, "gemm_64x256.mlir")
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    out = {}
    for p in [*pipeline.planned_steps(module), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
        out[p.name] = module.clone()
    return out


def lowered(teams: int = 2) -> ModuleOp:
    return list(after_each_pass(teams).values())[-1]


PASSES = [n for n in after_each_pass() if n not in ("tawa-pipeline", "tawa-overlap-dots", "tawa-cache-hints",
                                                     "tawa-check-resources", "tawa-verify-protocol")]


def _ragged(trips: int) -> int:
    return 64 * trips - 8 if trips else 0


@pytest.mark.parametrize("name", PASSES)
@pytest.mark.parametrize("schedule", [s if s.policy == "random" else pytest.param(s, marks=pytest.mark.slow) for s in SCHEDULES],
                         ids=lambda s: s.policy)
def test_each_pass_computes_the_product(name: str, schedule: Schedule):
    # 5 row tiles x 2 column tiles = 10 programs on 3 CTAs: 4, 3 and 3 programs, each team 1 or 2.
    c, ref = simulate_gemm(after_each_pass()[name], 300, 300, _ragged(3), schedule, ctas=3, seed=3, tile=TILE)
    got = c.astype(np.float32)
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written"
    if name in EXACT:
        plain, _ = simulate_gemm(tawa.parse(SOURCE, "gemm_64x256.mlir"), 300, 300, _ragged(3), schedule, seed=3,
                                 tile=TILE)
        assert np.array_equal(got, plain.astype(np.float32))
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-2


@pytest.mark.parametrize("trips", [*(pytest.param(t, marks=pytest.mark.slow) for t in (0, 1)), 3,
                                   *(pytest.param(t, marks=pytest.mark.slow) for t in (4, 5, 9))])
@pytest.mark.parametrize("ctas", [pytest.param(2, marks=pytest.mark.slow), 3])
def test_trip_counts_around_the_ring_match_one_team(trips: int, ctas: int):
    schedule = SCHEDULES[trips % len(SCHEDULES)]
    m, n, k = 64 * 5 - 24, 256 + 40, _ragged(trips)  # 10 programs: 5 each on 2 CTAs, 4/3/3 on 3
    c, ref = simulate_gemm(lowered(2), m, n, k, schedule, ctas=ctas, seed=trips, tile=TILE)
    one, _ = simulate_gemm(lowered(1), m, n, k, schedule, ctas=ctas, seed=trips, tile=TILE)
    got = c.astype(np.float32)
    assert not np.isnan(got).any()
    assert np.array_equal(got, one.astype(np.float32)), "two teams differ from one"
    if k:
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-2
    else:
        assert not got.any()


def test_a_skip_one_short_deadlocks():
    module = after_each_pass()["tawa-persistent"].clone()
    (skip,) = [o for o in module.walk() if isinstance(o, aref.SkipOp)]
    one = arith.ConstantOp.from_int_and_width(1, skip.count.type)
    less = arith.SubiOp(skip.count, one.result)
    Rewriter.insert_op([one, less], InsertPoint.before(skip))
    skip.operands[1] = less.result
    with pytest.raises(SimulationError, match="deadlock"):
        simulate_gemm(module, 300, 300, _ragged(3), SCHEDULES[0], ctas=2, seed=0, tile=TILE)


@pytest.mark.slow
def test_the_turns_are_what_makes_the_waits_right():
    module = after_each_pass()["tawa-expand-fragment-stores"].clone()
    turns = [o for o in module.walk() if isinstance(o, nvgpu.NamedBarrierSyncOp | nvgpu.NamedBarrierArriveOp)
             and o.barrier_id.value.data in (TURNS, TURNS + 1)]
    assert len(turns) == 5  # team 1's first hand-over; each team's turn; each team's hand-over
    VerifyProtocolPass().apply(tawa.context(), module.clone())
    for o in turns:
        Rewriter.erase_op(o)
    with pytest.raises(TawaError, match="phase aliasing|read during load"):
        VerifyProtocolPass().apply(tawa.context(), module)


# --------------------------------------------------------------------------- beyond the GEMM


@pytest.mark.parametrize("schedule", [s if s.policy == "random" else pytest.param(s, marks=pytest.mark.slow) for s in SCHEDULES],
                         ids=lambda s: s.policy)
def test_causal_attention_teams_take_programs_of_different_lengths(schedule: Schedule):
    """Causal attention: each program's key loop stops at its diagonal, so
    the skips of a program are its own trip count, recomputed from its
    program id; with Q got once per program, a skip of 1 too.  Two teams at
    the aref level (after `tawa-assign-stage-phase`) compute what the tile
    program computes, bit for bit, 6 programs on 4 CTAs."""
    from example_cases import EXAMPLES, case, fresh_outputs
    from xdsl.passes import PassPipeline

    from tawa.transforms.assign_stage_phase import AssignStagePhasePass
    from tawa.transforms.persistent import PersistentPass
    from tawa.transforms.pipeline import PipelinePass
    from tawa.transforms.warp_specialize import WarpSpecializePass

    text = (EXAMPLES / "attention_fwd.mlir").read_text()
    module = tawa.parse(text, "attention_fwd.mlir")
    PassPipeline((WarpSpecializePass(teams=2, strict=True), PipelinePass(stages=2),
                  PersistentPass(order="column"), AssignStagePhasePass())).apply(tawa.context(), module)
    skips = [o for o in module.walk() if isinstance(o, aref.SkipOp)]
    assert len(skips) >= 2  # Q (one per program) and the K and V ring (its trip count)
    c = case("attention_fwd_causal", 3, np.random.default_rng(1))
    want = fresh_outputs(c)
    tawa.interpret(tawa.parse(text, "attention_fwd.mlir"), "attention_fwd_causal", c.grid, *want)
    got = fresh_outputs(c)
    tawa.interpret(module, "attention_fwd_causal", c.grid, *got, schedule=schedule, ctas=4)
    for i in c.outputs:
        assert np.array_equal(got[i].astype(np.float64), want[i].astype(np.float64))


SKIP_SOURCE = """
func.func @k(%n: index, %flag: i1) {
  %r = aref.create : !aref.ref<[tensor<64x64xbf16>], depth = 2>
  aref.warp_specialize partition consumer warps(4) regs(240) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %x = arith.constant 0 : index
    %two = arith.muli %n, %c1 : index
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %i to %two step %c1 {
        %a = aref.get %r : !aref.ref<[tensor<64x64xbf16>], depth = 2>
        %b = aref.get %r : !aref.ref<[tensor<64x64xbf16>], depth = 2>
      }
      scf.if %flag {
        %c = aref.get %r : !aref.ref<[tensor<64x64xbf16>], depth = 2>
      }
    }
    %y = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %x) -> (index) {
      %next = arith.addi %acc, %c1 : index
      scf.yield %next : index
    }
    scf.for %k = %c0 to %y step %c1 {
      %d = aref.get %r : !aref.ref<[tensor<64x64xbf16>], depth = 2>
    }
  }
  func.return
}
"""


def _skip_source(bad: bool) -> tuple[ModuleOp, aref.WarpSpecializeOp]:
    text = SKIP_SOURCE if bad else SKIP_SOURCE.replace("to %y step", "to %n step")
    module = tawa.parse(text, "skips.mlir")
    (ws,) = [o for o in module.walk() if isinstance(o, aref.WarpSpecializeOp)]
    return module, ws


def test_the_skips_keep_loops_whose_gets_are_nested_and_collapse_the_others():
    from tawa.transforms.teams import skips_of

    _, ws = _skip_source(bad=False)
    out = skips_of(ws.partitions[0].block)
    text = "\n".join(str(o) for o in out.ops)
    # The outer loop is kept (its gets are in an inner loop and an scf.if); the inner loop,
    # whose body gets twice unconditionally, becomes one skip of 2 x its trips; the if keeps
    # its skip of 1; the last loop becomes one skip of its trips.
    loops = [o for o in out.walk() if isinstance(o, scf.ForOp)]
    assert len(loops) == 1 and not loops[0].iter_args
    counts = [o.count.owner for o in out.walk() if isinstance(o, aref.SkipOp)]
    assert [type(c).__name__ for c in counts] == ["MuliOp", "ConstantOp", "SelectOp"], text
    assert any(isinstance(o, scf.IfOp) for o in loops[0].body.block.ops)


def test_a_bound_from_a_loop_carried_value_cannot_be_skipped():
    from tawa.transforms.teams import skips_of

    _, ws = _skip_source(bad=True)
    with pytest.raises(TawaError, match="teams: the bounds of this 'scf.for' come from 'scf.for'"):
        skips_of(ws.partitions[0].block)


# --------------------------------------------------------------------------- the proof


def _before_the_proof(**options) -> ModuleOp:
    pipeline = HopperPipelinePass(prepare=False, stages=4, **options)
    module = tawa.parse(SOURCE, "gemm_64x256.mlir")
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for p in pipeline.planned_steps(module):
        if p.name == VerifyProtocolPass.name:
            return module
        p.apply(ctx, module)
    raise AssertionError("the pipeline has no tawa-verify-protocol")


def _without_turns(module: ModuleOp) -> ModuleOp:
    module = module.clone()
    for o in [o for o in module.walk() if isinstance(o, nvgpu.NamedBarrierSyncOp | nvgpu.NamedBarrierArriveOp)
              and o.barrier_id.value.data in (TURNS, TURNS + 1)]:
        Rewriter.erase_op(o)
    return module


def _verdict(module: ModuleOp, reduce: bool, monkeypatch) -> str:
    import functools

    import tawa.transforms.verify_protocol as verify_protocol

    monkeypatch.setenv("TAWA_PROOF_CACHE", "0")
    monkeypatch.setattr(verify_protocol, "_PROVED", set())  # no proof from the other search
    monkeypatch.setattr(verify_protocol, "Explorer", functools.partial(verify_protocol.Explorer, reduce=reduce))
    try:
        VerifyProtocolPass(max_states=1_000_000).apply(tawa.context(), module.clone())
    except TawaError as err:
        found = re.search(r"tawa-verify-protocol: (.+?) in @", str(err))
        return found.group(1) if found else str(err)  # the violation
    return "proved"


@pytest.mark.slow
@pytest.mark.parametrize("mutate", [False, True], ids=["teams", "teams-without-turns"])
def test_the_reduced_search_agrees_with_the_full_search_on_teams(mutate, monkeypatch):
    """The verifier's reduced search (the persistent sets, which use each
    role's intended phases: knowledge passed at the turns' named barriers)
    and the full search give the same verdict on the teams kernel and on the
    kernel without its turns (read during load)."""
    module = _before_the_proof(teams=2)
    if mutate:
        module = _without_turns(module)
    full, reduced = _verdict(module, False, monkeypatch), _verdict(module, True, monkeypatch)
    assert reduced == full == ("read during load" if mutate else "proved")


@pytest.mark.slow
def test_teams_in_clusters_are_proved(monkeypatch):
    """Two teams in 2-CTA clusters: the reduced search proves the kernel in
    about a second (3 minutes before the turns' knowledge made the team
    warp groups' waits count as consecutive; the full search passes a
    million states).  Without the turns it finds the read during load, as
    the full search does (about 35 s each, so not run here)."""
    assert _verdict(_before_the_proof(teams=2, cluster=2), True, monkeypatch) == "proved"


@pytest.mark.slow
@pytest.mark.parametrize("trips", [0, 1, 5, 6, 11])  # around the 5-deep ring
def test_a_single_staging_buffer_per_warp_group_gives_the_same_bits(trips: int):
    """`staging=single` (one 64x64 chunk buffer per warp group, each chunk
    waiting for the previous chunk's store): the 5-deep ring it makes room
    for, on the CTA simulator, bit for bit like one team."""
    schedule = SCHEDULES[trips % len(SCHEDULES)]
    k = _ragged(trips)
    single = lowered_gemm(SOURCE, teams=2, staging="single", stages=5)
    c, ref = simulate_gemm(single, 300, 300, k, schedule, ctas=3, seed=trips, tile=TILE)
    one, _ = simulate_gemm(lowered(1), 300, 300, k, schedule, ctas=3, seed=trips, tile=TILE)
    assert np.array_equal(c.astype(np.float32), one.astype(np.float32))
    if k:
        assert np.linalg.norm(c.astype(np.float32) - ref) / np.linalg.norm(ref) < 1e-2
