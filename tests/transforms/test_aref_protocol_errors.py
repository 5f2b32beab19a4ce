"""The concurrent simulator reports broken aref protocols with a clear message
instead of hanging or computing garbage."""

from __future__ import annotations

import numpy as np
import pytest

import tawa
from tawa.interpreters.errors import SimulationError
from tawa.interpreters.schedule import Schedule

T = "!aref.ref<[tensor<64x64xf32>], depth = 2>"


def program(consumer_body: str, trips: int = 4) -> str:
    return f"""
func.func @k(%out: memref<?x?xf32>) {{
  %r = aref.create : {T}
  aref.warp_specialize partition producer warps(4) regs(40) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant {trips} : index
    scf.for %i = %c0 to %n step %c1 {{
      %z = tile.zeros : tensor<64x64xf32>
      aref.put %r, %z : {T}
    }}
  }} partition consumer warps(8) regs(232) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant {trips} : index
    scf.for %i = %c0 to %n step %c1 {{
{consumer_body}
    }}
  }}
  func.return
}}"""


GET = f"      %v = aref.get %r : {T}\n"
USE = "      tile.store %v, %out[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>\n"
RELEASE = f"      aref.consumed %r : {T}\n"
POLICIES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=3)]


def run(text: str, schedule: Schedule) -> None:
    out = np.full((64, 64), np.nan, dtype=np.float32)
    tawa.interpret(text, "k", (1,), out, schedule=schedule)


@pytest.mark.parametrize("schedule", POLICIES)
def test_correct_protocol_runs(schedule):
    run(program(GET + USE + RELEASE), schedule)


@pytest.mark.parametrize("schedule", POLICIES)
def test_missing_consumed_is_a_deadlock(schedule):
    with pytest.raises(SimulationError) as info:
        run(program(GET + USE), schedule)
    msg = str(info.value)
    assert "deadlock in @k program (0, 0, 0)" in msg
    assert "producer waits at aref.put" in msg and "for an empty slot" in msg
    assert "consumer waits at aref.get" in msg


@pytest.mark.parametrize("schedule", POLICIES)
def test_slot_consumed_twice(schedule):
    with pytest.raises(SimulationError, match="aref.consumed of %r with no borrowed slot"):
        run(program(GET + RELEASE + RELEASE), schedule)


@pytest.mark.parametrize("schedule", POLICIES)
def test_use_after_consumed(schedule):
    with pytest.raises(SimulationError, match="tile.store uses a value of slot 0 of %r after aref.consumed"):
        run(program(GET + RELEASE + USE), schedule)


@pytest.mark.parametrize("schedule", POLICIES)
def test_get_that_no_put_can_reach(schedule):
    # Two gets per iteration: the consumer wants more values than are ever put.
    second = f"      %w = aref.get %r : {T}\n"
    with pytest.raises(SimulationError, match="deadlock") as info:
        run(program(GET + second + RELEASE + RELEASE), schedule)
    assert "consumer waits at aref.get" in str(info.value)


def test_consumer_ending_with_a_borrowed_slot():
    # One trip: no deadlock (the ring has room), but the slot is never released.
    with pytest.raises(SimulationError, match="partition consumer ends holding slot 0 of %r"):
        run(program(GET + USE, trips=1), Schedule())


def test_release_while_async_dot_reads_the_slot():
    text = """
func.func @k(%out: memref<?x?xf32>) {
  %r = aref.create : !aref.ref<[tensor<64x16xbf16>], depth = 2>
  aref.warp_specialize partition producer warps(4) regs(40) {
    %z = tile.zeros : tensor<64x16xbf16>
    aref.put %r, %z : !aref.ref<[tensor<64x16xbf16>], depth = 2>
  } partition consumer warps(8) regs(232) {
    %c0 = arith.constant 0 : index
    %acc = tile.zeros : tensor<64x64xf32>
    %a = aref.get %r : !aref.ref<[tensor<64x16xbf16>], depth = 2>
    %d = tile.dot_async %a, %a, %acc {rhs_transposed} : tensor<64x16xbf16>, tensor<64x16xbf16> -> tensor<64x64xf32>
    aref.consumed %r : !aref.ref<[tensor<64x16xbf16>], depth = 2>
    %e = tile.dot_wait 0 (%d) : tensor<64x64xf32>
    tile.store %e, %out[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  }
  func.return
}"""
    with pytest.raises(SimulationError, match="while the tile.dot_async reading it is in flight"):
        run(text, Schedule())
    fixed = text.replace(
        "    aref.consumed %r : !aref.ref<[tensor<64x16xbf16>], depth = 2>\n    %e = tile.dot_wait 0 (%d) : tensor<64x64xf32>\n",
        "    %e = tile.dot_wait 0 (%d) : tensor<64x64xf32>\n    aref.consumed %r : !aref.ref<[tensor<64x16xbf16>], depth = 2>\n",
    )
    run(fixed, Schedule())


def test_unfinished_dot_result_use():
    text = """
func.func @k(%out: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.zeros : tensor<64x16xbf16>
  %acc = tile.zeros : tensor<64x64xf32>
  %d = tile.dot_async %a, %a, %acc {rhs_transposed} : tensor<64x16xbf16>, tensor<64x16xbf16> -> tensor<64x64xf32>
  tile.store %d, %out[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  func.return
}"""
    with pytest.raises(SimulationError, match="tile.store uses the result of a tile.dot_async that no tile.dot_wait"):
        run(text, Schedule())


def test_sequential_put_into_full_slot():
    text = """
func.func @k(%out: memref<?x?xf32>) {
  %r = aref.create : !aref.ref<[tensor<64x64xf32>], depth = 1>
  %z = tile.zeros : tensor<64x64xf32>
  aref.put %r, %z : !aref.ref<[tensor<64x64xf32>], depth = 1>
  aref.put %r, %z : !aref.ref<[tensor<64x64xf32>], depth = 1>
  func.return
}"""
    with pytest.raises(SimulationError, match="aref.put cannot proceed and nothing else runs: for an empty slot"):
        run(text, Schedule())


def test_unknown_policy():
    with pytest.raises(tawa.diagnostics.TawaError, match="unknown schedule policy 'fifo'"):
        Schedule("fifo")
