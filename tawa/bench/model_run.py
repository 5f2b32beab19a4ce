"""How `python -m tawa.bench model` runs a row (tawa.bench.model), and
what a row holds (`Row`): both variants warmed up, checked against each
other (and float32), then timed interleaved.  `interleaved`, `iters_for` and `relative_error` run anywhere;
the rest needs torch with CUDA.
"""

from __future__ import annotations

import datetime
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tawa.bench.gemm import BenchError

TOLERANCE = 5e-2
"""Relative error of final hidden states allowed (tawa against torch, and
each against float32).  bf16 models of these depths differ from float32 by
1-2e-2 (rounding at every step, growing with the layers); dropping a bias
or the causal mask moves the output by 5e-2 to 0.6."""
PROG = "tawa.bench model"


@dataclass
class Row:
    """One model, batch × sequence and mode: both variants' times and errors."""

    model: str
    batch: int
    seq: int
    mode: str
    tawa_ms: list[float] = field(default_factory=list)
    torch_ms: list[float] = field(default_factory=list)
    err_vs_torch: float = math.nan
    """tawa's final hidden states against torch's (relative Frobenius)."""
    tawa_err_vs_f32: float | None = None
    torch_err_vs_f32: float | None = None
    """Each against the float32 reference (the smallest shape of each model only)."""
    failure: str = ""
    """Why the row failed (an error, or an error above `TOLERANCE`); empty when it did not."""

    @property
    def shape(self) -> str:
        return f"{self.batch}x{self.seq}"

    def check(self, tolerance: float = TOLERANCE) -> None:
        """Sets `failure` when an error exceeds `tolerance` (NaN does)."""
        errors = {"tawa vs torch": self.err_vs_torch, "tawa vs float32": self.tawa_err_vs_f32,
                  "torch vs float32": self.torch_err_vs_f32}
        bad = [f"{name} {err:.2e}" for name, err in errors.items() if err is not None and not err <= tolerance]
        if bad:
            self.failure = f"relative error above {tolerance:g}: {', '.join(bad)}"

    @property
    def correct(self) -> bool:
        return not self.failure

    @property
    def tawa_median(self) -> float:
        return statistics.median(self.tawa_ms) if self.tawa_ms else math.nan

    @property
    def torch_median(self) -> float:
        return statistics.median(self.torch_ms) if self.torch_ms else math.nan

    @property
    def ratio(self) -> float:
        """torch ms / tawa ms: tawa's speed relative to torch's."""
        return self.torch_median / self.tawa_median

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "batch": self.batch, "seq": self.seq, "mode": self.mode,
            "tawa_ms": self.tawa_median, "torch_ms": self.torch_median, "ratio": self.ratio,
            "err_vs_torch": self.err_vs_torch, "tawa_err_vs_f32": self.tawa_err_vs_f32,
            "torch_err_vs_f32": self.torch_err_vs_f32, "correct": self.correct, "failure": self.failure,
            "tawa_ms_per_forward": self.tawa_ms, "torch_ms_per_forward": self.torch_ms,
        }


SEED = 0
ROUND_MS = 200.0
"""Forwards per variant and round: about this many milliseconds' worth."""
MIN_ITERS, MAX_ITERS = 3, 20
WARMUP = 2
"""Forwards of each variant before anything is checked or timed (after torch.compile's first)."""
COMPILE_OPTIONS: dict[str, Any] = {"dynamic": False}
"""`torch.compile`'s options for each block in the compile mode (static
shapes: every row its own specialized code)."""


def interleaved(calls: dict[str, Callable[[], float]], rounds: int, iters: int) -> dict[str, list[float]]:
    """Each call's results, `rounds` × `iters` of each: forward by forward,
    the order reversed every step (A B, B A, A B, ...), so drift (clocks,
    temperature) falls on both alike."""
    names = list(calls)
    times: dict[str, list[float]] = {n: [] for n in names}
    for step in range(rounds * iters):
        for name in names if step % 2 == 0 else reversed(names):
            times[name].append(calls[name]())
    return times


def iters_for(estimate_ms: float) -> int:
    """Forwards per variant and round for forwards of about `estimate_ms`
    (`ROUND_MS` of them, within `MIN_ITERS`..`MAX_ITERS`)."""
    if not estimate_ms > 0:
        return MIN_ITERS
    return max(MIN_ITERS, min(MAX_ITERS, math.ceil(ROUND_MS / estimate_ms)))


def relative_error(out: Any, ref: Any) -> float:
    """‖out − ref‖ / ‖ref‖ in float32 (NaN when either is not finite)."""
    out, ref = out.float(), ref.float()
    return float((out - ref).norm() / ref.norm())


# --------------------------------------------------------------------------- on the GPU


class WallClock:
    """A forward timed by the wall clock up to a synchronize after it."""

    def __init__(self, forward: Callable[[], Any]):
        import torch

        self.forward, self.sync, self.out = forward, torch.cuda.synchronize, None

    def __call__(self) -> float:
        start = time.perf_counter()
        self.out = self.forward()
        self.sync()
        return (time.perf_counter() - start) * 1e3


class GraphReplay:
    """A forward captured in a CUDA graph (after warm-up calls on a side
    stream, as torch asks), timed by CUDA events around one replay."""

    def __init__(self, forward: Callable[[], Any], warmup: int = WARMUP):
        import torch

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                forward()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = forward()
        self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def __call__(self) -> float:
        self.start.record()
        self.graph.replay()
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end)


def float32_reference(cfg: Any, layers: Sequence[Any], final: Any, x: Any, rope: Any) -> Any:
    """The torch variant in float32 on the bf16 weights (converted a layer at
    a time), TF32 off."""
    import torch

    from tawa.bench import model_nets as nets
    from tawa.bench.model_ops import torch_ops

    def f32(w: dict[str, Any]) -> dict[str, Any]:
        return {k: v.float() for k, v in w.items()}

    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        rope32 = None if rope is None else tuple(t.float() for t in rope)
        return nets.forward(cfg, torch_ops(), (f32(w) for w in layers), f32(final), x.float(), rope32)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def measure(row: Row, cfg: Any, tables: dict[str, Any], layers: Sequence[Any], final: Any, x: Any, rope: Any,
            ref: Any, rounds: int, log: Callable[[str], None], agree: Callable[[float], float] = float) -> None:
    """Warms up, checks and times both variants of one row (fills `row`).
    `agree` makes the forward's time estimate (which sets how many forwards
    are timed) the same on every rank of a tensor-parallel run."""
    import torch

    from tawa.bench import model_nets as nets

    timers: dict[str, Any] = {}
    if row.mode == "compile":
        # Both variants compile the same block function, whose code object
        # holds torch.compile's cache: without a reset the rows before fill
        # it past its size limit, and later rows run with long guard chains
        # or fall back to eager.  A model compiles for its own shapes.
        torch.compiler.reset()
    for name, ops in tables.items():
        block = None
        if row.mode == "compile":
            block = torch.compile(nets.BLOCKS[cfg.family], **COMPILE_OPTIONS)

        def forward(ops=ops, block=block) -> Any:
            return nets.forward(cfg, ops, layers, final, x, rope, block)

        start = time.perf_counter()
        if row.mode == "graph":
            timers[name] = GraphReplay(forward)
        else:
            timers[name] = WallClock(forward)
            for _ in range(WARMUP + (row.mode == "compile")):
                timers[name]()
        log(f"{row.model} {row.shape} {row.mode}: {name} warmed up in {time.perf_counter() - start:.1f} s")
    estimate = agree(max(timer() for timer in timers.values()))  # one more each: graphs replayed once before timing
    outs = {name: timer.out for name, timer in timers.items()}
    row.err_vs_torch = relative_error(outs["tawa"], outs["torch"])
    if ref is not None:
        row.tawa_err_vs_f32 = relative_error(outs["tawa"], ref)
        row.torch_err_vs_f32 = relative_error(outs["torch"], ref)
    row.check()
    if not row.correct:
        return
    times = interleaved(timers, rounds, iters_for(estimate))
    row.tawa_ms, row.torch_ms = times["tawa"], times["torch"]


def logged_ops(configs: Sequence[Any], tables: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    """What each table's entries run, per model (the JSON's `ops`); the tawa table's logged."""
    from tawa.bench import model_nets as nets

    ops = {cfg.name: {name: t.described(nets.USES[cfg.family]) for name, t in tables.items()} for cfg in configs}
    for cfg in configs:
        for name, notes in ops[cfg.name]["tawa"].items():
            log(f"{cfg.name} tawa {name}: {notes}")
    return ops


def input_seed(B: int, S: int) -> int:
    """The seed of a B×S row's input: one per shape, the same in every run."""
    return SEED + 1 + B * 1_000_003 + S


def tokens(cfg: Any, B: int, S: int) -> Any:
    """A B×S row's input hidden states on the GPU (`input_seed`)."""
    import torch

    from tawa.bench import model_nets as nets

    generator = torch.Generator(device="cuda").manual_seed(input_seed(B, S))
    return nets.embedded_tokens(cfg, B, S, "cuda", generator=generator)


def cuda_torch() -> Any:
    """torch, where it has a CUDA GPU; else a BenchError saying what is missing."""
    try:
        import torch
    except ImportError as err:
        raise BenchError(f"needs torch with CUDA: {err}") from None
    if not torch.cuda.is_available():
        raise BenchError("needs a CUDA GPU (torch.cuda.is_available() is False)")
    return torch


def run(model_names: Sequence[str], shapes: Sequence[tuple[int, int]], modes: Sequence[str], rounds: int,
        layers: int | None, log: Callable[[str], None],
        on_row: Callable[[list[Row], dict[str, Any]], None] = lambda rows, meta: None,
        tp: Any = None) -> tuple[list[Row], dict[str, Any]]:
    """The rows of every model, shape and mode.  `tp`: this rank's
    `model_tp.TensorParallel` (split weights, all-reduced layers) or None."""
    torch = cuda_torch()
    import tawa
    from tawa.bench import model_nets as nets
    from tawa.bench import model_ops

    try:
        tables = {"tawa": model_ops.tawa_ops(), "torch": model_ops.torch_ops()}
    except ImportError as err:
        raise BenchError(str(err)) from None
    if tp is not None:
        tables = {name: tp.ops(ops) for name, ops in tables.items()}
    torch.manual_seed(SEED)
    configs = [nets.MODELS[name].with_layers(layers) for name in model_names]
    meta: dict[str, Any] = {
        "workload": "transformer forward passes, bf16, tawa's operators vs torch's",
        "gpu": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__, "tawa": tawa.__version__,
        "rounds": rounds, "tolerance": TOLERANCE, "seed": SEED,
        "timing": {"eager": "wall clock from the call to a synchronize after it",
                   "compile": "each block torch.compile(dynamic=False) (regional), wall clock as eager",
                   "graph": "the eager forward in a CUDA graph; CUDA events around a replay"},
        "models": {cfg.name: asdict(cfg) for cfg in configs},
        "tensor_parallel": 1 if tp is None else tp.world,
        "ops": logged_ops(configs, tables, log),
    }
    rows: list[Row] = []
    smallest = min(shapes, key=lambda s: (s[0] * s[1], s))
    for cfg in configs:
        generator = torch.Generator(device="cuda").manual_seed(SEED)
        weights, final = nets.init_weights(cfg, "cuda", torch.bfloat16, generator)
        local, shards = cfg, weights
        if tp is not None:  # every rank drew the whole model: each keeps its part
            local, shards = tp.config(cfg), [tp.shard(cfg, w) for w in weights]
        for B, S in shapes:
            x = tokens(cfg, B, S)
            rope = nets.rope_tables(cfg, S, "cuda") if cfg.family == "llama" else None
            ref = float32_reference(cfg, weights, final, x, rope) if (B, S) == smallest else None
            for mode in modes:
                row = Row(cfg.name, B, S, mode)
                if mode == "compile":
                    torch._dynamo.reset()  # each row compiles its own blocks (and stays under the recompile limit)
                try:
                    measure(row, local, tables, shards, final, x, rope, ref, rounds, log,
                            float if tp is None else tp.agree)
                except Exception as err:  # the row fails, loudly; the others still run
                    lines = str(err).strip().splitlines()
                    row.failure = f"{type(err).__name__}: {lines[0] if lines else ''}"
                if row.correct:
                    log(f"{row.model} {row.shape} {row.mode}: tawa {row.tawa_median:.3f} ms, torch "
                        f"{row.torch_median:.3f} ms, tawa/torch {row.ratio:.3f}")
                else:
                    print(f"{PROG}: error: {row.model} {row.shape} {row.mode}: {row.failure}", file=sys.stderr,
                          flush=True)
                rows.append(row)
                on_row(rows, meta)
                torch.cuda.empty_cache()
            del x, rope, ref
        del weights, shards, final
        torch.cuda.empty_cache()
    return rows, meta
