"""`python -m tawa.bench attention-ab` without a GPU: its options and its errors (one line, exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawa.bench import __main__ as bench_main
from tawa.bench import attention_ab

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_parse_options():
    got = attention_ab.parse_options(["stages=3", "epilogue=threads", "pingpong=false", "persistent=true", "x=-1"])
    assert got == {"stages": 3, "epilogue": "threads", "pingpong": False, "persistent": True, "x": -1}
    assert attention_ab.parse_options([]) == {}
    assert attention_ab.parse_options(["ring_depths=3,2", "order=a,b"]) == {"ring_depths": (3, 2), "order": "a,b"}
    for bad in ("stages", "=3"):
        with pytest.raises(ValueError, match="expected KEY=VALUE"):
            attention_ab.parse_options([bad])


def test_bad_arguments_exit_2_with_one_line(capsys, tmp_path):
    for argv, message in (
        (["attention-ab", "--head-dim", "128", "--new", "stages"], "expected KEY=VALUE, got 'stages'"),
        (["attention-ab", "--head-dim", "96"], "invalid choice: 96"),
        (["attention-ab", "--head-dim", "64", "--old-source", str(tmp_path / "none.mlir")], "none.mlir: no such file"),
        (["attention-ab", "--head-dim", "256", "--new-source", str(EXAMPLES / "attention_fwd_d256_n80.mlir")],
         "attention_fwd_d256_n80.mlir: no kernel @attention_fwd_d256 (--new-kernel names @NAME and @NAME_causal)"),
        (["attention-ab", "--head-dim", "128", "--old-kernel", "attention_fwd_d64"],
         "attention_fwd.mlir: no kernel @attention_fwd_d64 (--old-kernel names @NAME and @NAME_causal)"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            bench_main.main(argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert message in err[-1], err


def test_listed_as_a_workload(capsys):
    assert bench_main.main(["--help"]) == 0
    assert "attention-ab" in capsys.readouterr().out


def test_tflops_counts_the_causal_half():
    from tawa.bench.attention import tflops

    times = {"a": [2.0, 1.0, 3.0], "b": [4.0]}  # medians 2 ms and 4 ms
    full = tflops(times, 1, 1024, 128, causal=False)  # 4·16·1024²·128 FLOP = 8.59 GFLOP
    assert full == {"a": 4 * 16 * 1024**2 * 128 / 1e9 / 2.0, "b": 4 * 16 * 1024**2 * 128 / 1e9 / 4.0}
    assert tflops(times, 1, 1024, 128, causal=True)["a"] == full["a"] / 2
