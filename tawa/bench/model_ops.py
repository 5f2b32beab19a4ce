"""Ops tables of `python -m tawa.bench model`: what a transformer
(`tawa.bench.model_nets`) calls for each of its steps.

`torch_ops()` is what a PyTorch user writes (F.linear, F.scaled_dot_product_attention,
torch's norms and activations); `tawa_ops()` calls tawa's operators wherever
`tawa.torch` has one and torch for the rest.  Which operators it has is
decided once, when the table is built (`hasattr`, and for grouped-query
heads a call of the operator on meta tensors); the table's `notes` say what
each entry runs, and a benchmark result records them, so a result never
claims a fusion that did not run.

What the tawa table does where an operator is missing is in one place, the
stand-ins at the end of this module: each goes when its operator arrives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F

Tensor = torch.Tensor


@dataclass(frozen=True, eq=False)
class Ops:
    """One implementation of each step of a transformer.

    - `linear(x, w, bias=None, activation=None, residual=None)`:
      activation(x·wᵀ + bias) + residual, activation one of `ACTIVATIONS`;
    - `gated_mlp(x, w_gate, w_up)`: silu(x·w_gateᵀ) * (x·w_upᵀ);
    - `attention(q, k, v, causal, scale)`: q [B, H, S, D], k and v
      [B, Hkv, S, D] with H a multiple of Hkv (any strides) → [B, H, S, D];
    - `layer_norm(x, weight, bias, eps)`, `rms_norm(x, weight, eps)` over the last dimension;
    - `rotary(x, cos, sin, heads)` → the first `heads` heads of x [B, S, W]
      rotated (rotate-half pairs, cos and sin [S, D]), [B, S, heads·D]: q's and
      k's heads of the fused QKV projection, side by side.
    """

    name: str
    linear: Callable[..., Tensor]
    gated_mlp: Callable[[Tensor, Tensor, Tensor], Tensor]
    attention: Callable[[Tensor, Tensor, Tensor, bool, float | None], Tensor]
    layer_norm: Callable[[Tensor, Tensor, Tensor, float], Tensor]
    rms_norm: Callable[[Tensor, Tensor, float], Tensor]
    rotary: Callable[[Tensor, Tensor, Tensor, int], Tensor]
    notes: dict[str, str] = field(default_factory=dict)
    """Entry → what it runs (`attention_gqa`: how grouped-query heads are handled)."""

    def described(self, entries: tuple[str, ...]) -> dict[str, str]:
        """The notes of `entries` (those a model calls)."""
        return {e: self.notes[e] for e in entries}


ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"),
    "silu": F.silu,
    "relu": F.relu,
}


def epilogue(y: Tensor, bias: Tensor | None = None, activation: str | None = None,
             residual: Tensor | None = None) -> Tensor:
    """activation(y + bias) + residual with torch's operators."""
    if bias is not None:
        y = y + bias
    if activation is not None:
        y = ACTIVATIONS[activation](y)
    return y if residual is None else y + residual


# --------------------------------------------------------------------------- torch


def torch_linear(x: Tensor, w: Tensor, bias: Tensor | None = None, activation: str | None = None,
                 residual: Tensor | None = None) -> Tensor:
    return epilogue(F.linear(x, w, bias), None, activation, residual)


def torch_gated_mlp(x: Tensor, w_gate: Tensor, w_up: Tensor) -> Tensor:
    return F.silu(F.linear(x, w_gate)) * F.linear(x, w_up)


def torch_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float | None) -> Tensor:
    if k.shape[1] != q.shape[1]:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)


def torch_layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float) -> Tensor:
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def torch_rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def rotate_half(x: Tensor) -> Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def torch_rotary(x: Tensor, cos: Tensor, sin: Tensor, heads: int) -> Tensor:
    D = cos.shape[-1]
    h = x[..., : heads * D].unflatten(-1, (heads, D))
    cos, sin = cos[:, None], sin[:, None]  # [S, 1, D]: one table for every head
    return (h * cos + rotate_half(h) * sin).flatten(-2)


TORCH_NOTES = {
    "linear": "F.linear (bias in cuBLAS's epilogue), then torch's activation and residual add",
    "gated_mlp": "two F.linear, torch's silu and product",
    "attention": "F.scaled_dot_product_attention on the views of the fused QKV projection",
    "attention_gqa": "F.scaled_dot_product_attention(enable_gqa=True)",
    "layer_norm": "F.layer_norm",
    "rms_norm": "F.rms_norm",
    "rotary": "torch (rotate-half, cos/sin tables) on q's and k's heads of the fused QKV projection",
}


def torch_ops() -> Ops:
    """The torch variant: what a PyTorch user writes."""
    return Ops("torch", torch_linear, torch_gated_mlp, torch_attention, torch_layer_norm, torch_rms_norm,
               torch_rotary, dict(TORCH_NOTES))


# --------------------------------------------------------------------------- tawa


def tawa_ops(module: ModuleType | Any | None = None) -> Ops:
    """The tawa variant: `module`'s operators (default `tawa.torch`) where it
    has them, the stand-ins below where it does not, torch for the rest.
    Raises ImportError when tawa.torch cannot run here."""
    if module is None:
        import tawa.torch as module

        if module.UNAVAILABLE is not None:
            raise ImportError(module.UNAVAILABLE)
    notes: dict[str, str] = {}
    if hasattr(module, "linear"):
        linear = module.linear
        notes["linear"] = "tawa.torch.linear (bias, activation and residual add in its epilogue)"
    else:
        linear = linear_by_matmul(module.matmul)
        notes["linear"] = "tawa.torch.matmul, then torch's bias add, activation and residual add (stand-in)"
    if hasattr(module, "gated_mlp"):
        gated_mlp = module.gated_mlp
        notes["gated_mlp"] = "tawa.torch.gated_mlp"
    else:
        gated_mlp = gated_mlp_by_linear(linear)
        notes["gated_mlp"] = ("tawa.torch.linear with silu, tawa.torch.linear, torch's product (stand-in)"
                              if hasattr(module, "linear") else
                              "two tawa.torch.matmul, torch's silu and product (stand-in)")
    attention = module.attention
    notes["attention"] = ("tawa.torch.attention on the views of the fused QKV projection (the operator copies "
                          "what it cannot read in place)")
    if takes_grouped_heads(attention):
        notes["attention_gqa"] = "tawa.torch.attention on k, v with fewer heads"
    else:
        attention = attention_expanding_kv_heads(attention)
        notes["attention_gqa"] = "k, v expanded to q's heads by repeat_interleave, then tawa.torch.attention (stand-in)"
    norms = {}
    for entry, torch_fn, torch_name in (("layer_norm", torch_layer_norm, "F.layer_norm"),
                                        ("rms_norm", torch_rms_norm, "F.rms_norm")):
        norms[entry] = getattr(module, entry, torch_fn)
        notes[entry] = f"tawa.torch.{entry}" if hasattr(module, entry) else f"{torch_name}: no tawa operator"
    rotary = getattr(module, "rotary", torch_rotary)
    notes["rotary"] = ("tawa.torch.rotary on q's and k's heads of the fused QKV projection"
                       if hasattr(module, "rotary") else "torch: no tawa operator")
    return Ops("tawa", linear, gated_mlp, attention, norms["layer_norm"], norms["rms_norm"], rotary, notes)


def takes_grouped_heads(attention: Callable[..., Tensor], head_dim: int = 128) -> bool:
    """Whether `attention` takes k and v with fewer heads than q: asked of its
    fake implementation, on meta tensors (no GPU, nothing launched)."""
    q = torch.empty(1, 4, 128, head_dim, device="meta", dtype=torch.bfloat16)
    kv = torch.empty(1, 1, 128, head_dim, device="meta", dtype=torch.bfloat16)
    try:
        out = attention(q, kv, kv, True, None)
    except (TypeError, ValueError, RuntimeError, NotImplementedError):
        return False
    return tuple(out.shape) == tuple(q.shape)


# --------------------------------------------------------------------------- stand-ins
# Each stands in for an operator tawa.torch does not have yet, with the
# operators it has; `tawa_ops` stops using it when the operator is there.


def linear_by_matmul(matmul: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`linear` as `matmul(x, w, transpose_b=True)` and torch's epilogue,
    until tawa.torch.linear fuses the epilogue."""
    def linear(x: Tensor, w: Tensor, bias: Tensor | None = None, activation: str | None = None,
               residual: Tensor | None = None) -> Tensor:
        return epilogue(matmul(x, w, transpose_b=True), bias, activation, residual)
    return linear


def gated_mlp_by_linear(linear: Callable[..., Tensor]) -> Callable[[Tensor, Tensor, Tensor], Tensor]:
    """`gated_mlp` as two linear layers and torch's product, until
    tawa.torch.gated_mlp computes both products in one kernel."""
    def gated_mlp(x: Tensor, w_gate: Tensor, w_up: Tensor) -> Tensor:
        return linear(x, w_gate, activation="silu") * linear(x, w_up)
    return gated_mlp


def attention_expanding_kv_heads(attention: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`attention` on k and v repeated to q's heads (a copy of each), until
    tawa.torch.attention takes grouped-query heads."""
    def grouped(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float | None) -> Tensor:
        if k.shape[1] != q.shape[1]:
            group = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        return attention(q, k, v, causal, scale)
    return grouped
