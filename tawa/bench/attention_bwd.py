"""`python -m tawa.bench attention --backward`: tawa's attention backward
(`tawa.torch.attention`'s autograd: the Delta preprocess, dK/dV and dQ
kernels of examples/python/attention_bwd.py) against the backward of
torch's scaled_dot_product_attention with the cuDNN and FlashAttention-2
backends, timed in the same run, interleaved (R rounds, medians;
`triton.testing.do_bench`, L2 flushed), as the forward table is.

Rows: the forward table's (`tawa.bench.attention.SHAPES`, 16 heads, causal
and not) at head dims 64 and 128, bf16.  Head dim 256 is not timed: tawa
has no backward kernels there (`tawa.torch.attention_bwd_kernels.unsupported`).

Per row, each variant runs its forward once on leaves q, k, v that require
grad (tawa: `tawa.torch.attention`, which then runs `attention_fwd_lse`
and saves O and the log-sum-exp; torch: SDPA inside
`sdpa_kernel(backend)`, which records that backend's backward), and what is
timed is the backward alone: `torch.autograd.grad(out, (q, k, v), dO,
retain_graph=True)` per call (the autograd engine's host work included,
for every variant alike; the gradients are new tensors every call).

Checked before timed: tawa's dq, dk and dv, computed once on NaN-poisoned
allocator pools (every buffer the forward and backward allocate starts as
NaN unless written), must be finite and within `TOLERANCE` (relative
Frobenius error, each of the three) of float32 autograd through SDPA on
float32 copies of the same bf16 inputs.  The baselines' errors against the
same reference are printed beside (not checked).  A row that fails is
not timed, and the command exits 1 after the others.

TFLOP/s count the backward as 2.5 times the forward's 4·B·H·S²·d (halved for
causal), i.e. 10·B·H·S²·d: five S×S-sized products (S = Q·Kᵀ recomputed,
dP = dO·Vᵀ, dV = Pᵀ·dO, dK = dSᵀ·Q, dQ = dS·K) against the forward's two,
FlashAttention's convention; tawa's dQ kernel recomputes S and dP (two more
products it does not get credit for).  `--json` writes the rows, `--plot`
draws TFLOP/s per row (`tawa.bench.plot`); a backend that cannot run a row
shows NaN.  `--random N --seed S` times N problems drawn as the forward's
`--random` draws them (`tawa.bench.attention.random_problems`), at head
dims 64 and 128.

`--dq kernel,atomic` times tawa's backward on each of those dQ paths
(`tawa.torch.attention_bwd_kernels.DQ_PATHS`: the separate dQ kernel, or
the dK/dV kernel's atomic adds) in the same interleaved run: the first
path is the table's "tawa", each other one a variant "tawa-<path>" whose
gradients are checked the same way and whose TFLOP/s and ratio to cuDNN
follow the row (a path that cannot run, or whose gradients are wrong, is
reported there and not timed, and the command exits 1).  Default: the
path the operator runs (`DQ_PATH`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tawa.bench.attention import BACKENDS, HEADS, fixed_problems, geomean, interleaved, random_problems
from tawa.torch.attention_bwd_kernels import DQ_PATH, DQ_PATHS, HEAD_DIMS, unsupported

PROG = "tawa.bench attention --backward"
TOLERANCE = 2e-2
"""Relative error allowed for each of dq, dk, dv against float32.  The GPU
tests hold 1e-2 up to 1000 keys (tests/runtime/test_autograd_gpu.py); the
table's rows reduce over up to 16384 keys and queries of bf16-rounded P
and dS, as every bf16 backward does (the baselines' errors are printed beside)."""
BACKWARD_FLOPS = 2.5
"""The backward's FLOPs over the forward's (FlashAttention's convention)."""
GRADS = ("dq", "dk", "dv")


# --------------------------------------------------------------------------- rows, table, JSON (no GPU)


def backward_tflops(times: dict[str, list[float]], B: int, S: int, d: int, causal: bool,
                    H: int = HEADS) -> dict[str, float]:
    """TFLOP/s of each variant's median ms: 2.5 times 4·B·H·S²·d, halved for causal."""
    gflop = BACKWARD_FLOPS * 4 * B * H * S * S * d * (0.5 if causal else 1.0) / 1e9
    return {n: gflop / statistics.median(t) if t else math.nan for n, t in times.items()}


def problems(head_dims: Sequence[int] | None, random_count: int | None, seed: int
             ) -> tuple[list[tuple[int, int, int, int, bool]], list[str]]:
    """The rows (head dim, B, H, S, causal) to time, and a note per head dim
    asked for (or, by default, of the forward table) that has no backward."""
    asked = sorted(set(head_dims)) if head_dims else None
    skipped = [d for d in (asked or (64, 128, 256)) if unsupported(d) is not None]
    notes = [f"head dim {d}: not timed: {unsupported(d)}" for d in skipped]
    dims = [d for d in (asked or HEAD_DIMS) if unsupported(d) is None]
    if random_count is not None:
        return random_problems(random_count, seed, head_dims=HEAD_DIMS), notes
    return fixed_problems(dims), notes


def row_ok(row: dict[str, Any]) -> bool:
    """Whether a row's gradients were finite and within `TOLERANCE`."""
    return not row.get("error") and bool(row["finite"]) and all(row["rel_err"][g] <= TOLERANCE for g in GRADS)


def dq_paths(text: str) -> tuple[str, ...]:
    """The paths of `--dq` ("kernel,atomic"), each once, in order; ValueError names an unknown one."""
    paths = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    bad = [p for p in paths if p not in DQ_PATHS]
    if bad or not paths:
        raise ValueError(f"--dq takes paths of {', '.join(DQ_PATHS)} separated by commas, got {text!r}")
    return paths


def variant(path: str, paths: Sequence[str]) -> str:
    """The table's name of tawa on dQ path `path`: "tawa" for the first of `paths`, else "tawa-<path>"."""
    return "tawa" if path == paths[0] else f"tawa-{path}"


def extra_paths(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The row's other dQ paths than the first: {variant name: its check}."""
    return row.get("paths", {})


def failed_row(problem: tuple[int, int, int, int, bool], err: BaseException) -> dict[str, Any]:
    """The row of a problem whose measurement raised `err` (its first line kept)."""
    d, B, H, S, causal = problem
    lines = str(err).strip().splitlines()
    return {"d": d, "B": B, "H": H, "S": S, "causal": causal, "rel_err": {g: math.nan for g in GRADS},
            "finite": False, "baseline_rel_err": {n: math.nan for n in BACKENDS[1:]},
            "tflops": {n: math.nan for n in BACKENDS}, "ms_per_round": {},
            "error": f"{type(err).__name__}: {lines[0] if lines else ''}"}


HEADER = (f"{'d':>4} {'B':>3} {'H':>3} {'S':>6} {'causal':>6} {'tawa':>7} {'cuDNN':>7} {'FA2':>7} "
          f"{'tawa/cuDNN':>10} {'tawa/FA2':>9} {'err dq':>8} {'err dk':>8} {'err dv':>8} "
          f"{'cuDNN err':>9} {'FA2 err':>8}")


def format_row(row: dict[str, Any]) -> str:
    """One line of the table (TFLOP/s; errors: relative, against float32)."""
    tf, err, base = row["tflops"], row["rel_err"], row["baseline_rel_err"]
    line = (f"{row['d']:>4} {row['B']:>3} {row['H']:>3} {row['S']:>6} {str(row['causal']):>6} "
            f"{tf['tawa']:>7.1f} {tf['cuDNN']:>7.1f} {tf['FA2']:>7.1f} {tf['tawa'] / tf['cuDNN']:>10.3f} "
            f"{tf['tawa'] / tf['FA2']:>9.3f} {err['dq']:>8.2e} {err['dk']:>8.2e} {err['dv']:>8.2e} "
            f"{base['cuDNN']:>9.2e} {base['FA2']:>8.2e}")
    if row.get("error"):
        line += f"  FAILED: {row['error']}"
    elif not row_ok(row):
        line += "  WRONG: " + ("gradients not finite (unwritten elements?)" if not row["finite"]
                               else f"relative error above {TOLERANCE:g}; not timed")
    for name, other in extra_paths(row).items():
        if other.get("error"):
            line += f"  {name}: FAILED: {other['error']}"
        elif not row_ok(other):
            line += f"  {name}: WRONG: " + ("gradients not finite" if not other["finite"]
                                            else f"relative error above {TOLERANCE:g}")
        else:
            errs = " ".join(f"{other['rel_err'][g]:.2e}" for g in GRADS)
            line += f"  {name}: {tf.get(name, math.nan):.1f} ({tf.get(name, math.nan) / tf['cuDNN']:.3f}x cuDNN; err {errs})"
    return line


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """Geomean and minimum of tawa/cuDNN and tawa/FA2 over the correct rows
    (NaN where a baseline did not run a row)."""
    ok = [r for r in rows if row_ok(r)]
    parts = []
    for base in ("cuDNN", "FA2"):
        ratios = [r["tflops"]["tawa"] / r["tflops"][base] for r in ok]
        parts.append(f"tawa/{base}: geomean {geomean(ratios):.3f}, min {min(ratios, default=math.nan):.3f}")
    for name in dict.fromkeys(n for r in rows for n in extra_paths(r)):
        ratios = [r["tflops"][name] / r["tflops"]["cuDNN"] for r in ok
                  if name in extra_paths(r) and row_ok(extra_paths(r)[name])]
        parts.append(f"{name}/cuDNN: geomean {geomean(ratios):.3f}, min {min(ratios, default=math.nan):.3f}")
    left = len(rows) - len(ok)
    return "; ".join(parts) + (f" ({left} wrong row{'s' if left > 1 else ''} left out)" if left else "")


def plot_spec(rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": f"attention backward bf16, tawa vs torch SDPA, {meta['gpu']}, {meta['date']}",
        "ylabel": "TFLOP/s (backward = 2.5 times forward FLOPs)",
        "labels": [f"d{r['d']} {r['B']}x{r['H']}x{r['S']}{' causal' if r['causal'] else ''}" for r in rows],
        "series": {name: [r["tflops"].get(name, math.nan) if row_ok(r) else math.nan for r in rows]
                   for name in (*BACKENDS, *dict.fromkeys(n for r in rows for n in extra_paths(r)))},
        "ratio": ["tawa", "cuDNN"],
    }


def report(rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    """The JSON `--json` writes."""
    ok = [r for r in rows if row_ok(r)]
    geomeans = {base: geomean([r["tflops"]["tawa"] / r["tflops"][base] for r in ok]) for base in ("cuDNN", "FA2")}
    return {**meta, "geomean": geomeans, "results": list(rows), "plot": plot_spec(rows, meta)}


# --------------------------------------------------------------------------- gradients (any device)


def relative_errors(got: Sequence[Any], want: Sequence[Any]) -> dict[str, float]:
    """‖got − want‖ / ‖want‖ in float32 for dq, dk, dv."""
    return {name: float((g.float() - w.float()).norm() / w.float().norm()) for name, g, w in zip(GRADS, got, want)}


def reference_grads(q: Any, k: Any, v: Any, do: Any, causal: bool) -> tuple[Any, ...]:
    """dq, dk, dv of SDPA in float32 on float32 copies of q, k, v and dO
    (torch's memory-efficient backend where it runs, else the math one)."""
    import torch
    import torch.nn.functional as F

    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    with _backends("reference", q.device.type):
        out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
    return torch.autograd.grad(out, leaves, do.float())


def _backends(which: Any, device: str) -> Any:
    """The `sdpa_kernel` context of `which` (an SDPBackend, or "reference");
    on the CPU, where only the math backend runs, no restriction."""
    import contextlib

    from torch.nn.attention import SDPBackend, sdpa_kernel

    if device != "cuda":
        return contextlib.nullcontext()
    if which == "reference":
        return sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])
    return sdpa_kernel(which)


def sdpa_forward(backend: Any, q: Any, k: Any, v: Any, causal: bool) -> Callable[[], Any]:
    """torch's SDPA with only `backend` allowed (its backward is recorded with it)."""
    import torch.nn.functional as F

    def forward() -> Any:
        with _backends(backend, q.device.type):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return forward


def backward_call(forward: Callable[[], Any], inputs: Sequence[Any], do: Any) -> Callable[[], Any]:
    """Runs `forward` once; returns the call the benchmark times: the
    gradients of its output for `do`, the graph kept for the next call."""
    import torch

    out = forward()
    inputs = tuple(inputs)

    def backward() -> Any:
        return torch.autograd.grad(out, inputs, do, retain_graph=True)
    return backward


def poison_pools(nbytes: int, small_blocks: int = 64) -> None:
    """Fills the CUDA caching allocator's free memory with NaN: empties its
    cache, then allocates and frees a NaN block of `nbytes` (later large
    allocations are carved from it) and `small_blocks` 512 KiB ones (the
    small-allocation pool) (tests/runtime/test_autograd_gpu.py's poison)."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    large = torch.full((max(nbytes, 1 << 21) // 2,), float("nan"), dtype=torch.bfloat16, device="cuda")
    small = [torch.full((1 << 18,), float("nan"), dtype=torch.bfloat16, device="cuda") for _ in range(small_blocks)]
    torch.cuda.synchronize()
    del large, small


def check(forward: Callable[[], Any], q: Any, k: Any, v: Any, do: Any, want: Sequence[Any]
          ) -> tuple[dict[str, float], bool]:
    """(relative error of dq, dk, dv against `want`, whether all are finite)
    of one forward and backward of `forward` (a function of nothing, on the
    leaves q, k, v)."""
    import torch

    got = torch.autograd.grad(forward(), (q, k, v), do)
    finite = all(bool(torch.isfinite(g).all()) for g in got)
    return relative_errors(got, want), finite


def on_path(path: str | None, call: Callable[[], Any]) -> Callable[[], Any]:
    """`call` run with tawa's backward on dQ path `path` (None: as it is)."""
    if path is None:
        return call

    def run() -> Any:
        from tawa.torch import attention_bwd_kernels as abk

        with abk.dq_path(path):
            return call()
    return run


def measure(problem: tuple[int, int, int, int, bool], attention: Callable[..., Any], baselines: dict[str, Any],
            rounds: int, device: str = "cuda", poison: Callable[[int], None] | None = None,
            timed: Callable[[dict[str, Callable[[], Any]], int], dict[str, list[float]]] = interleaved,
            paths: Sequence[str] | None = None) -> dict[str, Any]:
    """One row: fresh bf16 q, k, v, dO on `device`; tawa's gradients
    (`attention(q, k, v, causal=...)`) checked against float32 after
    `poison` (default: `poison_pools` on CUDA), the baselines' (SDPA under
    each of `baselines`' backends) measured against the same reference;
    then, if tawa's are right, the backward calls of all `timed` for
    `rounds` rounds (`interleaved`: ms per round, NaN for a backend that
    raises RuntimeError).  `paths`: tawa's dQ paths to check and time
    (`variant` names them; None: the operator's own, unswitched)."""
    import torch

    head_dim, B, H, S, causal = problem
    q, k, v, do = (torch.randn(B, H, S, head_dim, device=device).to(torch.bfloat16) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    want = reference_grads(q, k, v, do, causal)

    def run_tawa() -> Any:
        return attention(q, k, v, causal=causal)

    forwards = {name: sdpa_forward(backend, q, k, v, causal) for name, backend in baselines.items()}
    if poison is None and device == "cuda":
        poison = poison_pools
    if poison is not None:
        poison(8 * q.numel() * q.element_size())
    first = paths[0] if paths else None
    err, finite = check(on_path(first, run_tawa), q, k, v, do, want)
    others: dict[str, dict[str, Any]] = {}
    for path in (paths or ())[1:]:
        try:
            e, f = check(on_path(path, run_tawa), q, k, v, do, want)
            others[variant(path, paths)] = {"rel_err": e, "finite": f}
        except (ValueError, RuntimeError) as failure:  # (a path whose kernels do not compile)
            lines = str(failure).strip().splitlines()
            others[variant(path, paths)] = {"rel_err": {g: math.nan for g in GRADS}, "finite": False,
                                            "error": f"{type(failure).__name__}: {lines[0] if lines else ''}"}
    base_err: dict[str, float] = {}
    for name, forward in forwards.items():
        try:
            base_err[name] = max(check(forward, q, k, v, do, want)[0].values())
        except RuntimeError:  # the backend does not take the row
            base_err[name] = math.nan
    del want
    row: dict[str, Any] = {"d": head_dim, "B": B, "H": H, "S": S, "causal": causal, "rel_err": err,
                           "finite": finite, "baseline_rel_err": base_err,
                           "tflops": {n: math.nan for n in ("tawa", *others, *baselines)}, "ms_per_round": {}}
    if others:
        row["paths"] = others
    if not row_ok(row):
        return row
    calls: dict[str, Callable[[], Any]] = {"tawa": on_path(first, backward_call(on_path(first, run_tawa), (q, k, v),
                                                                                  do))}
    for path in (paths or ())[1:]:
        name = variant(path, paths)
        if row_ok(others[name]):
            calls[name] = on_path(path, backward_call(on_path(path, run_tawa), (q, k, v), do))
    for name, forward in forwards.items():
        try:
            calls[name] = backward_call(forward, (q, k, v), do)
        except RuntimeError as e:
            calls[name] = _raising(e)
    times = timed(calls, rounds)
    row["tflops"] = {**row["tflops"], **backward_tflops(times, B, S, head_dim, causal, H)}  # (NaN: not timed)
    row["ms_per_round"] = times
    return row


def _tile_or_why(abk: Any, name: str, d: int) -> Any:
    """Kernel `name`'s blocks at head dim d, or why it has none (it does not compile)."""
    try:
        return abk.tile(name, d)
    except Exception as err:  # recorded in the JSON; the row then says it failed
        return f"{type(err).__name__}: {str(err).strip().splitlines()[0]}"


def _raising(err: RuntimeError) -> Callable[[], Any]:
    """A call that raises `err` (a backend whose forward refused the row: NaN in the table)."""
    def call() -> Any:
        raise err
    return call


# --------------------------------------------------------------------------- the run (GPU)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench attention --backward", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--head-dim", type=int, action="append", choices=(64, 128, 256),
                        help="head dims to time (default 64 and 128; 256 has no backward and is skipped)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--random", type=int, metavar="N",
                        help="N problems drawn at random (head dim 64 or 128, causality, B, H, S 64-32768) "
                        "instead of the table")
    parser.add_argument("--seed", type=int, default=0, help="seed of --random (default 0)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--plot", type=Path, metavar="PNG", help="also draw TFLOP/s per row (needs matplotlib)")
    parser.add_argument("--dq", default=DQ_PATH, metavar="PATHS",
                        help=f"tawa's dQ paths to time, separated by commas, of {', '.join(DQ_PATHS)} "
                        f"(default {DQ_PATH}; the first is the table's tawa)")
    args = parser.parse_args(argv)
    try:
        paths = dq_paths(args.dq)
    except ValueError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    if args.random is not None and (args.random < 1 or args.head_dim):
        print(f"{PROG}: error: --random takes N >= 1, without --head-dim", file=sys.stderr)
        return 1
    if args.rounds < 1:
        print(f"{PROG}: error: --rounds must be at least 1", file=sys.stderr)
        return 1
    todo, notes = problems(args.head_dim, args.random, args.seed)
    if not todo:
        print(f"{PROG}: error: nothing to time: " + "; ".join(notes), file=sys.stderr)
        return 1
    try:
        import torch
    except ImportError as err:
        print(f"{PROG}: error: needs torch with CUDA: {err}", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print(f"{PROG}: error: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 1
    from torch.nn.attention import SDPBackend

    import tawa
    import tawa.torch as tt

    if tt.UNAVAILABLE is not None:
        print(f"{PROG}: error: {tt.UNAVAILABLE}", file=sys.stderr)
        return 1
    from tawa.torch import attention_bwd_kernels as abk

    meta = {
        "workload": "attention backward bf16, " + (f"--random {args.random} --seed {args.seed}"
                                                   if args.random is not None else "16 heads"),
        "dtype": "bf16",
        "gpu": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": args.rounds, "torch": torch.__version__, "tawa": tawa.__version__,
        "timed": "torch.autograd.grad(out, (q, k, v), dO, retain_graph=True) after one forward; "
                 "triton.testing.do_bench median (L2 flushed)",
        "flops": "2.5 times the forward's 4*B*H*S^2*d, halved for causal",
        "tolerance": TOLERANCE, "skipped": notes,
        "dq_paths": {variant(p, paths): p for p in paths},
        "tawa_kernels": {d: {name: _tile_or_why(abk, name, d)
                             for p in paths for name in (abk.FWD, *abk.PATH_KERNELS[p])} for d in HEAD_DIMS},
        **({"random": args.random, "seed": args.seed} if args.random is not None else {}),
    }
    print(f"tawa attention backward vs torch SDPA's on {meta['gpu']}, {meta['date']}, "
          f"{meta['workload'].split(', ', 1)[1]}, bf16; TFLOP/s count the backward as 2.5 times the forward's "
          "4*B*H*S^2*d (halved for causal); errors: relative, against float32 autograd", flush=True)
    for note in notes:
        print(note)
    print(HEADER + "   (TFLOP/s)")
    rows: list[dict[str, Any]] = []
    baselines = {"cuDNN": SDPBackend.CUDNN_ATTENTION, "FA2": SDPBackend.FLASH_ATTENTION}
    for problem in todo:
        try:
            row = measure(problem, tt.attention, baselines, args.rounds, paths=paths)
        except Exception as err:  # the row fails, loudly; the others still run
            row = failed_row(problem, err)
        rows.append(row)
        print(format_row(row), flush=True)
        torch.cuda.empty_cache()
    print(summary(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report(rows, meta), indent=2) + "\n")
    if args.plot:
        from tawa.bench.plot import save

        if not save(plot_spec(rows, meta), args.plot, PROG):
            return 1
    wrong = [r for r in rows if not row_ok(r) or not all(row_ok(o) for o in extra_paths(r).values())]
    if wrong:
        print(f"{PROG}: error: {len(wrong)} of {len(rows)} rows failed or have wrong gradients (above)",
              file=sys.stderr)
        return 1
    return 0

