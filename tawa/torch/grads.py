"""The backward passes of `tawa.torch`'s operators: one `torch.autograd.Function`
per operator with a gradient, which `tawa.torch.library.define` runs where a
gradient flows through a call (docs/runtime.md, "Autograd").

* `Matmul` (`tawa::matmul`, C = A·B or A·Bᵀ) and `Linear` (`tawa::linear`,
  Y = act(X·Wᵀ + bias) + residual): the gradients are products on tawa's
  matmul.  With dY' = dY·act'(P) (P = X·Wᵀ + bias, which the forward pass
  of an activated layer stores besides Y from the same kernel,
  `tawa::linear_save`, and keeps for the backward pass, as torch keeps it:
  an [M, N] tensor held per layer instead of one more GEMM;
  dY' = dY without an activation), dX = dY'·W reads W as it is and
  dW = dY'ᵀ·X reads both dY' and X as they are (dY'ᵀ is the transpose of
  a row-major [tokens, N]: the "_at" GEMMs read it in place as wgmma's
  MN-major A); dbias = Σ dY' over the rows (torch, summed in f32); the
  residual's gradient is dY.
* `GatedMlp` (`tawa::gated_mlp`, Y = act(G)·U, G = X·W_gateᵀ, U = X·W_upᵀ):
  G and U stored by the forward pass's kernel besides Y
  (`tawa::gated_mlp_save`) and kept; dG = dY·U·act'(G), dU = dY·act(G)
  elementwise (for silu on bf16 one tawa kernel, `tawa::swiglu_grad`,
  f32 math; else torch in f32); dX = dG·W_gate + dU·W_up in one `tawa.torch.linear`
  call (dU·W_up from a matmul as its residual); dW_gate = dGᵀ·X,
  dW_up = dUᵀ·X with dGᵀ, dUᵀ read in place (as dY'ᵀ above).
* `Attention` (`tawa::attention`): the forward pass runs
  `tawa::attention_fwd_lse` (tawa.torch.attention_grad), which also gives
  each query row's log-sum-exp; O and it are saved; the backward pass runs
  `tawa::attention_bwd` (Delta, dK/dV, dQ kernels).  Head dims without
  backward kernels run the inference forward, and their backward raises.

A product whose reduction (the contracted dimension) is not a multiple of
8 elements, which the kernels' 16-byte TMA rows need, has both operands
copied into zero-padded buffers (a transposed A padded in its own layout,
so that the copy is still read in place as a transpose).  Backward passes are not differentiable
themselves (no double backward).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.function import once_differentiable

from tawa.torch import (
    attention_bwd_kernels,
    attention_grad,  # noqa: F401  (registers tawa::attention_fwd_lse, tawa::attention_bwd)
    checks,
    library,
    norm_ops,  # (also registers tawa::swiglu_grad)
)

_ALIGN = 8
"""Elements of a 16-byte row of bf16 or f16: the reduction of a product must be a multiple."""


def _padded(t: torch.Tensor, dim: int, size: int) -> torch.Tensor:
    """`t` copied into zeros whose dimension `dim` has `size` elements."""
    shape = list(t.shape)
    shape[dim] = size
    out = t.new_zeros(shape)
    out.narrow(dim, 0, t.shape[dim]).copy_(t)
    return out


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a [P, R] · b [R, Q] on tawa's matmul (a and b read as they are where
    the kernels can: a row-major or the transpose of a row-major [R, P]); R
    padded with zeros where unaligned."""
    R = a.shape[1]
    if R % _ALIGN:
        size = -(-R // _ALIGN) * _ALIGN
        # A transposed A (dYᵀ) is padded as the [R, P] it is the transpose of: still read in place.
        a = _padded(a.t(), 0, size).t() if a.t().is_contiguous() and not a.is_contiguous() else _padded(a, 1, size)
        b = _padded(b, 0, size)
    return library.call("matmul", a, b, False)


_ACTIVATION_GRADS = {
    "gelu_tanh": lambda g, pre: torch.ops.aten.gelu_backward(g, pre, approximate="tanh"),
    "silu": torch.ops.aten.silu_backward,
    "relu": lambda g, pre: torch.ops.aten.threshold_backward(g, pre, 0),
}
"""dY·act'(pre) for each activation (torch's own derivatives)."""
_ACTIVATIONS = {
    "gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
    "silu": torch.nn.functional.silu,
    "relu": torch.relu,
}


def _grad_products(dy: torch.Tensor, x2: torch.Tensor, w: torch.Tensor, need_x: bool,
                   need_w: bool) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(dY·W, dYᵀ·X) for dy [M, N], x2 [M, K], w [N, K], where needed."""
    dx = _mm(dy, w) if need_x else None
    dw = _mm(dy.t(), x2) if need_w else None
    return dx, dw


class Matmul(torch.autograd.Function):
    """`tawa::matmul` with its gradients (module docstring)."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, transpose_b: bool) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        ctx.transpose_b = transpose_b
        return library.call("matmul", a, b, transpose_b)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dc: torch.Tensor) -> tuple[Any, ...]:
        a, b = ctx.saved_tensors
        need_a, need_b, _ = ctx.needs_input_grad
        a2, dc2 = a.reshape(-1, a.shape[-1]), dc.reshape(-1, dc.shape[-1])
        da = db = None
        if need_a:  # dA = dC·Bᵀ: B [N, K] read as it is, or the transpose of B [K, N]
            da = _mm(dc2, b if ctx.transpose_b else b.t()).view(a.shape)
        if need_b:  # dB = dCᵀ·A for B [N, K], Aᵀ·dC for B [K, N]
            db = _mm(dc2.t(), a2) if ctx.transpose_b else _mm(a2.t(), dc2)
        return da, db, None


class Linear(torch.autograd.Function):
    """`tawa::linear` with its gradients (module docstring)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, activation: str | None,
                residual: torch.Tensor | None) -> torch.Tensor:
        ctx.activation = activation
        if activation is None:
            ctx.save_for_backward(x, w, bias, None)
            return library.call("linear", x, w, bias, None, residual)
        y, pre = library.call("linear_save", x, w, bias, activation, residual)
        ctx.save_for_backward(x, w, bias, pre)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[Any, ...]:
        x, w, bias, pre = ctx.saved_tensors
        need_x, need_w, need_bias, _, need_residual = ctx.needs_input_grad
        N, K = w.shape
        dyp = dy
        if ctx.activation is not None:  # act'(P), P from the forward pass
            dyp = _ACTIVATION_GRADS[ctx.activation](dy, pre)
        dy2 = dyp.reshape(-1, N)
        dx, dw = _grad_products(dy2, x.reshape(-1, K), w, need_x, need_w)
        dbias = dy2.sum(0) if need_bias else None  # (torch sums bf16 and f16 in f32: one rounding, one kernel)
        return (None if dx is None else dx.view(x.shape), dw, dbias, None, dy if need_residual else None)


class GatedMlp(torch.autograd.Function):
    """`tawa::gated_mlp` with its gradients (module docstring)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor,
                activation: str) -> torch.Tensor:
        ctx.activation = activation
        y, g, u = library.call("gated_mlp_save", x, w_gate, w_up, activation)
        ctx.save_for_backward(x, w_gate, w_up, g, u)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[Any, ...]:
        x, w_gate, w_up, g, u = ctx.saved_tensors
        need_x, need_gate, need_up, _ = ctx.needs_input_grad
        N, K = w_gate.shape
        x2, dy2 = x.reshape(-1, K), dy.reshape(-1, N)
        g, u = g.reshape(-1, N), u.reshape(-1, N)
        if norm_ops.has_gate_kernels(ctx.activation, x.dtype):  # one kernel reads dY, G, U once
            dg, du = library.call("swiglu_grad", dy2, g, u)
        else:
            dg = _ACTIVATION_GRADS[ctx.activation](dy2.float() * u.float(), g.float()).to(x.dtype)
            du = (dy2.float() * _ACTIVATIONS[ctx.activation](g.float())).to(x.dtype)
        dx = None
        if need_x:
            if N % _ALIGN == 0:  # dG·W_gate + dU·W_up, the sum in the GEMM's epilogue
                dx = library.call("linear", dg, w_gate.t(), None, None, _mm(du, w_up))
            else:
                dx = _mm(dg, w_gate) + _mm(du, w_up)
            dx = dx.view(x.shape)
        dw_gate = _mm(dg.t(), x2) if need_gate else None
        dw_up = _mm(du.t(), x2) if need_up else None
        return dx, dw_gate, dw_up, None


class Attention(torch.autograd.Function):
    """`tawa::attention` with its gradients (module docstring)."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                scale: float | None) -> torch.Tensor:
        ctx.causal = causal
        ctx.unsupported = attention_bwd_kernels.unsupported(q.shape[-1])
        if ctx.unsupported is not None:  # the inference forward; the backward raises
            return library.call("attention", q, k, v, causal, scale)
        ctx.scale = checks.attention_scale(q.shape[-1], scale)
        o, lse = library.call("attention_fwd_lse", q, k, v, causal, scale)
        ctx.save_for_backward(q, k, v, o, lse)
        return o

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, do: torch.Tensor) -> tuple[Any, ...]:
        if ctx.unsupported is not None:
            raise RuntimeError(f"tawa::attention has no backward here: {ctx.unsupported}")
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = library.call("attention_bwd", do, q, k, v, o, lse, ctx.causal, ctx.scale)
        return dq, dk, dv, None, None


__all__ = ["Attention", "GatedMlp", "Linear", "Matmul"]
