"""The cost model's fit (`tawa.bench.fit_cost`): reading the measurements
in docs/perf/, configuration ids read back, the minimiser, a fit that
recovers synthetic times, and `FITTED`'s error on the real ones (what
docs/perf.md's "Cost model" reports)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from tawa.analysis.gemm_cost import FITTED, FITTED_H200, estimate, parameters_for
from tawa.bench import fit_cost
from tawa.bench.fit_cost import Measurement, choice_from_id, fit, log_errors, nelder_mead
from tawa.kernels.gemm import GemmConfig
from tawa.runtime.autotune import Choice, GemmProblem


def test_configuration_ids_read_back():
    for choice in (Choice(GemmConfig(128, 256, 64)),
                   Choice(GemmConfig(64, 128, 128, "f8E4M3FN", "f8E4M3FN", "bf16", split_k=2), stages=3, group_m=16),
                   Choice(GemmConfig(256, 128, 64), group_rows=128, defer_stores=True, cluster=2),
                   Choice(GemmConfig(128, 128, 64, "f8E4M3FN", "f8E5M2", "f32", batched=True)),
                   Choice(GemmConfig(64, 256, 64, "f16", "f16", "f16", "kn"), persistent=False),
                   Choice(GemmConfig(128, 136, 64, transposed=True))):
        assert choice_from_id(choice.id) == choice, choice.id
    with pytest.raises(ValueError, match="not a configuration id"):
        choice_from_id("cuBLAS")
    with pytest.raises(ValueError, match="teams of consumers"):  # measured kernels the compiler no longer has
        choice_from_id("64x256x64 stages=auto group_m=8 teams=2")


def test_nelder_mead_finds_a_minimum():
    def bowl(x):
        return (x[0] - 1.0) ** 2 + 10 * (x[1] + 2.0) ** 2 + (x[0] * x[1] + 2.0) ** 2

    x = nelder_mead(bowl, [0.0, 0.0], iterations=2000)
    assert x == pytest.approx([1.0, -2.0], abs=1e-3)


def test_the_fit_recovers_synthetic_times():
    """Times made by the model with known parameters, fitted from other
    parameters: the fit brings the error near zero."""
    truth = replace(FITTED, launch_s=2.5e-6, load_latency_s=1.2e-6, store_bytes_per_s=8e10)
    shapes = [(1024, 1024, 1024), (4096, 4096, 512), (8192, 8192, 4096), (64, 8192, 8192), (256, 4096, 2048),
              (2048, 2048, 128)]
    tiles = [(128, 256), (128, 128), (64, 128), (64, 64)]
    data = [Measurement(p, c, estimate(p, c, params=truth, stages=8 if c.config.block_m == 64 else 4).total,
                        False, "synthetic")
            for p in (GemmProblem(*s) for s in shapes) for c in (Choice(p.config(bm, bn, 64)) for bm, bn in tiles)]
    stages = {m.choice: 8 if m.choice.config.block_m == 64 else 4 for m in data}

    def rms(params):
        errors = log_errors(data, params, stages)
        return math.sqrt(sum(e * e for e in errors) / len(errors))

    assert rms(FITTED) > 0.02
    fitted = fit(data, FITTED, iterations=900, stages=stages)
    assert rms(fitted) < 0.01
    assert fitted.clock_hz == FITTED.clock_hz  # measured, not fitted


@pytest.mark.slow
def test_fitted_parameters_on_the_recorded_measurements():
    """`FITTED` estimates the recorded times of today's kernels (the files
    docs/perf/cost-model-data.txt lists, each of which gives rows) with a
    typical error under 10% (docs/perf.md, "Cost model"), and each bf16
    sweep (L2 flushed) within 4.5%."""
    data = fit_cost.measurements()
    assert len(data) >= 1200
    listed = {p.name for p in fit_cost.listed_files()}
    assert {m.source for m in data} == listed
    stages = fit_cost.stage_table(data)
    errors = log_errors(data, FITTED, stages)
    assert fit_cost.geomean_abs_error(errors) < 0.10
    sweeps = {name for name in listed if name.startswith("gemm-sweep-bf16-") and "-defer-" not in name}
    assert sweeps
    for name in sweeps:
        sweep = [e for m, e in zip(data, errors) if m.source == name]
        assert len(sweep) == 21 and fit_cost.geomean_abs_error(sweep) < 0.045, name
    regret = [r for _, r in fit_cost.regrets(data, FITTED, stages)]
    assert sum(regret) / len(regret) < 0.02


@pytest.mark.slow
def test_h200_parameters_on_its_measurements():
    """`FITTED_H200` is fitted to the H200's own times (docs/perf/cost-model-data-h200.txt):
    typical error under 9% where the H100's parameters are off by more than 11%, and its pick among a
    shape's timed candidates within 3% of the best on average."""
    data = fit_cost.measurements(gpu="h200")
    assert {m.source for m in data} == {p.name for p in fit_cost.listed_files(gpu="h200")}
    stages = fit_cost.stage_table(data)
    assert fit_cost.geomean_abs_error(log_errors(data, FITTED, stages)) > 0.11
    assert fit_cost.geomean_abs_error(log_errors(data, FITTED_H200, stages)) < 0.09
    regret = [r for _, r in fit_cost.regrets(data, FITTED_H200, stages)]
    assert len(regret) >= 40 and sum(regret) / len(regret) < 0.03
    assert FITTED_H200.fp8_rate_share == FITTED.fp8_rate_share  # kept: too few fp8 rows to fit it


def test_parameters_by_device_name():
    assert parameters_for("NVIDIA H200") is FITTED_H200
    assert parameters_for("NVIDIA H100 80GB HBM3") is FITTED
    assert parameters_for("NVIDIA H100 PCIe") is FITTED and parameters_for(None) is FITTED  # not measured: the H100's


def test_a_manifest_line_marked_unsplit_reads_the_unsplit_rows(tmp_path, monkeypatch, capsys):
    """A manifest's `FILE unsplit` keeps the file's rows of unsplit tiles only
    (its split rows timed a split-K kernel changed since); anything else
    after the name is refused; `--only` names parameters that exist."""
    (tmp_path / "gemm-candidates-x.txt").write_text(
        "NVIDIA H200; do_bench median\n"
        "## 64x632x16608: cuBLAS 16.00 us; model's pick 20.00 us (0.800), best 64x64x64-split7 20.00 us (0.800)\n"
        "    64x64x64-split7 stages=auto group_m=8  20.00 us  model 21.00 us\n"
        "    64x64x64 stages=auto group_m=8  30.00 us  model 29.00 us\n")
    monkeypatch.setitem(fit_cost.MANIFESTS, "h200", "manifest.txt")
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("# a comment\ngemm-candidates-x.txt\n")
    assert [m.choice.config.split_k for m in fit_cost.measurements(tmp_path, "h200")] == [7, 1]
    manifest.write_text("gemm-candidates-x.txt  unsplit\n")
    assert [m.choice.config.split_k for m in fit_cost.measurements(tmp_path, "h200")] == [1]
    assert fit_cost.listed_files(tmp_path, "h200") == [tmp_path / "gemm-candidates-x.txt"]
    manifest.write_text("gemm-candidates-x.txt  split\n")
    with pytest.raises(ValueError, match=r"expected a file name, then nothing or 'unsplit'"):
        fit_cost.measurements(tmp_path, "h200")
    assert fit_cost.main(["--gpu", "h200", "--check", "--only", "split_fixed_s,nope"]) == 1
    assert "--only: no parameter nope" in capsys.readouterr().err
