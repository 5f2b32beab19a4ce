"""The `torch.library` operators `tawa::matmul`, `tawa::attention` and
`tawa::attention_fp8` (imported by `tawa.torch` when torch ≥ 2.5 is there; it
imports torch), registered by `tawa.torch.library.define`.

Each operator has a real implementation, which checks its arguments
(`tawa.torch.checks`), allocates its output, copies operands the kernels
cannot read in place and launches the kernel on torch's current stream, and
a fake implementation, which runs the same checks on
metadata and returns an empty tensor of the output's shape: `torch.compile`
traces through it and keeps the operator opaque.  The real implementation
allocates and launches only (no synchronization, no host reads of device
memory), so it can be captured in a CUDA graph once its kernel is loaded
(a first, eager call loads it).

`matmul` and `attention` have backward passes (`tawa.torch.grads`);
`attention_fp8` has none.

This module has no `from __future__ import annotations`: torch infers the
operators' schemas from the annotations, as objects.
"""

from typing import Optional

import torch

from tawa.torch import calls, checks, grads, kernels, library


def _dense(x: torch.Tensor) -> torch.Tensor:
    """`x` if the kernels can read it in place, else a dense, aligned copy
    (`contiguous()` would return a contiguous but misaligned `x` itself)."""
    if not checks.needs_copy(checks.describe(x)):
        return x
    return torch.empty(x.shape, dtype=x.dtype, device=x.device).copy_(x)


def matmul_impl(a: torch.Tensor, b: torch.Tensor, transpose_b: bool) -> torch.Tensor:
    """a [..., M, K] · b [K, N] (b [N, K] with transpose_b) → [..., M, N]."""
    return calls.matmul(a, b, transpose_b)


def _matmul_fake(a: torch.Tensor, b: torch.Tensor, transpose_b: bool) -> torch.Tensor:
    p = checks.check_matmul(checks.describe(a, fake=True), checks.describe(b, fake=True), transpose_b, fake=True)
    return a.new_empty(p.out_shape)


def attention_impl(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: Optional[float]
) -> torch.Tensor:
    """softmax(q·kᵀ·scale [causally masked, bottom-right])·v over q [B, H, S, D]
    and k, v [B, Hkv, Sk, D] → [B, H, S, D] (strides: `checks.attention_out_strides`)."""
    return calls.attention(q, k, v, causal, scale)


def _attention_fake(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: Optional[float]
) -> torch.Tensor:
    p = checks.check_attention(*(checks.describe(t, fake=True) for t in (q, k, v)), fake=True, causal=causal)
    return q.new_empty_strided((p.B, p.H, p.S, p.D), checks.attention_out_strides(q.shape, q.stride()))


def attention_fp8_impl(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    scale: Optional[float],
    q_scale: float,
    k_scale: float,
    v_scale: float,
    v_transposed: bool,
) -> torch.Tensor:
    """v_scale·softmax(q·kᵀ·scale·q_scale·k_scale [causally masked])·v over
    e4m3 q, k, v [B, H, S, 128] (v as Vᵀ [B, H, 128, S] with v_transposed) → bf16."""
    p = checks.check_attention_fp8(checks.describe(q), checks.describe(k), checks.describe(v),
                                   v_transposed=v_transposed)
    sm_scale, v_scale = checks.attention_fp8_scales(scale, q_scale, k_scale, v_scale)
    out = torch.empty((p.B, p.H, p.S, p.D), dtype=torch.bfloat16, device=q.device)
    if out.numel() == 0:
        return out
    bh = p.B * p.H
    q3, k3 = (_dense(t).view(bh, p.S, p.D) for t in (q, k))
    # wgmma takes fp8 B operands K-major only: V goes in transposed, Vt [B·H, D, S_pad],
    # each row of S keys padded with zeros to 16 bytes for the TMA (seq_len masks the
    # padding; zeros keep 0·v finite).  A fresh buffer each call: a strided copy of v (about
    # 0.3 TB/s for one-byte elements on an H100, docs/runtime.md) and a fill of the padding.
    # A given Vᵀ that is dense, aligned and of whole 16-byte rows is read as it is.
    if v_transposed and checks.vt_in_place(checks.describe(v)):
        vt = v.view(bh, p.D, p.S)
    else:
        padded = checks.fp8_padded_keys(p.S)
        vt = torch.empty((bh, p.D, padded), dtype=v.dtype, device=v.device)
        vt4 = vt.view(p.B, p.H, p.D, padded)
        vt4[..., : p.S].copy_(v if v_transposed else v.transpose(-1, -2))
        if padded > p.S:
            vt4[..., p.S :].zero_()
    name = checks.attention_fp8_kernel(causal)
    kernel = kernels.compiled(name, kernels.default_dtype(name), **kernels.options_for(name))
    grid = checks.attention_grid(p.S, bh, name)
    kernel(q3, k3, vt, out.view(bh, p.S, p.D), p.S, sm_scale, v_scale, grid=grid)
    return out


def _attention_fp8_fake(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    scale: Optional[float],
    q_scale: float,
    k_scale: float,
    v_scale: float,
    v_transposed: bool,
) -> torch.Tensor:
    p = checks.check_attention_fp8(*(checks.describe(t, fake=True) for t in (q, k, v)), fake=True,
                                   v_transposed=v_transposed)
    scales = (scale, q_scale, k_scale, v_scale)
    if all(s is None or isinstance(s, (int, float)) for s in scales):  # not SymFloats: checked when traced
        checks.attention_fp8_scales(*scales)
    return q.new_empty((p.B, p.H, p.S, p.D), dtype=torch.bfloat16)


matmul = library.define("matmul", matmul_impl, _matmul_fake, grads.Matmul)
"""The operator's overload, what `tawa.torch.matmul` calls (torch.compile traces it as one call)."""
attention = library.define("attention", attention_impl, _attention_fake, grads.Attention)
"""The operator's overload, what `tawa.torch.attention` calls."""
attention_fp8 = library.define("attention_fp8", attention_fp8_impl, _attention_fp8_fake)
"""The operator's overload, what `tawa.torch.attention_fp8` calls."""
