"""`python -m tawa.bench model`: transformer forward passes with tawa's
operators against the same model with torch's, timed in the same run.

    python -m tawa.bench model [--models gpt2-1024,gpt2-2048,llama-4096]
        [--shapes 1x128,8x1024,4x4096] [--modes eager,compile,graph]
        [--rounds R] [--layers N] [--json PATH] [--plot PNG] [--tp N]
    python -m tawa.bench model --train [--models ...] [--shapes ...] [--rounds R]
        [--layers N] [--json PATH] [--plot PNG]

Each model (`tawa.bench.model_nets.MODELS`) is written once over an ops
table; the "torch" variant runs `model_ops.torch_ops()` (F.linear,
F.scaled_dot_product_attention, torch's norms and activations), the "tawa"
variant `model_ops.tawa_ops()` (tawa's operators where `tawa.torch` has
them, torch for the rest), with the same weights (bf16, std 0.02, drawn
from a fixed seed) on the same input.  Every row is one model, one batch ×
sequence and one mode:

- `eager`: the forward pass as Python runs it; wall clock from the call to
  a `torch.cuda.synchronize()` after it (host time included: what a user waits);
- `compile`: each block `torch.compile(dynamic=False)`d (regional
  compilation: one compiled block serves every layer; `torch._dynamo.reset()`
  before each row), timed as eager;
- `graph`: the eager forward captured in a CUDA graph; CUDA events around
  one replay (GPU time only).

Every forward allocates its own activations, as a model does.  Both
variants are warmed up first (tawa's kernels and torch.compile compile
there), then checked: the relative Frobenius error of tawa's final hidden
states against torch's, and on the smallest shape of each model both
against a float32 reference (the torch variant on the bf16 weights in
float32); a row above `model_run.TOLERANCE` fails loudly (its line says why, it is not
timed, and the command exits 1).  Then the two are timed in R interleaved
rounds, forward by forward (tawa, torch, torch, tawa, ...), about
`model_run.ROUND_MS` of forwards per variant a round; the table gives each median and
tawa/torch = torch ms / tawa ms (above 1: tawa is faster), and the geomean
per mode.  `--json` writes the rows after each one (a cut-off run keeps
what it measured) with the tawa table's notes (which tawa operators ran,
which stand-ins); `--plot` draws tawa's speed relative to torch per row.
`--tp N` runs every row tensor-parallel over N GPUs, both variants split
alike (`tawa.bench.model_tp`).

`--train` times training steps instead (`tawa.bench.model_train`): the
forward and backward passes of a scalar loss to every weight's gradient,
eager, one row (mode `train`) per model and shape; the gradients of tawa's
step are checked against torch's first.  The tawa table runs torch's norms
and rotary embedding there (tawa's have no backward).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tawa.bench.gemm import BenchError, geomean
from tawa.bench.model_run import PROG, Row, run

MODES = ("eager", "compile", "graph")
DEFAULT_SHAPES = ((1, 128), (8, 1024), (4, 4096))
DEFAULT_MODELS = ("gpt2-1024", "gpt2-2048", "llama-4096")
"""The names of `model_nets.MODELS` (kept here so the CLI parses without torch)."""


# --------------------------------------------------------------------------- arguments (CPU-tested)


def parse_models(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in DEFAULT_MODELS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown model {unknown[0]!r}; known: {', '.join(DEFAULT_MODELS)}" if unknown else "no models given")
    return list(dict.fromkeys(names))


def parse_shapes(text: str) -> list[tuple[int, int]]:
    """`BxS` items, comma-separated: batch × sequence length."""
    shapes = []
    for part in (p.strip() for p in text.split(",")):
        dims = part.lower().replace("×", "x").split("x")
        try:
            values = [int(d) for d in dims]
        except ValueError:
            values = []
        if len(values) != 2 or any(v <= 0 for v in values):
            raise argparse.ArgumentTypeError(f"bad shape {part!r}: expected BxS (batch x sequence), e.g. 8x1024")
        shapes.append((values[0], values[1]))
    return list(dict.fromkeys(shapes))


def parse_modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise argparse.ArgumentTypeError(
            f"unknown mode {unknown[0]!r}; known: {', '.join(MODES)}" if unknown else "no modes given")
    return [m for m in MODES if m in modes]


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


# --------------------------------------------------------------------------- rows, table, JSON (CPU-tested)


def geomeans(rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Per mode: the geomean and minimum of tawa/torch over the rows that
    were timed and correct, and how many there were of how many."""
    out: dict[str, dict[str, Any]] = {}
    for mode in dict.fromkeys(r.mode for r in rows):
        of_mode = [r for r in rows if r.mode == mode]
        timed = [r for r in of_mode if r.correct and r.ratio > 0]
        worst = min(timed, key=lambda r: r.ratio) if timed else None
        out[mode] = {"geomean": geomean([r.ratio for r in timed]), "rows": len(timed), "of": len(of_mode),
                     "min": worst.ratio if worst else math.nan,
                     "min_row": f"{worst.model} {worst.shape}" if worst else ""}
    return out


def _err(value: float | None) -> str:
    return "-" if value is None else f"{value:.2e}"


def format_table(rows: Sequence[Row], meta: dict[str, Any]) -> str:
    train = bool(meta.get("train"))
    lines = [
        f"tawa's operators in transformer {'training steps' if train else 'forward passes'} vs torch's, on "
        f"{meta['gpu']}, {meta['date']}",
        f"torch {meta.get('torch', '?')}, tawa {meta.get('tawa', '?')}; {meta['rounds']} interleaved rounds, "
        + ("median per step (forward + backward to every weight's gradient), eager: wall clock to a synchronize; "
           "tawa: its linear layers and attention, torch's norms and rotary (tawa's have no backward)" if train else
           "median per forward; eager/compile: wall clock to a synchronize, graph: CUDA events around a replay"),
        "tawa/torch = torch ms / tawa ms (above 1: tawa is faster); errors: relative, "
        + ("the weights' gradients (all together)" if train else "final hidden states"),
        "",
        f"{'model':<11} {'BxS':>7} {'mode':<7} {'tawa ms':>9} {'torch ms':>9} {'tawa/torch':>10} "
        f"{'vs torch':>9} {'tawa vs f32':>11} {'torch vs f32':>12}",
    ]
    for r in rows:
        lines.append(
            f"{r.model:<11} {r.shape:>7} {r.mode:<7} {r.tawa_median:>9.3f} {r.torch_median:>9.3f} {r.ratio:>10.3f} "
            f"{_err(r.err_vs_torch):>9} {_err(r.tawa_err_vs_f32):>11} {_err(r.torch_err_vs_f32):>12}"
            + getattr(r, "detail", "") + ("" if r.correct else f"  FAILED: {r.failure}")
        )
    for mode, g in geomeans(rows).items():
        left = f" ({g['of'] - g['rows']} failed, left out)" if g["rows"] < g["of"] else ""
        lines.append(f"{mode}: geomean tawa/torch {g['geomean']:.3f} over {g['rows']} rows{left}; "
                     f"min {g['min']:.3f}" + (f" ({g['min_row']})" if g["min_row"] else ""))
    return "\n".join(lines)


def plot_spec(rows: Sequence[Row], meta: dict[str, Any]) -> dict[str, Any]:
    """What `--plot` draws (`tawa.bench.plot`): each row's speed relative to
    torch's (torch = 1; rows of 1 and 60 ms share one axis)."""
    return {
        "title": f"transformer {'training step' if meta.get('train') else 'forward'}, tawa's operators vs torch's "
                 f"(torch ms / ms), {meta['gpu']}, {meta['date']}",
        "ylabel": "speed relative to torch (torch ms / ms)",
        "labels": [f"{r.model} {r.shape} {r.mode}" for r in rows],
        "series": {"tawa": [r.ratio if r.correct else math.nan for r in rows], "torch": [1.0 for _ in rows]},
        "ratio": ["tawa", "torch"],
    }


def report(rows: Sequence[Row], meta: dict[str, Any]) -> dict[str, Any]:
    return {**meta, "geomean": geomeans(rows), "results": [r.as_dict() for r in rows],
            "plot": plot_spec(rows, meta)}


def write_json(path: Path, rows: Sequence[Row], meta: dict[str, Any]) -> None:
    """JSON of the rows so far (NaN as null: a failed row has no times)."""
    data = _nan_to_none(report(rows, meta))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_nan_to_none(v) for v in value]
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench model",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=parse_models, default=list(DEFAULT_MODELS),
                        help=f"comma-separated (default {','.join(DEFAULT_MODELS)})")
    parser.add_argument("--shapes", type=parse_shapes, default=list(DEFAULT_SHAPES), metavar="BxS,...",
                        help="batch x sequence, comma-separated (default 1x128,8x1024,4x4096)")
    parser.add_argument("--modes", type=parse_modes, default=None,
                        help=f"comma-separated of {', '.join(MODES)} (default all)")
    parser.add_argument("--rounds", type=positive, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--layers", type=positive, default=None,
                        help="layers of every model (default: each model's, model_nets.MODELS)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON (after each row)")
    parser.add_argument("--plot", type=Path, metavar="PNG", help="also draw tawa's speed relative to torch per row")
    parser.add_argument("--tp", type=positive, default=1, metavar="N",
                        help="tensor-parallel over N GPUs of this host, NCCL (default 1; modes eager, graph)")
    parser.add_argument("--train", action="store_true",
                        help="time training steps (forward + backward to the weights' gradients, eager) instead "
                        "of forward passes (tawa.bench.model_train)")
    args = parser.parse_args(argv)
    if args.train and (args.modes is not None or args.tp > 1):
        parser.error("--train runs eager training steps on one GPU: without --modes and --tp")
    args.modes = args.modes or list(MODES)
    started = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {line}", file=sys.stderr, flush=True)

    def on_row(rows: list[Row], meta: dict[str, Any]) -> None:
        if args.json:
            write_json(args.json, rows, meta)


    if args.tp > 1:
        return tensor_parallel(args)
    try:
        if args.train:
            from tawa.bench import model_train

            rows, meta = model_train.run(args.models, args.shapes, args.rounds, args.layers, log, on_row)
        else:
            rows, meta = run(args.models, args.shapes, args.modes, args.rounds, args.layers, log, on_row)
    except BenchError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    return finish(rows, meta, args.plot)


def finish(rows: Sequence[Row], meta: dict[str, Any], plot: Path | None) -> int:
    """Prints the table, draws `plot`; 1 when a row failed or the plot could not be drawn."""
    print(format_table(rows, meta), flush=True)
    if plot:
        from tawa.bench.plot import save

        if not save(plot_spec(rows, meta), plot, PROG):
            return 1
    failed = [r for r in rows if not r.correct]
    if failed:
        print(f"{PROG}: error: {len(failed)} of {len(rows)} rows failed (above)", file=sys.stderr)
        return 1
    return 0


def tensor_parallel(args: argparse.Namespace) -> int:
    """`--tp N`: the rows on N GPUs (`tawa.bench.model_tp`)."""
    from tawa.bench import model_tp

    unsupported = [m for m in args.modes if m not in model_tp.MODES]
    if unsupported:
        print(f"{PROG}: error: --tp runs the modes {', '.join(model_tp.MODES)}, not {', '.join(unsupported)}"
              " (give --modes)", file=sys.stderr)
        return 1
    options = {k: getattr(args, k) for k in ("models", "shapes", "modes", "rounds", "layers", "json", "plot")}
    try:
        model_tp.spawn(args.tp, options, finish, write_json)
    except BenchError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # a rank failed: torch.multiprocessing says which, with its traceback above
        print(f"{PROG}: error: --tp {args.tp}: {str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
