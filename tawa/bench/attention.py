"""`python -m tawa.bench attention`: tawa's warp-specialized FlashAttention
forward (examples/attention_fwd.mlir, head dim 128, and
examples/attention_fwd_d64.mlir and attention_fwd_d256.mlir, head dims 64
and 256; bf16) against torch's scaled_dot_product_attention (cuDNN and
FlashAttention-2 backends), timed in the same run, interleaved (R rounds,
medians; `triton.testing.do_bench`).  Each tawa result is first checked
against a float32 reference on fresh random data (output poisoned with NaN).

Shapes B·H·S with H = 16: 1·16·16384, 4·16·4096, 16·16·1024, 32·16·512
(16k tokens each), causal and not; each row runs the kernel `tawa.torch`
picks for it, compiled with the options the operator uses (the cost
model's choice, `tawa.analysis.attention_cost.choose`).

`--dtype fp8` times tawa's fp8 kernel (examples/attention_fwd_fp8.mlir,
head dim 128: e4m3 Q, K and V, V given transposed, bf16 O) on e4m3 copies of
the rows' inputs (unit scales; the transpose of V is made once, untimed)
against cuDNN and FlashAttention-2 on the bf16 inputs: torch's SDPA has no
fp8 path, and FlashAttention-3 is not installed here, so there is no fp8
baseline to time.  Its error is checked against the float32 reference of
the e4m3 inputs, within `FP8_TOLERANCE` (P is rounded to e4m3 for P·V).  TFLOP/s count 4·B·H·S²·d, halved for
causal.  `--json` writes the rows, `--plot` draws TFLOP/s per row
(`tawa.bench.plot`); a backend that cannot run a row shows NaN.

`--explain DxBxHxS ...` (`--causal` for causal ones) prints, without a GPU,
each variant the operator weighs for the problem, the cost model's estimate
of each (the busiest CTA's programs and key blocks), and the choice.

`--random N --seed S` times N problems nobody tuned for instead
(`random_problems`): head dim 64, 128 or 256, causal or not, a sequence
length log-uniform over 64-32768 (any integer: ragged lengths included),
heads from `RANDOM_HEADS` and a batch log-uniform over 1-64, cut so that one
operand holds at most `RANDOM_MAX_TOKENS` rows of D.  Each row also prints
the time the cost model predicts (`tawa.analysis.attention_cost.estimate`)
and measured / predicted.

`--backward` times the backward pass instead (`tawa.bench.attention_bwd`:
head dims 64 and 128, against cuDNN's and FlashAttention-2's backward;
`python -m tawa.bench attention --backward -h` lists its options).
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

from tawa.torch.checks import FP8_KERNELS

SHAPES = [(1, 16384), (4, 4096), (16, 1024), (32, 512)]  # (batch, seq_len) with 16 heads
HEADS = 16
HEAD_DIMS = {
    128: ("attention_fwd.mlir", "attention_fwd"),
    64: ("attention_fwd_d64.mlir", "attention_fwd_d64"),
    256: ("attention_fwd_d256.mlir", "attention_fwd_d256"),
}
FP8_TOLERANCE = 5e-2
"""Relative error allowed for fp8 attention: P in e4m3 (3 mantissa bits)
gave 1.8-2.3e-2 on random inputs in the CPU simulator."""
BACKENDS = ("tawa", "cuDNN", "FA2")
RANDOM_SEQ = (64, 32768)
"""The range `random_problems` draws sequence lengths from (log-uniform)."""
RANDOM_BATCH = (1, 64)
RANDOM_HEADS = (8, 12, 16, 20, 24, 32, 40, 48, 64)
"""Head counts `random_problems` draws from (those of common models)."""
RANDOM_MAX_TOKENS = 1 << 20
"""The most B·H·S rows `random_problems` lets one operand hold (2 GiB for
Q, K, V and O at head dim 256 in bf16)."""


def fixed_problems(head_dims: Sequence[int]) -> list[tuple[int, int, int, int, bool]]:
    """(head dim, B, H, S, causal) of the fixed table: `SHAPES` with
    `HEADS` heads, causal and not, per head dim."""
    return [(d, B, HEADS, S, causal) for d in head_dims for causal in (False, True) for B, S in SHAPES]


def random_problems(count: int, seed: int, head_dims: Sequence[int] = tuple(HEAD_DIMS)
                    ) -> list[tuple[int, int, int, int, bool]]:
    """`count` problems (head dim, B, H, S, causal) drawn with
    `random.Random(seed)` (see the module's `--random`), the head dim from
    `head_dims` (the backward's table draws from 64 and 128)."""
    rng = random.Random(seed)

    def log_uniform(lo: int, hi: int) -> int:
        return max(lo, min(hi, round(math.exp(rng.uniform(math.log(lo), math.log(hi))))))

    problems = []
    for _ in range(count):
        d, causal = rng.choice(sorted(head_dims)), rng.random() < 0.5
        S, H, B = log_uniform(*RANDOM_SEQ), rng.choice(RANDOM_HEADS), log_uniform(*RANDOM_BATCH)
        H = min(H, max(1, RANDOM_MAX_TOKENS // S))
        B = min(B, max(1, RANDOM_MAX_TOKENS // (H * S)))
        problems.append((d, B, H, S, causal))
    return problems


def explain(head_dim: int, B: int, H: int, S: int, causal: bool, sms: int | None = None) -> str:
    """The variants the attention operator weighs for the problem, the cost
    model's estimate of each (fastest first), and its choice (text; no GPU)."""
    from tawa.analysis.attention_cost import VARIANTS, block_seconds, busiest_cta, choose, estimate
    from tawa.target.hopper import SM_COUNT

    sms = sms or SM_COUNT
    key = (head_dim, causal)
    if key not in VARIANTS:
        raise ValueError(f"head dim {head_dim} has no attention kernel (head dims: 64, 128, 256)")
    chosen = choose(head_dim, causal, S, B * H, None, sms)
    lines = [f"attention d={head_dim} B={B} H={H} S={S} {'causal' if causal else 'not causal'}, bf16, on {sms} SMs: "
             "the cost model's estimates (tawa.analysis.attention_cost), fastest first"]
    ranked = sorted(VARIANTS[key], key=lambda v: estimate(v, head_dim, S, B * H, causal, sms=sms))
    for rank, v in enumerate(ranked, 1):
        blocks, programs = busiest_cta(v.rows, v.key_block, S, S, B * H, causal, sms)
        mark = "  <- choice" if v == chosen else ""
        lines.append(f"{rank:3}. {v.label}{mark}")
        lines.append(f"       {estimate(v, head_dim, S, B * H, causal, sms=sms) * 1e6:.1f} us: busiest CTA "
                     f"{programs} programs x {v.program_s * 1e6:.2f} us + {blocks} key blocks of {v.rows}x"
                     f"{v.key_block} x {v.block_factor:.2f} x {block_seconds(v, head_dim) * 1e6:.2f} us")
    lines.append(f"choice: {chosen.label}")
    return "\n".join(lines)


def parse_problem(text: str) -> tuple[int, int, int, int]:
    """`DxBxHxS` → (D, B, H, S); ValueError naming the text otherwise."""
    parts = text.lower().split("x")
    if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"{text!r} is not a problem DxBxHxS of positive integers (e.g. 128x4x16x4096)")
    d, b, h, s = map(int, parts)
    return d, b, h, s


def query_rows(source: str, name: str) -> int:
    """Query rows per program of attention kernel `name` in `source` (the
    first grid dimension is ⌈S / rows⌉): the rows of its dots' accumulators
    (192 for @attention_fwd_d64, 128 for the other examples)."""
    import tawa
    from tawa.transforms.partition.warp_groups import tile_rows

    kernels = [op for op in tawa.parse(source).ops if getattr(op, "sym_name", None) and op.sym_name.data == name]
    if not kernels:
        raise ValueError(f"no kernel @{name} in the source")
    rows = tile_rows(kernels[0])
    assert rows is not None, name
    return rows


def operand_rank(source: str, name: str) -> int:
    """The rank of attention kernel `name`'s Q in `source`: 4 for the
    examples ([B, H, S, D]), 3 for a kernel written for [B·H, S, D] (an
    older revision of an example, timed against the current one)."""
    import tawa

    kernels = [op for op in tawa.parse(source).ops if getattr(op, "sym_name", None) and op.sym_name.data == name]
    if not kernels:
        raise ValueError(f"no kernel @{name} in the source")
    return kernels[0].function_type.inputs.data[0].get_num_dims()


def launch_args(rank: int, q: Any, k: Any, v: Any, o: Any, scale: float, rows: int) -> tuple[list[Any], tuple[int, ...]]:
    """The arguments and grid of a bf16 attention kernel of Q's `rank` for
    q, k, v, o [B, H, S, D] (one head per key/value head): rank 4 takes
    them as they are, grid (⌈S/rows⌉, H, B); rank 3 [B·H, S, D] views,
    grid (⌈S/rows⌉, B·H)."""
    B, H, S, D = q.shape
    if rank == 4:
        return [q, k, v, o, S, S, scale, 1], (math.ceil(S / rows), H, B)
    return [*(t.view(B * H, S, D) for t in (q, k, v, o)), S, scale], (math.ceil(S / rows), B * H)


def sdpa(backend: Any, q: Any, k: Any, v: Any, causal: bool) -> Callable[[], None]:
    """A call of torch's scaled_dot_product_attention with only `backend` allowed."""
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    def run() -> None:
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


def interleaved(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """Milliseconds per round of each function (`triton.testing.do_bench`
    median): `rounds` rounds, the order reversed every other round; NaN for
    a function that raises RuntimeError (a backend that does not take the row)."""
    from triton.testing import do_bench

    times: dict[str, list[float]] = {n: [] for n in fns}
    for r in range(rounds):
        order = list(fns.items())
        for n, f in order if r % 2 == 0 else reversed(order):
            try:
                times[n].append(do_bench(f, warmup=25, rep=150, return_mode="median"))
            except RuntimeError:
                times[n].append(math.nan)
    return times


def tflops(times: dict[str, list[float]], B: int, S: int, d: int, causal: bool, H: int = HEADS) -> dict[str, float]:
    """TFLOP/s of each function's median: 4·B·H·S²·d, halved for causal."""
    gflop = 4 * B * H * S * S * d * (0.5 if causal else 1.0) / 1e9
    return {n: gflop / statistics.median(t) for n, t in times.items()}


def geomean(values: Sequence[float]) -> float:
    ok = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, ok)) / len(ok)) if ok and len(ok) == len(values) else math.nan


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """Geomean and minimum of tawa/cuDNN and tawa/FA2 over the rows."""
    parts = []
    for base in ("cuDNN", "FA2"):
        ratios = [r["tflops"]["tawa"] / r["tflops"][base] for r in rows]
        parts.append(f"tawa/{base}: geomean {geomean(ratios):.3f}, min {min(ratios):.3f}")
    return "; ".join(parts)


def plot_spec(rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": f"attention forward {meta.get('dtype', 'bf16')}, tawa vs torch SDPA (bf16), {meta['gpu']}, {meta['date']}",
        "ylabel": "TFLOP/s",
        "labels": [f"d{r['d']} {r['B']}x{r.get('H', HEADS)}x{r['S']}{' causal' if r['causal'] else ''}" for r in rows],
        "series": {name: [r["tflops"][name] for r in rows] for name in BACKENDS},
        "ratio": ["tawa", "cuDNN"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench attention", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backward", action="store_true",
                        help="time the backward pass against cuDNN's and FA2's instead (tawa.bench.attention_bwd, "
                        "which `python -m tawa.bench attention --backward` runs; its options: --head-dim 64/128, "
                        "--rounds, --random, --seed, --json, --plot)")
    parser.add_argument("--stages", type=int, default=0, help="ring depth (0: the deepest that fits)")
    parser.add_argument("--head-dim", type=int, action="append", choices=sorted(HEAD_DIMS),
                        help="head dims to time (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--dtype", choices=("bf16", "fp8"), default="bf16",
                        help="tawa's inputs (default bf16); fp8: e4m3 Q, K, V at head dim 128, against "
                        "cuDNN and FA2 in bf16 (no fp8 baseline here)")
    parser.add_argument("--random", type=int, metavar="N",
                        help="N problems drawn at random (head dim, causality, B, H, S 64-32768) instead of the table")
    parser.add_argument("--seed", type=int, default=0, help="seed of --random (default 0)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--plot", type=Path, metavar="PNG", help="also draw TFLOP/s per row (needs matplotlib)")
    parser.add_argument("--explain", nargs="+", metavar="DxBxHxS",
                        help="print the variants the operator weighs for each problem, the cost model's estimate "
                        "of each, and the choice (no GPU)")
    parser.add_argument("--causal", action="store_true", help="--explain: causal problems")
    parser.add_argument("--sms", type=int, default=None, help="SMs --explain estimates for (default: the H100's 132)")
    args = parser.parse_args(argv)
    if args.backward:  # `python -m tawa.bench` hands --backward to tawa.bench.attention_bwd before this
        print("tawa.bench attention: error: --backward is tawa.bench.attention_bwd's: run "
              "`python -m tawa.bench attention --backward`", file=sys.stderr)
        return 1
    if args.explain:
        try:
            for text in args.explain:
                print(explain(*parse_problem(text), args.causal, args.sms))
        except ValueError as e:
            print(f"tawa.bench attention: error: {e}", file=sys.stderr)
            return 1
        return 0
    fp8 = args.dtype == "fp8"
    if fp8 and any(d != 128 for d in args.head_dim or ()):
        print("tawa.bench attention: error: --dtype fp8 runs head dim 128 only", file=sys.stderr)
        return 1
    if args.random is not None and (args.random < 1 or fp8 or args.head_dim):
        print("tawa.bench attention: error: --random takes N >= 1, in bf16, without --head-dim", file=sys.stderr)
        return 1
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend

    import tawa
    from tawa.analysis.attention_cost import estimate
    from tawa.torch.checks import attention_variant
    from tawa.torch.kernels import FILES

    examples = Path(__file__).resolve().parents[2] / "examples"
    meta = {
        "workload": f"attention forward {args.dtype}, " + (f"--random {args.random} --seed {args.seed}"
                                                             if args.random is not None else "16 heads"),
        "dtype": args.dtype,
        "gpu": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": args.rounds, "torch": torch.__version__, "tawa": tawa.__version__,
        **({"random": args.random, "seed": args.seed} if args.random is not None else {}),
    }
    print(f"tawa attention vs torch SDPA on {meta['gpu']}, {meta['date']}, {meta['workload'].split(', ', 1)[1]}, "
          + ("tawa fp8 (e4m3) against bf16 SDPA" if fp8 else "bf16"), flush=True)
    header = (f"{'d':>4} {'B':>3} {'H':>3} {'S':>6} {'causal':>6} {'tawa':>7} {'cuDNN':>7} {'FA2':>7} "
              f"{'tawa/cuDNN':>10} {'tawa/FA2':>9} {'rel err':>8} {'model us':>9} {'meas/model':>10}")
    print(header + "   (TFLOP/s)")
    rows: list[dict[str, Any]] = []
    problems = (random_problems(args.random, args.seed) if args.random is not None
                else fixed_problems([128] if fp8 else sorted(args.head_dim or HEAD_DIMS)))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for head_dim, B, H, S, causal in problems:
        # The kernel tawa.torch runs for this problem (of several, the one expected to finish first).
        variant = None if fp8 else attention_variant(head_dim, causal, S, B * H, sms)
        kernel_name = FP8_KERNELS[causal] if variant is None else variant.kernel
        options = {} if variant is None else dict(variant.options)
        source = (examples / FILES[kernel_name]).read_text()
        kernel = tawa.compile(source, kernel_name, **{**options, "stages": args.stages})
        block_rows = query_rows(source, kernel_name)
        q, k, v = (torch.randn(B, H, S, head_dim, device="cuda").to(torch.bfloat16) for _ in range(3))
        o = torch.full_like(q, float("nan"))
        scale = 1 / math.sqrt(head_dim)
        operands, grid = launch_args(4, q, k, v, o, scale, block_rows)
        if fp8:  # e4m3 copies, V transposed (untimed); unit scales; [B·H, S, D]
            q8, k8, v8 = (t.to(torch.float8_e4m3fn) for t in (q, k, v))
            vt8 = v8.view(B * H, S, head_dim).transpose(1, 2).contiguous()
            flat = [t.view(B * H, S, head_dim) for t in (q8, k8)]
            operands = [*flat, vt8, o.view(B * H, S, head_dim), S, scale, 1.0]
            grid = (math.ceil(S / block_rows), B * H)

        def run_tawa(operands=operands, grid=grid):
            kernel(*operands, grid=grid)

        run_tawa()
        inputs = (q8, k8, v8) if fp8 else (q, k, v)
        ref = F.scaled_dot_product_attention(*(t.float() for t in inputs), is_causal=causal)
        err = ((o.float() - ref).norm() / ref.norm()).item()
        del ref
        if not err < (FP8_TOLERANCE if fp8 else 1e-2):
            print(f"d={head_dim} B={B} S={S} causal={causal}: WRONG (rel err {err:.2e})")
            return 1

        fns = {"tawa": run_tawa, "cuDNN": sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal),
               "FA2": sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal)}
        times = interleaved(fns, args.rounds)
        tf = tflops(times, B, S, head_dim, causal, H)
        model_us = math.nan if variant is None else estimate(variant, head_dim, S, B * H, causal, sms=sms) * 1e6
        measured_us = statistics.median(times["tawa"]) * 1e3
        rows.append({"d": head_dim, "B": B, "H": H, "S": S, "causal": causal,
                     "kernel": kernel_name if variant is None else variant.label,
                     "tflops": tf, "rel_err": err, "ms_per_round": times, "model_us": model_us})
        print(
            f"{head_dim:>4} {B:>3} {H:>3} {S:>6} {str(causal):>6} {tf['tawa']:>7.1f} {tf['cuDNN']:>7.1f} "
            f"{tf['FA2']:>7.1f} {tf['tawa'] / tf['cuDNN']:>10.3f} {tf['tawa'] / tf['FA2']:>9.3f} {err:>8.2e} "
            f"{model_us:>9.1f} {measured_us / model_us:>10.2f}",
            flush=True,
        )
    print(summary(rows))
    if args.json:
        args.json.write_text(json.dumps({**meta, "results": rows, "plot": plot_spec(rows, meta)}, indent=2) + "\n")
    if args.plot:
        from tawa.bench.plot import save

        if not save(plot_spec(rows, meta), args.plot, "tawa.bench attention"):
            return 1
    return 0
