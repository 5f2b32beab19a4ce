"""The watchdog on a Hopper GPU: a GEMM made to deadlock (the test-only
`tawa-break-protocol`) raises KernelHangError within seconds instead of
hanging; the intact watchdog GEMM still computes A·Bᵀ.

A trap ends the CUDA context of its process, so every launch runs in a
subprocess (`python -c SCRIPT`) with a timeout, and the test reads its output.

Run: `pytest -m gpu tests/runtime/test_watchdog_gpu.py` on an H100.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 180
"""Of the subprocess: compiling, assembling and one launch; far beyond any watchdog bound."""

SCRIPT = r"""
import os, sys, time
import torch
import tawa
from tawa.runtime import compiler
from tawa.runtime.watchdog import KernelHangError
from tawa.transforms.testing import with_broken_protocol

kind, ms, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if kind != "intact":
    compiler.available_passes = with_broken_protocol(compiler.available_passes, kind)
module = tawa.parse(open(path).read(), path)  # parsed with its file name: messages say gemm.mlir:line:col
kernel = tawa.compile(module, "gemm", stages=2, watchdog_ms=ms)
kernel.load()  # ptxas and the module load before the clock starts
M, N, K = 256, 512, 64 * 5  # 5 = 2D+1 k-tiles: the ring of depth 2 wraps twice
A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
B = torch.randn(N, K, device="cuda").to(torch.bfloat16)
for launch in range(2):
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    start = time.monotonic()
    try:
        kernel(A, B, C, M, N, K, grid=(2, 2))
    except KernelHangError as err:
        print(f"HANG after {time.monotonic() - start:.2f} s")
        print(f"ROLE {err.wait[1]} THREAD {err.record.thread}")
        print(f"MESSAGE {err}", flush=True)
        os._exit(3)  # the context is dead: skip CuPy's and torch's exit handlers
    ref = A.float() @ B.float().T
    print(f"OK rel err {((C.float() - ref).norm() / ref.norm()).item():.3e}")
"""


def run(kind: str, ms: int) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [sys.executable, "-c", SCRIPT, kind, str(ms), str(ROOT / "examples" / "gemm.mlir")],
            capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"{kind}: the launch hung for {TIMEOUT_S} s (watchdog_ms={ms}): {err.stdout!r} {err.stderr!r}")


def test_the_intact_watchdog_gemm_computes(cuda):
    res = run("intact", 2000)
    assert res.returncode == 0, res.stdout + res.stderr
    errors = [float(x) for x in re.findall(r"^OK rel err (\S+)$", res.stdout, re.M)]
    assert len(errors) == 2 and all(e <= 1e-2 for e in errors), res.stdout


@pytest.mark.parametrize("kind, ms", [("flip-empty-parity", 500), ("drop-release", 2000)])
def test_a_deadlocking_gemm_raises_kernel_hang_error(cuda, kind, ms):
    res = run(kind, ms)
    out = res.stdout + res.stderr
    assert res.returncode == 3, f"{kind}: expected KernelHangError (exit 3), got exit {res.returncode}:\n{out}"
    elapsed = float(re.search(r"^HANG after (\S+) s$", res.stdout, re.M).group(1))
    assert elapsed < ms / 1000 + 5, f"{kind}: the exception came after {elapsed} s (bound {ms} ms)"
    message = re.search(r"^MESSAGE (.*)$", res.stdout, re.M).group(1)
    assert re.match(
        r"\S*gemm\.mlir:\d+:\d+: error: mbarrier wait timed out in block \d+, warp group \d \((producer|consumer)\), "
        r"thread \d+: barrier [01] of the mbarrier<2> at shared offset \d+, parity [01] \(wait [01] of @gemm\); "
        r"the CUDA context is unusable now \(restart the process\).*; "
        r'tawa.interpret\(module, "gemm", \(2, 2, 1\), \*args\) replays this launch on the CPU$',
        message,
    ), message
    role, thread = re.search(r"^ROLE (\w+) THREAD (\d+)$", res.stdout, re.M).groups()
    # The producer runs on thread 0 of warp group 0; consumers on warp groups 1 and 2.
    assert (role == "producer") == (int(thread) == 0), res.stdout
    assert role == "producer" or 128 <= int(thread) < 384, res.stdout
