"""Split-K GEMMs without a GPU (`GemmConfig.split_k`, `tawa.runtime.splitk`,
the heuristic's split; docs/runtime.md, "Split-K").

* the split program in the CPU interpreter against NumPy, its programs in
  three orders: ragged M and N, K not a multiple of BLOCK_K nor of
  split_k·BLOCK_K, empty K-slices (K < split_k·BLOCK_K), K = 0, S = 2..5,
  transposed programs (their partials Cᵀ's, their chunks stored transposed);
  C and W poisoned with NaN; C the same bit for bit in every order (the
  last arriver sums in slice order) and the reduce program's; the counters
  back at 0, and a counter not zeroed an error;
* the split program lowered by `tawa-hopper-pipeline` and simulated on 2
  persistent CTAs in three orders computes what the tile program computes,
  twice on the same counters;
* ptxas assembles split kernels (bf16, fp8, f32 C, B K×N) and their
  thread-epilogue twins without spills;
* the reduce program (dot-free) compiles and computes its tile program;
* the configuration's rules, names and grids; the heuristic's split and
  autotune's split axis;
* `SplitKGemm`: its checks, and (with torch, on CPU tensors, the split
  kernel stood in for by the interpreter) one launch on the cached
  workspace and counters.
"""

from __future__ import annotations

import itertools
import re
import shutil

import ml_dtypes
import numpy as np
import pytest

import tawa
from tawa.analysis.gemm_cost import estimate
from tawa.diagnostics import TawaError
from tawa.interpreters.schedule import Schedule
from tawa.kernels.gemm import (
    GemmConfig,
    consumer_budget,
    counters_shape,
    gemm_grid,
    gemm_reduce_source,
    gemm_source,
    reduce_chunk,
    reduce_chunks,
    reduce_grid,
    unsupported,
    workspace_shape,
)
from tawa.runtime.autotune import (
    MAX_SPLIT_K,
    MIN_SPLIT_K_STEPS,
    WIDE_SPACE,
    Choice,
    GemmProblem,
    Space,
    autotune,
    candidates,
    heuristic,
    ranked,
    split_for,
)
from tawa.runtime.splitk import SplitKGemm, clear_workspaces
from tawa.target.hopper import REGISTER_ESTIMATE_ERROR, SCALAR_REGS_OVERHEAD
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

NUMPY_TYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32,
               "f8E4M3FN": ml_dtypes.float8_e4m3fn}
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) is not on PATH")


def operands(config: GemmConfig, M: int, N: int, K: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B (in the configuration's layout) and the float32 reference A·B."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(NUMPY_TYPES[config.a_dtype])
    kn = config.b_layout == "kn"
    B = rng.standard_normal((K, N) if kn else (N, K)).astype(NUMPY_TYPES[config.b_dtype])
    Bf = B.astype(np.float32)
    return A, B, A.astype(np.float32) @ (Bf if kn else Bf.T)


def slices(config: GemmConfig, K: int) -> list[tuple[int, int]]:
    """K-slice s = [s·Ks, min(K, (s+1)·Ks)), Ks = ⌈⌈K/S⌉/BLOCK_K⌉·BLOCK_K (clamped to K)."""
    S, bk = config.split_k, config.block_k
    ks = -(-(-(-K // S)) // bk) * bk
    return [(min(s * ks, K), min((s + 1) * ks, K)) for s in range(S)]


def run_split(module, config: GemmConfig, A, B, M: int, N: int, K: int, counters=None, **kw):
    """(C, W, counters) after one launch of the split kernel `module`, C and W poisoned with NaN."""
    C = np.full((M, N), np.nan, NUMPY_TYPES[config.c_dtype])
    W = np.full(workspace_shape(config, M, N), np.nan, np.float32)
    counters = np.zeros(counters_shape(config, M, N), np.int32) if counters is None else counters
    tawa.interpret(module, config.kernel, gemm_grid(config, M, N), A, B, C, W, counters, M, N, K, **kw)
    return C, W, counters


def run_reduce(config: GemmConfig, W: np.ndarray, M: int, N: int) -> np.ndarray:
    C = np.full((M, N), np.nan, NUMPY_TYPES[config.c_dtype])
    tawa.interpret(gemm_reduce_source(config), config.reduce_kernel, reduce_grid(config, M, N), W, C, M, N)
    return C


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


CASES = [
    # (config, M, N, K): K = 200 in 3 slices of 128: [0, 128), [128, 200), [200, 200) — the last empty.
    (GemmConfig(64, 64, 64, split_k=3), 100, 72, 200),
    # K = 40 < 4·64: slice 0 is one short step, slices 1-3 are empty.
    (GemmConfig(64, 64, 64, split_k=4), 70, 130, 40),
    (GemmConfig(64, 64, 64, split_k=4), 70, 65, 0),  # K = 0: C = 0
    (GemmConfig(128, 64, 64, split_k=2), 130, 64, 5 * 64 + 8),  # slices of 192 and 136
    (GemmConfig(64, 128, 32, "f16", "f16", "f32", split_k=5), 64, 100, 33 * 32 + 7),
    (GemmConfig(64, 64, 64, b_layout="kn", split_k=3), 65, 72, 7 * 64),  # B K×N
    (GemmConfig(64, 64, 128, "f8E4M3FN", "f8E4M3FN", "bf16", split_k=2), 90, 64, 3 * 128 - 16),
    # Transposed (Cᵀ = B·Aᵀ, W shaped as Cᵀ): ragged M in the tile's columns, the last slice empty.
    (GemmConfig(64, 24, 64, transposed=True, split_k=3), 20, 130, 200),
    (GemmConfig(128, 16, 64, transposed=True, split_k=2), 13, 133, 5 * 64 + 8),
    # Chunks that do not divide the tile: 32, 32 and a last one of 8 columns; 48, 48 and 8, transposed.
    (GemmConfig(64, 72, 64, split_k=3), 70, 150, 600),
    (GemmConfig(64, 104, 64, transposed=True, split_k=3), 100, 130, 500),
]
ORDERS = ("grid", "reversed", "shuffled")


@pytest.mark.parametrize("config, M, N, K", CASES, ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_split_program_is_the_product_in_any_program_order(config, M, N, K):
    """Every program stores its K-slice's partial; the last to arrive at a tile's counter (a
    different program in each order) sums them in slice order: the same C bit for bit, the
    reduce program's, and every counter back at 0."""
    A, B, ref = operands(config, M, N, K)
    results = []
    for seed, order in enumerate(ORDERS):
        C, W, counters = run_split(gemm_source(config), config, A, B, M, N, K, order=order,
                                   schedule=Schedule(seed=seed))
        assert not np.isnan(W).any(), "elements of the workspace never written"
        assert not counters.any(), f"counters not reset ({order})"
        results.append(C.astype(np.float32))
    kn = config.b_layout == "kn"
    for s, (lo, hi) in enumerate(slices(config, K)):
        Bs = (B[lo:hi] if kn else B[:, lo:hi]).astype(np.float32)
        part = A[:, lo:hi].astype(np.float32) @ (Bs if kn else Bs.T)
        ws = W[s].T if config.transposed else W[s]  # a transposed program's partials are Cᵀ's
        if hi == lo:
            assert np.array_equal(ws, np.zeros((M, N), np.float32)), f"empty slice {s} is not zeros"
        else:
            assert rel_err(ws, part) <= 1e-5, f"slice {s} = [{lo}, {hi})"
    for order, got in zip(ORDERS[1:], results[1:]):
        assert np.array_equal(got, results[0]), f"C differs in order {order}"
    if not config.transposed:  # the reduce program sums partials of C
        assert np.array_equal(results[0], run_reduce(config, W, M, N).astype(np.float32))
    assert not np.isnan(results[0]).any()
    if K == 0:
        assert not results[0].any()
    else:
        assert rel_err(results[0], ref) <= (1e-5 if config.c_dtype == "f32" else 1e-2)


def test_a_counter_not_zeroed_is_an_error():
    config, M, N, K = CASES[0]
    A, B, _ = operands(config, M, N, K)
    counters = np.full(counters_shape(config, M, N), 5, np.int32)
    with pytest.raises(TawaError, match=r"counter 0 holds 5, outside \[0, 3\): it was not zeroed"):
        run_split(gemm_source(config), config, A, B, M, N, K, counters=counters)


def lowered(config: GemmConfig, epilogue: str = "auto", source=gemm_source):
    """The split program (or `source`'s program of `config`) after
    tawa-hopper-pipeline, less its final scf-to-cf conversion (as
    tests/transforms/test_lowering_differential.py runs it)."""
    module = tawa.parse(source(config))
    ctx = tawa.context()
    HopperPipelinePass(prepare=False, epilogue=epilogue).apply(ctx, module)
    for p in PreparePtxPass.steps()[:-1]:
        p.apply(ctx, module)
    return module


SIMULATED = [
    (GemmConfig(64, 64, 64, split_k=2), 100, 72, 200),
    CASES[0],
    (GemmConfig(128, 64, 64, split_k=4), 130, 70, 9 * 64 + 8),
    (GemmConfig(64, 24, 64, transposed=True, split_k=2), 20, 130, 200),  # chunks of 8 columns stored transposed
    (GemmConfig(64, 40, 64, transposed=True, split_k=2), 37, 70, 300),  # chunks of 16, 16 and 8
]


@pytest.mark.parametrize("config, M, N, K", [SIMULATED[0], SIMULATED[3],
                                             *(pytest.param(*c, marks=pytest.mark.slow) for c in SIMULATED[1:3]),
                                             pytest.param(*SIMULATED[4], marks=pytest.mark.slow),
                                             *(pytest.param(*c, marks=pytest.mark.slow) for c in (CASES[1], CASES[5]))],
                         ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_lowered_split_program_computes_the_tile_program(config, M, N, K):
    """The lowered kernel on the CTA simulator, its CTAs in three orders: C bit for bit the same
    in every order and on a second launch on the same counters, the counters back at 0, and C
    the tile program's within one rounding of C's type (the simulator sums wgmma's K-steps of 16
    in f32 where the tile interpreter sums BLOCK_K at once: their partials may differ in the
    last bit of f32, which flips an element's rounding now and then)."""
    A, B, _ = operands(config, M, N, K, seed=1)
    want, _, _ = run_split(gemm_source(config), config, A, B, M, N, K)
    want = want.astype(np.float32)
    module = lowered(config)
    first = None
    for seed, order in enumerate(ORDERS):
        got, W, counters = run_split(module, config, A, B, M, N, K, ctas=2, order=order, schedule=Schedule(seed=seed))
        got = got.astype(np.float32)
        first = got if first is None else first
        assert np.array_equal(got, first), order
        assert not counters.any(), f"counters not reset ({order})"
    ulp = np.spacing(np.abs(want).astype(NUMPY_TYPES[config.c_dtype])).astype(np.float32)
    assert np.all(np.abs(first - want) <= ulp), "C differs from the tile program's by more than one rounding"
    again, _, _ = run_split(module, config, A, B, M, N, K, counters=counters, ctas=2)
    assert np.array_equal(again.astype(np.float32), first)


def test_the_simulator_checks_the_counters():
    config, M, N, K = SIMULATED[0]
    A, B, _ = operands(config, M, N, K)
    counters = np.full(counters_shape(config, M, N), 2, np.int32)
    with pytest.raises(TawaError, match=r"nvgpu.counter_arrive in CTA .*: the counter holds 2, outside \[0, 2\)"):
        run_split(lowered(config), config, A, B, M, N, K, counters=counters, ctas=2)


@pytest.mark.slow
@needs_ptxas
@pytest.mark.parametrize("config", [
    GemmConfig(64, 256, 64, split_k=4),  # the heuristic's for 64x8192x8192
    GemmConfig(128, 256, 64, split_k=2),
    GemmConfig(128, 128, 64, "f16", "f16", "f32", split_k=3),
    GemmConfig(128, 128, 64, b_layout="kn", split_k=2),
    GemmConfig(64, 256, 128, "f8E4M3FN", "f8E4M3FN", "bf16", split_k=4),
    GemmConfig(64, 192, 64, split_k=3),
    GemmConfig(64, 56, 64, transposed=True, split_k=2),
    GemmConfig(128, 24, 64, transposed=True, split_k=3),
    GemmConfig(64, 104, 64, transposed=True, split_k=4),  # chunks of 48, 48 and 8
    GemmConfig(128, 200, 64, split_k=2),  # chunks of 96, 96 and 8
], ids=lambda c: c.id)
def test_split_kernels_assemble_without_spills(config, tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    gemm = Choice(config).compile()
    assert isinstance(gemm, SplitKGemm) and gemm.name == "gemm_splitk"
    assert ".target sm_90a" in gemm.ptx and "wgmma.mma_async" in gemm.ptx
    assert "atom.acq_rel.gpu.global.inc.u32" in gemm.ptx and "bar.red.or.pred" in gemm.ptx
    # ... and its thread-epilogue twin (launched where a tensor map cannot hold an operand).
    for log in (gemm.assemble().log, gemm.kernel.fallback().assemble().log):
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
        assert spills and all(s == ("0", "0") for s in spills), log
        assert "wgmma.mma_async instructions are serialized" not in log, log


@pytest.mark.parametrize("config, M, N", [
    (GemmConfig(128, 128, 64, split_k=3), 130, 200),  # bf16 C: a sum, then truncf
    (GemmConfig(64, 128, 64, "f16", "f16", "f32", split_k=2), 70, 136),  # f32 C
], ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_the_reduce_program_compiles_and_computes_the_tile_program(config, M, N):
    """A dot-free tile kernel: every op is the consumers' (docs/passes.md)."""
    W = np.random.default_rng(3).standard_normal((config.split_k, M, N)).astype(np.float32)
    want = run_reduce(config, W, M, N)
    got = np.full((M, N), np.nan, NUMPY_TYPES[config.c_dtype])
    tawa.interpret(lowered(config, source=gemm_reduce_source), config.reduce_kernel, reduce_grid(config, M, N), W, got, M, N, ctas=2)
    assert np.array_equal(got.astype(np.float32), want.astype(np.float32))


def test_configuration_rules():
    config = GemmConfig(64, 256, 64, split_k=4)
    assert config.id == "64x256x64-split4" and config.kernel == "gemm_splitk"
    assert gemm_grid(config, 65, 8192) == (2, 32, 4) and reduce_grid(config, 65, 8192) == (2, 64)  # 64x128 tiles
    assert workspace_shape(config, 65, 100) == (4, 65, 100) and counters_shape(config, 65, 8192) == (64,)
    assert gemm_source(config).startswith(
        "func.func @gemm_splitk(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, "
        "%W: memref<?x?x?xf32>, %Counters: memref<?xi32>,")
    assert ("%arrivals = arith.constant 4 : index\n  %last = tile.counter_arrive %Counters[%tile] count %arrivals"
            in gemm_source(config))
    assert gemm_source(config, "gemm").startswith("func.func @gemm(")
    assert gemm_source(GemmConfig(split_k=1)) == gemm_source(GemmConfig())
    # A chunk's S partials are loaded together: as few chunks as the registers allow.
    assert [reduce_chunk(GemmConfig(64, n, 64, split_k=2)) for n in (64, 128, 192, 256, 200, 72)] == [64, 128, 96, 128, 104, 72]
    assert reduce_chunks(GemmConfig(64, 64, 64, split_k=7)) == [(0, 64, 32)]
    assert reduce_chunks(GemmConfig(64, 104, 64, split_k=7)) == [(0, 80, 40), (80, 104, 24)]
    assert reduce_chunks(GemmConfig(256, 128, 64, split_k=16)) == [(0, 128, 8)]
    assert reduce_chunks(GemmConfig(64, 8, 64, split_k=2)) == [(0, 8, 8)]
    for bm, bn, split in itertools.product((64, 128, 192, 256), (8, 24, 64, 104, 256), (2, 3, 7, 16)):
        chunks = reduce_chunks(GemmConfig(bm, bn, 64, split_k=split))
        widest = max(w for _, _, w in chunks)
        free = consumer_budget(bm) - SCALAR_REGS_OVERHEAD - REGISTER_ESTIMATE_ERROR
        assert widest % 8 == 0 and chunks[-1][1] == bn and (widest == 8 or (split + 1) * widest // 2 <= free)
        assert len(range(0, bn, widest)) == -(-bn // max(8, free * 2 // (split + 1) // 8 * 8))  # no more chunks than needed
    loads = gemm_source(GemmConfig(64, 64, 64, split_k=3))
    assert loads.index("%partial2 = tile.load %W[%slice2") < loads.index("%sum1 = arith.addf %partial0, %partial1")
    assert unsupported(config) is None
    assert "split_k = 0" in unsupported(GemmConfig(split_k=0))
    assert "unbatched GEMMs only" in unsupported(GemmConfig(batched=True, split_k=2))
    with pytest.raises(TawaError, match=r"tawa.kernels.gemm_source: error: split_k = 2 with batched"):
        gemm_source(GemmConfig(batched=True, split_k=2))
    with pytest.raises(TawaError, match=r"gemm_reduce_source: error: 128x256x64: it has no K split"):
        gemm_reduce_source(GemmConfig())
    transposed = GemmConfig(64, 24, 64, transposed=True, split_k=3)
    assert transposed.id == "64x24x64-split3-t" and transposed.kernel == "gemm_splitk" and unsupported(transposed) is None
    assert gemm_grid(transposed, 20, 130) == (3, 1, 3) and workspace_shape(transposed, 20, 130) == (3, 130, 20)
    assert counters_shape(transposed, 20, 130) == (3,)
    assert "tile.store %c, %C[%m1, %n0] : tensor<24x64xbf16>" in gemm_source(transposed)  # one chunk
    with pytest.raises(TawaError, match=r"64x24x64-split3-t: a transposed program's partials are Cᵀ's"):
        gemm_reduce_source(transposed)
    with pytest.raises(TawaError, match=r"split_k=2.0: expected an int"):
        GemmConfig(split_k=2.0)


def test_heuristic_splits_where_the_cost_model_says_it_pays_when_asked():
    """With `split`, the heuristic weighs each tile's split (`split_for`)
    beside the unsplit tiles and takes the cost model's fastest; by default
    it splits nothing (tawa.analysis.gemm_cost; the model's choices on edge
    shapes are tested in tests/analysis/test_gemm_cost.py)."""
    for p in (GemmProblem(64, 8192, 8192), GemmProblem(256, 8192, 8192), GemmProblem(1024, 1024, 1024),
              GemmProblem(64, 64, 65536), GemmProblem(64, 8192, 8192, "f8E4M3FN", "f8E4M3FN", "bf16")):
        assert heuristic(p).config.split_k == 1
        split = heuristic(p, split=True)
        assert split == ranked(p)[0][0]  # the model's fastest of the whole space, splits included
        assert estimate(p, split).total <= estimate(p, heuristic(p)).total
    # A tiny grid with a long K: one program unsplit; the split fills SMs and is estimated far faster.
    tiny = GemmProblem(64, 64, 65536)
    split = heuristic(tiny, split=True)
    assert split.config.split_k > 1 and split.grid(64, 64) == (1, 1, split.config.split_k)
    assert estimate(tiny, split).total < estimate(tiny, heuristic(tiny)).total / 4
    # A grid that fills the GPU, K too short for two slices of MIN_SPLIT_K_STEPS, a batch: never split.
    assert heuristic(GemmProblem(8192, 8192, 8192), split=True).config.split_k == 1
    assert heuristic(GemmProblem(64, 8192, 15 * 64), split=True).config.split_k == 1
    assert heuristic(GemmProblem(64, 2048, 8192, batch=2), split=True).config.split_k == 1


def test_split_for_takes_the_models_fastest_split():
    """`split_for` is the S of 2..MAX_SPLIT_K (slices of at least
    MIN_SPLIT_K_STEPS K-steps) that the cost model estimates fastest, where
    it beats the unsplit tile; else 1."""
    for p, tile in ((GemmProblem(64, 64, 65536), (64, 64)), (GemmProblem(256, 256, 16384), (128, 128)),
                    (GemmProblem(64, 8192, 8192), (64, 256)), (GemmProblem(48 * 64, 64, 8192), (64, 64))):
        config = p.config(*tile, 64)
        most = min(MAX_SPLIT_K, p.k_steps(config) // MIN_SPLIT_K_STEPS)
        times = {s: estimate(p, Choice(config.replace(split_k=s))).total for s in range(1, most + 1)}
        assert split_for(p, config) == min(times, key=lambda s: (times[s], s)), (p, tile)
    assert split_for(GemmProblem(64, 64, 65536), GemmConfig(64, 64, 64)) > 1
    p = GemmProblem(64, 8192, 8192)
    assert split_for(p, p.config(64, 256, 64, split_k=2)) == 1  # already split
    assert split_for(GemmProblem(64, 8192, 0), p.config(64, 256, 64)) == 1
    assert split_for(GemmProblem(64, 64, 65536, batch=2), GemmConfig(64, 64, 64, batched=True)) == 1
    assert all(
        (p.K // 64) // s >= MIN_SPLIT_K_STEPS
        for p in (GemmProblem(64, n, k) for n in (256, 1024, 8192) for k in (1024, 4096, 65536))
        if (s := heuristic(p, split=True).config.split_k) > 1
    )


def test_candidates_have_a_split_axis():
    """The default space's split axis (`split_k` 0) adds each tile split as
    `split_for` splits it, where that is a split at all."""
    for p in (GemmProblem(256, 8192, 8192), GemmProblem(64, 64, 65536), GemmProblem(8192, 8192, 8192)):
        listed = candidates(p)
        assert listed[0] == heuristic(p) and listed[0].config.split_k == 1  # the heuristic's: unsplit
        for c in listed:
            if c.config.split_k > 1:
                assert split_for(p, c.config.replace(split_k=1)) == c.config.split_k
    assert any(c.config.split_k > 1 for c in candidates(GemmProblem(64, 64, 65536)))
    assert not any(c.config.split_k > 1 for c in candidates(GemmProblem(8192, 8192, 8192)))
    # Explicit splits where each slice keeps MIN_SPLIT_K_STEPS steps; none for batched problems.
    wide = [c.config for c in candidates(GemmProblem(2048, 2048, 256), WIDE_SPACE)]
    assert {c.split_k for c in wide} == {1}  # 4 K-steps of 64: no split keeps 8
    assert {c.config.split_k for c in candidates(GemmProblem(256, 256, 8192), Space(split_k=(1, 2, 4)))} >= {2, 4}
    assert {c.config.split_k for c in candidates(GemmProblem(64, 2048, 8192, batch=2), WIDE_SPACE)} == {1}


def test_autotune_keeps_a_split_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    problem = GemmProblem(64, 64, 65536)
    timed = []

    def measure(choice, kernel):
        timed.append(choice.id)
        return 0.5 if choice.config.split_k > 1 else 1.0

    best = autotune(problem, build=lambda c: c, measure=measure, device="Fake H100", sms=132)
    assert best.config.split_k > 1 and best in candidates(problem)
    again = autotune(problem, build=lambda c: c, measure=lambda c, k: pytest.fail("timed again"),
                     device="Fake H100", sms=132)
    assert again == best


class Recorder:
    """A stand-in kernel recording its calls."""

    name = "gemm_splitk"

    def __init__(self):
        self.calls = []

    def __call__(self, *args, grid, stream=None):
        self.calls.append((args, grid, stream))


def test_split_gemm_checks_its_arguments():
    config = GemmConfig(64, 64, 64, split_k=3)
    gemm = SplitKGemm(config, Recorder())
    A = np.zeros((10, 64), ml_dtypes.bfloat16)
    with pytest.raises(TawaError, match=r"tawa.splitk: error: @gemm_splitk \(64x64x64-split3\): grid \(1, 1\) "
                                        r"for M = 10, N = 10; expected \(1, 1, 3\)"):
        gemm(A, A, A, 10, 10, 64, grid=(1, 1))
    with pytest.raises(TawaError, match=r"C is a ndarray; a split-K GEMM takes torch tensors"):
        gemm(A, A, A, 10, 10, 64, grid=(1, 1, 3))
    assert gemm.kernel.calls == []
    with pytest.raises(TawaError, match="needs split_k > 1"):
        SplitKGemm(GemmConfig(), Recorder())


# --------------------------------------------------------------------------- with torch (CPU tensors)


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="the split-K reduction is torch's: these tests need torch")


def to_numpy(t, dtype: str) -> np.ndarray:
    return t.float().numpy().astype(NUMPY_TYPES[dtype])


class InterpretedSplit:
    """The split kernel, stood in for by the CPU interpreter on the call's own W and counters."""

    name = "gemm_splitk"

    def __init__(self, config: GemmConfig):
        self.config, self.workspaces = config, []

    def __call__(self, A, B, C, W, counters, M, N, K, grid, stream=None):
        import torch

        c = self.config
        assert grid == gemm_grid(c, M, N) and tuple(W.shape) == workspace_shape(c, M, N)
        assert counters.dtype == torch.int32 and tuple(counters.shape) == counters_shape(c, M, N)
        cn = counters.numpy()  # shares the tensor's memory: the kernel's resets are seen by the next call
        got, w, _ = run_split(gemm_source(c), c, to_numpy(A, c.a_dtype), to_numpy(B, c.b_dtype), M, N, K, counters=cn)
        W.copy_(torch.from_numpy(w))
        C.copy_(torch.from_numpy(got.astype(np.float32)))
        self.workspaces.append((W.data_ptr(), counters.data_ptr()))


@pytest.mark.parametrize("config, M, N, K", [CASES[0], CASES[3], CASES[4]],
                         ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_split_gemm_launches_one_kernel_on_its_workspace(torch, config, M, N, K):
    clear_workspaces()
    A, B, _ = operands(config, M, N, K, seed=2)
    tA = torch.from_numpy(A.astype(np.float32)).to(getattr(torch, {"bf16": "bfloat16", "f16": "float16"}[config.a_dtype]))
    tB = torch.from_numpy(B.astype(np.float32)).to(tA.dtype)
    c_type = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[config.c_dtype]
    C = torch.full((M, N), float("nan"), dtype=c_type)
    kernel = InterpretedSplit(config)
    gemm = SplitKGemm(config, kernel)
    gemm(tA, tB, C, M, N, K, grid=gemm_grid(config, M, N))
    want, _, _ = run_split(gemm_source(config), config, A, B, M, N, K)
    assert np.array_equal(C.float().numpy(), want.astype(np.float32))
    # The workspace is cached per shape (and reused: W never zeroed, the counters back at 0).
    assert not gemm.counters(C, M, N).any()
    gemm(tA, tB, C, M, N, K, grid=gemm_grid(config, M, N))
    assert np.array_equal(C.float().numpy(), want.astype(np.float32))
    assert kernel.workspaces[0] == kernel.workspaces[1]
    assert (gemm.workspace(C, M, N).data_ptr(), gemm.counters(C, M, N).data_ptr()) == kernel.workspaces[0]
    with pytest.raises(TawaError, match=r"C is a float64 tensor of shape"):
        gemm(tA, tB, C.double(), M, N, K, grid=gemm_grid(config, M, N))
    clear_workspaces()


def test_plain_and_transposed_splits_of_one_problem_get_their_own_workspaces(torch):
    """The same S, M, N and tile, plain and transposed: W is S×M×N for one and S×N×M for the
    other, so each launch gets a workspace of its own shape (both compute C)."""
    clear_workspaces()
    M, N, K = 64, 440, 9 * 64
    A, B, ref = operands(GemmConfig(), M, N, K, seed=4)
    tA, tB = (torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16) for x in (A, B))
    shapes = []
    for config in (GemmConfig(64, 64, 64, split_k=8), GemmConfig(64, 64, 64, transposed=True, split_k=8)):
        C = torch.full((M, N), float("nan"), dtype=torch.bfloat16)
        gemm = SplitKGemm(config, InterpretedSplit(config))  # asserts W's and the counters' shapes
        gemm(tA, tB, C, M, N, K, grid=gemm_grid(config, M, N))
        assert rel_err(C.float().numpy(), ref) <= 1e-2, config.id
        shapes.append(tuple(gemm.workspace(C, M, N).shape))
    assert shapes == [(8, 64, 440), (8, 440, 64)]
    clear_workspaces()
