"""Argument checks of `tawa.torch`'s normalization operators (pure Python: no
torch, no GPU, so the CPU tests exercise all of it).

`rms_norm(x, weight, eps)`, `layer_norm(x, weight, bias, eps)` and
`add_rms_norm(x, residual, weight, eps)` normalize over the last dimension
of x [..., N]: the kernels (examples/python/norms.py) see x as M rows of N,
M the product of its leading dimensions.  `rotary(x, cos, sin, heads)`
rotates heads of x [..., S, W] (row m at position m mod S).
`swiglu_grad(dy, g, u)` takes three tensors of one shape, elementwise.
Each check returns the problem's
sizes or raises a one-line error: `TypeError` for a dtype or an eps that is
not a number, `ValueError` for a device, rank, shape or eps the kernels
cannot take.  Layouts never raise: a tensor whose rows are not contiguous
and evenly spaced (a transposed view, a broadcast) is copied (`dense`, the
fused linear operators' test: the kernels take the row stride, so a column
slice is read in place).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from tawa.torch import checks
from tawa.torch.checks import TensorInfo
from tawa.torch.linear_checks import dense

__all__ = ["NORM_DTYPES", "NormProblem", "RotaryProblem", "check_elementwise", "check_eps", "check_norm",
           "check_rotary", "dense"]

NORM_DTYPES = ("bfloat16",)
"""The dtypes the norm kernels are written in (bf16 in and out, f32 math)."""


@dataclass(frozen=True)
class NormProblem:
    M: Any
    """Rows: the product of x's leading dimensions (1 for a 1-d x)."""
    N: Any
    """Elements of a row: x's last dimension."""
    shape: tuple[Any, ...]
    """x's shape: the output's."""


def _shape(t: TensorInfo) -> str:
    return f"[{', '.join(str(d) for d in t.shape)}]"


def check_eps(op: str, eps: Any) -> float:
    """eps as a float: a positive finite number."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"tawa.torch.{op}: eps must be a float, got {type(eps).__name__}")
    value = float(eps)
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"tawa.torch.{op}: eps must be positive and finite, got {value}")
    return value


def _check_dtypes_and_devices(op: str, named: Sequence[tuple[str, TensorInfo]], fake: bool) -> None:
    """The first tensor (x) of a dtype of `NORM_DTYPES`, the others of its dtype, all on one CUDA device."""
    name0, x = named[0]
    if x.dtype not in NORM_DTYPES:
        raise TypeError(f"tawa.torch.{op}: {name0} is {x.dtype}; supported: {', '.join(NORM_DTYPES)}")
    for name, t in named[1:]:
        if t.dtype != x.dtype:
            raise TypeError(f"tawa.torch.{op}: {name0} is {x.dtype} but {name} is {t.dtype}; all must have one dtype")
    checks.check_devices(op, named, fake)


def check_norm(op: str, x: TensorInfo, vectors: Sequence[tuple[str, TensorInfo | None]],
               residual: TensorInfo | None = None, fake: bool = False) -> NormProblem:
    """x [..., N] with each given vector [N] and `residual` of x's shape, all
    one dtype of `NORM_DTYPES` on one CUDA device (meta too when `fake`)."""
    named = [("x", x)] + [(n, t) for n, t in vectors if t is not None]
    if residual is not None:
        named.append(("residual", residual))
    _check_dtypes_and_devices(op, named, fake)
    if len(x.shape) < 1:
        raise ValueError(f"tawa.torch.{op}: x must be [..., N], got a 0-d tensor")
    N = x.shape[-1]
    for name, t in named[1:]:
        if t is residual:
            if tuple(t.shape) != tuple(x.shape):
                raise ValueError(f"tawa.torch.{op}: residual must have x's shape {_shape(x)}, got {_shape(t)}")
        elif tuple(t.shape) != (N,):
            raise ValueError(f"tawa.torch.{op}: {name} must be [N] = [{N}] (x's last dimension), got shape {_shape(t)}")
    return NormProblem(prod(x.shape[:-1]), N, tuple(x.shape))


def check_elementwise(op: str, named: Sequence[tuple[str, TensorInfo]], fake: bool = False) -> NormProblem:
    """Tensors of one shape [..., N] (at least 1-d), one dtype of
    `NORM_DTYPES`, on one CUDA device: M rows of N, as the norms see x."""
    _check_dtypes_and_devices(op, named, fake)
    name0, x = named[0]
    if len(x.shape) < 1:
        raise ValueError(f"tawa.torch.{op}: {name0} must be [..., N], got a 0-d tensor")
    for name, t in named[1:]:
        if tuple(t.shape) != tuple(x.shape):
            raise ValueError(f"tawa.torch.{op}: {name} must have {name0}'s shape {_shape(x)}, got {_shape(t)}")
    return NormProblem(prod(x.shape[:-1]), x.shape[-1], tuple(x.shape))


@dataclass(frozen=True)
class RotaryProblem:
    M: Any
    """Rows of x: the product of its leading dimensions."""
    S: Any
    """Positions: x's second-to-last dimension (row m is at position m mod S)."""
    W: Any
    """Elements of x's rows."""
    D: Any
    """Channels of a head: cos's last dimension."""
    heads: Any
    out_shape: tuple[Any, ...]


def check_rotary(x: TensorInfo, cos: TensorInfo, sin: TensorInfo, heads: Any, fake: bool = False) -> RotaryProblem:
    """x [..., S, W] (rows of heads of D channels, the first `heads` of them
    rotated; None: all W / D), cos and sin [S, D], D/2 a power of two ≥ 8."""
    op = "rotary"
    _check_dtypes_and_devices(op, [("x", x), ("cos", cos), ("sin", sin)], fake)
    if len(x.shape) < 2:
        raise ValueError(f"tawa.torch.{op}: x must be [..., S, W] (positions, then heads of D), got shape {_shape(x)}")
    S, W = x.shape[-2], x.shape[-1]
    if len(cos.shape) != 2 or cos.shape[0] != S:
        raise ValueError(f"tawa.torch.{op}: cos must be [S, D] with S = {S} (x's positions), got shape {_shape(cos)}")
    if tuple(sin.shape) != tuple(cos.shape):
        raise ValueError(f"tawa.torch.{op}: sin {_shape(sin)} must have cos's shape {_shape(cos)}")
    D = cos.shape[1]
    if isinstance(D, int) and (D < 16 or D & (D - 1)):
        raise ValueError(f"tawa.torch.{op}: heads of D = {D} channels: D must be a power of two ≥ 16")
    if heads is None:
        if isinstance(W, int) and W % D:
            raise ValueError(f"tawa.torch.{op}: x's rows of {W} are not whole heads of D = {D}; give heads")
        heads = W // D
    elif isinstance(heads, bool) or not isinstance(heads, int):
        raise TypeError(f"tawa.torch.{op}: heads must be an int or None, got {type(heads).__name__}")
    elif heads < 1 or (isinstance(W, int) and heads * D > W):
        raise ValueError(f"tawa.torch.{op}: heads = {heads} of D = {D} do not fit x's rows of {W}")
    return RotaryProblem(prod(x.shape[:-1]), S, W, D, heads, (*x.shape[:-1], heads * D))
