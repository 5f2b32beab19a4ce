"""Argument checks and operand layouts of `tawa.torch.matmul_fp8` (pure
Python: no torch, no GPU, so the CPU tests exercise all of it).

The operator computes what `torch._scaled_mm` computes: C = (a · b) scaled,
C[i, j] = scale_a[i] · scale_b[j] · Σₖ a[i, k] · b[k, j], for fp8 a [M, K]
and b [K, N] (e4m3 or e5m2), f32 accumulation, C of `out_dtype`.  A scale is
per tensor (one f32 element: shape [], [1] or [1, 1]) or per row of its
operand (scale_a [M] or [M, 1]: one per row of C; scale_b [N] or [1, N]:
one per column of C).  Tensors are `tawa.torch.checks.TensorInfo`s; each
check raises a one-line `TypeError` (a dtype) or `ValueError` (a device,
rank, shape, K that TMA cannot read) naming the operator.  Layouts never
raise: wgmma reads fp8 operands K-major only, so b is read in place where
it is the transpose of a row-major [N, K] (`torch._scaled_mm`'s
column-major b, `w.t()` of an [N, K] weight) and copied to that otherwise;
a is read in place where row-major.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

from tawa.runtime.launch import TMA_ALIGN
from tawa.torch import checks
from tawa.torch.checks import TensorInfo
from tawa.torch.linear_checks import tma_rows, transposed

FP8_OPERANDS = {"float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2"}
"""a's and b's torch dtypes → the IR element types wgmma reads."""
OUT_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}
"""C's torch dtypes → IR element types."""
SCALE_DTYPE = "float32"


@dataclass(frozen=True)
class Fp8Problem:
    M: Any
    N: Any
    K: Any
    types: tuple[str, str, str]
    """IR element types of A, B and C."""
    scale_a: str
    """"tensor" or "row" (`tawa.kernels.gemm.SCALES`)."""
    scale_b: str
    out_dtype: str

    @property
    def out_shape(self) -> tuple[Any, Any]:
        return (self.M, self.N)


def _shape(t: TensorInfo) -> str:
    return f"[{', '.join(str(d) for d in t.shape)}]"


def _scale_kind(name: str, s: TensorInfo, rows: Any, per_row: tuple[tuple[Any, ...], ...], what: str) -> str:
    """"tensor" or "row" for a scale of `rows` values per row (shapes `per_row`)."""
    if s.dtype != SCALE_DTYPE:
        raise TypeError(f"tawa.torch.matmul_fp8: {name} is {s.dtype}; scales are float32")
    if len(s.shape) <= 2 and prod(s.shape) == 1 and (rows != 1 or tuple(s.shape) not in per_row):
        return "tensor"
    if tuple(s.shape) in per_row:
        return "row"
    shapes = " or ".join(f"[{', '.join(map(str, p))}]" for p in per_row)
    raise ValueError(f"tawa.torch.matmul_fp8: {name} must hold one element (per tensor) or be {shapes} "
                     f"(one per {what}), got shape {_shape(s)}")


def check_matmul_fp8(a: TensorInfo, b: TensorInfo, scale_a: TensorInfo, scale_b: TensorInfo, out_dtype: str,
                     fake: bool = False) -> Fp8Problem:
    """a [M, K] · b [K, N] in fp8 with scales (module docstring) into `out_dtype` (a torch dtype name)."""
    for name, t in (("a", a), ("b", b)):
        if t.dtype not in FP8_OPERANDS:
            raise TypeError(f"tawa.torch.matmul_fp8: {name} is {t.dtype}; supported: {', '.join(FP8_OPERANDS)}")
    if out_dtype not in OUT_DTYPES:
        raise TypeError(f"tawa.torch.matmul_fp8: out_dtype {out_dtype}; supported: {', '.join(OUT_DTYPES)}")
    checks.check_devices("matmul_fp8", [("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b)], fake)
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ValueError(f"tawa.torch.matmul_fp8: a and b must be 2-d ([M, K] and [K, N]), got {_shape(a)} and {_shape(b)}")
    (M, K), (Kb, N) = a.shape, b.shape
    if Kb != K:
        raise ValueError(f"tawa.torch.matmul_fp8: a {_shape(a)} has K = {K} but b {_shape(b)}, read as [K, N], has K = {Kb}")
    if K % TMA_ALIGN != 0:
        raise ValueError(f"tawa.torch.matmul_fp8: K = {K} is not a multiple of {TMA_ALIGN}: the kernels read rows of K "
                         f"one-byte elements through TMA, which needs {TMA_ALIGN}-byte rows (pad K with zeros)")
    kind_a = _scale_kind("scale_a", scale_a, M, ((M,), (M, 1)), f"row of a (M = {M})")
    kind_b = _scale_kind("scale_b", scale_b, N, ((N,), (1, N)), f"column of b (N = {N})")
    return Fp8Problem(M, N, K, (FP8_OPERANDS[a.dtype], FP8_OPERANDS[b.dtype], OUT_DTYPES[out_dtype]),
                      kind_a, kind_b, out_dtype)


def a_in_place(a: TensorInfo) -> bool:
    """Whether a tensor map reads a [M, K] as it is (row-major rows, 16-byte aligned)."""
    return tma_rows(a)


def b_in_place(b: TensorInfo) -> bool:
    """Whether a tensor map reads b [K, N] as the K-major bᵀ [N, K] that
    wgmma takes for fp8 (b is the transpose of a row-major [N, K]); else
    the operator copies bᵀ into a dense [N, K]."""
    return tma_rows(transposed(b))


def scale_in_place(s: TensorInfo) -> bool:
    """Whether the kernel's threads read a scale as it is: its values one
    element apart (a [M, 1] or [1, N] view of a vector is); else copied."""
    assert s.strides is not None, "a real tensor"
    return all(st == 1 for d, st in zip(s.shape, s.strides) if d > 1)
