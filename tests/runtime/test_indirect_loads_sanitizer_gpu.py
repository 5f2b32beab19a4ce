"""The kernels whose loads and stores loaded values place, under NVIDIA's
compute-sanitizer memcheck: tables full of entries that point outside the
tensors (negative, one past the end, beyond 2^31 rows, past a leading
axis) must read zeros and write nothing, never touch memory outside an
array (`tawa/transforms/partition/loaded_offsets.py`).  One child process
runs examples/python/gather_rows.py, grouped_gemm.py, paged_gemm.py and
paged_attention.py twice each on CuPy arrays (memory pool off, so that
memcheck sees each array's own bounds) with NaN-poisoned outputs; the
parent reads the sanitizer's error summary (`tawa.tools.sanitize`).  Needs
an sm_90 GPU, CuPy and compute-sanitizer; skipped elsewhere, saying why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import math, runpy, sys
import cupy, ml_dtypes, numpy as np
from tawa.runtime import reinterpret
from tawa.tools.sanitize import BEGIN, END

cupy.cuda.set_allocator(None)
BF16, HUGE = ml_dtypes.bfloat16, 2**31 - 1
rng = np.random.default_rng(0)


def kernel(name):
    return runpy.run_path(f"examples/python/{name}.py")[name]


def dev(a):
    if a.dtype == BF16:
        return reinterpret(cupy.asarray(a.view(np.uint16)), "bf16")
    return cupy.asarray(a)


def bf16(*shape):
    return rng.standard_normal(shape).astype(BF16)


def run(name, args, out_index, grid, **constexprs):
    print(f"{BEGIN} {name}", flush=True)
    k = kernel(name).compile(**constexprs)
    for _ in range(2):
        device = [dev(a) if isinstance(a, np.ndarray) else a for a in args]
        k(*device, grid=grid)
        cupy.cuda.runtime.deviceSynchronize()
        out = device[out_index]
        host = cupy.asnumpy(out.array if hasattr(out, "array") else out).view(BF16).astype(np.float32)
        if np.isnan(host).any():
            print(f"{END} {name} WRONG {int(np.isnan(host).sum())} elements not written", flush=True)
            return 1
    print(f"{END} {name} ok", flush=True)
    return 0


failed = 0
# A row-block gather: indices past X, negative, huge; programs past the table.
x = bf16(5 * 64 - 10, 200)
idx = np.array([4, -1, HUGE, 5, 0, 3], np.int32)
failed += run("gather_rows", [x, idx, np.ones(6, np.float32), np.full((8 * 64, 200), np.nan, BF16), 200], 3, (8, 2))
# A grouped GEMM: experts and row blocks out of range (a row block out of range writes nothing:
# its rows of C are those no program owns, so C is poisoned only where some program writes).
a, w = bf16(3 * 128 - 20, 392), bf16(2, 264, 392)
table = np.array([[2, -1], [0, HUGE], [1, 2], [HUGE, 0], [-1, 1]], np.int32)
failed += run("grouped_gemm", [a, w, table, np.full((3 * 128 - 20, 264), np.nan, BF16), 264, 392], 3, (5, 3))
# A paged GEMM: pages outside the pool, negative and huge.
pool = bf16(7 * 128, 64)
pages = np.array([[3, -1, 6, HUGE], [0, 9, 2, 1]], np.int32)
failed += run("paged_gemm", [bf16(200, 4 * 64 - 8), pool, pages, np.full((200, 2 * 128 - 8), np.nan, BF16),
                             4 * 64 - 8], 3, (2, 2))
# Paged attention: table entries past each sequence's end are nonsense.
kc, vc = bf16(9, 1, 128, 128), bf16(9, 1, 128, 128)
block_table = np.array([[4, 0, 7], [2, -1, HUGE]], np.int32)
lens = np.array([300, 100], np.int32)
for causal in (False, True):
    failed += run("paged_attention", [bf16(2, 2, 100, 128), kc, vc, block_table, lens,
                                      np.full((2, 2, 100, 128), np.nan, BF16), 100, 300, 1 / math.sqrt(128), 2],
                  5, (1, 2, 2), CAUSAL=causal)
sys.exit(1 if failed else 0)
'''


def test_memcheck_finds_no_out_of_bounds_access(cuda, tmp_path):
    pytest.importorskip("cupy")
    from tawa.tools.sanitize import parse_output, sanitizer

    exe = sanitizer()
    if exe is None:
        pytest.skip("compute-sanitizer is not on PATH (nor in /usr/local/cuda*/bin)")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    res = subprocess.run([exe, "--tool", "memcheck", "--report-api-errors", "no", sys.executable, str(script)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, cwd=ROOT)
    r = parse_output("memcheck", res.stdout)
    names = ["gather_rows", "grouped_gemm", "paged_gemm", "paged_attention"]
    tail = res.stdout[-6000:]
    assert r.errors == 0, f"memcheck: {r.errors} errors {r.reports}\n{tail}"
    assert all(r.outcome.get(n, "").startswith("ok") for n in names), f"{r.outcome}\n{tail}"
    assert res.returncode == 0, tail
