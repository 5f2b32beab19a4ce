"""`python -m tawa.bench gemm-fp8`: tawa's fp8 (e4m3) GEMM, bf16 out, against
cuBLAS through `torch._scaled_mm` (unit scales), timed in the same run,
interleaved (3 rounds, medians), each result first checked against a float32
reference.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

SHAPES = [(8192, 8192, 8192), (8192, 8192, 4096), (4096, 4096, 4096)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.bench gemm-fp8", description=__doc__)
    parser.add_argument("--stages", type=int, default=4)
    args = parser.parse_args(argv)
    import torch
    from triton.testing import do_bench

    import tawa

    src = (Path(__file__).resolve().parents[2] / "examples" / "gemm_fp8.mlir").read_text()
    kernel = tawa.compile(src, "gemm_fp8", stages=args.stages)
    one = torch.ones((), device="cuda")
    print(f"tawa fp8 GEMM vs cuBLAS (torch._scaled_mm) on {torch.cuda.get_device_name()}", flush=True)
    print(f"{'M':>6} {'N':>6} {'K':>6} {'tawa TFLOP/s':>13} {'cuBLAS TFLOP/s':>15} {'tawa/cuBLAS':>12} {'rel err':>9}")
    for M, N, K in SHAPES:
        A = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
        B = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
        C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        grid = ((M + 127) // 128, (N + 255) // 256)
        kernel(A, B, C, M, N, K, grid=grid)
        ref = A.float() @ B.float().T
        err = ((C.float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            print(f"{M}x{N}x{K}: WRONG (rel err {err:.2e})")
            return 1

        def cublas():
            return torch._scaled_mm(A, B.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        t_tawa, t_cublas = [], []
        for _ in range(3):
            t_tawa.append(do_bench(lambda: kernel(A, B, C, M, N, K, grid=grid), warmup=25, rep=150, return_mode="median"))
            t_cublas.append(do_bench(cublas, warmup=25, rep=150, return_mode="median"))
        ta, tc = sorted(t_tawa)[1], sorted(t_cublas)[1]
        flop = 2 * M * N * K / 1e9
        print(f"{M:>6} {N:>6} {K:>6} {flop / ta:>13.1f} {flop / tc:>15.1f} {tc / ta:>12.3f} {err:>9.2e}", flush=True)
    return 0
