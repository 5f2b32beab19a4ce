"""tawa.bench.plot: the plot section a benchmark writes, checked and drawn."""

from __future__ import annotations

import json
import math

import pytest

from tawa.bench import plot

SPEC = {
    "title": "bf16 GEMM", "ylabel": "TFLOP/s", "labels": ["1024x1024x1024", "8192x8192x8192"],
    "series": {"tawa": [300.0, 620.0], "cuBLAS": [400.0, 640.0]}, "ratio": ["tawa", "cuBLAS"],
}


def test_ratios_of_the_named_series():
    assert plot.ratios(SPEC) == [pytest.approx(0.75), pytest.approx(620 / 640)]
    assert math.isnan(plot.ratios({**SPEC, "series": {"tawa": [1.0, 1.0], "cuBLAS": [0.0, math.nan]}})[0])


@pytest.mark.parametrize(
    "bad, message",
    [
        (None, "no 'plot' section"),
        ({**SPEC, "labels": []}, "no labels"),
        ({**SPEC, "series": {"tawa": [1.0]}}, "series 'tawa' has 1 values for 2 labels"),
        ({**SPEC, "ratio": ["tawa", "FA3"]}, "must name two of the series"),
    ],
)
def test_bad_plot_sections_are_one_line_errors(bad, message):
    with pytest.raises(plot.PlotError, match=message):
        plot.check_spec(bad)


@pytest.mark.slow
def test_draws_a_png_from_saved_results(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="plots need the 'bench' extra (matplotlib)")
    results = tmp_path / "gemm.json"
    results.write_text(json.dumps({"gpu": "H100", "plot": SPEC}))
    out = tmp_path / "gemm.png"
    assert plot.main([str(results), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    results.write_text("{}")
    assert plot.main([str(results), "-o", str(out)]) == 1
    assert "no 'plot' section" in capsys.readouterr().err


def test_attention_rows_make_a_summary_and_a_plot_section():
    from tawa.bench import attention

    rows = [
        {"d": 128, "B": 1, "S": 16384, "causal": False, "tflops": {"tawa": 500.0, "cuDNN": 625.0, "FA2": 400.0}},
        {"d": 64, "B": 32, "H": 8, "S": 512, "causal": True, "tflops": {"tawa": 200.0, "cuDNN": 200.0, "FA2": 100.0}},
    ]
    assert attention.summary(rows) == "tawa/cuDNN: geomean 0.894, min 0.800; tawa/FA2: geomean 1.581, min 1.250"
    spec = plot.check_spec(attention.plot_spec(rows, {"gpu": "H100", "date": "today"}))
    # B x H x S; a row without H (written before rows had it) is the fixed table's 16 heads.
    assert spec["labels"] == ["d128 1x16x16384", "d64 32x8x512 causal"]
    assert spec["series"]["FA2"] == [400.0, 100.0] and spec["ratio"] == ["tawa", "cuDNN"]


def test_save_reports_a_bad_plot_in_one_line(tmp_path, capsys):
    assert not plot.save({}, tmp_path / "x.png", "tawa.bench gemm")
    err = capsys.readouterr().err.strip()
    assert err.startswith("tawa.bench gemm: error: the results have no 'plot' section") and "\n" not in err
