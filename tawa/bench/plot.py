"""PNG plots of benchmark results (matplotlib: `pip install 'tawa[bench]'`).

A benchmark decides what to show and puts it in its JSON as a `plot`
section; this module only draws it:

    {"title": "...", "ylabel": "TFLOP/s", "labels": ["8192³", ...],
     "series": {"tawa": [610.2, ...], "cuBLAS": [640.0, ...]},
     "ratio": ["tawa", "cuBLAS"]}

is drawn as grouped bars, one group per label, one colour per series, with
the ratio of the two named series written above each group.  `python -m
tawa.bench plot RESULTS.json -o OUT.png` draws a saved result on any
machine (the GPU machine need not have matplotlib).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class PlotError(Exception):
    """Why a plot cannot be drawn (one line)."""


def check_spec(spec: Any) -> dict[str, Any]:
    """The `plot` section, checked: labels, and series of the same length."""
    if not isinstance(spec, dict) or not isinstance(spec.get("series"), dict) or not spec["series"]:
        raise PlotError("the results have no 'plot' section with series to draw")
    labels = spec.get("labels")
    if not isinstance(labels, list) or not labels:
        raise PlotError("the plot section has no labels")
    for name, values in spec["series"].items():
        if not isinstance(values, list) or len(values) != len(labels):
            raise PlotError(f"series {name!r} has {len(values) if isinstance(values, list) else 'no'} values for {len(labels)} labels")
    ratio = spec.get("ratio")
    if ratio is not None and (len(ratio) != 2 or any(r not in spec["series"] for r in ratio)):
        raise PlotError(f"ratio {ratio!r} must name two of the series")
    return spec


def ratios(spec: dict[str, Any]) -> list[float]:
    """The first named series over the second, per label (NaN where undefined)."""
    if not spec.get("ratio"):
        return []
    top, bottom = (spec["series"][n] for n in spec["ratio"])
    return [t / b if b and not math.isnan(b) else math.nan for t, b in zip(top, bottom)]


def draw(spec: dict[str, Any], path: Path) -> Path:
    """Draws `spec` (module docstring) into the PNG `path`."""
    spec = check_spec(spec)
    try:
        import matplotlib
    except ImportError as err:
        raise PlotError(f"plots need matplotlib (pip install 'tawa[bench]'): {err}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, series = spec["labels"], spec["series"]
    width = 0.8 / len(series)
    fig_width = min(14.0, max(6.0, 0.25 * len(labels) * len(series) + 2))
    fig, ax = plt.subplots(figsize=(fig_width, 5.0))
    xs = range(len(labels))
    for i, (name, values) in enumerate(series.items()):
        ax.bar([x - 0.4 + width * (i + 0.5) for x in xs], values, width, label=name)
    tops = [max((v for v in col if not math.isnan(v)), default=0.0) for col in zip(*series.values())]
    for x, r, top in zip(xs, ratios(spec), tops):
        if not math.isnan(r):
            ax.annotate(f"{r:.2f}×", (x, top), ha="center", va="bottom", fontsize=7,
                        xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(list(xs), labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel(spec.get("ylabel", ""))
    # Room above the tallest bar for its ratio, the legend beside the axes (not over the bars),
    # and the title wrapped to the figure's width (about 14 characters an inch at this size).
    ax.set_ylim(top=max(tops, default=0.0) * 1.12 or None)
    ax.set_title("\n".join(textwrap.wrap(spec.get("title", ""), int(fig_width * 14))), fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def save(spec: dict[str, Any], path: Path, prog: str) -> bool:
    """Draws `spec` into `path` for benchmark `prog`'s `--plot`; False, after
    a one-line error on stderr, when it cannot (the results are printed
    already)."""
    try:
        draw(spec, path)
    except PlotError as err:
        print(f"{prog}: error: {err} (the results are above)", file=sys.stderr)
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench plot", description="Draws a saved benchmark result as a PNG.")
    parser.add_argument("results", type=Path, help="JSON written by a benchmark's --json")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="PNG")
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.results.read_text())
        draw(data.get("plot") if isinstance(data, dict) else None, args.output)
    except (OSError, json.JSONDecodeError, PlotError) as err:
        print(f"tawa.bench plot: error: {args.results}: {err}", file=sys.stderr)
        return 1
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
