"""`python -m tawa.bench memory`: the memory-bound kernels of a transformer
(examples/python/norms.py: row softmax, RMSNorm, LayerNorm, residual add +
RMSNorm, SwiGLU; bf16 in and out, f32 math) against torch eager and
`torch.compile`'s generated kernels, and the DRAM bandwidth a copy reaches,
in the same run, interleaved (R rounds, medians), over a fixed sweep
(`SHAPES`), chosen shapes (`--shape MxN`) or shapes drawn at random
(`--random N --seed S`), with the geomean and minimum ratios per kernel.

Each row is one kernel on an M×N input; torch's side is what a user writes (bf16 tensors
into `torch.softmax`, `F.rms_norm`, `F.layer_norm`, `x + r`, `F.silu(g) * u`),
eager and compiled.  Times are GPU times of the call
replayed in a CUDA graph (`triton.testing.do_bench_cudagraph`), so the host's
launch cost does not count for any side.  Bandwidth counts the bytes the
kernel must move (inputs read once, outputs written once).  The copy
reference is `torch.Tensor.copy_` of `COPY_BYTES`.  Each tawa kernel is
first checked against torch in float32 on random data with the output
poisoned with NaN; rows whose tensors fit in the 50 MB L2 (4096×1024) are
timed warm, from L2, on every side; a kernel that does not compile prints its error's first
line instead of a time.

Tile shapes are those `tawa.torch`'s operators take (`blocks`,
`tawa.torch.norm_kernels.tile`): whole rows where a row fits the registers
(`BLOCK_N` the row rounded up to whole warp rows; `add_rmsnorm` by its
one-pass `add_rmsnorm_row`), at the rows that keep the most loads in flight
per SM; wider rows by each kernel's chunked program, whose loops take chunks
of one row by 8192 columns, loaded by the consumers; `swiglu`, elementwise,
in tiles of at most 512 columns.  Each row ends with the program and tile
that ran (`described`).  `--variant KEY=VALUE ...` also times tawa's
kernels compiled with those `tawa-hopper-pipeline` options (a tuning
option under study, e.g. `once_depth=3`), checked
and interleaved like the rest, each row and the summary giving its ratio
to tawa's default.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

KERNELS = ("softmax", "rmsnorm", "layernorm", "add_rmsnorm", "swiglu")
SHAPES = [(4096, 768), (4096, 1024), (4096, 4096), (16384, 4096), (8192, 8192), (2048, 32768)]
"""(M, N) of the sweep: rows of a batch of tokens, widths of common models
(768, GPT-2 small's, is narrower than a power-of-two tile), and rows wider
than one program's registers (32768: the chunked programs)."""
COPY_BYTES = 1 << 30
BF16_BYTES = 2
"""Bytes of an element of the bench's tensors (bf16)."""
EPS = 1e-6
TOLERANCE = 3e-2


def blocks(kernel: str, N: int, M: int | None = None) -> dict[str, int]:
    """BLOCK_M and BLOCK_N of `kernel` for M rows of N, as `tawa.torch`'s
    operators decide them: the row kernels' by `tawa.torch.norm_kernels.tile`
    (whole rows, as many as keep the most loads in flight per SM), SwiGLU's
    by `elementwise_tile` (columns of any row)."""
    from tawa.torch import norm_kernels

    if kernel == "swiglu":
        return norm_kernels.elementwise_tile("swiglu", N, M)
    return norm_kernels.tile(kernel, N, M)


def described(kernel: str, M: int, N: int) -> str:
    """The program and tile tawa runs for `kernel` on M rows of N:
    `rmsnorm 4x4096`, `rmsnorm_chunked 1x8192`."""
    from tawa.torch import norm_kernels

    b = blocks(kernel, N, M)
    return f"{norm_kernels.program(kernel, N)} {b['BLOCK_M']}x{b['BLOCK_N']}"


def moved_bytes(kernel: str, M: int, N: int) -> int:
    """Bytes the kernel must read and write (bf16 tensors, vectors once)."""
    tensors = {"softmax": 2, "rmsnorm": 2, "layernorm": 2, "add_rmsnorm": 4, "swiglu": 3}[kernel]
    vectors = {"rmsnorm": 1, "layernorm": 2, "add_rmsnorm": 1}.get(kernel, 0)
    return 2 * (tensors * M * N + vectors * N)


def torch_fns(kernel: str, M: int, N: int, torch: Any) -> tuple[list[Any], Callable[..., Any], Callable[..., Any]]:
    """The kernel's inputs, its torch implementation as a user writes it (bf16
    tensors into torch's functions: what eager and `torch.compile` time), and
    a float32 reference (what tawa's result is checked against)."""
    import torch.nn.functional as F

    def rand(*shape: int) -> Any:
        return torch.randn(*shape, device="cuda").to(torch.bfloat16)

    def f32(*ts: Any) -> list[Any]:
        return [t.float() for t in ts]

    if kernel == "softmax":
        return [rand(M, N)], lambda x: torch.softmax(x, 1), lambda x: torch.softmax(x.float(), 1)
    if kernel == "rmsnorm":
        return ([rand(M, N), rand(N)], lambda x, w: F.rms_norm(x, (N,), w, EPS),
                lambda x, w: F.rms_norm(*f32(x), (N,), *f32(w), EPS))
    if kernel == "layernorm":
        return ([rand(M, N), rand(N), rand(N)], lambda x, w, b: F.layer_norm(x, (N,), w, b, EPS),
                lambda x, w, b: F.layer_norm(*f32(x), (N,), *f32(w, b), EPS))
    if kernel == "add_rmsnorm":
        def add_rmsnorm(x: Any, r: Any, w: Any) -> tuple[Any, Any]:
            s = x + r
            return F.rms_norm(s, (N,), w, EPS), s

        def reference(x: Any, r: Any, w: Any) -> tuple[Any, Any]:
            s = x + r
            return F.rms_norm(*f32(s), (N,), *f32(w), EPS), s
        return [rand(M, N), rand(M, N), rand(N)], add_rmsnorm, reference
    return [rand(M, N), rand(M, N)], lambda g, u: F.silu(g) * u, lambda g, u: F.silu(g.float()) * u.float()


def tawa_call(module: Any, kernel: str, M: int, N: int, inputs: list[Any], torch: Any,
              options: dict[str, Any] | None = None) -> Callable[[], Any]:
    """A launch of the tawa kernel on `inputs` writing fresh outputs (compiled
    once per shape, with `tawa-hopper-pipeline` `options` where given)."""
    from tawa.torch import norm_kernels

    program = norm_kernels.program(kernel, N)  # add_rmsnorm: one pass where a row fits
    fn = getattr(module, program)
    b = blocks(kernel, N, M)
    # The operator's own options (a chunked program's), then the variant's.
    options = {**(norm_kernels.options(program) or {}), **(options or {})} or None
    outs = [torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            for _ in range(2 if kernel == "add_rmsnorm" else 1)]
    grid = (math.ceil(M / b["BLOCK_M"]),) + ((math.ceil(N / b["BLOCK_N"]),) if kernel == "swiglu" else ())
    scalars = [M, N] + ([EPS] if kernel in ("rmsnorm", "layernorm", "add_rmsnorm") else [])
    launch = fn[grid]

    def run() -> Any:
        launch(*inputs, *outs, *scalars, options=options, **b)
        return outs[0] if len(outs) == 1 else tuple(outs)
    return run


RANDOM_M = (16, 32768)
RANDOM_N = (256, 16384)
"""The ranges `random_shapes` draws M and N from (log-uniform)."""
RANDOM_ELEMENTS = 1 << 27
"""The most elements a drawn M×N has (256 MiB of bf16 a tensor)."""


def random_shapes(count: int, seed: int) -> list[tuple[int, int]]:
    """`count` shapes M×N drawn with `random.Random(seed)`: M log-uniform over
    `RANDOM_M`, N over `RANDOM_N` rounded to a multiple of 8 (rows of whole
    16-byte vectors; any width that is not a power of two takes the masked
    edge path), M then cut to `RANDOM_ELEMENTS` // N."""
    rng = random.Random(seed)

    def draw(lo: int, hi: int) -> float:
        return math.exp(rng.uniform(math.log(lo), math.log(hi)))

    shapes = []
    for _ in range(count):
        M, N = round(draw(*RANDOM_M)), max(RANDOM_N[0], min(RANDOM_N[1], round(draw(*RANDOM_N) / 8) * 8))
        shapes.append((min(M, RANDOM_ELEMENTS // N), N))
    return shapes


def parse_shape(text: str) -> tuple[int, int] | None:
    """`MxN` as (M, N), both positive; None for anything else."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def gpu_ms(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median milliseconds of each function replayed in a CUDA graph, `rounds`
    interleaved rounds (the order reversed every other round)."""
    from triton.testing import do_bench_cudagraph

    times: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(rounds):
        for name in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            times[name].append(do_bench_cudagraph(fns[name], rep=50))
    return {name: statistics.median(ts) for name, ts in times.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench memory", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", action="append", choices=KERNELS, help="only these kernels (repeatable)")
    parser.add_argument("--shape", action="append", metavar="MxN",
                        help="only these shapes (repeatable; default: the sweep)")
    parser.add_argument("--random", type=int, metavar="N",
                        help="N shapes drawn at random (M 16-32768, N 256-16384, log-uniform; `random_shapes`)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --random (default 0)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--variant", nargs="+", metavar="KEY=VALUE",
                        help="also time tawa's kernels compiled with these tawa-hopper-pipeline options "
                             "(e.g. once_depth=3), checked and interleaved like the rest")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    from tawa.bench.attention_ab import parse_options

    try:
        variant = parse_options(args.variant) if args.variant else None
    except ValueError as err:
        parser.error(str(err))
    if args.rounds < 1:
        print("tawa.bench memory: error: --rounds takes N >= 1", file=sys.stderr)
        return 1
    if args.random is not None and (args.random < 1 or args.shape):
        print("tawa.bench memory: error: --random takes N >= 1 and no --shape", file=sys.stderr)
        return 1
    chosen = [parse_shape(text) for text in args.shape or ()]
    if None in chosen:
        bad = args.shape[chosen.index(None)]
        print(f"tawa.bench memory: error: bad shape {bad!r}: expected MxN with positive integers, e.g. 4096x768",
              file=sys.stderr)
        return 1
    shapes = random_shapes(args.random, args.seed) if args.random else chosen or SHAPES
    import torch

    import tawa
    from tawa.diagnostics import TawaError
    from tawa.torch.norm_kernels import norms

    module = norms()
    src = torch.empty(COPY_BYTES // 2, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy_ms = gpu_ms({"copy": lambda s=src, d=dst: d.copy_(s)}, args.rounds)["copy"]
    copy_gbs = 2 * COPY_BYTES / (copy_ms * 1e-3) / 1e9
    src = dst = None  # the gigabytes go back before the sweep
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "tawa": tawa.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "rounds": args.rounds, "copy_gbs": copy_gbs, **({"variant": variant} if variant else {}),
            **({"random": args.random, "seed": args.seed} if args.random else {})}
    print(f"memory-bound kernels on {meta['gpu']}, {meta['date']}: copy reaches {copy_gbs:.0f} GB/s "
          f"({COPY_BYTES >> 20} MiB); GB/s per row, CUDA-graph GPU times", flush=True)
    print(f"{'kernel':>12} {'M':>6} {'N':>6} {'tawa':>7} {'eager':>7} {'compile':>7} {'tawa/copy':>9} "
          f"{'tawa/eager':>10} {'tawa/compile':>12}  tawa's program and tile")
    rows = []
    for kernel in args.kernel or KERNELS:
        for M, N in shapes:
            inputs, user, reference = torch_fns(kernel, M, N, torch)
            # Static, and from a clean slate each row: a second shape of the same
            # function would otherwise be compiled once more with dynamic sizes
            # (slower kernels than a model of fixed sizes gets), and past dynamo's
            # recompile limit (8 shapes of one function: --random) run eager.
            torch._dynamo.reset()
            compiled = torch.compile(user, dynamic=False)
            fns: dict[str, Callable[[], Any]] = {"eager": lambda f=user, i=inputs: f(*i),
                                                 "compile": lambda f=compiled, i=inputs: f(*i)}
            note, program = "", ""
            try:
                program = described(kernel, M, N)
                want = reference(*inputs)
                for side, options in (("tawa", None), ("variant", variant)):
                    if side == "variant" and not options:
                        continue
                    run = tawa_call(module, kernel, M, N, inputs, torch, options)
                    got = run()
                    for g, w in zip(got if isinstance(got, tuple) else (got,),
                                    want if isinstance(want, tuple) else (want,)):
                        err = ((g.float() - w.float()).norm() / w.float().norm()).item()
                        if not err < TOLERANCE:
                            print(f"{kernel} {M}x{N}: {side} WRONG (rel err {err:.2e})")
                            return 1
                    fns[side] = run
            except (TawaError, ValueError) as e:  # (ValueError: no tile of the row fits)
                note = str(e).splitlines()[0]
            ms = gpu_ms(fns, args.rounds)
            gbs = {name: moved_bytes(kernel, M, N) / (t * 1e-3) / 1e9 for name, t in ms.items()}
            tawa_gbs = gbs.get("tawa", math.nan)
            rows.append({"kernel": kernel, "M": M, "N": N, "program": program or None, "ms": ms, "gbs": gbs,
                         "error": note or None})
            print(f"{kernel:>12} {M:>6} {N:>6} {tawa_gbs:>7.0f} {gbs['eager']:>7.0f} {gbs['compile']:>7.0f} "
                  f"{tawa_gbs / copy_gbs:>9.2f} {tawa_gbs / gbs['eager']:>10.2f} {tawa_gbs / gbs['compile']:>12.2f}"
                  f"  {program}" + (f"   tawa: {note}" if note else "")
                  + (f"   variant {gbs['variant']:.0f} GB/s, {ms['tawa'] / ms['variant']:.3f}x tawa's" if "variant" in gbs
                     else ""), flush=True)
    for line in summary(rows):
        print(line)
    if args.json:
        args.json.write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")
    return 0


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """Per kernel and over all rows: the geomean and the minimum of tawa's
    time ratio against eager and torch.compile (rows where tawa ran)."""
    lines = []
    for kernel in [*dict.fromkeys(r["kernel"] for r in rows), None]:
        ran = [r for r in rows if "tawa" in r["ms"] and kernel in (None, r["kernel"])]
        if not ran:
            continue
        parts = []
        for side in ("eager", "compile"):
            ratios = [r["ms"][side] / r["ms"]["tawa"] for r in ran]
            geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
            parts.append(f"vs {side} geomean {geomean:.2f}, min {min(ratios):.2f}")
        if varied := [r["ms"]["tawa"] / r["ms"]["variant"] for r in ran if "variant" in r["ms"]]:
            geomean = math.exp(sum(map(math.log, varied)) / len(varied))
            parts.append(f"variant vs tawa geomean {geomean:.3f}, min {min(varied):.3f}, max {max(varied):.3f}")
        lines.append(f"{kernel or 'all':>12}: {len(ran)} rows, " + "; ".join(parts))
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
