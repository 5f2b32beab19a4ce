"""A generated GEMM choice run on the GPU against a float32 reference, with
C poisoned with NaN and a sentinel after it (the GPU tests of clustered and
teamed configurations share it)."""

from __future__ import annotations

from typing import Any

from tawa.runtime.autotune import Choice

TORCH_TYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f8E4M3FN": "float8_e4m3fn"}


def run_poisoned(torch: Any, choice: Choice, M: int, N: int, K: int, seed: int, batch: int = 3):
    """Runs `choice` on fresh inputs of `seed` (A as M×K, or K×M for the
    `km` layout; B as N×K, or K×N for the `kn` layout; `batch` batches for a
    batched configuration) and checks that
    every element of C is written, nothing past it, and C is A·B within the
    output type's tolerance (0 for K = 0).  Returns (A, B, C)."""
    config = choice.config
    t = {k: getattr(torch, v) for k, v in TORCH_TYPES.items()}
    g = torch.Generator(device="cuda").manual_seed(seed)
    lead = (batch,) if config.batched else ()
    a_shape = (K, M) if config.a_layout == "km" else (M, K)
    A = torch.randn(*lead, *a_shape, device="cuda", generator=g).to(t[config.a_dtype])
    b_shape = (K, N) if config.b_layout == "kn" else (N, K)
    B = torch.randn(*lead, *b_shape, device="cuda", generator=g).to(t[config.b_dtype])
    size = (batch if config.batched else 1) * M * N
    guard = 64
    storage = torch.full((size + guard,), float("nan"), dtype=t[config.c_dtype], device="cuda")
    storage[size:] = 7.0
    C = storage[:size].view(*lead, M, N)
    kernel = choice.compile()
    if config.split_k > 1:
        kernel.workspace(C, M, N, None).fill_(float("nan"))
    kernel(A, B, C, M, N, K, grid=choice.grid(M, N, batch if config.batched else None))
    torch.cuda.synchronize()
    what = f"{choice.id} {M}x{N}x{K}"
    nans = int(torch.isnan(C.float()).sum())
    assert nans == 0, f"{nans} of {size} elements of C not written ({what})"
    assert bool((storage[size:] == 7.0).all()), f"written past the end of C ({what})"
    if K == 0:
        assert not bool(C.float().any()), f"K = 0 must give C = 0 ({what})"
        return A, B, C
    bt = B.float() if config.b_layout == "kn" else B.float().transpose(-1, -2)
    ref = (A.float().transpose(-1, -2) if config.a_layout == "km" else A.float()) @ bt
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert err <= (1e-4 if config.c_dtype == "f32" else 1e-2), f"relative error {err:.3g} ({what})"
    return A, B, C
