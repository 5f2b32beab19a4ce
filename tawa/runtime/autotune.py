"""Autotuning a GEMM's configuration on the GPU.

    import tawa
    from tawa.runtime.autotune import GemmProblem

    problem = GemmProblem(M, N, K)              # bf16 C = A·Bᵀ, B N×K
    choice = tawa.autotune(problem)             # timed once per (GPU, types, layout, shape)
    kernel = choice.compile()
    kernel(A, B, C, M, N, K, grid=choice.grid(M, N))

The problems, configurations (`Choice`, `Space`) and the cost model's
choice (`heuristic`, `ranked`, `candidates`) are
`tawa.runtime.gemm_choice`'s, re-exported here.  `autotune`:

1. takes the first `keep` (4) of `candidates(problem, space)`: the
   heuristic's choice, then the others as the model ranks them;
2. builds each (`build`, default `Choice.compile`: the whole compiler, its
   checks and protocol proof); a candidate the compiler rejects is skipped;
3. times each (`measure(choice, kernel) -> ms`, default `GpuTimer`: checks
   the result against a float32 reference first, then CUDA events) in
   `rounds` interleaved rounds, each candidate's time the median of its
   rounds (a GPU at its power cap slows down as it heats: timed one after
   another, the first candidates would be timed on a cooler chip); one that
   raises is skipped;
4. keeps the fastest, but the first candidate (the heuristic's) unless the
   fastest beats it by more than `margin` (2%: differences that small are
   the ranking's noise; on the H100 an autotuned sweep without the margin
   took 192x128 tiles at 8192³, which then ran slower than the heuristic's
   128x256 — docs/perf.md, "K and V rings of their own depths"), in the
   on-disk cache, `<cache>/autotune/gemm.json`
   (`tawa.runtime.ptxas.cache_dir()`: `$TAWA_CACHE_DIR` or `~/.cache/tawa`),
   keyed by (GPU name, element types, layout, batched, M, N, K and batch,
   tawa version, the candidate list): the model's choices depend on the
   exact shape (how the last round fills), so each shape is tuned once; a
   cache file that cannot be read is ignored with an
   `AutotuneCacheWarning` and rewritten.

`build` and `measure` are parameters so that the CPU tests drive the search
with known costs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tawa.diagnostics import TawaError
from tawa.runtime.gemm_choice import (
    DEFAULT_SPACE,
    GEMM_MAX_STAGES,
    HEURISTIC_TILES,
    MAX_SPLIT_K,
    MIN_SPLIT_K_STEPS,
    WIDE_SPACE,
    AutotuneError,
    Choice,
    GemmProblem,
    Space,
    candidates,
    compiler_rejects,
    fastest,
    heuristic,
    ranked,
    space_choices,
    split_for,
)
from tawa.runtime.splitk import SplitKGemm
from tawa.version import __version__

CACHE_FORMAT = 3
"""3: entries per shape (2: per shape bucket; 1: `stages=auto` up to 4);
entries of older formats are not read."""
KEEP = 4
"""Candidates `autotune` times by default: the heuristic's and the next
ones the cost model ranks (each is a compile, about a second)."""
WHERE = "tawa.autotune"


class AutotuneCacheWarning(UserWarning):
    """The autotuning cache file could not be read (it is ignored and rewritten)."""


# --------------------------------------------------------------------------- the cache


def cache_path() -> Path:
    from tawa.runtime.ptxas import cache_dir

    return cache_dir() / "autotune" / "gemm.json"


def cache_key(problem: GemmProblem, device: str, choices: Sequence[Choice]) -> str:
    a, b, c = problem.types
    batched = "" if problem.batch is None else " batched"
    listed = hashlib.sha256("\n".join(ch.id for ch in choices).encode()).hexdigest()[:12]
    sizes = (problem.M, problem.N, problem.K) + (() if problem.batch is None else (problem.batch,))
    shape = "x".join(map(str, sizes))
    layout = problem.b_layout if problem.a_layout == "mk" else f"{problem.a_layout}-{problem.b_layout}"
    return f"{device} | {a}x{b}->{c} {layout}{batched} | {shape} | tawa {__version__} | {listed}"


def read_cache(path: Path) -> dict[str, Any]:
    """The cache's entries; {} (with a warning) when the file is unreadable."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(data.get("entries"), dict):
            raise ValueError(f"not a format-{CACHE_FORMAT} autotune cache")
        return data["entries"]
    except (OSError, ValueError) as err:  # JSONDecodeError, UnicodeDecodeError are ValueErrors
        warnings.warn(f"{path}: ignoring the autotune cache ({err}); it will be rewritten",
                      AutotuneCacheWarning, stacklevel=3)
        return {}


def write_cache(path: Path, key: str, entry: dict[str, Any]) -> None:
    """Adds `entry` under `key` (read, update, atomic rename: concurrent
    writers may lose each other's entries, never corrupt the file)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AutotuneCacheWarning)  # already said when read
        entries = read_cache(path)
    entries[key] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({"format": CACHE_FORMAT, "entries": entries}, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- timing on the GPU

TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32",
                "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2"}
TOLERANCE = 1e-2
"""Relative Frobenius error a candidate's result may have against float32."""


def machine_parameters() -> Any:
    """The cost model's parameters for the CUDA device this process computes
    on (`gemm_cost.parameters_for` its name), found through torch or CuPy
    where one of them is imported already and has a device; else the
    H100's.  It imports neither: the compiler's own callers have no GPU."""
    from tawa.analysis.gemm_cost import parameters_for

    return parameters_for(_current_device_name())


def _current_device_name() -> str | None:
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return _device_name("torch", torch.cuda.current_device())
        cupy = sys.modules.get("cupy")
        if cupy is not None:
            return _device_name("cupy", cupy.cuda.Device().id)
    except Exception:  # no usable device: the model's default
        return None
    return None


@functools.cache
def _device_name(library: str, index: int) -> str:
    if library == "torch":
        import torch

        return torch.cuda.get_device_properties(index).name
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else name


def device_info() -> tuple[str, int]:
    """(name, SM count) of the current CUDA device, through torch or CuPy."""
    try:
        import torch

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            return props.name, props.multi_processor_count
    except ImportError:
        pass
    try:
        import cupy

        dev = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        name = props["name"]
        return (name.decode() if isinstance(name, bytes) else name), int(props["multiProcessorCount"])
    except Exception as err:  # ImportError, CUDARuntimeError: no device to tune on
        raise AutotuneError(f"autotuning needs a CUDA GPU (torch or CuPy): {err}") from None


@dataclass
class GpuTimer:
    """`measure` on the GPU: torch tensors for `problem` (random, made on the
    first call), each candidate's result checked against a float32 reference
    (C, and a split-K candidate's workspace, poisoned with NaN first;
    error ≤ TOLERANCE), then the median over
    `repeats` of CUDA-event-timed replays of a CUDA graph of `calls`
    launches, in ms per call (L2 stays warm: a ranking, not a benchmark).
    The graph keeps the host out of the timing: launched one by one from
    Python, a kernel of ~10 µs (GEMMs up to 2048³) is timed by the host's
    launch rate, and the ranking is noise (measured on the H100: autotune
    then chose 64x64 tiles for 1024³, slower than the heuristic's 64x128).
    Where capture fails, back-to-back launches."""

    problem: GemmProblem
    calls: int = 10
    repeats: int = 5
    seed: int = 0
    _tensors: tuple[Any, ...] | None = field(default=None, repr=False)

    def tensors(self) -> tuple[Any, ...]:
        if self._tensors is None:
            import torch

            p = self.problem
            a, b, c = (getattr(torch, TORCH_DTYPES[t]) for t in p.types)
            lead = () if p.batch is None else (p.batch,)
            g = torch.Generator(device="cuda").manual_seed(self.seed)
            km = p.a_layout == "km"
            A = torch.randn(*lead, *((p.K, p.M) if km else (p.M, p.K)), device="cuda", generator=g).to(a)
            b_shape = (p.K, p.N) if p.b_layout == "kn" else (p.N, p.K)
            B = torch.randn(*lead, *b_shape, device="cuda", generator=g).to(b)
            C = torch.empty(*lead, p.M, p.N, device="cuda", dtype=c)
            ref = ((A.float().transpose(-1, -2) if km else A.float())
                   @ (B.float() if p.b_layout == "kn" else B.float().transpose(-1, -2)))
            self._tensors = (A, B, C, ref)
        return self._tensors

    def __call__(self, choice: Choice, kernel: Any) -> float:
        import torch

        p = self.problem
        A, B, C, ref = self.tensors()
        grid = choice.grid(p.M, p.N, p.batch)

        def launch() -> None:
            kernel(A, B, C, p.M, p.N, p.K, grid=grid)

        C.fill_(float("nan"))
        if isinstance(kernel, SplitKGemm):  # its workspace too: the split kernel must write all of it
            kernel.workspace(C, p.M, p.N).fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        got = C.float()
        if bool(torch.isnan(got).any()):
            raise AutotuneError(f"{choice.id}: left elements of C unwritten")
        err = ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()
        if err > TOLERANCE:
            raise AutotuneError(f"{choice.id}: relative error {err:.3g} > {TOLERANCE}")
        run = _graph_of(launch, self.calls) or (lambda: [launch() for _ in range(self.calls)])
        times = []
        for _ in range(self.repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / self.calls)
        return statistics.median(times)


def _graph_of(launch: Callable[[], None], calls: int) -> Callable[[], Any] | None:
    """A function replaying a CUDA graph of `calls` launches (captured on a
    side stream, as torch asks), or None where capture fails."""
    import torch

    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            launch()  # warm: the launch's own first-call work happens outside the capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                launch()
    except RuntimeError:
        return None
    return graph.replay


# --------------------------------------------------------------------------- autotune


def autotune(
    problem: GemmProblem,
    *,
    space: Space = DEFAULT_SPACE,
    choices: Sequence[Choice] | None = None,
    build: Callable[[Choice], Any] | None = None,
    measure: Callable[[Choice, Any], float] | None = None,
    device: str | None = None,
    sms: int | None = None,
    cache: bool = True,
    log: Callable[[str], None] | None = None,
    rounds: int = 3,
    margin: float = 0.02,
    keep: int | None = KEEP,
) -> Choice:
    """The fastest configuration for `problem` (module docstring): from the
    cache, else by building and timing `choices` on `problem` (default: the
    first `keep` of `candidates(problem, space)`, the heuristic's and those
    the cost model ranks next; None: all of them).  `build(choice) ->
    kernel` defaults to `Choice.compile`, `measure(choice, kernel) -> ms` to
    a `GpuTimer`, called `rounds` times per candidate, interleaved; the
    first of `choices` is kept unless one is faster by more than `margin`
    (a fraction); `device` (the cache's GPU name) and `sms` default to the
    current device's."""
    if rounds < 1 or margin < 0 or (keep is not None and keep < 1):
        raise AutotuneError(f"rounds and keep must be at least 1 and margin at least 0, got {rounds}, {keep} "
                            f"and {margin}")
    if device is None or sms is None:
        name, count = device_info()
        device, sms = device or name, sms or count
    if choices is None:
        from tawa.analysis.gemm_cost import parameters_for

        choices = candidates(problem, space, sms, parameters_for(device))[:keep]
    if not choices:
        raise AutotuneError("no candidates to time")
    key = cache_key(problem, device, choices)
    path = cache_path()
    if cache:
        entry = read_cache(path).get(key)
        if entry is not None:
            try:
                return Choice.from_dict(entry["choice"])
            except (KeyError, TypeError, ValueError, TawaError) as err:
                warnings.warn(f"{path}: ignoring a bad entry for {key} ({err})", AutotuneCacheWarning, stacklevel=2)
    build = build or Choice.compile
    measure = measure or GpuTimer(problem)
    skipped: dict[str, str] = {}

    def attempt(choice: Choice, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except Exception as err:  # a rejected, failing or wrong candidate: skip it, say why
            skipped[choice.id] = str(err).splitlines()[0] if str(err) else type(err).__name__
            if log:
                log(f"autotune: skipped {choice.id}: {skipped[choice.id]}")
            return None

    built = {c: k for c in choices if (k := attempt(c, lambda c=c: build(c))) is not None}
    samples: dict[Choice, list[float]] = {c: [] for c in built}
    for _ in range(rounds):
        for choice, kernel in built.items():
            if choice.id in skipped:
                continue
            ms = attempt(choice, lambda choice=choice, kernel=kernel: float(measure(choice, kernel)))
            if ms is not None:
                samples[choice].append(ms)
    timed = {c.id: statistics.median(t) for c, t in samples.items() if c.id not in skipped}
    if not timed:
        first = next(iter(skipped.items()))
        raise AutotuneError(f"none of the {len(choices)} candidates built and ran; {first[0]}: {first[1]}")
    if log:
        for name, ms in timed.items():
            log(f"autotune: {name}: {ms:.4f} ms")
    ranked = [c for c in choices if c.id in timed]
    best = min(ranked, key=lambda c: timed[c.id])
    if ranked[0] is choices[0] and timed[best.id] * (1 + margin) >= timed[choices[0].id]:
        best = choices[0]  # not faster than the heuristic's by more than the ranking's noise
    if cache:
        write_cache(path, key, {"choice": best.as_dict(), "ms": timed[best.id], "timed": timed, "skipped": skipped,
                                "problem": asdict(problem)})
    return best


__all__ = [
    "fastest",
    "MIN_SPLIT_K_STEPS",
    "MAX_SPLIT_K",
    "HEURISTIC_TILES",
    "DEFAULT_SPACE",
    "GEMM_MAX_STAGES",
    "WIDE_SPACE",
    "AutotuneCacheWarning",
    "AutotuneError",
    "Choice",
    "GemmProblem",
    "GpuTimer",
    "Space",
    "autotune",
    "cache_path",
    "candidates",
    "compiler_rejects",
    "heuristic",
    "ranked",
    "space_choices",
    "split_for",
]
