"""`tawa-run`: the examples on random inputs, and one-line errors with exit 1."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tawa.tools.tawa_run import main

ROOT = Path(__file__).resolve().parents[2]
GEMM = str(ROOT / "examples" / "gemm.mlir")
ATTENTION = str(ROOT / "examples" / "attention_fwd.mlir")
REPORT = re.compile(r"relative Frobenius error (\S+) vs float64 NumPy \(ok, bound 1e-02")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_gemm(capsys):
    rc, out, err = run(capsys, GEMM, "gemm", "--shape", "M=200,N=136,K=72", "--seed", "1")
    assert rc == 0 and err == ""
    assert out.startswith("@gemm M=200,N=136,K=72 grid 2x1 seed 1: ")
    assert float(REPORT.search(out).group(1)) < 4e-3


@pytest.mark.parametrize("kernel", ["attention_fwd", "attention_fwd_causal"])
def test_attention(capsys, kernel):
    rc, out, _ = run(capsys, ATTENTION, kernel, "--shape", "B=2,S=200")
    assert rc == 0
    assert out.startswith(f"@{kernel} B=2,S=200,D=128 grid 2x2 seed ")
    assert float(REPORT.search(out).group(1)) < 5e-3


def test_failure_is_exit_1(capsys):
    # a grid too small leaves part of C unwritten (NaN): the check fails
    rc, out, _ = run(capsys, GEMM, "gemm", "--shape", "M=300", "--grid", "1,1")
    assert rc == 1 and "FAILED" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        ([GEMM, "gemm", "--shape", "M=0"], "tawa-run: error: --shape: expected NAME=POSITIVE_INT,..., got 'M=0'"),
        ([GEMM, "gemm", "--shape", "Q=3"], "tawa-run: error: --shape: unknown dimension 'Q' for @gemm (known: M, N, K)"),
        ([GEMM, "gemm", "--grid", "x"], "tawa-run: error: --grid: expected 1 to 3 comma-separated non-negative integers, got 'x'"),
        ([GEMM, "gem"], "tawa.interpret: error: no kernel named @gem; the module defines: @gemm"),
        ([GEMM], "tawa-run: error: the following arguments are required: kernel"),
        (["missing.mlir", "gemm"], "missing.mlir: error: cannot open input: No such file or directory"),
    ],
)
def test_bad_input(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 1 and out == ""
    assert err == message + "\n"


def test_unknown_kernel_kind(capsys, tmp_path):
    path = tmp_path / "k.mlir"
    path.write_text("func.func @k(%x: index) {\n  func.return\n}\n")
    rc, _, err = run(capsys, str(path), "k")
    assert rc == 1 and err.startswith("tawa-run: error: @k: tawa-run knows GEMM kernels")


def test_parse_error(capsys, tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @k(%x: index) {\n  %y = arith.addi %x : index\n}\n")
    rc, _, err = run(capsys, str(path), "k")
    assert rc == 1 and err.startswith(f"{path}:2:") and err.count("\n") == 1


@pytest.mark.skipif(shutil.which("tawa-run") is None, reason="tawa-run is not installed (pip install -e .)")
def test_console_script():
    proc = subprocess.run(
        ["tawa-run", GEMM, "gemm", "--shape", "M=64,N=64,K=64"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("@gemm M=64,N=64,K=64 grid 1x1 seed ")
