"""`python -m tawa.bench attention-variants`: every attention kernel the
operators could run on a problem, timed against each other and cuDNN in the
same run, interleaved (R rounds, medians): the measurements the attention
cost model is fitted to (`python -m tawa.bench.fit_attention_cost`).

The problems are the attention table's (`--fixed`, the default) and/or
`--random N` draws per `--seed` (`tawa.bench.attention.random_problems`).
For each, every variant of `tawa.analysis.attention_cost.VARIANTS` for its
head dim and causality is compiled with its options, checked against
torch's SDPA on the problem's random bf16 inputs (output poisoned with
NaN), and timed.  `--json` writes the rows (`ms`: label → median
milliseconds) in the form the fit reads from docs/perf/attention-variants-*.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TOLERANCE = 2e-2
"""Relative error against SDPA in float32 a variant must reach before it is timed."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench attention-variants", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--random", type=int, default=0, metavar="N", help="N random problems per seed")
    parser.add_argument("--seed", type=int, action="append", help="seed of --random (repeatable; default 0)")
    parser.add_argument("--no-fixed", action="store_true", help="leave out the attention table's problems")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if args.random < 0 or args.rounds < 1 or (args.no_fixed and not args.random):
        print("tawa.bench attention-variants: error: nothing to time (--random N >= 1, or the fixed problems)",
              file=sys.stderr)
        return 1
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend

    import tawa
    from tawa.analysis.attention_cost import VARIANTS
    from tawa.bench.attention import fixed_problems, interleaved, launch_args, random_problems, sdpa
    from tawa.torch.kernels import source

    problems = [] if args.no_fixed else fixed_problems([64, 128, 256])
    for seed in args.seed or [0]:
        problems += random_problems(args.random, seed) if args.random else []
    compiled: dict[str, Any] = {}
    rows = []
    print(f"attention variants on {torch.cuda.get_device_name()}: {len(problems)} problems", flush=True)
    for d, B, H, S, causal in problems:
        q, k, v = (torch.randn(B, H, S, d, device="cuda").to(torch.bfloat16) for _ in range(3))
        ref = F.scaled_dot_product_attention(*(t.float() for t in (q, k, v)), is_causal=causal)
        fns = {}
        for variant in VARIANTS[(d, causal)]:
            if variant.label not in compiled:
                compiled[variant.label] = tawa.compile(source(variant.kernel), variant.kernel, **dict(variant.options))
            o = torch.full_like(q, float("nan"))
            operands, grid = launch_args(4, q, k, v, o, 1 / math.sqrt(d), variant.rows)
            compiled[variant.label](*operands, grid=grid)
            err = ((o.float() - ref).norm() / ref.norm()).item()
            if not err < TOLERANCE:
                print(f"{variant.label} d={d} B={B} H={H} S={S} causal={causal}: WRONG (rel err {err:.2e})")
                return 1
            fns[variant.label] = (lambda kern=compiled[variant.label], a=operands, g=grid: kern(*a, grid=g))
        del ref
        fns["cuDNN"] = sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)
        ms = {label: statistics.median(ts) for label, ts in interleaved(fns, args.rounds).items()}
        rows.append({"d": d, "B": B, "H": H, "S": S, "causal": causal, "ms": ms})
        print(f"d={d} B={B} H={H} S={S} causal={causal}: "
              + ", ".join(f"{label} {t:.4f}" for label, t in ms.items()), flush=True)
        del q, k, v
        torch.cuda.empty_cache()
    if args.json:
        meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "tawa": tawa.__version__,
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "rounds": args.rounds, "seeds": args.seed or [0], "random": args.random}
        args.json.write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
