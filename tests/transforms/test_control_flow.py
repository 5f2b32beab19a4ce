"""Control flow a user writes around the K loop (docs/passes.md, "Control
flow"): the programs of tests/transforms/control_flow/ compile through
`tawa-hopper-pipeline` and compute what the tile program computes.

* `test_matches_tile_program`: the last structured output of the pipeline
  (tawa-prepare-ptx less its scf-to-cf step; ring depth 2, persistent, two
  CTAs sharing four programs), run by the CPU simulator, against the tile
  program run by the tile interpreter, on ragged sizes whose loops take
  0, 1 and 3 (= D + 1, the ring wraps) trips; outputs poisoned with NaN.
* `test_assembles_without_spills`: the same kernels, flattened to PTX,
  assemble with `ptxas -arch=sm_90a` without spilling.

What is declined, and the exact message, is in
tests/filecheck/transforms/partition/warp_specialize_control_flow.mlir.  The GPU run
against a float32 reference is tests/runtime/test_control_flow_gpu.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

PROGRAMS = Path(__file__).resolve().parent / "control_flow"
BF16 = ml_dtypes.bfloat16
STAGES = 2
PTXAS = shutil.which("ptxas")
M, N = 200, 150
"""Ragged rows and columns: a 2 x 2 grid of 128 x 128 tiles (2 x 1 of
128 x 256 for nested_loops), partly outside C."""


def _k(trips: int) -> int:
    """A K that takes exactly `trips` 64-wide steps, the last one short."""
    return 0 if trips == 0 else 64 * trips - 21


def _randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(BF16)


def _gemm(trips: tuple[int, ...], rng: np.random.Generator) -> list[Any]:
    k = _k(trips[0])
    return [_randn(rng, M, k), _randn(rng, N, k), None, M, N, k]


def _two_loops(trips: tuple[int, ...], rng: np.random.Generator) -> list[Any]:
    k1, k2 = _k(trips[0]), _k(trips[1])
    a1, b1, a2, b2 = _randn(rng, M, k1), _randn(rng, N, k1), _randn(rng, M, k2), _randn(rng, N, k2)
    return [a1, b1, a2, b2, None, M, N, k1, k2]


def _low_rank(trips: tuple[int, ...], rng: np.random.Generator) -> list[Any]:
    k, r = _k(trips[0]), 40
    return [_randn(rng, M, k), _randn(rng, N, k), _randn(rng, M, r), _randn(rng, N, r), None, M, N, k, r]


def _prefetch_tail(trips: tuple[int, ...], rng: np.random.Generator) -> list[Any]:
    return _gemm((trips[0] + 1,), rng)  # the loop runs ⌈K/64⌉ − 1 times


CASES: dict[str, tuple[Callable[[tuple[int, ...], np.random.Generator], list[Any]], tuple[int, int]]] = {
    "two_loops_chain": (_two_loops, (2, 2)),
    "two_loops_sum": (_two_loops, (2, 2)),
    "prefetch": (_gemm, (2, 2)),
    "prefetch_tail": (_prefetch_tail, (2, 2)),
    "nested_loops": (_gemm, (2, 1)),
    "low_rank_update": (_low_rank, (2, 2)),
}
"""program → (arguments for loop trip counts, grid); the output C is None."""

TRIPS = {
    "two_loops_chain": [(0, 3), (3, 1)],
    "two_loops_sum": [(1, 0), (3, 3)],
    "prefetch": [(0,), (1,), (3,)],
    "prefetch_tail": [(0,), (1,), (3,)],
    "nested_loops": [(0,), (3,)],
    "low_rank_update": [(0,), (3,)],
}


def source(name: str) -> str:
    return (PROGRAMS / f"{name}.mlir").read_text()


@cache
def structured(name: str) -> ModuleOp:
    """The pipeline's last structured output (what the CPU simulator runs)."""
    module = tawa.parse(source(name), f"{name}.mlir")
    ctx = tawa.context()
    HopperPipelinePass(stages=STAGES, prepare=False).apply(ctx, module)
    for p in PreparePtxPass.steps()[:-1]:
        p.apply(ctx, module)
    return module


def run(module: ModuleOp, name: str, trips: tuple[int, ...], schedule: Schedule | None = None) -> np.ndarray:
    make, grid = CASES[name]
    args = make(trips, np.random.default_rng(sum(trips)))
    out = next(i for i, a in enumerate(args) if a is None)
    args[out] = np.full((M, N), np.nan, BF16)
    tawa.interpret(module, name, grid, *args, schedule=schedule)
    return args[out].astype(np.float64)


@pytest.mark.parametrize(
    "name, trips",
    [pytest.param(n, t, id=f"{n}-trips{'x'.join(map(str, t))}",
                  marks=[] if n in ("two_loops_chain", "nested_loops") else [pytest.mark.slow])
     for n, ts in TRIPS.items() for t in ts],
)
def test_matches_tile_program(name: str, trips: tuple[int, ...]):
    want = run(tawa.parse(source(name)), name, trips)
    got = run(structured(name), name, trips, Schedule("random", seed=len(trips)))
    assert not np.isnan(want).any()
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements of C never written"
    if not want.any():
        assert not got.any()
        return
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err <= 1e-2, f"relative error {err:.2e}"


@pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")
@pytest.mark.parametrize("name", [n if n in ("two_loops_chain", "nested_loops") else pytest.param(n, marks=pytest.mark.slow)
                                  for n in CASES])
def test_assembles_without_spills(name: str, tmp_path: Path):
    module = structured(name).clone()
    PreparePtxPass.steps()[-1].apply(tawa.context(), module)
    (tmp_path / "k.ptx").write_text(print_ptx(module))
    res = subprocess.run([PTXAS, "-arch=sm_90a", "-v", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", res.stderr)
    assert spills and all(s == ("0", "0") for s in spills), res.stderr
