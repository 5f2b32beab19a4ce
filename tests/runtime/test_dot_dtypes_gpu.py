"""Every operand/output type combination of tile.dot on a Hopper GPU:
`tests/transforms/dot_dtype_cases.py` (fp8 e5m2, mixed e4m3 × e5m2, tf32,
f32 outputs of bf16/f16/fp8/tf32 products) and examples/gemm_tf32.mlir.

Fresh random inputs (the seed is printed on failure), outputs poisoned with
NaN, a float64 reference on the operands as the tensor core reads them (f32
truncated to tf32), relative Frobenius error bounds:

- bf16 C: ≤ 1e-2 (its rounding alone is about 2e-3);
- f32 C of 16-bit or tf32 operands: ≤ 1e-4 (f32 accumulation; a tf32 product
  rounded instead of truncated would be off by about 5e-4, so this also checks
  the interpreter's tf32 model);
- f32 C of fp8 operands: ≤ 1e-2 (Hopper's tensor cores accumulate fp8
  products with fewer bits than f32).

Shapes are ragged in M, N and K (K a multiple of 16 bytes, as TMA needs),
with K-step counts of 1, D + 1 and more.

Run: `pytest -m gpu tests/runtime/test_dot_dtypes_gpu.py`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import tawa
from tawa.runtime import reinterpret

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("dot_dtype_cases", ROOT / "tests" / "transforms" / "dot_dtype_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

STAGES = 4
TF32_MASK = -(1 << 13)  # as int32: the 13 low mantissa bits cleared


def torch_dtype(t: str):
    import torch

    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
            "f8E4M3FN": torch.float8_e4m3fn, "f8E5M2": torch.float8_e5m2}[t]


def as_read(x):
    """x in float64 as the tensor core reads it (f32: tf32, truncated)."""
    import torch

    if x.dtype == torch.float32:
        x = (x.view(torch.int32) & TF32_MASK).view(torch.float32)
    return x.double()


def tolerance(a: str, c: str) -> float:
    if c != "f32":
        return 1e-2
    return 1e-2 if cases.BYTES[a] == 1 else 1e-4


def shapes(a: str) -> list[tuple[int, int, int]]:
    bk = cases.block_k(a)
    return [
        (200, 136, bk // 2 + 16),  # smaller than a tile; one short K step
        (130, 264, (STAGES + 1) * bk - 16),  # the ring wraps; ragged last step
        (1024, 768, 8 * bk),  # whole tiles
    ]


def run(kernel, a: str, b: str, c: str, M: int, N: int, K: int, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch_dtype(a))
    B = torch.randn(N, K, device="cuda", generator=g).to(torch_dtype(b))
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch_dtype(c))
    kernel(A, B, C, M, N, K, grid=cases.grid(M, N))
    torch.cuda.synchronize()
    nans = int(torch.isnan(C.float()).sum())
    assert nans == 0, f"{nans} of {M * N} elements of C were not written ({M}x{N}x{K})"
    ref = as_read(A) @ as_read(B).T
    err = ((C.double() - ref).norm() / ref.norm()).item()
    return A, B, C, err


@pytest.mark.parametrize("combo", cases.COMBOS, ids=cases.combo_id)
def test_dtype_combination(cuda, seed, combo):
    a, b, c = combo
    kernel = tawa.compile(cases.gemm_text(a, b, c), "gemm", stages=STAGES)
    for n, (M, N, K) in enumerate(shapes(a)):
        *_, err = run(kernel, a, b, c, M, N, K, seed + n)
        tol = tolerance(a, c)
        assert err <= tol, f"{cases.combo_id(combo)} {M}x{N}x{K}: relative error {err:.3g} > {tol}"


@pytest.mark.parametrize("M, N, K", [(200, 136, 52), (130, 264, 5 * 32 - 4), (1024, 768, 1024)])
def test_gemm_tf32_example(cuda, seed, M, N, K):
    kernel = tawa.compile((ROOT / "examples" / "gemm_tf32.mlir").read_text(), "gemm_tf32")
    A, B, C, err = run(kernel, "f32", "f32", "f32", M, N, K, seed)
    assert err <= 1e-4, (
        f"relative error {err:.3g} against tf32-truncated operands: does the GPU round f32 to tf32 "
        "instead of truncating, as tawa.interpreters.dtypes.mma_operand assumes?"
    )
    if M * N <= 200 * 136:
        # The CPU interpreter computes the same (up to the summation order).
        out = np.full((M, N), np.nan, dtype=np.float32)
        tawa.interpret((ROOT / "examples" / "gemm_tf32.mlir").read_text(), "gemm_tf32", cases.grid(M, N),
                       A.cpu().numpy(), B.cpu().numpy(), out, M, N, K)
        got = C.cpu().numpy().astype(np.float64)
        diff = np.linalg.norm(got - out) / np.linalg.norm(out)
        assert diff <= 1e-5, f"GPU and CPU interpreter differ by {diff:.3g}"


def test_cupy_arrays_f32_and_fp8_bits(cuda, seed):
    """CuPy: f32 natively; fp8 (CuPy has no fp8 dtype) through reinterpret() of uint8 bits."""
    import cupy
    import torch

    M, N, K = 260, 300, 256
    kernel = tawa.compile(cases.gemm_text("f8E4M3FN", "f8E5M2", "f32"), "gemm", stages=STAGES)
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    B = torch.randn(N, K, device="cuda", generator=g).to(torch.float8_e5m2)
    a, b = (cupy.asarray(t.view(torch.uint8)) for t in (A, B))
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
    kernel(reinterpret(a, "f8E4M3FN"), reinterpret(b, "f8E5M2"), c, M, N, K, grid=cases.grid(M, N))
    cupy.cuda.runtime.deviceSynchronize()
    C = torch.as_tensor(c, device="cuda")
    ref = A.double() @ B.double().T
    assert not bool(torch.isnan(C).any())
    assert ((C.double() - ref).norm() / ref.norm()).item() <= 1e-2
