"""`python -m tawa.bench watchdog`: what the watchdog costs.

    python -m tawa.bench watchdog [--rounds R] [--stages D] [--watchdog-ms MS]

examples/gemm.mlir compiled twice, `tawa.compile(...)` (no watchdog, the
default) and `watchdog_ms=MS` (every mbarrier wait bounded, docs/runtime.md),
at 8192³ and 4096³ bf16.  Both are first checked against a float32
reference (NaN-poisoned C, rel err < 1e-2); then the watchdog kernel's
launches are made asynchronous (`Watchdog.synchronous = False`: a benchmark
times the kernel, not the synchronize a watchdog launch does by default),
and the two are timed interleaved for R rounds (the order alternates),
with `triton.testing.do_bench` (median, L2 flushed) or CUDA events.  The
table gives the median of each over the rounds and the ratio
watchdog / plain time (1.000: free).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path

SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096))
SOURCE = Path(__file__).resolve().parents[2] / "examples" / "gemm.mlir"


def summarize(plain_ms: Sequence[float], watchdog_ms: Sequence[float]) -> tuple[float, float, float]:
    """(median plain ms, median watchdog ms, watchdog / plain)."""
    p, w = statistics.median(plain_ms), statistics.median(watchdog_ms)
    return p, w, w / p


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench watchdog", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stages", type=int, default=4)
    parser.add_argument("--watchdog-ms", type=int, default=2000)
    args = parser.parse_args(argv)
    import torch

    import tawa
    from tawa.bench.gemm import make_timer

    bench, timer = make_timer()
    src = SOURCE.read_text()
    kernels = {
        "plain": tawa.compile(src, "gemm", stages=args.stages),
        "watchdog": tawa.compile(src, "gemm", stages=args.stages, watchdog_ms=args.watchdog_ms),
    }
    print(f"tawa GEMM with and without the watchdog on {torch.cuda.get_device_name()}; {timer}; "
          f"{args.rounds} rounds, medians", flush=True)
    print(f"{'M':>6} {'N':>6} {'K':>6} {'plain TFLOP/s':>14} {'watchdog TFLOP/s':>17} {'watchdog/plain time':>20}")
    for M, N, K in SHAPES:
        A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        B = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        ref = A.float() @ B.float().T
        grid = ((M + 127) // 128, (N + 255) // 256)
        for name, k in kernels.items():
            C.fill_(float("nan"))
            k(A, B, C, M, N, K, grid=grid)  # the watchdog one synchronizes: a hang raises here
            torch.cuda.synchronize()
            err = ((C.float() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                print(f"{name} {M}x{N}x{K}: WRONG (rel err {err:.2e})")
                return 1
        kernels["watchdog"].load().watchdog.synchronous = False
        times: dict[str, list[float]] = {name: [] for name in kernels}
        for r in range(args.rounds):
            order = list(kernels) if r % 2 == 0 else list(reversed(kernels))
            for name in order:
                k = kernels[name]
                times[name].append(bench(lambda k=k: k(A, B, C, M, N, K, grid=grid)))
        kernels["watchdog"].load().watchdog.check()  # nothing timed out meanwhile
        plain, dog, ratio = summarize(times["plain"], times["watchdog"])
        flop = 2 * M * N * K / 1e9
        print(f"{M:>6} {N:>6} {K:>6} {flop / plain:>14.1f} {flop / dog:>17.1f} {ratio:>20.3f}", flush=True)
    return 0
