"""`python -m tawa.bench attention-ab`: two compilations of one attention
kernel against each other and cuDNN, in the same run, interleaved — the A/B
behind a compiler decision (docs/perf.md).

    python -m tawa.bench attention-ab --head-dim 256 --old epilogue=threads
    python -m tawa.bench attention-ab --head-dim 128 --new stages=3
    python -m tawa.bench attention-ab --head-dim 256 --new-source my_d256.mlir --new overlap=all
    python -m tawa.bench attention-ab --head-dim 256 --new-source examples/attention_fwd_d256_n80.mlir \
        --new-kernel attention_fwd_d256_n80

"new" and "old" are the example of the head dim (`tawa.bench.attention.HEAD_DIMS`)
or `--new-source` / `--old-source`, compiled with `tawa-hopper-pipeline`
options `--new` / `--old` KEY=VALUE (ints, true/false, else strings), both
kernels (`@<name>` and `@<name>_causal`, name the example's or
`--new-kernel` / `--old-kernel`; a kernel written for [B·H, S, D], an
older revision of an example, is launched on flat views).  Each is checked against a float32
reference first (outputs poisoned with NaN), also on ragged lengths (S = 65,
200) that are not timed; then `tawa.bench.attention`'s rows are timed R
rounds (medians, `triton.testing.do_bench`) and the ratios printed with their
geomean.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tawa.bench.attention import (
    HEAD_DIMS,
    HEADS,
    SHAPES,
    geomean,
    interleaved,
    launch_args,
    operand_rank,
    query_rows,
    sdpa,
    tflops,
)

RAGGED = [(2, 65), (1, 200)]
"""(batch, seq_len) checked for correctness only."""


def parse_options(pairs: Sequence[str]) -> dict[str, Any]:
    """`KEY=VALUE` strings as `tawa.compile` options: ints, comma-separated
    ints as tuples (`ring_depths=3,2`), booleans (true/false), else strings.
    Raises ValueError on a pair without `=`."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"expected KEY=VALUE, got {pair!r}")
        if value.lstrip("-").isdigit():
            options[key] = int(value)
        elif "," in value and all(v.strip().lstrip("-").isdigit() for v in value.split(",")):
            options[key] = tuple(int(v) for v in value.split(","))
        elif value in ("true", "false"):
            options[key] = value == "true"
        else:
            options[key] = value
    return options


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench attention-ab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--head-dim", type=int, required=True, choices=sorted(HEAD_DIMS))
    for side in ("new", "old"):
        parser.add_argument(f"--{side}-source", type=Path, default=None,
                            help=f"the tile program of {side} (default: the head dim's example)")
        parser.add_argument(f"--{side}-kernel", default=None, metavar="NAME",
                            help=f"the kernels of {side}: @NAME and @NAME_causal (default: the example's)")
        parser.add_argument(f"--{side}", nargs="*", default=[], metavar="KEY=VALUE",
                            help=f"tawa-hopper-pipeline options of {side}")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    try:
        options = {"new": parse_options(args.new), "old": parse_options(args.old)}
    except ValueError as err:
        parser.error(str(err))
    example, name = HEAD_DIMS[args.head_dim]
    examples = Path(__file__).resolve().parents[2] / "examples"
    sources = {side: getattr(args, f"{side}_source") or examples / example for side in ("new", "old")}
    names = {side: getattr(args, f"{side}_kernel") or name for side in ("new", "old")}
    for side, path in sources.items():
        if not path.is_file():
            parser.error(f"--{side}-source {path}: no such file")
        text = path.read_text()
        for kernel in (names[side], f"{names[side]}_causal"):
            if f"func.func @{kernel}(" not in text:
                parser.error(f"{path}: no kernel @{kernel} (--{side}-kernel names @NAME and @NAME_causal)")
    return run(args.head_dim, names, sources, options, args.rounds, args.json)


def run(d: int, names: dict[str, str], sources: dict[str, Path], options: dict[str, dict[str, Any]], rounds: int,
        json_path: Path | None) -> int:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend

    import tawa

    meta = {"workload": f"attention-ab d{d}", "gpu": torch.cuda.get_device_name(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "rounds": rounds, "new": [str(sources["new"]), names["new"], options["new"]],
            "old": [str(sources["old"]), names["old"], options["old"]]}
    print(f"attention-ab d={d} on {meta['gpu']}, {meta['date']}, {rounds} rounds; new: {sources['new'].name} "
          f"@{names['new']} {options['new']}; old: {sources['old'].name} @{names['old']} {options['old']}", flush=True)
    print(f"{'B':>3} {'S':>6} {'causal':>6} {'new':>7} {'old':>7} {'cuDNN':>7} {'new/old':>8} {'new/cuDNN':>9} "
          f"{'old/cuDNN':>9}   (TFLOP/s)")
    rows: list[dict[str, Any]] = []
    for causal in (False, True):
        kernel = {side: f"{names[side]}_causal" if causal else names[side] for side in ("new", "old")}
        kernels = {side: tawa.compile(sources[side].read_text(), kernel[side], **options[side]) for side in ("new", "old")}
        block_rows = {side: query_rows(sources[side].read_text(), kernel[side]) for side in ("new", "old")}
        ranks = {side: operand_rank(sources[side].read_text(), kernel[side]) for side in ("new", "old")}
        for B, S in SHAPES + RAGGED:
            q, k, v = (torch.randn(B, HEADS, S, d, device="cuda").to(torch.bfloat16) for _ in range(3))
            scale = 1 / math.sqrt(d)
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
            fns = {}
            for side, compiled in kernels.items():
                o = torch.full_like(q, float("nan"))
                operands, grid = launch_args(ranks[side], q, k, v, o, scale, block_rows[side])
                compiled(*operands, grid=grid)
                err = ((o.float() - ref).norm() / ref.norm()).item()
                if not err < 1e-2:
                    print(f"{side}: B={B} S={S} causal={causal}: WRONG (rel err {err:.2e})")
                    return 1
                fns[side] = lambda c=compiled, operands=operands, grid=grid: c(*operands, grid=grid)
            if (B, S) in RAGGED:
                continue
            fns["cuDNN"] = sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)
            times = interleaved(fns, rounds)
            tf = tflops(times, B, S, d, causal)
            rows.append({"B": B, "S": S, "causal": causal, "tflops": tf, "ms_per_round": times})
            print(f"{B:>3} {S:>6} {str(causal):>6} {tf['new']:>7.1f} {tf['old']:>7.1f} {tf['cuDNN']:>7.1f} "
                  f"{tf['new'] / tf['old']:>8.3f} {tf['new'] / tf['cuDNN']:>9.3f} {tf['old'] / tf['cuDNN']:>9.3f}",
                  flush=True)
    ratio = [r["tflops"]["new"] / r["tflops"]["old"] for r in rows]
    print(f"new/old: geomean {geomean(ratio):.3f}, min {min(ratio):.3f}, max {max(ratio):.3f}; new/cuDNN "
          f"{geomean([r['tflops']['new'] / r['tflops']['cuDNN'] for r in rows]):.3f}; old/cuDNN "
          f"{geomean([r['tflops']['old'] / r['tflops']['cuDNN'] for r in rows]):.3f}")
    if json_path:
        json_path.write_text(json.dumps({**meta, "results": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
