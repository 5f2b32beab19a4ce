"""Host time per kernel call: tawa's launch against torch.matmul's.

    python -m tawa.bench launch [--shape MxNxK] [--calls N] [--rounds R] [--json PATH]

The GEMM of examples/gemm.mlir on a small problem (default 256x256x128)
is called N times in a row while the GPU sleeps (`torch.cuda._sleep`, long
enough for all N), so every call only queues its work: host time per call =
wall time of the loop / N.  N stays below the depth of CUDA's launch queue
(about a thousand), which would otherwise block the loop.
Rows, each the median over R interleaved rounds:

- `tawa (repeated)`: the same arguments every call: the launch reuses its
  packed parameters (docs/runtime.md, "Launch cost");
- `tawa (checked)`: the prepared launches dropped before every call, so each
  call checks its arguments, packs them and launches (encoded tensor maps
  stay cached): what a call with new tensors costs;
- `torch.matmul`: `torch.matmul(A, B.T)` (cuBLAS), the baseline;
- `tawa (CUDA graph)` and `torch (CUDA graph)`: one graph of 100 calls
  replayed, per call: the floor that a graph gives both.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tawa.bench.gemm import DEFAULT_SOURCE, BenchError, logical_grid, parse_shapes

GRAPH_CALLS = 100
BUSY_US_PER_CALL = 100.0
"""The GPU sleeps this long per measured call before the calls start, so the
calls queue behind it and the loop measures host time only."""
SLEEP_CYCLES_PER_US = 2000
"""`torch.cuda._sleep` counts SM clock cycles; at most ~2 GHz on an H100, so
this sleeps at least the asked time."""


def host_us_per_call(fn: Callable[[], Any], calls: int, sync: Callable[[], None], busy: Callable[[float], None]) -> float:
    """Wall time of `calls` back-to-back calls of `fn`, per call, in µs,
    with the GPU kept busy (`busy(µs)`) so that the calls only queue work:
    what is measured is the host's time, never the GPU's."""
    sync()
    busy(calls * BUSY_US_PER_CALL)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    sync()
    return elapsed / calls * 1e6


def format_table(rows: dict[str, list[float]], meta: dict[str, Any]) -> str:
    baseline = statistics.median(rows["torch.matmul"])
    lines = [
        f"# {meta['workload']} on {meta['gpu']}, {meta['date']}; {meta['calls']} calls x {meta['rounds']} rounds",
        f"| {'launch':<20} | host µs/call | vs torch.matmul |",
        f"|{'-' * 22}|-------------:|----------------:|",
    ]
    for name, values in rows.items():
        us = statistics.median(values)
        lines.append(f"| {name:<20} | {us:12.2f} | {us / baseline:14.2f}x |")
    return "\n".join(lines)


def run(shape: tuple[int, int, int], calls: int, rounds: int, source: Path) -> tuple[dict[str, list[float]], dict[str, Any]]:
    try:
        import torch
    except ImportError as err:
        raise BenchError(f"needs torch with CUDA: {err}") from None
    if not torch.cuda.is_available():
        raise BenchError("needs a CUDA GPU (torch.cuda.is_available() is False)")
    import tawa

    M, N, K = shape
    kernel = tawa.compile(source.read_text(), "gemm")
    A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda").to(torch.bfloat16)
    C = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    g = logical_grid(M, N)
    kernel(A, B, C, M, N, K, grid=g)
    ref = torch.matmul(A, B.T)
    torch.cuda.synchronize()
    err = ((C.float() - ref.float()).norm() / ref.float().norm()).item()
    if not err < 1e-2:
        raise BenchError(f"tawa's result differs from cuBLAS's (relative error {err:.2e})")

    def repeated() -> None:
        kernel(A, B, C, M, N, K, grid=g)

    def checked() -> None:
        kernel._prepared.clear()
        kernel(A, B, C, M, N, K, grid=g)

    def matmul() -> None:
        torch.matmul(A, B.T)

    def graph_of(fn: Callable[[], None]) -> Callable[[], None]:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(GRAPH_CALLS):
                fn()
        return graph.replay

    graphs = {"tawa (CUDA graph)": graph_of(repeated), "torch (CUDA graph)": graph_of(matmul)}
    cases = {"tawa (repeated)": repeated, "tawa (checked)": checked, "torch.matmul": matmul}
    rows: dict[str, list[float]] = {name: [] for name in [*cases, *graphs]}
    sync = torch.cuda.synchronize

    def busy(us: float) -> None:
        torch.cuda._sleep(int(us * SLEEP_CYCLES_PER_US))
    for r in range(rounds):
        order = list(cases.items()) + list(graphs.items())
        for name, fn in order if r % 2 == 0 else reversed(order):
            n = calls if name in cases else max(1, calls // GRAPH_CALLS)
            per = host_us_per_call(fn, n, sync, busy)
            rows[name].append(per / (GRAPH_CALLS if name in graphs else 1))
    meta = {
        "workload": f"launch cost, gemm bf16 {M}x{N}x{K}",
        "gpu": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "calls": calls,
        "rounds": rounds,
        "torch": torch.__version__,
        "tawa": tawa.__version__,
    }
    return rows, meta


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tawa.bench launch",
        description="Host time per call of tawa's GEMM against torch.matmul, in the same run.",
    )
    parser.add_argument("--shape", default="256x256x128", metavar="MxNxK", help="problem (default 256x256x128)")
    parser.add_argument("--calls", type=int, default=500, help="calls per measurement (default 500, at most 1000)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="the tile kernel (@gemm)")
    args = parser.parse_args(argv)
    try:
        (shape,) = parse_shapes([args.shape])
        if not 1 <= args.calls <= 1000 or args.rounds < 1:
            raise BenchError("--calls must be 1 to 1000 (the launch queue's depth) and --rounds at least 1")
        rows, meta = run(shape, args.calls, args.rounds, args.source)
    except BenchError as err:
        print(f"tawa.bench launch: error: {err}", file=sys.stderr)
        return 1
    print(format_table(rows, meta))
    if args.json:
        args.json.write_text(json.dumps({**meta, "host_us_per_call": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
