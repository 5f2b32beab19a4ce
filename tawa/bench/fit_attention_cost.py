"""Fits the attention cost model's constants to the H100 measurements in docs/perf/.

    python -m tawa.bench.fit_attention_cost [--check]

Reads every `attention-variants-*.json` in docs/perf/ (`python -m tawa.bench
attention-variants`: each problem with the median time of every variant of
`tawa.analysis.attention_cost.VARIANTS` for its head dim and causality) and
fits, for each variant, `program_s` and `block_factor` by least squares on
the relative error (the model is linear in them), for each launch constant
of a grid, keeping the launch constant with the least error.  It prints the
fitted `VARIANTS` entries, each variant's error, and how well the model
picks: the measured time of its pick against the measured best (its
regret), in-sample and with each half of the problems fitted on the other
half.  `--check` reports the recorded constants without fitting.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tawa.analysis import attention_cost
from tawa.analysis.attention_cost import AttentionVariant, block_seconds, busiest_cta, estimate

PERF = Path(__file__).resolve().parents[2] / "docs" / "perf"
PATTERN = "attention-variants-*.json"
LAUNCH_GRID = tuple(x * 0.25e-6 for x in range(4, 61))
"""Launch constants tried (1 to 15 µs)."""


@dataclass(frozen=True)
class Problem:
    """One measured problem: its shape and each variant's seconds, by label."""

    head_dim: int
    batch_heads: int
    q_len: int
    kv_len: int
    causal: bool
    seconds: dict[str, float]


def read(paths: Sequence[Path]) -> list[Problem]:
    """The problems of the measurement files."""
    out = []
    for path in paths:
        for row in json.loads(path.read_text())["rows"]:
            out.append(Problem(row["d"], row["B"] * row["H"], row["S"], row.get("kv_len", row["S"]), row["causal"],
                               {k: v * 1e-3 for k, v in row["ms"].items()}))
    return out


def variants() -> dict[str, AttentionVariant]:
    return {v.label: v for vs in attention_cost.VARIANTS.values() for v in vs}


def _solve2(rows: list[tuple[float, float, float]]) -> tuple[float, float]:
    """Least squares of a·x + b·y ≈ z over (x, y, z) rows (normal equations)."""
    sxx = sum(x * x for x, _, _ in rows)
    sxy = sum(x * y for x, y, _ in rows)
    syy = sum(y * y for _, y, _ in rows)
    sxz = sum(x * z for x, _, z in rows)
    syz = sum(y * z for _, y, z in rows)
    det = sxx * syy - sxy * sxy
    if det == 0:
        raise ValueError("the measurements do not determine both constants")
    return (sxz * syy - syz * sxy) / det, (syz * sxx - sxz * sxy) / det


def fit_variant(v: AttentionVariant, problems: Sequence[Problem], launch: float) -> AttentionVariant:
    """`v` with `program_s` and `block_factor` fitted to its times in `problems`."""
    rows = []
    for p in problems:
        if v.label in p.seconds and p.head_dim in (64, 128, 256):
            t = p.seconds[v.label]
            blocks, programs = busiest_cta(v.rows, v.key_block, p.q_len, p.kv_len, p.batch_heads, p.causal)
            rows.append((programs / t, blocks * block_seconds(v, p.head_dim) / t, 1 - launch / t))
    program_s, block_factor = _solve2(rows)
    return replace(v, program_s=program_s, block_factor=block_factor)


def errors(fitted: dict[str, AttentionVariant], problems: Sequence[Problem],
           launch: float | None = None) -> dict[str, list[float]]:
    """Relative error of the model per variant, over the problems that time it
    (launch constant `launch`, default the recorded one)."""
    out: dict[str, list[float]] = {label: [] for label in fitted}
    for p in problems:
        for label, t in p.seconds.items():
            if label in fitted:
                e = estimate(fitted[label], p.head_dim, p.q_len, p.batch_heads, p.causal, p.kv_len, launch_s=launch)
                out[label].append(e / t - 1)
    return out


def fit(problems: Sequence[Problem]) -> tuple[float, dict[str, AttentionVariant]]:
    """The launch constant and the variants with the least squared relative error."""
    best: tuple[float, float, dict[str, AttentionVariant]] | None = None
    for launch in LAUNCH_GRID:
        fitted = {label: fit_variant(v, problems, launch) for label, v in variants().items()
                  if any(label in p.seconds for p in problems)}
        sq = sum(e * e for es in errors(fitted, problems, launch).values() for e in es)
        if best is None or sq < best[0]:
            best = (sq, launch, fitted)
    assert best is not None
    return best[1], best[2]


def regrets(fitted: dict[str, AttentionVariant], launch: float, problems: Sequence[Problem]) -> list[float]:
    """Measured time of the model's pick over the measured best, per problem with a choice."""
    out = []
    for p in problems:
        timed = {label: t for label, t in p.seconds.items() if label in fitted}
        if len(timed) < 2:
            continue
        pick = min(timed, key=lambda label: estimate(fitted[label], p.head_dim, p.q_len, p.batch_heads,
                                                     p.causal, p.kv_len, launch_s=launch))
        out.append(timed[pick] / min(timed.values()))
    return out


def geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else float("nan")


def report(launch: float, fitted: dict[str, AttentionVariant], problems: Sequence[Problem]) -> str:
    errs = errors(fitted, problems, launch)
    lines = [f"LAUNCH_S = {launch * 1e6:.2f}e-6"]
    for label, v in fitted.items():
        es = sorted(abs(e) for e in errs[label])
        lines.append(f"  {label:55} program {v.program_s * 1e6:6.3f} us  block_factor {v.block_factor:5.3f}  "
                     f"|err| median {statistics.median(es):.3f} max {es[-1]:.3f}  ({len(es)} problems)")
    r = regrets(fitted, launch, problems)
    lines.append(f"in-sample regret: geomean {geomean(r):.4f}, max {max(r):.3f} over {len(r)} problems with a choice")
    halves = (problems[0::2], problems[1::2])
    held = []
    for train, test in (halves, halves[::-1]):
        l2, f2 = fit(train)
        held += regrets(f2, l2, test)
    lines.append(f"held-out regret (each half fitted on the other): geomean {geomean(held):.4f}, max {max(held):.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench.fit_attention_cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report the recorded constants without fitting")
    args = parser.parse_args(argv)
    paths = sorted(PERF.glob(PATTERN))
    problems = read(paths)
    print(f"{len(problems)} problems from {', '.join(p.name for p in paths)}")
    if args.check:
        print(report(attention_cost.LAUNCH_S, variants(), problems))
        return 0
    launch, fitted = fit(problems)
    print(report(launch, fitted, problems))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
