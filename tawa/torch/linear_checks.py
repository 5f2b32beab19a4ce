"""Argument checks and operand layouts of `tawa.torch.linear` and
`tawa.torch.gated_mlp` (pure Python: no torch, no GPU, so the CPU tests
exercise all of it).

Tensors are `tawa.torch.checks.TensorInfo`s.  Each check returns the
problem's sizes or raises a one-line error: `TypeError` for a dtype (or an
activation that is not a string), `ValueError` for a device, rank, shape,
K that TMA cannot read or an unknown activation.  Layouts never raise: an
operand the kernel cannot read in place is copied (`a_in_place`,
`b_operand`, `dense`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from tawa.kernels.gemm import ACTIVATIONS
from tawa.runtime.launch import TMA_ALIGN
from tawa.torch import checks
from tawa.torch.checks import ELEMENT_BYTES, MATMUL_DTYPES, TensorInfo

ACTIVATION_HINTS = {"gelu": "GELU's erf form has no kernel: 'gelu_tanh' is the tanh form (nn.GELU(approximate='tanh'))",
                    "swish": "'silu' is x·sigmoid(x)"}
"""What an unknown activation's error adds, where there is something to say."""


@dataclass(frozen=True)
class LinearProblem:
    M: Any
    """Rows of x flattened: the product of its leading dimensions."""
    N: Any
    K: Any
    out_shape: tuple[Any, ...]
    """x's leading dimensions, then N."""
    dtype: str


def _shape(t: TensorInfo) -> str:
    return f"[{', '.join(str(d) for d in t.shape)}]"


def check_activation(op: str, activation: Any, allow_none: bool = True) -> None:
    """`activation` is None (where allowed) or one of `ACTIVATIONS`."""
    if activation is None and allow_none:
        return
    if not isinstance(activation, str):
        raise TypeError(f"tawa.torch.{op}: activation must be a str, one of {', '.join(ACTIVATIONS)}"
                        f"{' or None' * allow_none}; got {type(activation).__name__}")
    if activation not in ACTIVATIONS:
        hint = ACTIVATION_HINTS.get(activation)
        raise ValueError(f"tawa.torch.{op}: unknown activation {activation!r}; supported: {', '.join(ACTIVATIONS)}"
                         f"{' or None' * allow_none}{f' ({hint})' if hint else ''}")


def _check_operands(op: str, x: TensorInfo, weights: Sequence[tuple[str, TensorInfo]],
                    others: Sequence[tuple[str, TensorInfo | None]], fake: bool) -> LinearProblem:
    """x [..., K] times each weight [N, K] (one shape), with `others` of x's dtype."""
    if x.dtype not in MATMUL_DTYPES:
        raise TypeError(f"tawa.torch.{op}: x is {x.dtype}; supported: {', '.join(MATMUL_DTYPES)}")
    named = [("x", x), *weights, *((n, t) for n, t in others if t is not None)]
    for name, t in named[1:]:
        if t.dtype != x.dtype:
            raise TypeError(f"tawa.torch.{op}: x is {x.dtype} but {name} is {t.dtype}; all must have one dtype")
    checks.check_devices(op, named, fake)
    if len(x.shape) < 1:
        raise ValueError(f"tawa.torch.{op}: x must be [..., K], got a 0-d tensor")
    K = x.shape[-1]
    for name, w in weights:
        if len(w.shape) != 2:
            raise ValueError(f"tawa.torch.{op}: {name} must be [N, K] (an nn.Linear weight), got shape {_shape(w)}")
        if w.shape[1] != K:
            raise ValueError(f"tawa.torch.{op}: x {_shape(x)} has K = {K} but {name} {_shape(w)}, read as [N, K], "
                             f"has K = {w.shape[1]}")
    first_name, first = weights[0]
    for name, w in weights[1:]:
        if w.shape != first.shape:
            raise ValueError(f"tawa.torch.{op}: {first_name} {_shape(first)} and {name} {_shape(w)} must have one shape")
    align = TMA_ALIGN // ELEMENT_BYTES[x.dtype]
    if K % align != 0:
        raise ValueError(f"tawa.torch.{op}: K = {K} is not a multiple of {align}: the kernels read rows of K "
                         f"{x.dtype} elements through TMA, which needs {TMA_ALIGN}-byte rows (pad K with zeros)")
    N = first.shape[0]
    return LinearProblem(prod(x.shape[:-1]), N, K, (*x.shape[:-1], N), x.dtype)


def check_linear(x: TensorInfo, w: TensorInfo, bias: TensorInfo | None, activation: Any,
                 residual: TensorInfo | None, fake: bool = False) -> LinearProblem:
    """activation(x [..., K] · w [N, K]ᵀ + bias [N]) + residual [..., N]."""
    check_activation("linear", activation)
    p = _check_operands("linear", x, [("w", w)], [("bias", bias), ("residual", residual)], fake)
    if bias is not None and tuple(bias.shape) != (p.N,):
        raise ValueError(f"tawa.torch.linear: bias must be [N] = [{p.N}], got shape {_shape(bias)}")
    if residual is not None and tuple(residual.shape) != tuple(p.out_shape):
        raise ValueError(f"tawa.torch.linear: residual must have the output's shape "
                         f"[{', '.join(map(str, p.out_shape))}], got {_shape(residual)}")
    return p


def check_gated_mlp(x: TensorInfo, w_gate: TensorInfo, w_up: TensorInfo, activation: Any,
                    fake: bool = False) -> LinearProblem:
    """activation(x [..., K] · w_gate [N, K]ᵀ) · (x · w_up [N, K]ᵀ)."""
    check_activation("gated_mlp", activation, allow_none=False)
    return _check_operands("gated_mlp", x, [("w_gate", w_gate), ("w_up", w_up)], [], fake)


# --------------------------------------------------------------------------- layouts (real tensors)


def tma_rows(t: TensorInfo) -> bool:
    """Whether a tensor map reads the 2-D `t` as it is: unit stride along its
    rows, a row stride that is a positive multiple of 16 bytes and no
    shorter than a row (a column slice of a wider matrix is; a transposed
    or broadcast view is not), at a 16-byte-aligned address."""
    assert t.strides is not None and t.data_ptr is not None, "a real tensor"
    rows, cols = t.shape
    itemsize = ELEMENT_BYTES[t.dtype]
    row_stride, col_stride = t.strides
    if rows == 0 or cols == 0:
        return True
    unit = cols == 1 or col_stride == 1
    pitch = rows == 1 or (row_stride >= cols and (row_stride * itemsize) % TMA_ALIGN == 0)
    return unit and pitch and t.data_ptr % TMA_ALIGN == 0


def transposed(t: TensorInfo) -> TensorInfo:
    """The 2-D `t` seen transposed (its `.t()`)."""
    return TensorInfo(t.shape[::-1], t.dtype, t.device, None if t.strides is None else t.strides[::-1], t.data_ptr)


def b_operand(w: TensorInfo) -> tuple[str, bool]:
    """(B's layout for the generator, whether it is a copy) for a weight
    w [N, K]: "nk" when a tensor map reads w as it is (row-major [N, K], an
    `nn.Linear` weight, or rows of a wider matrix); "kn" when it reads wᵀ,
    [K, N] with unit stride along N (w is the `.t()` of a row-major [K, N]);
    else "nk" on a dense [N, K] copy (whose rows, of K elements, are aligned
    since K is)."""
    if tma_rows(w):
        return "nk", False
    if tma_rows(transposed(w)):
        return "kn", False
    return "nk", True


def dense(t: TensorInfo) -> bool:
    """Whether the kernels' threads read `t` (a bias, a residual, a norm's or
    an elementwise kernel's operand) as it is.  They address it themselves
    with its row stride (`KernelABI.addressed`), and the operators view it
    as rows of its last dimension: so its last dimension must be contiguous
    and its other dimensions must merge into rows one positive stride apart
    (`t.view(-1, N)` is a view).  A dense tensor is; so is a column slice of
    a wider matrix, or of a fused projection's [B, S, W] output; a
    transposed view, a broadcast or a [B, S, W] whose positions are not
    evenly spaced across B is not."""
    assert t.strides is not None, "a real tensor"
    shape, strides = t.shape, t.strides
    if shape and shape[-1] > 1 and strides[-1] != 1:
        return False
    outer = [(d, st) for d, st in zip(shape[:-1], strides[:-1]) if d > 1]
    if any(st <= 0 for _, st in outer):
        return False
    # Consecutive outer dimensions merge: each steps over the next one whole.
    return all(st == inner_st * inner_d for (_, st), (inner_d, inner_st) in zip(outer, outer[1:]))
