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

from functools import cache

import numpy as np
import pytest
from example_cases import simulate_gemm
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import InsertPoint, Rewriter

import tawa
from tawa.diagnostics import TawaError
from tawa.dialects import aref, nvgpu
from tawa.interpreters.schedule import Schedule, SimulationError
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
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: s.policy)
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


@pytest.mark.parametrize("trips", [0, 1, 3, 4, 5, 9])
@pytest.mark.parametrize("ctas", [2, 3])
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
