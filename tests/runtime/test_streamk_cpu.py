"""Stream-K GEMMs without a GPU (`GemmConfig.stream_k`, `tawa.kernels.streamk`).

* the stream-K program in the CPU interpreter against NumPy on grids of a
  few programs (the program reads its grid, so a small one exercises the
  same schedule as 132 programs on a larger problem): fewer tiles than
  programs, one to two waves, several data-parallel waves; a program's
  range inside one tile and across several; ragged M, N and K, K = 0; C
  and W poisoned with NaN; C the same bit for bit whatever order the
  programs run in (the last contributor adds the partials in program
  order), the counters back at 0;
* the program lowered by `tawa-hopper-pipeline` and simulated on 2 CTAs in
  three orders computes what the tile program computes; ptxas assembles it
  without spills;
* the configuration's rules, grid and workspace; the cost model's
  schedule (a whole wave of tiles costs what the data-parallel program
  does; 2.2 waves cost less) and the candidates' stream-K axis.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace

import numpy as np
import pytest

import tawa
from tawa.analysis.gemm_cost import estimate
from tawa.diagnostics import TawaError
from tawa.interpreters.schedule import Schedule
from tawa.kernels.gemm import GemmConfig, counters_shape, gemm_grid, gemm_source, unsupported, workspace_shape
from tawa.kernels.streamk import PROGRAMS
from tawa.runtime.autotune import DEFAULT_SPACE, Choice, GemmProblem, heuristic, space_choices
from tawa.runtime.splitk import SplitKGemm
from tests.runtime.test_splitk_cpu import NUMPY_TYPES, ORDERS, lowered, operands, rel_err

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) is not on PATH")


def run_streamk(module, config: GemmConfig, A, B, M: int, N: int, K: int, programs: int, counters=None, **kw):
    """(C, W, counters) after one launch of `programs` programs, C and W poisoned with NaN."""
    C = np.full((M, N), np.nan, NUMPY_TYPES[config.c_dtype])
    W = np.full(workspace_shape(config, M, N), np.nan, np.float32)
    counters = np.zeros(counters_shape(config, M, N), np.int32) if counters is None else counters
    tawa.interpret(module, config.kernel, (programs,), A, B, C, W, counters, M, N, K, **kw)
    return C, W, counters


CASES = [
    # (config, M, N, K, programs): tiles of 64x64 and K-steps of 64.
    (GemmConfig(64, 64, 64, stream_k=True), 130, 100, 640, 4),  # 6 tiles < 2·4 programs: all shared, 15 steps each
    (GemmConfig(64, 64, 64, stream_k=True), 70, 130, 5 * 64 + 8, 7),  # 6 tiles < 7 programs: ranges inside a tile
    (GemmConfig(64, 64, 64, stream_k=True), 200, 260, 3 * 64, 3),  # 20 tiles: 5 data-parallel waves, then 5 shared
    (GemmConfig(64, 64, 64, stream_k=True), 64, 64, 2 * 64, 5),  # 1 tile, 2 steps: three programs idle
    (GemmConfig(64, 64, 64, stream_k=True), 70, 65, 0, 3),  # K = 0: C = 0
    (GemmConfig(128, 64, 64, stream_k=True), 130, 64, 9 * 64 + 8, 3),
    (GemmConfig(64, 128, 32, "f16", "f16", "f32", stream_k=True), 64, 300, 33 * 32 + 7, 2),
    (GemmConfig(64, 64, 64, b_layout="kn", stream_k=True), 65, 72, 7 * 64, 3),  # B K×N
]


@pytest.mark.parametrize("config, M, N, K, programs", CASES,
                         ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_streamk_program_is_the_product_in_any_program_order(config, M, N, K, programs):
    A, B, ref = operands(config, M, N, K)
    results = []
    for seed, order in enumerate(ORDERS):
        C, _, counters = run_streamk(gemm_source(config), config, A, B, M, N, K, programs, order=order,
                                     schedule=Schedule(seed=seed))
        assert not counters.any(), f"counters not reset ({order})"
        results.append(C.astype(np.float32))
    for order, got in zip(ORDERS[1:], results[1:]):
        assert np.array_equal(got, results[0]), f"C differs in order {order}"
    assert not np.isnan(results[0]).any(), "elements of C never stored"
    if K == 0:
        assert not results[0].any()
    else:
        assert rel_err(results[0], ref) <= (1e-5 if config.c_dtype == "f32" else 1e-2)


def test_a_counter_not_zeroed_is_an_error():
    config, M, N, K, programs = CASES[0]
    A, B, _ = operands(config, M, N, K)
    counters = np.full(counters_shape(config, M, N), 9, np.int32)
    with pytest.raises(TawaError, match=r"counter 1 holds 9, outside \[0, 2\): it was not zeroed"):
        run_streamk(gemm_source(config), config, A, B, M, N, K, programs, counters=counters)


@pytest.mark.parametrize("config, M, N, K, programs", [
    CASES[0],
    pytest.param(*CASES[2], marks=pytest.mark.slow),
    pytest.param(*CASES[1], marks=pytest.mark.slow),
], ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_lowered_streamk_program_computes_the_tile_program(config, M, N, K, programs):
    """The lowered kernel on the CTA simulator, its CTAs in three orders: the tile program's C
    (the simulated wgmma rounds its f32 sums in its own order: within 1e-5 before C's rounding,
    so a bf16 C may differ by an ulp), the same bit for bit in every order, the counters back at
    0, and a second launch on the same counters the same."""
    A, B, _ = operands(config, M, N, K, seed=1)
    want, want_w, _ = run_streamk(gemm_source(config), config, A, B, M, N, K, programs)
    module = lowered(config)
    first = None
    for seed, order in enumerate(ORDERS):
        got, W, counters = run_streamk(module, config, A, B, M, N, K, programs, ctas=2, order=order,
                                       schedule=Schedule(seed=seed))
        written = ~np.isnan(want_w)
        assert np.array_equal(written, ~np.isnan(W)), f"other workspace slots written ({order})"
        assert rel_err(W[written], want_w[written]) <= 1e-5, order
        assert rel_err(got, want) <= 1e-3 and not np.isnan(got.astype(np.float32)).any(), order
        first = got if first is None else first
        assert np.array_equal(got.astype(np.float32), first.astype(np.float32)), order
        assert not counters.any(), f"counters not reset ({order})"
    again, _, _ = run_streamk(module, config, A, B, M, N, K, programs, counters=counters, ctas=2)
    assert np.array_equal(again.astype(np.float32), first.astype(np.float32))


@pytest.mark.slow
@needs_ptxas
@pytest.mark.parametrize("config", [
    GemmConfig(128, 256, 64, stream_k=True),
    GemmConfig(128, 128, 64, stream_k=True),
    GemmConfig(64, 128, 64, stream_k=True),
    GemmConfig(128, 128, 64, "f16", "f16", "f32", stream_k=True),
    GemmConfig(128, 256, 128, "f8E4M3FN", "f8E4M3FN", "bf16", stream_k=True),
], ids=lambda c: c.id)
def test_streamk_kernels_assemble_without_spills(config, tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    gemm = Choice(config).compile()
    assert isinstance(gemm, SplitKGemm) and gemm.name == "gemm_streamk"
    assert "atom.acq_rel.gpu.global.inc.u32" in gemm.ptx and "wgmma.mma_async" in gemm.ptx
    for log in (gemm.assemble().log, gemm.kernel.fallback().assemble().log):
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
        assert spills and all(s == ("0", "0") for s in spills), log


def test_configuration_rules():
    config = GemmConfig(128, 256, 64, stream_k=True)
    assert config.kernel == "gemm_streamk" and config.id == "128x256x64-streamk"
    assert gemm_grid(config, 5000, 7000) == (PROGRAMS,)
    assert workspace_shape(config, 1, 1) == (2 * PROGRAMS, 128, 256)
    assert counters_shape(config, 10**5, 10**5) == (2 * PROGRAMS,)
    for other in (config.replace(split_k=2), config.replace(batched=True),
                  config.replace(epilogue={"bias": True})):
        assert "stream_k with split_k, batched or an epilogue" in unsupported(other)
        with pytest.raises(TawaError, match="stream_k with"):
            gemm_source(other)
    with pytest.raises(TawaError, match="stream_k=1: expected a bool"):
        GemmConfig(stream_k=1)


def test_the_models_schedule():
    """A wave of whole tiles: each program computes one, as the data-parallel program does (same
    main loops); 2.2 waves of 128x256 tiles (3072³): the shared last waves finish sooner."""
    one_wave = GemmProblem(128 * 12, 256 * 11, 4096)  # 132 tiles
    dp = estimate(one_wave, Choice(GemmConfig(128, 256, 64)), stages=4)
    sk = estimate(one_wave, Choice(GemmConfig(128, 256, 64, stream_k=True)), stages=4)
    assert sk.main == pytest.approx(dp.main) and sk.rounds == 1
    cube = GemmProblem(3072, 3072, 3072)
    dp = estimate(cube, Choice(GemmConfig(128, 256, 64)), stages=4)
    sk = estimate(cube, Choice(GemmConfig(128, 256, 64, stream_k=True)), stages=4)
    assert dp.rounds == 3 and sk.rounds == 2 and sk.main < 0.9 * dp.main


def test_candidates_have_a_streamk_axis():
    problem = GemmProblem(3072, 3072, 3072)
    assert not any(c.config.stream_k for c in space_choices(problem, DEFAULT_SPACE))  # measured slower
    choices = space_choices(problem, replace(DEFAULT_SPACE, stream_k=(False, True)))
    streamed = [c for c in choices if c.config.stream_k]
    assert streamed and all(c.cluster == 1 and c.persistent and not c.defer_stores for c in streamed)
    assert not any(c.config.stream_k for c in space_choices(GemmProblem(64, 64, 64, batch=3),
                                                           replace(DEFAULT_SPACE, stream_k=(False, True))))
    assert not heuristic(problem).config.stream_k  # a fused epilogue's caller: whole sums only
