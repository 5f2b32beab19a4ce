"""Fits the GEMM cost model's free parameters to the H100 measurements in docs/perf/.

    python -m tawa.bench.fit_cost [--gpu h100|h200] [--from-fitted] [--iterations N] [--check]
                                  [--only NAME,...]

Reads every GEMM time recorded with today's kernels: the files that
docs/perf/cost-model-data.txt lists (older files measured older code; a
file marked `unsplit` there gives only its rows of unsplit tiles, its split
rows having timed a split-K kernel changed since), each read by the first
of `READERS` whose pattern its name matches:

* `gemm-*.json`: `python -m tawa.bench gemm` rows (do_bench, L2 flushed),
  each row's configuration and its median time;
* `gemm-sweep-autotune-*.txt`: autotuning's logs, every candidate of the
  sweep's shapes timed from a CUDA graph with L2 warm (`warm=True` in the
  model), interleaved rounds, median;
* `gemm-tiles-groupm-*.txt`, `gemm-2048-candidates-*.txt`: candidates
  against cuBLAS (times from their TFLOP/s), and `gemm-group-rows-ab*.txt`
  (times from the ratio to cuBLAS and cuBLAS's TFLOP/s);
* `gemm-split-sweep-*.txt`: shapes' tiles unsplit and split into several
  slices of K (do_bench, L2 flushed, times in µs).

It minimises the mean squared log error of the estimate
(`tawa.analysis.gemm_cost.estimate`) over the parameters of
`CostParameters` but the clock (Nelder–Mead in log space, from `FITTED`
or from `PRIORS`), then prints the parameters as the literal that
`gemm_cost.FITTED` records, the error per file, and how well the model
ranks each shape's measured candidates: the measured time of the model's
pick against the measured best (its regret).  `--check` reports `FITTED`
without fitting; `--only` fits the parameters it names and keeps the others
(with `--from-fitted`: refits what a kernel change touched, e.g. split-K's
`split_fixed_s,reduce_bytes_per_s` after a change of its reduction).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

from tawa.analysis.gemm_cost import FITTED, FITTED_H200, CostParameters, estimate, ring_stages
from tawa.kernels.gemm import OUTPUT_TYPES, GemmConfig
from tawa.runtime.gemm_choice import Choice, GemmProblem
from tawa.target.hopper import DRAM_BYTES_PER_S, LOADED_SM_CLOCK_HZ

PERF = Path(__file__).resolve().parents[2] / "docs" / "perf"
OPERANDS = {"bf16": "bf16", "fp8": "f8E4M3FN", "f16": "f16"}
MANIFESTS = {"h100": "cost-model-data.txt", "h200": "cost-model-data-h200.txt"}
"""Per GPU, the list of its measurement files in docs/perf/ (one name a
line, `#` comments): each GPU's parameters are fitted to its own times
(`gemm_cost.DEVICE_PARAMETERS`)."""
PRIORS = CostParameters(clock_hz=LOADED_SM_CLOCK_HZ, instruction_cycles=8.0, smem_share=1.0, l2_bytes_per_s=8e12,
                        dram_bytes_per_s=0.8 * DRAM_BYTES_PER_S, load_latency_s=1e-6, epilogue_s=1e-6,
                        store_bytes_per_s=40e9, launch_s=3e-6, fp8_rate_share=1.0, misaligned_l2_factor=1.5,
                        cluster_overhead=0.05, cluster_fixed_s=1e-6, split_fixed_s=2e-6, reduce_bytes_per_s=1e11,
                        bound_norm=4.0)
"""A start for the fit from the hardware facts and round guesses."""


@dataclass(frozen=True)
class Measurement:
    problem: GemmProblem
    choice: Choice
    seconds: float
    warm: bool
    """Timed back to back from a CUDA graph with L2 warm (autotuning's timer)."""
    source: str


# --------------------------------------------------------------------------- reading the measurements


_ID = re.compile(r"^(\d+)x(\d+)x(\d+)((?:-[\w]+)*)$")


def choice_from_id(text: str) -> Choice:
    """The `Choice` whose `id` is `text` (`128x256x64-f8E4M3FN-bf16-split2
    stages=auto group_m=8 group-rows=128`, ...)."""
    words = text.split()
    match = _ID.match(words[0])
    if not match:
        raise ValueError(f"not a configuration id: {text!r}")
    bm, bn, bk = (int(match.group(i)) for i in (1, 2, 3))
    parts = [p for p in match.group(4).split("-") if p]
    a = b = c = "bf16"
    split, layout, batched, transposed = 1, "nk", False, False
    for i, part in enumerate(parts):
        if part == "t":
            transposed = True
        elif part.startswith("split"):
            split = int(part[len("split"):])
        elif part == "b_kn":
            layout = "kn"
        elif part == "batched":
            batched = True
        elif i + 1 < len(parts) and parts[i + 1] in OUTPUT_TYPES:  # the types: A[xB]-C
            a, _, b = part.partition("x")
            b = b or a
            c = parts[i + 1]
    config = GemmConfig(bm, bn, bk, a, b, c, b_layout=layout, batched=batched, split_k=split, transposed=transposed)
    options: dict[str, object] = {}
    for word in words[1:]:
        if word == "defer-stores":
            options["defer_stores"] = True
        elif word == "persistent=false":
            options["persistent"] = False
        elif "=" in word:
            key, value = word.split("=")
            key = key.replace("-", "_")
            if key == "stages":
                options["stages"] = 0 if value == "auto" else int(value)
            elif key in ("group_m", "cluster", "group_rows"):
                options[key] = int(value)
            elif key == "teams" and int(value) != 1:
                raise ValueError(f"{text!r}: teams of consumers, which the compiler no longer has")
    return Choice(config, **options)  # type: ignore[arg-type]


def _problem(M: int, N: int, K: int, dtype: str) -> GemmProblem:
    t = OPERANDS[dtype]
    return GemmProblem(M, N, K, t, t, "bf16")


def read_bench_json(path: Path) -> list[Measurement]:
    data = json.loads(path.read_text())
    if data.get("teams", 1) > 1:
        return []  # teams of consumers (ping-pong), deleted from the compiler: no `Choice` describes them
    dtype = data.get("dtype", "bf16")
    out = []
    for r in data["results"]:
        if not r.get("correct", True) or not r.get("tawa_ms_per_round"):
            continue
        choice = choice_from_id(r["config"])
        if data.get("cluster", 1) > 1 and choice.cluster == 1:
            continue  # an option the id did not record
        out.append(Measurement(_problem(r["M"], r["N"], r["K"], dtype), choice,
                               statistics.median(r["tawa_ms_per_round"]) * 1e-3, False, path.name))
    return out


def read_autotune_log(path: Path) -> list[Measurement]:
    """Autotuning's candidates per shape (L2 warm), from a bench log."""
    dtype = "fp8" if "-fp8-" in path.name else "bf16"
    out, pending = [], []
    for line in path.read_text().splitlines():
        if line.startswith("autotune: ") and line.endswith(" ms") and "skipped" not in line:
            name, ms = line[len("autotune: "):].rsplit(": ", 1)
            pending.append((name, float(ms.split()[0])))
        elif pending and (m := re.match(r"^(\d+)x(\d+)x(\d+): .*\(compiled", line)):
            M, N, K = (int(m.group(i)) for i in (1, 2, 3))
            out += [Measurement(_problem(M, N, K, dtype), choice_from_id(name), ms * 1e-3, True, path.name)
                    for name, ms in pending]
            pending = []
    return out


def read_candidates(path: Path) -> list[Measurement]:
    """`== MxNxK: cuBLAS ...` blocks of `<id>  <TF> TFLOP/s` lines."""
    out, shape = [], None
    for line in path.read_text().splitlines():
        if m := re.match(r"^== (\d+)x(\d+)x(\d+):", line):
            shape = tuple(int(m.group(i)) for i in (1, 2, 3))
        elif shape and (m := re.match(r"^\s+(\d+x\d+x\d+\S*(?: \S+=\S+| defer-stores)*)\s+([\d.]+) TFLOP/s", line)):
            choice = choice_from_id(m.group(1))
            dtype = "fp8" if choice.config.a_dtype.startswith("f8") else "bf16"
            M, N, K = shape
            out.append(Measurement(_problem(M, N, K, dtype), choice, 2 * M * N * K / (float(m.group(2)) * 1e12),
                                   False, path.name))
    return out


def read_split_sweep(path: Path) -> list[Measurement]:
    """`## MxNxK: cuBLAS ...` blocks of `<id>  <T> us` lines: a shape's
    tiles, each unsplit and split into several slices of K (do_bench, L2
    flushed)."""
    out, shape = [], None
    for line in path.read_text().splitlines():
        if m := re.match(r"^## (\d+)x(\d+)x(\d+):", line):
            shape = tuple(int(m.group(i)) for i in (1, 2, 3))
        elif shape and (m := re.match(r"^\s+(\d+x\d+x\d+\S*(?: \S+=\S+| defer-stores)*)\s+([\d.]+) us", line)):
            M, N, K = shape
            out.append(Measurement(_problem(M, N, K, "bf16"), choice_from_id(m.group(1)), float(m.group(2)) * 1e-6,
                                   False, path.name))
    return out


GROUP_ROWS_RUNS = {
    "coop": Choice(GemmConfig(128, 256, 64)),
    "coopA": Choice(GemmConfig(256, 128, 64), group_rows=128),
    "coopA3": Choice(GemmConfig(256, 128, 64), stages=3, group_rows=128),
    "one128": Choice(GemmConfig(128, 128, 64), stages=5, group_rows=128),
}
"""The group-rows A/B's kernels that a `Choice` describes (pp128 and
pp128s5, teams of consumers, which the compiler no longer has, are skipped)."""


def read_group_rows(path: Path) -> list[Measurement]:
    """A group-rows A/B: ratios to cuBLAS per kernel, and cuBLAS's TFLOP/s."""
    out, names = [], []
    for line in path.read_text().splitlines():
        if "cuBLAS TF" in line:
            names = line.split("cuBLAS TF")[1].split("(")[0].split()
        elif names and (m := re.match(r"^\s*(\d+)x(\d+)x\s*(\d+)\s+([\d.]+)\s+(.*)$", line)):
            M, N, K = (int(m.group(i)) for i in (1, 2, 3))
            cublas = float(m.group(4))
            for name, ratio in zip(names, m.group(5).split()):
                if name in GROUP_ROWS_RUNS:
                    seconds = 2 * M * N * K / (float(ratio) * cublas * 1e12)
                    out.append(Measurement(_problem(M, N, K, "bf16"), GROUP_ROWS_RUNS[name], seconds, False, path.name))
    return out


READERS = (("gemm-sweep-autotune-*.txt", read_autotune_log), ("gemm-tiles-groupm-*.txt", read_candidates),
           ("gemm-2048-candidates-*.txt", read_candidates), ("gemm-group-rows-ab*.txt", read_group_rows),
           ("gemm-split-sweep-*.txt", read_split_sweep), ("gemm-candidates-*.txt", read_split_sweep),
           ("gemm-*.json", read_bench_json))
"""How a listed file is read, by the first pattern its name matches."""


UNSPLIT = "unsplit"
"""A manifest line's word after the file name: read only the file's rows of
unsplit configurations (its split rows timed a split-K kernel changed since)."""


def listed(perf: Path = PERF, gpu: str = "h100") -> list[tuple[Path, bool]]:
    """The files `gpu`'s manifest (`MANIFESTS`) lists, in its order, each
    with whether its split rows count (not marked `UNSPLIT`)."""
    manifest = perf / MANIFESTS[gpu]
    out = []
    for line in manifest.read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[1:] not in ([], [UNSPLIT]):
            raise ValueError(f"{manifest}: {line!r}: expected a file name, then nothing or {UNSPLIT!r}")
        out.append((perf / words[0], not words[1:]))
    return out


def listed_files(perf: Path = PERF, gpu: str = "h100") -> list[Path]:
    """The files `gpu`'s manifest (`MANIFESTS`) lists, in its order."""
    return [path for path, _ in listed(perf, gpu)]


def measurements(perf: Path = PERF, gpu: str = "h100") -> list[Measurement]:
    """Every measurement of today's kernels on `gpu` in `perf` (the listed
    files; of a file marked `UNSPLIT`, the rows of unsplit configurations)."""
    out: list[Measurement] = []
    for path, splits in listed(perf, gpu):
        read = next((read for pattern, read in READERS if fnmatch.fnmatch(path.name, pattern)), None)
        if read is None:
            raise ValueError(f"{perf / MANIFESTS[gpu]}: no reader for {path.name} (READERS)")
        out += [m for m in read(path) if splits or m.choice.config.split_k == 1]
    return out


# --------------------------------------------------------------------------- the fit


def log_errors(data: Sequence[Measurement], params: CostParameters, stages: dict[Choice, int]) -> list[float]:
    """log(estimate / measured) per measurement."""
    return [math.log(estimate(m.problem, m.choice, params=params, warm=m.warm, stages=stages[m.choice]).total
                     / m.seconds) for m in data]


FIXED = ("clock_hz",)
"""Parameters the fit keeps: the clock is measured (`LOADED_SM_CLOCK_HZ`);
fitted, it trades against the shared-memory share."""
KEPT_BY_GPU = {"h100": (), "h200": ("fp8_rate_share",)}
"""Per GPU, parameters its own measurements do not determine, kept at the
starting point's value: the H200's rows are mostly bf16 and small, and
fitted alone the fp8 rate went past what the tensor cores can do (twice
the bf16 rate)."""


def _free(fixed: Sequence[str]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(CostParameters) if f.name not in FIXED and f.name not in fixed)


def _vector(params: CostParameters, free: Sequence[str]) -> list[float]:
    return [math.log(getattr(params, name)) for name in free]


def _params(vector: Sequence[float], base: CostParameters, free: Sequence[str]) -> CostParameters:
    return CostParameters(**{**base.as_dict(), **{name: math.exp(v) for name, v in zip(free, vector)}})


def nelder_mead(f: Callable[[list[float]], float], x0: list[float], step: float = 0.3, iterations: int = 2000,
                tolerance: float = 1e-9) -> list[float]:
    """The minimum of `f` near `x0` (Nelder–Mead, standard coefficients)."""
    n = len(x0)
    simplex = [list(x0)] + [[x + (step if i == j else 0.0) for j, x in enumerate(x0)] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=lambda i: values[i])
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < tolerance:
            break
        centroid = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]

        def toward(t: float) -> list[float]:
            return [c + t * (w - c) for c, w in zip(centroid, simplex[-1])]

        reflected = toward(-1.0)
        fr = f(reflected)
        if fr < values[0]:
            expanded = toward(-2.0)
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = toward(0.5 if fr >= values[-1] else -0.5)
            fc = f(contracted)
            if fc < min(fr, values[-1]):
                simplex[-1], values[-1] = contracted, fc
            else:  # shrink toward the best
                simplex = [simplex[0]] + [[b + 0.5 * (x - b) for b, x in zip(simplex[0], s)] for s in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    return simplex[min(range(n + 1), key=lambda i: values[i])]


def fit(data: Sequence[Measurement], start: CostParameters = PRIORS, iterations: int = 2000,
        stages: dict[Choice, int] | None = None, kept: Sequence[str] = ()) -> CostParameters:
    """The parameters that minimise the mean squared log error on `data`,
    those named in `kept` (and the clock) left at `start`'s values."""
    stages = stages or stage_table(data)
    free = _free(kept)

    def loss(vector: list[float]) -> float:
        errors = log_errors(data, _params(vector, start, free), stages)
        return sum(e * e for e in errors) / len(errors)

    best = _vector(start, free)
    for _ in range(3):  # restarts: the simplex collapses along flat directions
        best = nelder_mead(loss, best, iterations=iterations // 3)
    return _params(best, start, free)


def stage_table(data: Sequence[Measurement]) -> dict[Choice, int]:
    """Each measured choice's ring depth (the compiler's decision, once each)."""
    return {c: ring_stages(c) for c in {m.choice for m in data}}


# --------------------------------------------------------------------------- the report


def geomean_abs_error(errors: Sequence[float]) -> float:
    """exp(mean |log error|) − 1: the typical relative error."""
    return math.exp(sum(abs(e) for e in errors) / len(errors)) - 1 if errors else math.nan


def regrets(data: Sequence[Measurement], params: CostParameters, stages: dict[Choice, int]) -> list[tuple[str, float]]:
    """Per (source, shape) with several candidates: measured time of the
    model's pick / the measured best − 1."""
    groups: dict[tuple[str, GemmProblem], list[Measurement]] = defaultdict(list)
    for m in data:
        groups[(m.source, m.problem)].append(m)
    out = []
    for (source, problem), ms in groups.items():
        if len(ms) < 3:
            continue
        pick = min(ms, key=lambda m: estimate(problem, m.choice, params=params, warm=m.warm,
                                              stages=stages[m.choice]).total)
        best = min(m.seconds for m in ms)
        out.append((f"{source}: {problem.M}x{problem.N}x{problem.K} {problem.a_dtype} -> {pick.choice.id}",
                    pick.seconds / best - 1))
    return out


FITTED_BY_GPU = {"h100": ("FITTED", FITTED), "h200": ("FITTED_H200", FITTED_H200)}
"""Per `MANIFESTS` GPU, the name and value of its parameters in `gemm_cost`."""


def report(data: Sequence[Measurement], params: CostParameters, stages: dict[Choice, int], name: str = "FITTED") -> str:
    errors = log_errors(data, params, stages)
    lines = [f"{name} = CostParameters("]
    lines += [f"    {name}={value:.4g}," for name, value in params.as_dict().items()]
    lines += [")", "", f"{len(data)} measurements: typical error {geomean_abs_error(errors):.1%}, "
              f"rms log error {math.sqrt(sum(e * e for e in errors) / len(errors)):.3f}"]
    by_source: dict[str, list[float]] = defaultdict(list)
    for m, e in zip(data, errors):
        by_source[m.source].append(e)
    for source, errs in sorted(by_source.items()):
        lines.append(f"  {source}: {len(errs)} rows, typical error {geomean_abs_error(errs):.1%}, "
                     f"bias {math.exp(sum(errs) / len(errs)) - 1:+.1%}")
    picked = regrets(data, params, stages)
    if picked:
        worst = sorted(picked, key=lambda r: -r[1])
        lines.append(f"ranking: {len(picked)} shapes with candidates; the model's pick measured "
                     f"{statistics.mean(r for _, r in picked):.1%} slower than the best on average, "
                     f"{sum(r <= 0.02 for _, r in picked)} within 2%")
        lines += [f"  {name}: +{r:.1%}" for name, r in worst[:8]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench.fit_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", choices=sorted(MANIFESTS), default="h100",
                        help="whose measurements to fit (its manifest in docs/perf/; default h100)")
    parser.add_argument("--from-fitted", action="store_true",
                        help="start from the GPU's fitted parameters in gemm_cost, not the priors")
    parser.add_argument("--iterations", type=int, default=1500, help="Nelder-Mead iterations (default 1500)")
    parser.add_argument("--check", action="store_true", help="report the fitted parameters' error without fitting")
    parser.add_argument("--only", metavar="NAME,...", type=lambda text: tuple(text.split(",")), default=(),
                        help="fit only these parameters, the others kept at the start's values (with --from-fitted: "
                             "refit what a kernel change touched, e.g. split_fixed_s,reduce_bytes_per_s)")
    args = parser.parse_args(argv)
    names = {f.name for f in fields(CostParameters)}
    if unknown := [n for n in args.only if n not in names]:
        print(f"tawa.bench.fit_cost: error: --only: no parameter {', '.join(unknown)} (CostParameters: "
              f"{', '.join(sorted(names))})", file=sys.stderr)
        return 1
    data = measurements(gpu=args.gpu)
    if not data:
        print(f"tawa.bench.fit_cost: error: no measurements found in {PERF}", file=sys.stderr)
        return 1
    stages = stage_table(data)
    name, fitted = FITTED_BY_GPU[args.gpu]
    start = fitted if args.from_fitted else PRIORS
    if KEPT_BY_GPU[args.gpu]:  # kept at the H100's value, whatever the start
        start = replace(start, **{name: getattr(FITTED, name) for name in KEPT_BY_GPU[args.gpu]})
    kept = KEPT_BY_GPU[args.gpu] + tuple(sorted(names - set(args.only) if args.only else ()))
    params = fitted if args.check else fit(data, start, args.iterations, stages, kept)
    print(report(data, params, stages, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Measurement", "choice_from_id", "fit", "log_errors", "measurements", "nelder_mead", "report", "stage_table"]
