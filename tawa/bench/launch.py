"""Host time per kernel call: tawa's launch against torch.matmul's.

    python -m tawa.bench launch [--shape MxNxK] [--calls N] [--rounds R] [--steps] [--json PATH]
    python -m tawa.bench launch --host-only [--shape MxNxK] [--calls N] [--rounds R]

The GEMM of examples/gemm.mlir on a small problem (default 256x256x128)
is called N times in a row while the GPU sleeps (`torch.cuda._sleep`, long
enough for all N), so every call only queues its work: host time per call =
wall time of the loop / N.  N stays below the depth of CUDA's launch queue
(about a thousand), which would otherwise block the loop.
Rows, each the median over R interleaved rounds:

- `tawa (repeated)`: the same arguments every call: the launch reuses its
  packed parameters (docs/runtime.md, "Launch cost");
- `tawa (checked)`: the prepared launches and launch templates dropped
  before every call, so each call checks its arguments, packs them and
  launches (encoded tensor maps stay cached);
- `tawa (fresh)`: each call on other tensors of the same layout than the
  call before (a rotation of `FRESH_TENSORS` triples A, B, C): the launch
  goes through the layout's launch template (docs/runtime.md, "New tensors
  of a known layout"), what a model's `kernel(...)` calls cost;
- `torch.matmul`: `torch.matmul(A, B.T)` (cuBLAS), the baseline;
- `tawa.torch (fresh)` and `torch.matmul (fresh)`: operator calls as a model
  makes them, each on other tensors than the call before, over rotating
  shapes, each with a new output (`fresh_operator_calls`);
- `tawa (CUDA graph)` and `torch (CUDA graph)`: one graph of 100 calls
  replayed, per call: the floor that a graph gives both;
- with `--steps`, the parts of a repeated call: `key` (reading the launch
  key), `again()` (the prepared launch: stream read and `cuLaunchKernel`),
  and `cuLaunchKernel` alone through CuPy's binding (what `again()` calls),
  cuda-bindings' and ctypes' (`driver_calls`).

`--host-only` needs no GPU, CuPy or CUDA: it times the host-side steps of a
call with the driver stubbed out (`host_only`), each the median over R
rounds of N calls of the process's CPU time.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tawa.bench.gemm import DEFAULT_SOURCE, BenchError, logical_grid, parse_shapes
from tawa.runtime.cuda import LaunchAPI, PreparedLaunch
from tawa.runtime.kernel import Kernel

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


def driver_calls(prepared: PreparedLaunch, stream: int) -> dict[str, Callable[[], Any]]:
    """`cuLaunchKernel` of `prepared` on raw stream `stream` through each
    binding there is: CuPy's (what `PreparedLaunch` calls), cuda-bindings'
    and ctypes' (each checked to launch once)."""
    import ctypes

    import cupy
    from cuda.bindings import driver

    f, smem, address = prepared.function, prepared.smem_bytes, prepared.params.address
    (gx, gy, gz), (bx, by, bz) = prepared.grid, prepared.block
    launch = cupy.cuda.driver.launchKernel
    function, hstream = driver.CUfunction(f), driver.CUstream(stream)
    libcuda = ctypes.CDLL("libcuda.so.1")
    c_launch = libcuda.cuLaunchKernel
    c_launch.restype = ctypes.c_int
    c_launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3

    def via_cupy() -> None:
        launch(f, gx, gy, gz, bx, by, bz, smem, stream, address, 0)

    def via_bindings() -> Any:
        return driver.cuLaunchKernel(function, gx, gy, gz, bx, by, bz, smem, hstream, address, 0)[0]

    def via_ctypes() -> int:
        return c_launch(f, gx, gy, gz, bx, by, bz, smem, stream, address, None)

    via_cupy()
    if int(via_bindings()) != 0 or via_ctypes() != 0:
        raise BenchError("cuLaunchKernel through cuda-bindings or ctypes failed")
    return {
        "cuLaunchKernel: CuPy": via_cupy,
        "cuLaunchKernel: cuda-bindings": via_bindings,
        "cuLaunchKernel: ctypes": via_ctypes,
    }


def run(
    shape: tuple[int, int, int], calls: int, rounds: int, source: Path, steps: bool = False
) -> tuple[dict[str, list[float]], dict[str, Any]]:
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
        kernel._bound.clear()
        kernel(A, B, C, M, N, K, grid=g)

    triples = [(torch.randn(M, K, device="cuda").to(torch.bfloat16), torch.randn(N, K, device="cuda").to(torch.bfloat16),
                torch.empty(M, N, dtype=torch.bfloat16, device="cuda")) for _ in range(FRESH_TENSORS)]
    rotation = iter(range(1 << 62))

    def fresh() -> None:
        A2, B2, C2 = triples[next(rotation) % FRESH_TENSORS]
        kernel(A2, B2, C2, M, N, K, grid=g)

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
    cases = {"tawa (repeated)": repeated, "tawa (checked)": checked, "tawa (fresh)": fresh, "torch.matmul": matmul}
    cases.update(fresh_operator_calls(torch, M, N, K))
    if steps:  # the parts of a repeated call
        args = (A, B, C, M, N, K)
        kernel(*args, grid=g)
        prepared = kernel._prepared[kernel._keys.read(args, g)]
        cases["key"] = lambda: kernel._keys.read(args, g)
        cases["again()"] = prepared.again
        cases.update(driver_calls(prepared, torch.cuda.current_stream().cuda_stream))
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


FRESH_SHAPES = 4
FRESH_TENSORS = 8
"""Fresh-tensor rows: this many layer shapes, each with this many activations
in rotation (every call gets other tensors than the call before)."""


def fresh_operator_calls(torch: Any, M: int, N: int, K: int) -> dict[str, Callable[[], None]]:
    """Operator calls as a model makes them: `x · wᵀ` through `tawa.torch.matmul`
    and through `torch.matmul`, each call on the next activation of a rotation
    over `FRESH_SHAPES` shapes (M, 2M, ..., with N and K alternating) and a new
    output.  Each shape's kernel is compiled and checked against torch first."""
    import tawa.torch as tt

    shapes = [(M * (i + 1), N if i % 2 == 0 else K, K if i % 2 == 0 else N) for i in range(FRESH_SHAPES)]
    pairs = []
    for m, n, k in shapes:
        w = torch.randn(n, k, device="cuda").to(torch.bfloat16)
        for _ in range(FRESH_TENSORS):
            pairs.append((torch.randn(m, k, device="cuda").to(torch.bfloat16), w))
    pairs = [pairs[(j % FRESH_SHAPES) * FRESH_TENSORS + j // FRESH_SHAPES] for j in range(len(pairs))]
    for x, w in pairs[:FRESH_SHAPES]:
        ref = torch.matmul(x, w.T).float()
        err = ((tt.matmul(x, w, transpose_b=True).float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise BenchError(f"tawa.torch.matmul differs from torch.matmul on {tuple(x.shape)}·{tuple(w.T.shape)}: "
                             f"relative error {err:.2e}")
    rotation = iter(range(1 << 62))
    count = len(pairs)

    def tawa_fresh() -> None:
        x, w = pairs[next(rotation) % count]
        tt.matmul(x, w, transpose_b=True)

    def torch_fresh() -> None:
        x, w = pairs[next(rotation) % count]
        torch.matmul(x, w.T)

    return {"tawa.torch (fresh)": tawa_fresh, "torch.matmul (fresh)": torch_fresh}


# --------------------------------------------------------------------------- host only


class StandInTensor:
    """What the runtime reads of a CUDA torch tensor, without a GPU: what
    `Kernel.plan` checks (`tawa.runtime.arrays`)."""

    is_cuda = True

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: str = "bfloat16", itemsize: int = 2):
        self.ptr, self.shape, self.dtype, self.itemsize = ptr, shape, dtype, itemsize
        self.device = type("device", (), {"index": 0})()

    def data_ptr(self) -> int:
        return self.ptr

    def element_size(self) -> int:
        return self.itemsize

    def stride(self) -> tuple[int, ...]:
        return tuple(math.prod(self.shape[i + 1 :]) for i in range(len(self.shape)))

    def is_contiguous(self) -> bool:
        return True


def _no_launch(*args: Any) -> None:
    """Stands in for `cuLaunchKernel` (its own cost is a row of the table)."""


STUB_API = LaunchAPI(_no_launch, None, RuntimeError, lambda uses_torch, device: functools.partial(int, device))
"""The driver stubbed out: launches nothing; one device (as on a one-GPU
machine: no device check); the stream read is a C call, as torch's is."""


def host_only(
    kernel: Kernel, shape: tuple[int, int, int], calls: int, rounds: int
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Host µs per call of each step of a launch of GEMM `kernel(A, B, C, M, N, K)`
    (a private copy: its prepared launches are stubs), with
    the driver stubbed out.  The key is read from torch CPU tensors (what a
    torch tensor's reads cost; without torch, its rows are left out); the
    plan checks `StandInTensor`s (it refuses host memory).  Rows:

    - `key`: `LaunchKeys.read(args, grid)`; `lookup`: the prepared launch by key;
    - `again (stub driver)`: `PreparedLaunch.again()`: device check, stream, the call;
    - `stub driver`: the stand-in `cuLaunchKernel` alone (in both rows above);
    - `kernel(...) repeated`: the whole repeated call (`Kernel.__call__`);
    - `plan` and `pack`: what a call with new arguments adds (checks and
      parameter bytes; tensor maps not encoded: 128 zero bytes)."""
    import tawa
    from tawa.runtime.launch import kernel_arguments
    from tawa.runtime.params import PackedParams

    M, N, K = shape
    kernel = Kernel.from_ptx(kernel.ptx, kernel.abi)
    g = logical_grid(M, N)
    shapes = [(M, K), (N, K), (M, N)]
    stand_ins = [StandInTensor(0x7F0000000000 + (i << 30), s) for i, s in enumerate(shapes)]
    try:
        import torch

        arrays: list[Any] = [torch.empty(s, dtype=torch.bfloat16) for s in shapes]
        reads = f"torch {torch.__version__} CPU tensors"
    except ImportError:  # the key reads torch tensors and CuPy arrays only: no key rows
        arrays, reads = stand_ins, "nothing (no torch: no key rows)"
    args = (*arrays, M, N, K)
    plan = kernel.plan(*stand_ins, M, N, K, grid=g)

    def encode(spec: Any) -> bytes:
        return bytes(128)

    def pack() -> PackedParams:
        return PackedParams(kernel_arguments(plan.params, encode))

    prepared = PreparedLaunch(
        1, plan.shape.grid, plan.shape.block, plan.shape.smem_bytes, pack(), 0, plan.uses_torch, STUB_API
    )
    keys = kernel._keys
    key = keys.read(args, g)
    steps: dict[str, Callable[[], Any]] = {}
    if key is not None:
        kernel._prepared[key] = prepared
        steps["key"] = lambda: keys.read(args, g)
        steps["lookup"] = lambda: kernel._prepared.get(key)
    steps["again (stub driver)"] = prepared.again
    stub_args = (1, *plan.shape.grid, *plan.shape.block, plan.shape.smem_bytes, 0, 0, 0)
    steps["stub driver"] = lambda: _no_launch(*stub_args)
    if key is not None:
        steps["kernel(...) repeated"] = lambda: kernel(*args, grid=g)
    steps["plan"] = lambda: kernel.plan(*stand_ins, M, N, K, grid=g)
    steps["pack"] = pack
    rows: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, fn in steps.items():
            # CPU time of this process: what the host spends, less disturbed
            # by other processes on a shared machine than wall time.
            start = time.process_time()
            for _ in range(calls):
                fn()
            rows[name].append((time.process_time() - start) / calls * 1e6)
    meta = {
        "workload": f"host steps of a launch, gemm bf16 {M}x{N}x{K}, driver stubbed, key read from {reads}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "calls": calls,
        "rounds": rounds,
        "python": platform.python_version(),
        "tawa": tawa.__version__,
    }
    return rows, meta


def format_host_table(rows: dict[str, list[float]], meta: dict[str, Any]) -> str:
    lines = [
        f"# {meta['workload']}; {meta['date']}; {meta['calls']} calls x {meta['rounds']} rounds",
        f"| {'step':<22} | host µs/call (median) | min |",
        f"|{'-' * 24}|----------------------:|----:|",
    ]
    for name, values in rows.items():
        lines.append(f"| {name:<22} | {statistics.median(values):21.2f} | {min(values):.2f} |")
    return "\n".join(lines)


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
    parser.add_argument(
        "--host-only", action="store_true", help="no GPU: time the host steps of a call with the driver stubbed out"
    )
    parser.add_argument(
        "--steps",
        action="store_true",
        help="also time the parts of a repeated call: the key, again(), and cuLaunchKernel through CuPy, "
        "cuda-bindings and ctypes",
    )
    args = parser.parse_args(argv)
    try:
        (shape,) = parse_shapes([args.shape])
        if not 1 <= args.calls <= (10**6 if args.host_only else 1000) or args.rounds < 1:
            raise BenchError("--calls must be 1 to 1000 (the launch queue's depth) and --rounds at least 1")
        if args.host_only:
            import tawa

            gemm = tawa.compile(args.source.read_text(), "gemm")
            rows, meta = host_only(gemm, shape, args.calls, args.rounds)
        else:
            rows, meta = run(shape, args.calls, args.rounds, args.source, args.steps)
    except BenchError as err:
        print(f"tawa.bench launch: error: {err}", file=sys.stderr)
        return 1
    print(format_host_table(rows, meta) if args.host_only else format_table(rows, meta))
    if args.json:
        args.json.write_text(json.dumps({**meta, "host_us_per_call": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
