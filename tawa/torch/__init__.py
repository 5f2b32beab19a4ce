"""tawa's kernels as torch operators (docs/runtime.md, ## tawa.torch).

    import tawa.torch
    c = tawa.torch.matmul(a, b)                      # a [..., M, K] · b [K, N]
    c = tawa.torch.matmul(x, w, transpose_b=True)    # x · wᵀ, w [N, K] (nn.Linear)
    o = tawa.torch.attention(q, k, v, causal=True)   # q, k, v [B, H, S, D]

They are `torch.library` custom operators (`torch.ops.tawa.matmul`,
`torch.ops.tawa.attention`) with fake implementations, so they work inside
`torch.compile`d models (as opaque calls) and in CUDA graphs.  Forward only:
no backward is registered.

`import tawa` never imports torch; `import tawa.torch` does, and registers
the operators, when torch ≥ 2.4 is installed.  Without it the import still
succeeds (the argument checks in `tawa.torch.checks` need no torch) and the
operators raise ImportError saying why.
"""

from __future__ import annotations

from typing import Any

from tawa.torch import checks, kernels

MIN_TORCH = (2, 4)
"""torch.library.custom_op and register_fake arrived in torch 2.4."""


def _torch_problem() -> str | None:
    """Why the operators cannot be registered here, or None."""
    try:
        import torch
    except ImportError as err:
        return f"tawa.torch needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} (pip install torch): {err}"
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2] if p.isdigit())
    lib = torch.library
    if version < MIN_TORCH or not (hasattr(lib, "custom_op") and hasattr(lib, "register_fake")):
        return (
            f"tawa.torch needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} (torch.library.custom_op, "
            f"register_fake); found torch {torch.__version__}"
        )
    return None


UNAVAILABLE = _torch_problem()
"""Why the operators are unavailable, or None when they are registered."""

if UNAVAILABLE is None:
    from tawa.torch import ops as _ops  # registers tawa::matmul and tawa::attention


def _require() -> None:
    if UNAVAILABLE is not None:
        raise ImportError(UNAVAILABLE)


def matmul(a: Any, b: Any, *, transpose_b: bool = False) -> Any:
    """a [..., M, K] · b [K, N], or a · bᵀ for b [N, K] with `transpose_b`;
    bf16 or f16 (one dtype), f32 accumulation, a new [..., M, N] tensor of
    a's dtype.  K must be a multiple of 8 (16-byte rows for TMA); any
    layout of b is read (in place when row-major [K, N] or [N, K], else
    copied), and a is copied unless dense and 16-byte aligned."""
    _require()
    return _ops.matmul(a, b, transpose_b)


def attention(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> Any:
    """softmax(q·kᵀ·scale)·v, masked causally with `causal`, for bf16 q, k, v
    of one shape [B, H, S, D] with D in 64, 128, 256; `scale` defaults to
    1/√D (a given one must be positive).  A new dense [B, H, S, D] tensor;
    non-dense or misaligned inputs are copied first."""
    _require()
    return _ops.attention(q, k, v, causal, scale)


__all__ = ["UNAVAILABLE", "attention", "checks", "kernels", "matmul"]
