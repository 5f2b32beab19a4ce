"""`python -m tawa.bench gemm-variants`: tawa's GEMM pipeline variants against
each other and cuBLAS, in one run, interleaved (3 rounds, medians).

Each variant is first checked against a float32 reference (rel err < 1e-2) on
fresh random data with NaN-poisoned outputs.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

VARIANTS = {
    "one tile per CTA": {"stages": 4, "persistent": False, "group_m": 0},
    "+ grouped order": {"stages": 4, "persistent": False},
    "persistent (default)": {"stages": 4},
    "persistent, 3 stages": {"stages": 3},
}
SHAPES = [(8192, 8192, 1024), (8192, 8192, 4096), (8192, 8192, 8192), (4096, 4096, 4096)]


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m tawa.bench gemm-variants", description=__doc__).parse_args(argv)
    import torch
    from triton.testing import do_bench

    import tawa

    src = (Path(__file__).resolve().parents[2] / "examples" / "gemm.mlir").read_text()
    kernels = {name: tawa.compile(src, "gemm", **opts) for name, opts in VARIANTS.items()}
    print(torch.cuda.get_device_name(), flush=True)
    for M, N, K in SHAPES:
        A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        B = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        ref = A.float() @ B.float().T
        grid = ((M + 127) // 128, (N + 255) // 256)
        times: dict[str, list[float]] = {name: [] for name in [*kernels, "cuBLAS"]}
        for name, k in kernels.items():
            C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            k(A, B, C, M, N, K, grid=grid)
            err = ((C.float() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                print(f"{name} {M}x{N}x{K}: WRONG (rel err {err:.2e})")
                return 1
        for _ in range(3):
            for name, k in kernels.items():
                times[name].append(do_bench(lambda: k(A, B, C, M, N, K, grid=grid), warmup=25, rep=150, return_mode="median"))
            times["cuBLAS"].append(do_bench(lambda: torch.matmul(A, B.T), warmup=25, rep=150, return_mode="median"))
        flop = 2 * M * N * K / 1e9
        med = {n: sorted(v)[len(v) // 2] for n, v in times.items()}
        cells = "  ".join(f"{n}: {flop / t:.0f} ({med['cuBLAS'] / t:.3f})" for n, t in med.items())
        print(f"{M}x{N}x{K}  {cells}", flush=True)
    return 0
