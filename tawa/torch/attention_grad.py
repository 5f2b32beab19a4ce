"""Attention for training: `torch.library` operators `tawa::attention_fwd_lse`
and `tawa::attention_bwd` (imported by `tawa.torch.grads`; it imports torch),
registered by `tawa.torch.library.define`, over the kernels of
examples/python/attention_bwd.py (`tawa.torch.attention_bwd_kernels`).

* `attention_fwd_lse(q, k, v, causal, scale) -> (o, lse)`: attention's
  output, with the strides `tawa.torch.attention` gives it, and the
  log-sum-exp of each query row [B, H, S] f32 (base 2, of the scaled scores:
  what the backward kernels subtract to recompute the softmax).
* `attention_bwd(do, q, k, v, o, lse, causal, scale) -> (dq, dk, dv)`:
  Delta = rowsum(dO ∘ O), then dK, dV and dQ on the path
  `attention_bwd_kernels.DQ_PATH` names: the dK/dV kernel and the dQ
  kernel ("kernel"), or the dK/dV kernel that adds dQ atomically into a
  zeroed f32 buffer, scaled and rounded by a conversion kernel ("atomic");
  dense gradients of q's, k's and v's shapes.  `scale` is the softmax
  scale the forward pass used (resolved: a float).

Grouped-query heads: every kernel reads k and v in place, at key/value
head h // group for query head h; the dK/dV program of a key/value head
loops over its group's query heads, so dK and dV are summed over the group
in f32 inside the kernel, with no copies.  Views a tensor map cannot
describe (q, k, v, dO, O) are copied densely, as the forward operator
copies them.  The kernels launch through their checked path (no launch
templates); nothing synchronizes.

This module has no `from __future__ import annotations`: torch infers the
operators' schemas from the annotations, as objects.
"""

from typing import Optional

import torch

from tawa.diagnostics import TawaError
from tawa.torch import attention_bwd_kernels as abk
from tawa.torch import checks, library
from tawa.torch.calls import dense_copy

O_ARGUMENT = 3
"""attention_fwd_lse's argument O (after Q, K, V)."""


def _readable(t: torch.Tensor, index: int, *kernels) -> torch.Tensor:
    """`t`, argument `index` of each of `kernels`, as they can read it:
    itself where a tensor map describes it (and, for an argument a kernel's
    threads address, where it is dense), else a dense copy."""
    info = checks.describe(t)
    addressed = any(index in kernel.abi.addressed for kernel in kernels)
    if not checks.tma_readable(info) or (addressed and checks.needs_copy(info)):
        return dense_copy(t)
    return t


def _problem(op: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> checks.AttentionProblem:
    p = checks.check_attention(checks.describe(q), checks.describe(k), checks.describe(v), causal=causal)
    reason = abk.unsupported(p.D)
    if reason is not None:
        raise ValueError(f"tawa.torch.{op}: {reason}")
    return p


def attention_fwd_lse_impl(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                           scale: Optional[float]) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q·kᵀ·scale [causally masked, bottom-right])·v over q [B, H, S, D]
    and k, v [B, Hkv, Sk, D], and each query row's log-sum-exp → (o, lse [B, H, S] f32)."""
    p = _problem("attention", q, k, v, causal)
    sm_scale = checks.attention_scale(p.D, scale)
    # The output first (the GPU tests poison the block the caching allocator hands out next).
    out = torch.empty_strided((p.B, p.H, p.S, p.D), checks.attention_out_strides(q.shape, q.stride()),
                              dtype=q.dtype, device=q.device)
    lse = torch.empty((p.B, p.H, p.S), dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    kernel = abk.kernel(abk.FWD, p.D, causal)
    q4, k4, v4 = (_readable(t, i, kernel) for i, t in enumerate((q, k, v)))
    dense = out.is_contiguous()
    # A kernel whose threads store O address it as dense: a seq-major output is written through a dense buffer.
    o4 = out if dense or O_ARGUMENT not in kernel.abi.addressed else torch.empty(out.shape, dtype=out.dtype,
                                                                                 device=out.device)
    kernel(q4, k4, v4, o4, lse, p.S, p.kv_len, sm_scale, p.group, grid=abk.grid(abk.FWD, p.D, p.S, p.kv_len, p.H, p.B))
    if o4 is not out:
        out.copy_(o4)
    return out, lse


def _attention_fwd_lse_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                            scale: Optional[float]) -> tuple[torch.Tensor, torch.Tensor]:
    p = checks.check_attention(*(checks.describe(t, fake=True) for t in (q, k, v)), fake=True, causal=causal)
    reason = abk.unsupported(p.D)
    if reason is not None:
        raise ValueError(f"tawa.torch.attention: {reason}")
    out = q.new_empty_strided((p.B, p.H, p.S, p.D), checks.attention_out_strides(q.shape, q.stride()))
    return out, q.new_empty((p.B, p.H, p.S), dtype=torch.float32)


def _check_saved(p: checks.AttentionProblem, do: torch.Tensor, o: torch.Tensor, lse: torch.Tensor) -> None:
    q_shape = (p.B, p.H, p.S, p.D)
    for name, t, shape, dtype in (("do", do, q_shape, torch.bfloat16), ("o", o, q_shape, torch.bfloat16),
                                  ("lse", lse, q_shape[:3], torch.float32)):
        if tuple(t.shape) != shape or t.dtype != dtype:
            raise ValueError(f"tawa.torch.attention_bwd: {name} must be {dtype} [{', '.join(map(str, shape))}], "
                             f"got {t.dtype} [{', '.join(map(str, t.shape))}]")


def attention_bwd_impl(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                       lse: torch.Tensor, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients (dq, dk, dv) of attention_fwd_lse's output o for the
    output's gradient do, from the saved o and lse; `scale` the softmax scale."""
    p = _problem("attention_bwd", q, k, v, causal)
    _check_saved(p, do, o, lse)
    dq = torch.empty((p.B, p.H, p.S, p.D), dtype=q.dtype, device=q.device)
    dk = torch.empty((p.B, p.kv_heads, p.kv_len, p.D), dtype=k.dtype, device=k.device)
    dv = torch.empty_like(dk)
    if dq.numel() == 0 or dk.numel() == 0:
        return dq, dk.zero_(), dv.zero_()  # no queries: nothing flows into k and v
    D, S, Sk, H, B = p.D, p.S, p.kv_len, p.H, p.B
    path = abk.DQ_PATH
    try:
        pre, dkdv, finish = (abk.kernel(name, D, causal) for name in abk.PATH_KERNELS[path])
    except TawaError as err:  # (the atomic path's kernel does not compile yet)
        raise ValueError(f"tawa.torch.attention_bwd: the {path!r} dQ path cannot run at head dim {D}: "
                         f"{str(err).strip().splitlines()[0]}") from None
    o4, do4 = _readable(o, 0, pre), _readable(do, 1, pre)
    delta = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
    pre(o4, do4, delta, S, grid=abk.grid(abk.PRE, D, S, Sk, H, B))
    if path == "kernel":
        # Q, K, V, dO are the first arguments of both kernels.
        q4, k4, v4, do4 = (_readable(t, i, dkdv, finish) for i, t in enumerate((q, k, v, do4)))
        dkdv(q4, k4, v4, do4, lse, delta, dk, dv, S, Sk, scale, p.group,
             grid=abk.grid(abk.DKDV, D, S, Sk, p.kv_heads, B))
        finish(q4, k4, v4, do4, lse, delta, dq, S, Sk, scale, p.group, grid=abk.grid(abk.DQ, D, S, Sk, H, B))
    else:
        q4, k4, v4, do4 = (_readable(t, i, dkdv) for i, t in enumerate((q, k, v, do4)))
        dq_sum = torch.zeros((B, H, S, D), dtype=torch.float32, device=q.device)
        dkdv(q4, k4, v4, do4, lse, delta, dk, dv, dq_sum, S, Sk, scale, p.group,
             grid=abk.grid(abk.DKDVDQ, D, S, Sk, p.kv_heads, B))
        finish(dq_sum, dq, scale, grid=abk.grid(abk.CONVERT, D, S, Sk, H, B))
    return dq, dk, dv


def _attention_bwd_fake(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                        lse: torch.Tensor, causal: bool,
                        scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    p = checks.check_attention(*(checks.describe(t, fake=True) for t in (q, k, v)), fake=True, causal=causal)
    _check_saved(p, do, o, lse)
    return q.new_empty((p.B, p.H, p.S, p.D)), k.new_empty(k.shape), v.new_empty(v.shape)


attention_fwd_lse = library.define("attention_fwd_lse", attention_fwd_lse_impl, _attention_fwd_lse_fake)
"""The operator's overload: attention's output and log-sum-exp."""
attention_bwd = library.define("attention_bwd", attention_bwd_impl, _attention_bwd_fake)
"""The operator's overload: attention's gradients."""
