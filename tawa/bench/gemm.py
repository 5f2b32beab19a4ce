"""GEMM, tawa against cuBLAS in the same process.

    python -m tawa.bench gemm [--sweep | --shapes MxNxK ... | --random N [--seed S]] [--dtype bf16|fp8]
        [--config heuristic|split-k|autotune|example] [--stages D] [--cluster N] [--rounds R]
        [--json PATH] [--plot PNG]
    python -m tawa.bench gemm --explain MxNxK ... [--dtype bf16|fp8] [--sms N]   # no GPU needed

C = A·Bᵀ with A M×K, B N×K, C M×N row-major, f32 accumulation, bf16 C
(`--b-layout kn`: C = A·B with B K×N, read MN-major, against
`torch.matmul(A, B)`).  bf16 inputs are timed against cuBLAS through
`torch.matmul(A, B.T)`; e4m3
inputs (`--dtype fp8`) against cuBLAS's fp8 GEMM through `torch._scaled_mm`
(unit scales).  tawa's kernel per shape (`--config`): `heuristic` (default)
is the generated GEMM of `tawa.runtime.autotune.heuristic` (split-K where no
tile size fills the GPU: its split kernel and the torch sum of its partials
are timed together, as one call), `autotune`
the one `tawa.autotune` times fastest (once per shape bucket, cached on
disk), `example` the tile program of `--source` (examples/gemm.mlir or
gemm_fp8.mlir, 128×256 tiles) compiled with `stages=D`.

For every shape, tawa's result is first compared with cuBLAS's (relative
Frobenius error, C poisoned with NaN before the launch).  Then both are
timed, interleaved round-robin over all shapes for R rounds (the order of the
two alternates between rounds), and the table gives the median of each over
the rounds: TFLOP/s = 2·M·N·K / time, and the geometric mean of the ratios.
Timing is `triton.testing.do_bench` (median, L2 flushed before each call)
when Triton is importable, else CUDA events around single calls with the
same flush.  The board's power cap moves absolute numbers between runs and
machines; compare the ratio.  `--sweep` times the shapes of `SWEEP_SHAPES`;
`--plot` draws TFLOP/s per shape (`tawa.bench.plot`).  `--cluster 2` compiles
tawa's kernels in 2-CTA clusters that multicast B (`tawa-cluster`);
`--defer-stores` stores each program's tile under the next program's first
dot (`tawa-defer-stores`).  `--group-rows 128` gives each consumer warp
group 128 rows and half the columns (the same accumulator): the heuristic's
128x256 becomes 256x128 on two warp groups (cuBLAS's cooperative tile).

`--random N --seed S` times N shapes nobody tuned for (`random_shapes`: M
log-uniform over 16–16384, N and K over 256–28672, multiples of 8, of 16
for fp8, whose 1-byte rows need 16-byte strides for TMA and
`torch._scaled_mm`), and with them the cost model's prediction
(`tawa.analysis.gemm_cost.estimate` of the row's configuration on this
GPU's SMs): per row the predicted time and its error against the measured
one, and their geomean.  `--explain MxNxK` prints, without a GPU, every
candidate the heuristic weighs for the shape with the model's estimate in
parts (prologue, main loops, epilogues, the DRAM floor, split-K's
reduction; the rounds; what bounds a k-step), and its choice.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tawa.target.hopper import WGMMA_M

DEFAULT_SHAPES: tuple[tuple[int, int, int], ...] = tuple(
    (8192, 8192, k) for k in (1024, 2048, 4096, 8192, 16384)
) + ((4096, 4096, 4096),)
SWEEP_SHAPES: tuple[tuple[int, int, int], ...] = tuple(dict.fromkeys(
    tuple((n, n, n) for n in (1024, 2048, 4096, 8192, 16384))
    + tuple((8192, 8192, k) for k in (512, 1024, 2048, 4096, 16384))
    + tuple((m, n, k) for m in (4096, 16384)
            for n, k in ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (8192, 28672)))
    + tuple((m, 8192, 8192) for m in (64, 256))
))
"""Squares; M = N = 8192 over K; LLM projections (M tokens × (N, K) of
Llama-style layers); skinny M (4096³ is both a square and a projection)."""
CONFIGS = ("heuristic", "split-k", "autotune", "example")
DTYPES = {"bf16": ("examples/gemm.mlir", "gemm"), "fp8": ("examples/gemm_fp8.mlir", "gemm_fp8")}
OPERANDS = {"bf16": "bf16", "fp8": "f8E4M3FN"}
"""The element type of A and B per `--dtype`."""
TILE_M, TILE_N = 128, 256
"""The program tile of examples/gemm.mlir: logical grid (⌈M/128⌉, ⌈N/256⌉)."""
WARMUP_MS, REP_MS = 50, 300
TOLERANCE = 1e-2
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SOURCE = ROOT / "examples" / "gemm.mlir"


class BenchError(Exception):
    """Why the benchmark cannot run (one line)."""


# --------------------------------------------------------------------------- helpers (CPU-tested)


def parse_shapes(items: Sequence[str]) -> list[tuple[int, int, int]]:
    """`MxNxK` items (comma- or space-separated); `S` alone means S×S×S."""
    shapes = []
    for item in items:
        for part in item.replace(",", " ").split():
            dims = part.lower().replace("×", "x").split("x")
            try:
                values = [int(d) for d in dims]
            except ValueError:
                raise BenchError(f"bad shape {part!r}: expected MxNxK, e.g. 8192x8192x4096") from None
            if len(values) == 1:
                values *= 3
            if len(values) != 3 or any(v <= 0 for v in values):
                raise BenchError(f"bad shape {part!r}: expected three positive sizes MxNxK")
            shapes.append((values[0], values[1], values[2]))
    if not shapes:
        raise BenchError("no shapes given")
    return shapes


RANDOM_M = (16, 16384)
RANDOM_NK = (256, 28672)
"""The ranges `random_shapes` draws M and N, K from (log-uniform)."""


def random_shapes(count: int, seed: int, multiple: int = 8) -> list[tuple[int, int, int]]:
    """`count` shapes M×N×K drawn with `random.Random(seed)`: M log-uniform
    over `RANDOM_M`, N and K over `RANDOM_NK`, each rounded to a multiple
    of `multiple` inside its range."""
    rng = random.Random(seed)

    def draw(lo: int, hi: int) -> int:
        value = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        return min(hi // multiple * multiple, max(-(-lo // multiple) * multiple, round(value / multiple) * multiple))

    return [(draw(*RANDOM_M), draw(*RANDOM_NK), draw(*RANDOM_NK)) for _ in range(count)]


def explain(M: int, N: int, K: int, dtype: str = "bf16", sms: int | None = None, split: bool = False,
            device: str | None = None, b_layout: str = "nk") -> str:
    """The heuristic's candidates for M×N×K with the cost model's estimate
    of each (fastest first) with the parameters fitted for `device` (a CUDA
    device name; default the H100's), and its choice (text; no GPU)."""
    from tawa.analysis.gemm_cost import parameters_for
    from tawa.runtime.gemm_choice import DEFAULT_SPACE, GemmProblem, heuristic, ranked
    from tawa.target.hopper import SM_COUNT

    sms = sms or SM_COUNT
    params = parameters_for(device)
    operand = OPERANDS[dtype]
    problem = GemmProblem(M, N, K, operand, operand, "bf16", b_layout=b_layout)
    choice = heuristic(problem, sms, split=split, params=params)
    lines = [f"GEMM {M}x{N}x{K}, {dtype} in, bf16 out, on {sms} SMs: the cost model's estimates "
             f"(tawa.analysis.gemm_cost, the parameters of {device or 'the H100'}), fastest first"]
    for rank, (candidate, e) in enumerate(ranked(problem, DEFAULT_SPACE, sms, params), 1):
        mark = "  <- choice" if candidate == choice else ""
        lines.append(f"{rank:3}. {candidate.id}{mark}")
        lines.append(f"       {e.describe()}")
    lines.append(f"choice: {choice.id}" + ("" if split else " (split-K candidates not taken by default: "
                                                             "--split to let the model split)"))
    if problem.transposable:
        lines.append("(-t: computed transposed, Cᵀ = B·Aᵀ: the tile's rows are B's, its columns hold M; its "
                     "estimate is the mirrored problem's, GemmConfig.transposed)")
    return "\n".join(lines)


def logical_grid(M: int, N: int) -> tuple[int, int]:
    return (math.ceil(M / TILE_M), math.ceil(N / TILE_N))


def tflops(M: int, N: int, K: int, ms: float) -> float:
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12


@dataclass
class Row:
    M: int
    N: int
    K: int
    rel_err: float = math.nan
    config: str = ""
    """tawa's configuration for this shape (tile, stages, ...)."""
    tawa_ms: list[float] = field(default_factory=list)
    cublas_ms: list[float] = field(default_factory=list)
    predicted_ms: float = math.nan
    """The cost model's estimate of tawa's time (NaN: not asked)."""

    @property
    def correct(self) -> bool:
        return self.rel_err <= TOLERANCE  # NaN compares False

    @property
    def tawa_tflops(self) -> float:
        return tflops(self.M, self.N, self.K, statistics.median(self.tawa_ms)) if self.tawa_ms else math.nan

    @property
    def cublas_tflops(self) -> float:
        return tflops(self.M, self.N, self.K, statistics.median(self.cublas_ms)) if self.cublas_ms else math.nan

    @property
    def ratio(self) -> float:
        return self.tawa_tflops / self.cublas_tflops

    @property
    def prediction_error(self) -> float:
        """predicted / measured − 1 (NaN without a prediction)."""
        return self.predicted_ms / statistics.median(self.tawa_ms) - 1 if self.tawa_ms else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {
            "M": self.M,
            "N": self.N,
            "K": self.K,
            "config": self.config,
            "tawa_tflops": self.tawa_tflops,
            "cublas_tflops": self.cublas_tflops,
            "ratio": self.ratio,
            "rel_err_vs_cublas": self.rel_err,
            "correct": self.correct,
            "tawa_ms_per_round": self.tawa_ms,
            "cublas_ms_per_round": self.cublas_ms,
            **({} if math.isnan(self.predicted_ms) else
               {"predicted_ms": self.predicted_ms, "prediction_error": self.prediction_error}),
        }


def geomean(values: Sequence[float]) -> float:
    """Geometric mean (NaN if any value is not a positive number)."""
    if not values or not all(v > 0 for v in values):
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))


def prediction_error(rows: Sequence[Row]) -> float:
    """The typical error of the cost model's predictions: exp(mean |log
    predicted/measured|) − 1 over the rows that have one (NaN: none)."""
    logs = [math.log(r.prediction_error + 1) for r in rows if r.prediction_error + 1 > 0]
    return math.exp(sum(abs(x) for x in logs) / len(logs)) - 1 if logs else math.nan


def format_table(rows: Sequence[Row], meta: dict[str, Any]) -> str:
    dtype = meta.get("dtype", "bf16")
    predicted = any(not math.isnan(r.predicted_ms) for r in rows)
    lines = [
        f"tawa GEMM vs cuBLAS on {meta['gpu']}, {meta['date']}",
        f"{'C = A·B, B K×N' if meta.get('b_layout') == 'kn' else 'C = A·Bᵀ'}, {dtype} in, bf16 out, f32 accumulation; "
        f"tawa config: {meta.get('config', 'example')}"
        + (f", stages={meta['stages']}" if meta.get("config", "example") == "example" else " (per row)")
        + f"; {meta['rounds']} interleaved rounds, median; timer: {meta['timer']}",
        f"torch {meta.get('torch', '?')}, tawa {meta.get('tawa', '?')}"
        + (f"; shapes: --random {meta['random']} --seed {meta['seed']}" if "seed" in meta else ""),
        "",
        f"{'M':>6} {'N':>6} {'K':>6}  {'tawa TFLOP/s':>12}  {'cuBLAS TFLOP/s':>14}  "
        f"{'tawa/cuBLAS':>11}  {'rel err vs cuBLAS':>17}  "
        + (f"{'tawa µs':>9}  {'model µs':>9}  {'model err':>9}  " if predicted else "") + "config",
    ]
    for r in rows:
        flag = "" if r.correct else "  WRONG"
        model = (f"{statistics.median(r.tawa_ms) * 1e3 if r.tawa_ms else math.nan:>9.1f}  "
                 f"{r.predicted_ms * 1e3:>9.1f}  {r.prediction_error:>+9.1%}  " if predicted else "")
        lines.append(
            f"{r.M:>6} {r.N:>6} {r.K:>6}  {r.tawa_tflops:>12.1f}  {r.cublas_tflops:>14.1f}  "
            f"{r.ratio:>11.3f}  {r.rel_err:>17.2e}  {model}{r.config}{flag}"
        )
    if len(rows) > 1:
        ratios = [r.ratio for r in rows]
        lines.append(f"geomean tawa/cuBLAS {geomean(ratios):.3f}; min {min(ratios):.3f}, max {max(ratios):.3f}")
    if predicted:
        lines.append(f"cost model: typical error {prediction_error(rows):.1%} (geomean of |predicted/measured|)")
    return "\n".join(lines)


def plot_spec(rows: Sequence[Row], meta: dict[str, Any]) -> dict[str, Any]:
    """What `--plot` draws (`tawa.bench.plot`): TFLOP/s per shape, both."""
    return {
        "title": f"{meta.get('dtype', 'bf16')} GEMM, tawa ({meta.get('config', 'example')}) vs cuBLAS, "
                 f"{meta['gpu']}, {meta['date']}",
        "ylabel": "TFLOP/s",
        "labels": [f"{r.M}x{r.N}x{r.K}" for r in rows],
        "series": {"tawa": [r.tawa_tflops for r in rows], "cuBLAS": [r.cublas_tflops for r in rows]},
        "ratio": ["tawa", "cuBLAS"],
    }


def report(rows: Sequence[Row], meta: dict[str, Any]) -> dict[str, Any]:
    ratios = [r.ratio for r in rows]
    predicted = any(not math.isnan(r.predicted_ms) for r in rows)
    return {**meta, "geomean_ratio": geomean(ratios), "min_ratio": min(ratios) if ratios else math.nan,
            **({"prediction_error": prediction_error(rows)} if predicted else {}),
            "results": [r.as_dict() for r in rows], "plot": plot_spec(rows, meta)}


# --------------------------------------------------------------------------- timing (GPU)


def make_timer() -> tuple[Callable[[Callable[[], Any]], float], str]:
    """A function timing a callable (ms, median), and its description."""
    try:
        from triton.testing import do_bench
    except ImportError:
        return _event_timer, "CUDA events (median of single calls, L2 flushed)"

    def bench(fn: Callable[[], Any]) -> float:
        try:
            return float(do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median"))
        except TypeError:  # Triton before return_mode
            ms = do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, quantiles=[0.5])
            return float(ms[0] if isinstance(ms, list | tuple) else ms)

    return bench, "triton.testing.do_bench (median, L2 flushed)"


def _event_timer(fn: Callable[[], Any]) -> float:
    import torch

    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(WARMUP_MS / estimate))):
        fn()
    n = max(5, int(REP_MS / estimate))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for s, e in zip(starts, ends):
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


# --------------------------------------------------------------------------- the run


class Kernels:
    """tawa's kernel for each shape, as `--config` says."""

    def __init__(self, config: str, dtype: str, stages: int, source: Path, log: Callable[[str], None],
                 cluster: int = 1, defer_stores: bool = False, group_rows: int = WGMMA_M, b_layout: str = "nk"):
        import tawa

        self.config, self.dtype, self.stages, self.log, self.b_layout = config, dtype, stages, log, b_layout
        self.options: dict[str, Any] = {**({"cluster": cluster} if cluster > 1 else {}),
                                        **({"defer_stores": True} if defer_stores else {}),
                                        **({"group_rows": group_rows} if group_rows != WGMMA_M else {})}
        """Pipeline options beyond the configuration's (`Choice` fields of the same names)."""
        self.example = None
        self.choice: Any = None
        """The configuration of the last problem asked for (None for the example)."""
        if self.options and config == "autotune":
            raise BenchError("--cluster, --defer-stores and --group-rows apply to --config heuristic, split-k and example "
                             "(autotune decides)")
        if config == "example" and b_layout != "nk":
            raise BenchError("--b-layout kn applies to --config heuristic, split-k and autotune (the example reads B N×K)")
        if config == "example" and "group_rows" in self.options:
            raise BenchError("--group-rows applies to --config heuristic and split-k (the example's 128x256 tile "
                             "would give one warp group a 128x256 accumulator, more registers than it has)")
        if config == "example":
            if not source.is_file():
                raise BenchError(f"cannot find the GEMM kernel {source} (use --source)")
            t0 = time.perf_counter()
            self.example = tawa.compile(source.read_text(), DTYPES[dtype][1], stages=stages, **self.options)
            self.example.load()
            log(f"compiled and loaded {source.name} (stages={stages}) in {time.perf_counter() - t0:.2f} s")

    def __call__(self, M: int, N: int, K: int) -> tuple[Any, tuple[int, ...], str]:
        """(kernel, grid, description) for the problem M×N×K."""
        if self.example is not None:
            extra = "".join(f" {k.replace('_', '-')}={v}" for k, v in self.options.items())
            return self.example, logical_grid(M, N), f"example 128x256 stages={self.stages}{extra}"
        from dataclasses import replace

        from tawa.runtime.autotune import GemmProblem, autotune, device_info, heuristic, machine_parameters

        operand = OPERANDS[self.dtype]
        problem = GemmProblem(M, N, K, operand, operand, "bf16", b_layout=self.b_layout)
        if self.config == "autotune":
            choice = autotune(problem, log=self.log)
        else:  # "split-k": the heuristic's split where its grid leaves SMs idle (off by default)
            choice = heuristic(problem, device_info()[1], split=self.config == "split-k", params=machine_parameters())
            rows = self.options.get("group_rows")
            if rows is not None and rows != choice.group_rows:  # the heuristic may choose 128-row warp groups itself
                if choice.group_rows != WGMMA_M:
                    raise BenchError(f"{M}x{N}x{K}: the heuristic chose {choice.id}; --group-rows {rows} "
                                     "reshapes only a choice of 64-row warp groups")
                choice = choice.reshaped(group_rows=rows)
            choice = replace(choice, **{k: v for k, v in self.options.items() if k != "group_rows"})
        t0 = time.perf_counter()
        kernel = choice.compile()
        kernel.load()
        self.log(f"{M}x{N}x{K}: {choice.id} (compiled in {time.perf_counter() - t0:.2f} s)")
        self.choice = choice
        return kernel, tuple(choice.grid(M, N)), choice.id

    def predicted_ms(self, M: int, N: int, K: int, sms: int) -> float:
        """The cost model's estimate of the last problem's configuration (ms; NaN for the example)."""
        if self.choice is None:
            return math.nan
        from tawa.analysis.gemm_cost import estimate
        from tawa.runtime.autotune import GemmProblem, machine_parameters

        operand = OPERANDS[self.dtype]
        problem = GemmProblem(M, N, K, operand, operand, "bf16", b_layout=self.b_layout)
        return estimate(problem, self.choice, sms, machine_parameters()).total * 1e3


def run(
    shapes: Sequence[tuple[int, int, int]],
    stages: int,
    rounds: int,
    source: Path = DEFAULT_SOURCE,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
    dtype: str = "bf16",
    config: str = "example",
    cluster: int = 1,
    defer_stores: bool = False,
    group_rows: int = WGMMA_M,
    extra_meta: dict[str, Any] | None = None,
    b_layout: str = "nk",
) -> tuple[list[Row], dict[str, Any]]:
    if b_layout != "nk" and dtype == "fp8":
        raise BenchError("--b-layout kn takes bf16 (wgmma reads fp8 operands K-major only)")
    try:
        import torch
    except ImportError as err:
        raise BenchError(f"needs torch with CUDA: {err}") from None
    if not torch.cuda.is_available():
        raise BenchError("needs a CUDA GPU (torch.cuda.is_available() is False)")
    import tawa

    kernels = Kernels(config, dtype, stages, source, log, cluster, defer_stores, group_rows, b_layout)
    timer, timer_name = make_timer()
    meta = {
        "workload": f"gemm {dtype} C = A·B^T" if b_layout == "nk" else f"gemm {dtype} C = A·B, B K×N",
        "b_layout": b_layout,
        "dtype": dtype,
        "config": config,
        "gpu": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "stages": stages,
        "cluster": cluster,
        "defer_stores": defer_stores,
        "group_rows": group_rows,
        "rounds": rounds,
        "timer": timer_name,
        "torch": torch.__version__,
        "tawa": tawa.__version__,
        **(extra_meta or {}),
    }
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    one = torch.ones((), device="cuda")
    operand = torch.float8_e4m3fn if dtype == "fp8" else torch.bfloat16

    rows, cases = [], []
    for M, N, K in shapes:
        kernel, g, described = kernels(M, N, K)
        A = torch.randn(M, K, device="cuda").to(operand)
        B = torch.randn(*((N, K) if b_layout == "nk" else (K, N)), device="cuda").to(operand)
        C = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
        kernel(A, B, C, M, N, K, grid=g)
        if b_layout == "kn":
            def run_cublas(A=A, B=B) -> Any:
                return torch.matmul(A, B)
        elif dtype == "fp8":
            def run_cublas(A=A, B=B) -> Any:
                return torch._scaled_mm(A, B.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        else:
            def run_cublas(A=A, B=B) -> Any:
                return torch.matmul(A, B.T)
        ref = run_cublas()
        torch.cuda.synchronize()
        row = Row(M, N, K, config=described, predicted_ms=kernels.predicted_ms(M, N, K, sms))
        row.rel_err = ((C.float() - ref.float()).norm() / ref.float().norm()).item()
        log(f"{M}x{N}x{K}: rel err vs cuBLAS {row.rel_err:.2e}{'' if row.correct else ' (WRONG)'}")
        del ref

        def run_tawa(kernel=kernel, A=A, B=B, C=C, M=M, N=N, K=K, g=g) -> None:
            kernel(A, B, C, M, N, K, grid=g)

        rows.append(row)
        cases.append((row, run_tawa, run_cublas))

    for r in range(rounds):
        for row, run_tawa, run_cublas in cases:
            order = [("tawa", run_tawa), ("cublas", run_cublas)]
            for name, fn in order if r % 2 == 0 else reversed(order):
                ms = timer(fn)
                (row.tawa_ms if name == "tawa" else row.cublas_ms).append(ms)
            log(
                f"round {r + 1}/{rounds} {row.M}x{row.N}x{row.K}: tawa {tflops(row.M, row.N, row.K, row.tawa_ms[-1]):.1f}, "
                f"cuBLAS {tflops(row.M, row.N, row.K, row.cublas_ms[-1]):.1f} TFLOP/s"
            )
    return rows, meta


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tawa.bench gemm",
        description="GEMM (C = A·Bᵀ): tawa against cuBLAS, timed in the same run.",
    )
    parser.add_argument("--stages", type=int, default=4, help="ring depth D of --config example (default 4)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--shapes",
        nargs="+",
        metavar="MxNxK",
        help="shapes (default: 8192x8192xK for K in 1024..16384, and 4096x4096x4096)",
    )
    which.add_argument("--sweep", action="store_true", help=f"the {len(SWEEP_SHAPES)} shapes of SWEEP_SHAPES")
    which.add_argument("--random", type=int, metavar="N",
                       help="N shapes drawn at random (M 16-16384, N and K 256-28672, log-uniform), with the "
                       "cost model's predicted time per row")
    which.add_argument("--explain", nargs="+", metavar="MxNxK",
                       help="print the candidates the heuristic weighs for each shape, the cost model's estimate "
                       "of each, and the choice (no GPU)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --random (default 0)")
    parser.add_argument("--sms", type=int, default=None, help="SMs --explain estimates for (default: the H100's 132)")
    parser.add_argument("--device", default=None, metavar="NAME",
                        help="--explain: the GPU whose fitted parameters the model takes, as CUDA names it "
                        "(e.g. 'NVIDIA H200'; default the H100's)")
    parser.add_argument("--split", action="store_true",
                        help="--explain: let the heuristic split K where the model says it pays (as --config split-k)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="input type (default bf16)")
    parser.add_argument("--config", choices=CONFIGS, default=None,
                        help="tawa's kernel per shape (default: split-k for bf16, tawa.torch.matmul's choice, "
                        "and heuristic for fp8; example when --source is given; heuristic: the cost model's "
                        "unsplit choice; split-k: the heuristic, splitting K where the model says it pays)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--plot", type=Path, metavar="PNG", help="also draw TFLOP/s per shape (needs matplotlib)")
    parser.add_argument("--source", type=Path, default=None, help="the tile kernel of --config example")
    parser.add_argument("--cluster", type=int, default=1,
                        help="CTAs per thread-block cluster multicasting B (tawa-cluster; default 1: none)")
    parser.add_argument("--defer-stores", action="store_true",
                        help="store each program's tile under the next program's first dot (tawa-defer-stores)")
    parser.add_argument("--b-layout", choices=("nk", "kn"), default="nk",
                        help="B as stored: nk, N×K (C = A·Bᵀ, x·Wᵀ; default) or kn, K×N (C = A·B, read "
                        "MN-major), each against cuBLAS through torch.matmul of the same layout (bf16)")
    parser.add_argument("--group-rows", type=int, default=WGMMA_M, choices=(WGMMA_M, 2 * WGMMA_M),
                        help="rows each consumer warp group owns (default 64); 128 reshapes the heuristic's "
                        "tile to keep each warp group's accumulator: 128x256 → 256x128")
    args = parser.parse_args(argv)
    # bf16 by default as tawa.torch.matmul chooses (K split where the model
    # says it pays); fp8 unsplit (matmul_fp8's scales need the whole sum).
    config = args.config or ("example" if args.source else "split-k" if args.dtype == "bf16" else "heuristic")
    source = args.source or ROOT / DTYPES[args.dtype][0]
    try:
        if args.explain:
            for M, N, K in parse_shapes(args.explain):
                print(explain(M, N, K, args.dtype, args.sms, args.split, args.device, args.b_layout))
            return 0
        extra: dict[str, Any] = {}
        if args.random is not None:
            if args.random < 1:
                raise BenchError(f"--random must be at least 1, got {args.random}")
            shapes = random_shapes(args.random, args.seed, 16 if args.dtype == "fp8" else 8)
            extra = {"random": args.random, "seed": args.seed}
        else:
            shapes = parse_shapes(args.shapes) if args.shapes else list(SWEEP_SHAPES if args.sweep else DEFAULT_SHAPES)
        if args.rounds < 1:
            raise BenchError("--rounds must be at least 1")
        from tawa.transforms.pipeline.cluster import size_problem

        if size_problem(args.cluster):
            raise BenchError(f"--cluster {size_problem(args.cluster)}")
        rows, meta = run(shapes, args.stages, args.rounds, source, dtype=args.dtype, config=config,
                         cluster=args.cluster, defer_stores=args.defer_stores,
                         group_rows=args.group_rows, extra_meta=extra, b_layout=args.b_layout)
    except BenchError as err:
        print(f"tawa.bench gemm: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # TawaError and friends: one line
        from tawa.diagnostics import TawaError

        if not isinstance(err, TawaError):
            raise
        print(str(err).splitlines()[0], file=sys.stderr)
        return 1
    print(format_table(rows, meta))
    if args.json:
        args.json.write_text(json.dumps(report(rows, meta), indent=2) + "\n")
    if args.plot:
        from tawa.bench.plot import save

        if not save(plot_spec(rows, meta), args.plot, "tawa.bench gemm"):
            return 1
    wrong = [r for r in rows if not r.correct]
    if wrong:
        print(f"tawa.bench gemm: error: {len(wrong)} result(s) differ from cuBLAS by more than {TOLERANCE}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
