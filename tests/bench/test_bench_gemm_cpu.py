"""The GEMM benchmark's helpers (no GPU): shapes, TFLOP/s, the table, JSON."""

from __future__ import annotations

import json
import math
import sys

import pytest

from tawa.bench import __main__ as bench_main
from tawa.bench import gemm


def test_parse_shapes():
    assert gemm.parse_shapes(["8192x8192x1024,4096"]) == [(8192, 8192, 1024), (4096, 4096, 4096)]
    assert gemm.parse_shapes(["256x128x64", "1×2×3"]) == [(256, 128, 64), (1, 2, 3)]
    for bad in (["8192x8192"], ["ax1x1"], ["0x1x1"], [""]):
        with pytest.raises(gemm.BenchError):
            gemm.parse_shapes(bad)


def test_default_shapes_and_grid():
    assert gemm.DEFAULT_SHAPES[:5] == tuple((8192, 8192, k) for k in (1024, 2048, 4096, 8192, 16384))
    assert gemm.DEFAULT_SHAPES[5] == (4096, 4096, 4096)
    assert gemm.logical_grid(8192, 8192) == (64, 32)
    assert gemm.logical_grid(200, 136) == (2, 1)


def test_rows_table_and_json():
    assert gemm.tflops(8192, 8192, 8192, 1.0) == pytest.approx(1099.5, rel=1e-4)
    row = gemm.Row(8192, 8192, 8192, rel_err=1.7e-3, tawa_ms=[1.7, 1.6, 1.65], cublas_ms=[1.6, 1.62, 1.58])
    assert row.correct
    assert row.tawa_tflops == pytest.approx(gemm.tflops(8192, 8192, 8192, 1.65))
    assert row.ratio == pytest.approx(1.6 / 1.65)
    wrong = gemm.Row(4096, 4096, 4096, rel_err=math.nan, tawa_ms=[0.2], cublas_ms=[0.19])
    assert not wrong.correct
    meta = {"gpu": "NVIDIA H100 80GB HBM3", "date": "2000-01-01 10:00 UTC", "stages": 4, "rounds": 3, "timer": "t"}
    table = gemm.format_table([row, wrong], meta)
    assert "NVIDIA H100 80GB HBM3, 2000-01-01 10:00 UTC" in table
    assert "stages=4" in table and "3 interleaved rounds" in table
    assert "C = A·Bᵀ, bf16 in" in table and "C = A·B, B K×N, bf16 in" in gemm.format_table([row], {**meta, "b_layout": "kn"})
    line = next(ln for ln in table.splitlines() if ln.lstrip().startswith("8192"))
    assert line.split()[3:] == [f"{row.tawa_tflops:.1f}", f"{row.cublas_tflops:.1f}", f"{row.ratio:.3f}", "1.70e-03"]
    assert table.splitlines()[-2].endswith("WRONG")
    assert table.splitlines()[-1] == f"geomean tawa/cuBLAS {gemm.geomean([row.ratio, wrong.ratio]):.3f}; " \
        f"min {min(row.ratio, wrong.ratio):.3f}, max {max(row.ratio, wrong.ratio):.3f}"
    data = json.loads(json.dumps(gemm.report([row], meta)))
    assert data["gpu"] == meta["gpu"] and data["results"][0]["tawa_ms_per_round"] == [1.7, 1.6, 1.65]
    assert data["results"][0]["ratio"] == pytest.approx(row.ratio)
    assert data["geomean_ratio"] == pytest.approx(row.ratio)
    assert data["plot"]["labels"] == ["8192x8192x8192"] and data["plot"]["ratio"] == ["tawa", "cuBLAS"]
    assert data["plot"]["series"]["tawa"] == [pytest.approx(row.tawa_tflops)]


def test_geomean_and_the_sweep():
    assert gemm.geomean([0.5, 2.0]) == pytest.approx(1.0)
    assert math.isnan(gemm.geomean([1.0, math.nan])) and math.isnan(gemm.geomean([]))
    # The fixed sweep: 5 squares, 5 K values, 10 LLM projections (one of
    # them 4096³, a square too), 2 skinny.
    assert len(gemm.SWEEP_SHAPES) == 21 and len(set(gemm.SWEEP_SHAPES)) == 21
    assert (16384, 28672, 8192) in gemm.SWEEP_SHAPES and (64, 8192, 8192) in gemm.SWEEP_SHAPES


def test_sweep_and_shapes_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        gemm.main(["--sweep", "--shapes", "256"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_without_torch_the_benchmark_says_why(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert bench_main.main(["gemm", "--shapes", "256x256x64", "--rounds", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("tawa.bench gemm: error: needs torch with CUDA") and "\n" not in err


def test_workload_dispatch(capsys):
    assert bench_main.main(["nope"]) == 2
    assert "unknown workload 'nope'; known: gemm" in capsys.readouterr().err
    assert bench_main.main(["--help"]) == 0
    with pytest.raises(SystemExit):
        bench_main.main(["gemm", "--rounds"])


def test_cluster_applies_to_chosen_kernels_only():
    """--cluster 2 compiles the example in 2-CTA clusters; with --config
    autotune (which decides for itself) it is a one-line error."""
    for option in ({"cluster": 2}, {"defer_stores": True}, {"group_rows": 128}):
        with pytest.raises(gemm.BenchError, match="--cluster, --defer-stores and --group-rows apply to"):
            gemm.Kernels("autotune", "bf16", 4, gemm.DEFAULT_SOURCE, lambda s: None, **option)


def test_group_rows_apply_to_the_heuristic_only():
    """--group-rows 128 reshapes the heuristic's tile; the example's 128x256
    tile cannot take it: a one-line error before anything compiles."""
    with pytest.raises(gemm.BenchError, match="--group-rows applies to --config heuristic and split-k"):
        gemm.Kernels("example", "bf16", 4, gemm.DEFAULT_SOURCE, lambda s: None, group_rows=128)


@pytest.mark.parametrize("size", ["0", "3", "4"])
def test_a_bad_cluster_size_is_a_one_line_error(size: str, capsys):
    assert gemm.main(["--shapes", "256x256x64", "--cluster", size]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"tawa.bench gemm: error: --cluster must be 1 or 2, got {size} (larger clusters are not "
                   "proved: the protocol proof models each CTA of a cluster)")


def test_random_shapes():
    """M log-uniform over 16-16384, N and K over 256-28672, multiples of 8
    (16 for fp8); the same seed draws the same shapes, another seed others."""
    shapes = gemm.random_shapes(400, seed=7)
    assert len(shapes) == 400 and shapes == gemm.random_shapes(400, seed=7)
    assert shapes != gemm.random_shapes(400, seed=8)
    assert gemm.random_shapes(5, seed=7) == shapes[:5]
    for M, N, K in shapes:
        assert 16 <= M <= 16384 and 256 <= N <= 28672 and 256 <= K <= 28672
        assert M % 8 == N % 8 == K % 8 == 0
    ms = sorted(M for M, _, _ in shapes)
    assert ms[len(ms) // 2] < 2048 < ms[-1]  # log-uniform: the median near √(16·16384) = 512, not 8192
    assert min(ms) < 64 and max(ms) > 8192
    assert all(d % 16 == 0 for s in gemm.random_shapes(100, seed=1, multiple=16) for d in s)


def test_random_without_a_count_is_a_one_line_error(capsys):
    assert gemm.main(["--random", "0"]) == 1
    assert capsys.readouterr().err.strip() == "tawa.bench gemm: error: --random must be at least 1, got 0"
    with pytest.raises(SystemExit):  # one source of shapes at a time
        gemm.main(["--random", "4", "--sweep"])


def test_explain_prints_the_candidates_their_estimates_and_the_choice(capsys):
    from tawa.runtime.autotune import GemmProblem, heuristic, ranked

    assert gemm.main(["--explain", "3072x3072x3072", "64x8192x8192", "--dtype", "fp8"]) == 0
    out = capsys.readouterr().out
    for M, N, K in ((3072, 3072, 3072), (64, 8192, 8192)):
        problem = GemmProblem(M, N, K, "f8E4M3FN", "f8E4M3FN", "bf16")
        block = out[out.index(f"GEMM {M}x{N}x{K}, fp8 in"):]
        choice = heuristic(problem)
        assert f"choice: {choice.id}" in block
        for rank, (candidate, estimate) in enumerate(ranked(problem), 1):
            line = f"{rank:3}. {candidate.id}"
            assert line in block
            assert f"{estimate.total * 1e6:.1f} µs = prologue {estimate.prologue * 1e6:.1f}" in block
        assert f"{choice.id}  <- choice" in block
    assert "rounds of" in out and "k-steps of" in out and "-bound" in out
    assert "(-t: computed transposed" in out  # 64 rows of 8192: transposed candidates, and what "-t" means
    assert gemm.main(["--explain", "4096", "--split"]) == 0
    assert "split-K candidates not taken" not in capsys.readouterr().out
    assert gemm.main(["--explain", "0x1x1"]) == 1
    assert capsys.readouterr().err.strip().startswith("tawa.bench gemm: error: bad shape '0x1x1'")


def test_predictions_in_the_table_and_json():
    row = gemm.Row(1024, 1024, 1024, rel_err=0.0, tawa_ms=[0.010, 0.011, 0.012], cublas_ms=[0.01] * 3,
                   predicted_ms=0.0121, config="64x128x64 stages=auto group_m=8")
    other = gemm.Row(2048, 2048, 2048, rel_err=0.0, tawa_ms=[0.03], cublas_ms=[0.03], predicted_ms=0.027)
    assert row.prediction_error == pytest.approx(0.1)
    assert gemm.prediction_error([row, other]) == pytest.approx(math.exp((math.log(1.1) + -math.log(0.9)) / 2) - 1)
    meta = {"gpu": "H100", "date": "d", "stages": 4, "rounds": 3, "timer": "t", "config": "heuristic", "random": 2,
            "seed": 5}
    table = gemm.format_table([row, other], meta)
    assert "--random 2 --seed 5" in table and "model µs" in table
    line = next(ln for ln in table.splitlines() if ln.lstrip().startswith("1024"))
    assert line.split()[7:10] == ["11.0", "12.1", "+10.0%"] and line.endswith("64x128x64 stages=auto group_m=8")
    assert table.splitlines()[-1].startswith("cost model: typical error")
    data = json.loads(json.dumps(gemm.report([row, other], meta)))
    assert data["results"][0]["predicted_ms"] == pytest.approx(0.0121)
    assert data["results"][0]["prediction_error"] == pytest.approx(0.1)
    assert data["min_ratio"] == pytest.approx(min(row.ratio, other.ratio)) and data["seed"] == 5
    assert data["prediction_error"] == pytest.approx(gemm.prediction_error([row, other]))
    plain = gemm.report([gemm.Row(1, 1, 1, tawa_ms=[1.0], cublas_ms=[1.0])], meta)
    assert "prediction_error" not in plain and "predicted_ms" not in plain["results"][0]


def test_b_read_mn_major_is_refused_by_the_example():
    """--b-layout kn (B K×N, C = A·B) applies to the chosen kernels; the
    example reads B N×K: a one-line error before anything compiles."""
    with pytest.raises(gemm.BenchError, match="--b-layout kn applies to"):
        gemm.Kernels("example", "bf16", 4, gemm.DEFAULT_SOURCE, lambda s: None, b_layout="kn")


def test_explain_b_read_mn_major_offers_whole_spans(capsys):
    """--explain with --b-layout kn weighs `-b_kn` candidates of whole
    128-byte swizzle spans only; fp8 cannot be read MN-major."""
    import re

    assert gemm.main(["--explain", "2048x11008x4096", "--b-layout", "kn", "--device", "NVIDIA H200"]) == 0
    out = capsys.readouterr().out
    widths = {int(n) for n in re.findall(r"\d+\. \d+x(\d+)x\d+-b_kn", out)}
    assert widths and widths <= {64, 128, 192, 256}
    assert "choice: " in out and "-b_kn" in out.split("choice: ")[1]
    assert gemm.main(["--random", "2", "--b-layout", "kn", "--dtype", "fp8"]) == 1
    assert "--b-layout kn takes bf16" in capsys.readouterr().err
