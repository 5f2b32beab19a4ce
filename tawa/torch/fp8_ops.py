"""The `torch.library` operator `tawa::matmul_fp8` (imported by `tawa.torch`
when torch ≥ 2.5 is there; it imports torch), registered by
`tawa.torch.library.define`: C = scale_a · scale_b · (a · b) for fp8 a [M, K]
and b [K, N], what `torch._scaled_mm` computes (`tawa.torch.fp8_checks`).

One generated GEMM kernel (`tawa.torch.linear_kernels.fp8_kernel`) whose
consumer warp groups multiply the f32 accumulator by the scales before the
store: per tensor, one f32 the kernel reads itself (the scale stays on the
device: no host read, so CUDA graphs capture the call), or per row of a
(per column of C, for b).  Nothing else is launched but copies of operands
the kernel cannot read in place (bᵀ where b is not the transpose of a
row-major [N, K]; a where not row-major; a scale whose values are not one
element apart).  What a call decides from its arguments' layout is kept
per layout, and from the second call on the kernel is launched through a
launch template with the new addresses (`tawa.torch.calls.launch`).  No
backward pass.

This module has no `from __future__ import annotations`: torch infers the
operator's schema from the annotations, as objects.
"""

from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from tawa.torch import fp8_checks, library, linear_kernels
from tawa.torch.calls import call_cache, dense_copy, launch, layout_key, remember, sm_count
from tawa.torch.checks import describe


@dataclass(eq=False)
class Fp8Call:
    """Everything a `matmul_fp8` call on operands of one layout decides."""

    p: fp8_checks.Fp8Problem
    copies: tuple
    """a, bᵀ, scale_a, scale_b: whether each is copied before the launch."""
    kernel: Any
    """A `tawa.Kernel`; None where nothing is launched (an empty output, K = 0)."""
    grid: Any
    bound: Any = field(default=None)
    """The kernel's launch template (`BoundLaunch`), made at the first launch."""
    launches: int = 0

    def operands(self, a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor) -> list:
        """The kernel's array operands before C: a [M, K], bᵀ [N, K], the
        scales as vectors; copies where decided."""
        given = (a, b.t(), scale_a.reshape(-1), scale_b.reshape(-1))
        return [dense_copy(t) if copy else t for t, copy in zip(given, self.copies, strict=True)]


_CALLS: dict = call_cache()
_TORCH_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def _out_dtype(out_dtype: Optional[torch.dtype]) -> str:
    return "bfloat16" if out_dtype is None else str(out_dtype).removeprefix("torch.")


def _call(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, out: str) -> Fp8Call:
    p = fp8_checks.check_matmul_fp8(describe(a), describe(b), describe(scale_a), describe(scale_b), out)
    copies = (not fp8_checks.a_in_place(describe(a)), not fp8_checks.b_in_place(describe(b)),
              not fp8_checks.scale_in_place(describe(scale_a)), not fp8_checks.scale_in_place(describe(scale_b)))
    kernel = grid = None
    if p.M * p.N and p.K:
        kernel, grid = linear_kernels.fp8_kernel(p.types, p.M, p.N, p.K, p.scale_a, p.scale_b, sm_count(a.device))
    return Fp8Call(p, copies, kernel, grid)


def matmul_fp8_impl(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                    out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    """The operator's implementation (`tawa::matmul_fp8`)."""
    out = _out_dtype(out_dtype)
    key = (layout_key(a, b, scale_a, scale_b), out)
    call = _CALLS.get(key)
    if call is None:
        call = _call(a, b, scale_a, scale_b, out)
        remember(_CALLS, key, call)
    p = call.p
    # The output first: nothing else is allocated before it (the GPU tests
    # poison the block the caching allocator hands out next).
    c = torch.empty((p.M, p.N), dtype=_TORCH_DTYPES[p.out_dtype], device=a.device)
    if call.kernel is None:
        # An empty output, or K = 0: a launch would need scratch tensor maps (a
        # device allocation, which CUDA graph capture forbids); C = 0 is the answer.
        return c if c.numel() == 0 else c.zero_()
    bound = call.bound
    if bound is not None and not any(call.copies):
        if bound.launch((a.data_ptr(), b.data_ptr(), scale_a.data_ptr(), scale_b.data_ptr(), c.data_ptr())):
            return c
    launch(call, (*call.operands(a, b, scale_a, scale_b), c, p.M, p.N, p.K), 5)
    return c


def _matmul_fp8_op(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                   out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    """scale_a · scale_b · (a [M, K] · b [K, N]) in fp8, f32 accumulation → [M, N] of out_dtype (bf16)."""
    return matmul_fp8_impl(a, b, scale_a, scale_b, out_dtype)


def _matmul_fp8_fake(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                     out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    out = _out_dtype(out_dtype)
    p = fp8_checks.check_matmul_fp8(*(describe(t, fake=True) for t in (a, b, scale_a, scale_b)), out, fake=True)
    return a.new_empty(p.out_shape, dtype=_TORCH_DTYPES[out])


matmul_fp8 = library.define("matmul_fp8", _matmul_fp8_op, _matmul_fp8_fake)
"""The operator's overload, what `tawa.torch.matmul_fp8` calls (torch.compile traces it as one call)."""
