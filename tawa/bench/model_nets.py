"""The transformers of `python -m tawa.bench model`, written once over an
ops table (`tawa.bench.model_ops.Ops`), so that the torch and tawa variants
of a model differ only in the table they are given.

- GPT-2 style (`gpt2_block`): LayerNorm, causal multi-head attention, a
  GELU-tanh MLP, residual adds; biases everywhere.
- Llama style (`llama_block`): RMSNorm, causal grouped-query attention with
  rotary embeddings, a SwiGLU MLP; no biases.

Both take q, k and v from one fused QKV projection, as views (`split_heads`:
no copy), and hand attention's output to the output projection through
`merge_heads` (a view when attention's output is laid out [B, S, H, D]).
The input is the embedded tokens [B, S, width]; the output the final
norm's hidden states.  Weights are a plain dict per layer, so that one
`torch.compile`d block serves every layer (`forward`'s `block`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import torch

from tawa.bench.model_ops import Ops

Weights = dict[str, torch.Tensor]


@dataclass(frozen=True)
class ModelConfig:
    """A transformer's sizes."""

    name: str
    family: str
    """"gpt2" or "llama" (`BLOCKS`)."""
    width: int
    heads: int
    kv_heads: int
    head_dim: int
    layers: int
    hidden: int
    """The MLP's inner width (the gate's and up projection's for llama)."""
    eps: float = 1e-5
    rope_base: float = 10000.0

    @property
    def qkv_width(self) -> int:
        return (self.heads + 2 * self.kv_heads) * self.head_dim

    def with_layers(self, layers: int | None) -> ModelConfig:
        return self if layers is None else replace(self, layers=layers)


MODELS = {
    "gpt2-1024": ModelConfig("gpt2-1024", "gpt2", 1024, 16, 16, 64, 24, 4096),
    "gpt2-2048": ModelConfig("gpt2-2048", "gpt2", 2048, 32, 32, 64, 12, 8192),
    "llama-4096": ModelConfig("llama-4096", "llama", 4096, 32, 8, 128, 4, 14336),
}
"""The benchmark's models: GPT-2 medium's sizes (24 layers), a GPT-2 twice
as wide with half its layers, and four layers of Llama-3-8B's sizes."""

INIT_STD = 0.02
"""Weights' standard deviation (GPT-2's and Llama's); the projections that
end in a residual add take INIT_STD/√(2·layers) (GPT-2's), so the residual
stream stays of one scale whatever the depth."""


def init_weights(cfg: ModelConfig, device: Any = "cpu", dtype: Any = torch.bfloat16,
                 generator: torch.Generator | None = None) -> tuple[list[Weights], Weights]:
    """(per-layer weights, final norm's weights), drawn from `generator` on
    its device (a CUDA generator draws fast on the GPU) and moved to `device`.
    Biases and norm weights are random too (not zeros and ones), so a
    variant that drops or misplaces one is caught."""
    def normal(*shape: int, std: float = INIT_STD, mean: float = 0.0) -> torch.Tensor:
        drawn = torch.randn(*shape, generator=generator, device=generator.device if generator else "cpu")
        return (drawn * std + mean).to(device=device, dtype=dtype)

    out_std = INIT_STD / math.sqrt(2 * cfg.layers)
    d, attn = cfg.width, cfg.heads * cfg.head_dim
    layers: list[Weights] = []
    for _ in range(cfg.layers):
        if cfg.family == "gpt2":
            layers.append({
                "ln1_w": normal(d, mean=1.0), "ln1_b": normal(d),
                "w_qkv": normal(cfg.qkv_width, d), "b_qkv": normal(cfg.qkv_width),
                "w_o": normal(d, attn, std=out_std), "b_o": normal(d),
                "ln2_w": normal(d, mean=1.0), "ln2_b": normal(d),
                "w_fc": normal(cfg.hidden, d), "b_fc": normal(cfg.hidden),
                "w_proj": normal(d, cfg.hidden, std=out_std), "b_proj": normal(d),
            })
        else:
            layers.append({
                "attn_norm": normal(d, mean=1.0), "w_qkv": normal(cfg.qkv_width, d),
                "w_o": normal(d, attn, std=out_std), "mlp_norm": normal(d, mean=1.0),
                "w_gate": normal(cfg.hidden, d), "w_up": normal(cfg.hidden, d),
                "w_down": normal(d, cfg.hidden, std=out_std),
            })
    final = {"w": normal(d, mean=1.0)}
    if cfg.family == "gpt2":
        final["b"] = normal(d)
    return layers, final


def embedded_tokens(cfg: ModelConfig, batch: int, seq: int, device: Any = "cpu", dtype: Any = torch.bfloat16,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    """The input [batch, seq, width]: random, of an embedding's scale (INIT_STD)."""
    x = torch.randn(batch, seq, cfg.width, generator=generator, device=generator.device if generator else "cpu")
    x = x * INIT_STD
    return x.to(device=device, dtype=dtype)


def rope_tables(cfg: ModelConfig, seq: int, device: Any = "cpu", dtype: Any = torch.bfloat16
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [seq, head_dim] of the rotary embedding (Llama's
    rotate-half layout: channel i pairs with i + head_dim/2), computed in
    float32 and cast to `dtype`."""
    half = cfg.head_dim // 2
    inv_freq = cfg.rope_base ** (-torch.arange(half, dtype=torch.float32) / half)
    angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().to(device=device, dtype=dtype), angles.sin().to(device=device, dtype=dtype)


def split_heads(qkv: torch.Tensor, cfg: ModelConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q [B, H, S, D], k and v [B, Hkv, S, D]: views of the fused projection
    qkv [B, S, (H + 2·Hkv)·D] (strides of its [B, S, heads, D] layout)."""
    B, S, _ = qkv.shape
    heads = qkv.view(B, S, cfg.heads + 2 * cfg.kv_heads, cfg.head_dim).transpose(1, 2)
    return (heads[:, : cfg.heads], heads[:, cfg.heads : cfg.heads + cfg.kv_heads],
            heads[:, cfg.heads + cfg.kv_heads :])


def merge_heads(o: torch.Tensor) -> torch.Tensor:
    """Attention's output [B, H, S, D] as [B, S, H·D]: a view when o is laid
    out [B, S, H, D] in memory, else a copy."""
    B, H, S, D = o.shape
    return o.transpose(1, 2).reshape(B, S, H * D)


def gpt2_block(cfg: ModelConfig, ops: Ops, x: torch.Tensor, w: Weights, rope: Any = None) -> torch.Tensor:
    """One GPT-2 layer: x + attn(ln1(x)), then + mlp(ln2(·))."""
    h = ops.layer_norm(x, w["ln1_w"], w["ln1_b"], cfg.eps)
    q, k, v = split_heads(ops.linear(h, w["w_qkv"], w["b_qkv"]), cfg)
    o = ops.attention(q, k, v, True, 1.0 / math.sqrt(cfg.head_dim))
    x = ops.linear(merge_heads(o), w["w_o"], w["b_o"], residual=x)
    h = ops.layer_norm(x, w["ln2_w"], w["ln2_b"], cfg.eps)
    h = ops.linear(h, w["w_fc"], w["b_fc"], activation="gelu_tanh")
    return ops.linear(h, w["w_proj"], w["b_proj"], residual=x)


def llama_block(cfg: ModelConfig, ops: Ops, x: torch.Tensor, w: Weights, rope: Any = None) -> torch.Tensor:
    """One Llama layer: x + attn(rms(x)) with rotary q and k, then + swiglu(rms(·))."""
    h = ops.rms_norm(x, w["attn_norm"], cfg.eps)
    qkv = ops.linear(h, w["w_qkv"])
    cos, sin = rope
    qk = ops.rotary(qkv, cos, sin, cfg.heads + cfg.kv_heads)
    B, S, _ = qkv.shape
    qk = qk.view(B, S, cfg.heads + cfg.kv_heads, cfg.head_dim).transpose(1, 2)
    q, k, v = qk[:, : cfg.heads], qk[:, cfg.heads :], split_heads(qkv, cfg)[2]
    o = ops.attention(q, k, v, True, 1.0 / math.sqrt(cfg.head_dim))
    x = ops.linear(merge_heads(o), w["w_o"], residual=x)
    h = ops.rms_norm(x, w["mlp_norm"], cfg.eps)
    return ops.linear(ops.gated_mlp(h, w["w_gate"], w["w_up"]), w["w_down"], residual=x)


BLOCKS = {"gpt2": gpt2_block, "llama": llama_block}
USES = {
    "gpt2": ("linear", "attention", "layer_norm"),
    "llama": ("linear", "gated_mlp", "attention", "attention_gqa", "rotary", "rms_norm"),
}
"""The ops-table entries each family calls (what a result records of its table)."""

Block = Callable[[ModelConfig, Ops, torch.Tensor, Weights, Any], torch.Tensor]


def forward(cfg: ModelConfig, ops: Ops, layers: Iterable[Weights], final: Weights, x: torch.Tensor,
            rope: Any = None, block: Block | None = None) -> torch.Tensor:
    """The model on x [B, S, width] → final hidden states [B, S, width].
    `rope`: `rope_tables` for the sequence (llama); `block`: the layer
    function (default `BLOCKS[cfg.family]`; a `torch.compile`d one)."""
    run = block or BLOCKS[cfg.family]
    for w in layers:
        x = run(cfg, ops, x, w, rope)
    if cfg.family == "gpt2":
        return ops.layer_norm(x, final["w"], final["b"], cfg.eps)
    return ops.rms_norm(x, final["w"], cfg.eps)
