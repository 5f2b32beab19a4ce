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
  kernel ("kernel"), or the dK/dV kernel that adds dQᵀ atomically into a
  zeroed f32 buffer [B, H, D, S], transposed, scaled and rounded by a
  conversion kernel ("atomic");
  dense gradients of q's, k's and v's shapes.  `scale` is the softmax
  scale the forward pass used (resolved: a float).

Grouped-query heads: every kernel reads k and v in place, at key/value
head h // group for query head h; the dK/dV program of a key/value head
loops over its group's query heads, so dK and dV are summed over the group
in f32 inside the kernel, with no copies.  Views a tensor map cannot
describe (q, k, v, and dO for the dK/dV and dQ kernels) are copied
densely, as the forward operator copies them; the preprocess's threads
address O and dO themselves, with their strides, so it reads any view
whose rows are contiguous in place (a fused-QKV model's seq-major O and
dO: no copies), and only others (a broadcast dO) are copied.  Nothing
synchronizes.

As the other operators do (`tawa.torch.calls`), each operator remembers per
layout of its tensors (shapes, strides, dtypes, devices, address
alignment) what the checks decided: the problem, which operands are
copied, the kernels and their grids; a call on new tensors of a layout seen
before allocates its outputs and launches, each kernel from its second
launch on through the call's launch template (`calls.launch`).

This module has no `from __future__ import annotations`: torch infers the
operators' schemas from the annotations, as objects.
"""

from dataclasses import dataclass
from typing import Any, Optional

import torch

from tawa.diagnostics import TawaError
from tawa.torch import attention_bwd_kernels as abk
from tawa.torch import checks, library
from tawa.torch.calls import KernelStep, call_cache, dense_copy, launch, layout_key, remember


def _copied(t: torch.Tensor, index: int, *kernels) -> bool:
    """Whether `t`, argument `index` of each of `kernels`, is copied densely
    for them.  Where every kernel's threads address it (`KernelABI.addressed`),
    only if its rows are not contiguous (the kernels take its strides);
    else (a kernel reads it through a tensor map) where a tensor map cannot
    describe it."""
    info = checks.describe(t)
    if all(index in kernel.abi.addressed for kernel in kernels):
        assert info.strides is not None, "a real tensor"
        return not checks.rows_contiguous(info.shape, info.strides)
    return not checks.tma_readable(info)


def _problem(op: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> checks.AttentionProblem:
    p = checks.check_attention(checks.describe(q), checks.describe(k), checks.describe(v), causal=causal)
    reason = abk.unsupported(p.D)
    if reason is not None:
        raise ValueError(f"tawa.torch.{op}: {reason}")
    return p


@dataclass(frozen=True)
class _Forward:
    """Everything an attention_fwd_lse call on q, k, v of one layout decides."""

    problem: checks.AttentionProblem
    out_strides: tuple[int, ...]
    copies: tuple[bool, bool, bool]
    """q, k, v: copied (a tensor map cannot describe the view) or read in place."""
    step: KernelStep
    scalars: tuple[int, int, float, int]
    """q_len, kv_len, the softmax scale, the group of query heads per key/value head."""


_FORWARD: dict[Any, _Forward] = call_cache()


def _forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: Optional[float]) -> _Forward:
    p = _problem("attention", q, k, v, causal)
    out_strides = checks.attention_out_strides(q.shape, q.stride())
    kernel = abk.kernel(abk.FWD, p.D, causal)
    # O is written in place in either order of its heads and positions: a
    # tensor map describes both, and so do the strides a kernel's threads
    # address it with (`checks.rows_contiguous`).
    return _Forward(p, out_strides, tuple(_copied(t, i, kernel) for i, t in enumerate((q, k, v))),
                    KernelStep(kernel, abk.grid(abk.FWD, p.D, p.S, p.kv_len, p.H, p.B)),
                    (p.S, p.kv_len, checks.attention_scale(p.D, scale), p.group))


def attention_fwd_lse_impl(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                           scale: Optional[float]) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q·kᵀ·scale [causally masked, bottom-right])·v over q [B, H, S, D]
    and k, v [B, Hkv, Sk, D], and each query row's log-sum-exp → (o, lse [B, H, S] f32)."""
    key = (layout_key(q, k, v), causal, scale)
    call = _FORWARD.get(key)
    if call is None:
        call = _forward(q, k, v, causal, scale)
        remember(_FORWARD, key, call)
    p = call.problem
    # The output first (the GPU tests poison the block the caching allocator hands out next).
    out = torch.empty_strided((p.B, p.H, p.S, p.D), call.out_strides, dtype=q.dtype, device=q.device)
    lse = torch.empty((p.B, p.H, p.S), dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    q4, k4, v4 = (dense_copy(t) if copy else t for t, copy in zip((q, k, v), call.copies))
    launch(call.step, (q4, k4, v4, out, lse, *call.scalars), 5)
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


@dataclass(frozen=True)
class _Backward:
    """Everything an attention_bwd call on tensors of one layout decides."""

    problem: checks.AttentionProblem
    path: str
    """The dQ path (`attention_bwd_kernels.DQ_PATH` when decided)."""
    steps: tuple[KernelStep, KernelStep, KernelStep]
    """The preprocess, the dK/dV kernel and the dQ (or dQ conversion) kernel."""
    pre_copies: tuple[bool, bool]
    """o, do copied for the preprocess (whose threads address them: only
    views whose rows are not contiguous)."""
    copies: tuple[bool, bool, bool, bool]
    """q, k, v and the preprocess's dO copied for the dK/dV and dQ kernels."""


_BACKWARD: dict[Any, _Backward] = call_cache()


def _backward(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
              lse: torch.Tensor, causal: bool) -> _Backward:
    p = _problem("attention_bwd", q, k, v, causal)
    _check_saved(p, do, o, lse)
    D, S, Sk, H, B = p.D, p.S, p.kv_len, p.H, p.B
    path = abk.DQ_PATH
    try:
        pre, dkdv, finish = (abk.kernel(name, D, causal) for name in abk.PATH_KERNELS[path])
    except TawaError as err:  # (the atomic path's kernel does not compile yet)
        raise ValueError(f"tawa.torch.attention_bwd: the {path!r} dQ path cannot run at head dim {D}: "
                         f"{str(err).strip().splitlines()[0]}") from None
    pre_copies = (_copied(o, 0, pre), _copied(do, 1, pre))
    # Q, K, V, dO are the first arguments of the dK/dV and dQ kernels (the conversion takes none).
    readers = (dkdv, finish) if path == "kernel" else (dkdv,)
    copies = (*(_copied(t, i, *readers) for i, t in enumerate((q, k, v))),
              not pre_copies[1] and _copied(do, 3, *readers))
    dkdv_name, finish_name = abk.PATH_KERNELS[path][1:]
    steps = (KernelStep(pre, abk.grid(abk.PRE, D, S, Sk, H, B)),
             KernelStep(dkdv, abk.grid(dkdv_name, D, S, Sk, p.kv_heads, B)),
             KernelStep(finish, abk.grid(finish_name, D, S, Sk, H, B)))
    return _Backward(p, path, steps, pre_copies, copies)  # type: ignore[arg-type]


def attention_bwd_impl(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                       lse: torch.Tensor, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients (dq, dk, dv) of attention_fwd_lse's output o for the
    output's gradient do, from the saved o and lse; `scale` the softmax scale."""
    # The scale is a kernel argument, packed into the steps' launch templates.
    key = (layout_key(do, q, k, v, o, lse), causal, scale, abk.DQ_PATH)
    call = _BACKWARD.get(key)
    if call is None:
        call = _backward(do, q, k, v, o, lse, causal)
        remember(_BACKWARD, key, call)
    p = call.problem
    dq = torch.empty((p.B, p.H, p.S, p.D), dtype=q.dtype, device=q.device)
    dk = torch.empty((p.B, p.kv_heads, p.kv_len, p.D), dtype=k.dtype, device=k.device)
    dv = torch.empty_like(dk)
    if dq.numel() == 0 or dk.numel() == 0:
        return dq, dk.zero_(), dv.zero_()  # no queries: nothing flows into k and v
    pre, dkdv, finish = call.steps
    o4, do4 = (dense_copy(t) if copy else t for t, copy in zip((o, do), call.pre_copies))
    delta = torch.empty((p.B, p.H, p.S), dtype=torch.float32, device=q.device)
    launch(pre, (o4, do4, delta, p.S), 3)
    q4, k4, v4, do4 = (dense_copy(t) if copy else t for t, copy in zip((q, k, v, do4), call.copies))
    if call.path == "kernel":
        launch(dkdv, (q4, k4, v4, do4, lse, delta, dk, dv, p.S, p.kv_len, scale, p.group), 8)
        launch(finish, (q4, k4, v4, do4, lse, delta, dq, p.S, p.kv_len, scale, p.group), 7)
    else:
        # dQᵀ's sum [B, H, D, S] in f32, its rows padded to whole 16 bytes (a tensor map's row pitch).
        padded = -(-p.S // 4) * 4
        dqt_sum = torch.zeros((p.B, p.H, p.D, padded), dtype=torch.float32, device=q.device)[..., :p.S]
        launch(dkdv, (q4, k4, v4, do4, lse, delta, dk, dv, dqt_sum, p.S, p.kv_len, scale, p.group), 9)
        launch(finish, (dqt_sum, dq, scale), 2)
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
