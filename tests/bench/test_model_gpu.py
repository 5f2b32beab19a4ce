"""`python -m tawa.bench model` on a Hopper GPU: one tiny row of each
model family in every mode, run end to end (warm-up, the checks against
torch and float32, interleaved timing, JSON).

Run: `pytest -m gpu tests/bench/test_model_gpu.py`; elsewhere it skips and says why.
"""

from __future__ import annotations

import json

import pytest

from tawa.bench import model, model_run

pytestmark = pytest.mark.gpu


def test_one_layer_rows_run_checked_and_timed(cuda, tmp_path, capsys):
    path = tmp_path / "model.json"
    rc = model.main(["--models", "gpt2-1024,llama-4096", "--shapes", "1x128", "--modes", "eager,compile,graph",
                     "--layers", "1", "--rounds", "1", "--json", str(path)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(path.read_text())
    rows = data["results"]
    assert [(r["model"], r["mode"]) for r in rows] == [
        (m, mode) for m in ("gpt2-1024", "llama-4096") for mode in ("eager", "compile", "graph")]
    for r in rows:
        assert r["correct"], r
        assert r["tawa_ms"] > 0 and r["torch_ms"] > 0 and r["ratio"] > 0
        assert 0 < r["err_vs_torch"] < model_run.TOLERANCE
        assert 0 < r["tawa_err_vs_f32"] < model_run.TOLERANCE  # 1x128 is the smallest shape: checked against float32
    assert set(data["ops"]["llama-4096"]["tawa"]) == {"linear", "gated_mlp", "attention", "attention_gqa",
                                                      "rotary", "rms_norm"}
    assert data["models"]["gpt2-1024"]["layers"] == 1
    assert "eager: geomean tawa/torch" in out.out
