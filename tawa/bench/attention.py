"""`python -m tawa.bench attention`: tawa's warp-specialized FlashAttention
forward (examples/attention_fwd.mlir, head dim 128, and
examples/attention_fwd_d64.mlir and attention_fwd_d256.mlir, head dims 64
and 256; bf16) against torch's
scaled_dot_product_attention (cuDNN and FlashAttention-2 backends), timed in
the same run, interleaved (3 rounds, medians).  Each tawa result is first
checked against a float32 reference on fresh random data.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

SHAPES = [(16, 1024), (4, 4096)]  # (batch, seq_len) with 16 heads: 16k tokens
HEADS = 16
HEAD_DIMS = {
    128: ("attention_fwd.mlir", "attention_fwd"),
    64: ("attention_fwd_d64.mlir", "attention_fwd_d64"),
    256: ("attention_fwd_d256.mlir", "attention_fwd_d256"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench attention", description=__doc__)
    parser.add_argument("--stages", type=int, default=0, help="ring depth (0: the deepest that fits)")
    parser.add_argument("--head-dim", type=int, action="append", choices=sorted(HEAD_DIMS),
                        help="head dims to time (default: all)")
    args = parser.parse_args(argv)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    import tawa

    examples = Path(__file__).resolve().parents[2] / "examples"
    print(f"tawa attention vs torch SDPA on {torch.cuda.get_device_name()}, 16 heads, bf16", flush=True)
    header = (f"{'d':>4} {'B':>3} {'S':>6} {'causal':>6} {'tawa':>7} {'cuDNN':>7} {'FA2':>7} "
              f"{'tawa/cuDNN':>10} {'tawa/FA2':>9} {'rel err':>8}")
    print(header + "   (TFLOP/s)")
    runs = [(d, causal) for d in sorted(args.head_dim or HEAD_DIMS, reverse=True) for causal in (False, True)]
    for HEAD_DIM, causal in runs:
        file, name = HEAD_DIMS[HEAD_DIM]
        src = (examples / file).read_text()
        kernel = tawa.compile(src, f"{name}_causal" if causal else name, stages=args.stages)
        for B, S in SHAPES:
            q, k, v = (torch.randn(B, HEADS, S, HEAD_DIM, device="cuda").to(torch.bfloat16) for _ in range(3))
            o = torch.full_like(q, float("nan"))
            scale = 1 / math.sqrt(HEAD_DIM)
            grid = (math.ceil(S / 128), B * HEADS)
            flat = [t.view(B * HEADS, S, HEAD_DIM) for t in (q, k, v, o)]

            def run_tawa():
                kernel(*flat, S, scale, grid=grid)

            run_tawa()
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
            err = ((o.float() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                print(f"d={HEAD_DIM} B={B} S={S} causal={causal}: WRONG (rel err {err:.2e})")
                return 1

            def sdpa(backend):
                def f():
                    with sdpa_kernel(backend):
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                return f

            fns = {"tawa": run_tawa, "cuDNN": sdpa(SDPBackend.CUDNN_ATTENTION), "FA2": sdpa(SDPBackend.FLASH_ATTENTION)}
            times = {n: [] for n in fns}
            for _ in range(3):
                for n, f in fns.items():
                    try:
                        times[n].append(do_bench(f, warmup=25, rep=150, return_mode="median"))
                    except RuntimeError:
                        times[n].append(float("nan"))
            flop = 4 * B * HEADS * S * S * HEAD_DIM * (0.5 if causal else 1.0) / 1e9
            med = {n: sorted(t)[1] for n, t in times.items()}
            tf = {n: flop / t for n, t in med.items()}
            print(
                f"{HEAD_DIM:>4} {B:>3} {S:>6} {str(causal):>6} {tf['tawa']:>7.1f} {tf['cuDNN']:>7.1f} {tf['FA2']:>7.1f} "
                f"{tf['tawa'] / tf['cuDNN']:>10.3f} {tf['tawa'] / tf['FA2']:>9.3f} {err:>8.2e}",
                flush=True,
            )
    return 0
