"""The host path of `tawa.torch`'s operators: what one call costs on new tensors.

In a model every call of an operator gets new tensors (new activations,
pointers the caching allocator hands out) of shapes seen before.  The
operators therefore remember, per layout of their arguments, everything
that does not depend on the addresses — the checks' verdict, the output's
shape, which operands are copied, the kernel, its grid — as a *call*
(`MatmulCall`), and launch the kernel through a launch template
(`tawa.runtime.template`) that writes the new addresses into parameters
packed once.  A call on new tensors is then: one key read (shapes, strides,
dtypes, device, address alignment), one dictionary look-up, the output's
allocation, the address writes and `cuLaunchKernel`.

`route(*tensors)` says when a call may also skip torch's dispatcher (whose
Python custom-op path costs tens of µs): outside `torch.compile` tracing,
with no Python dispatch or torch-function mode active (fake tensors,
`make_fx`, `torch.export`), on plain CUDA tensors or parameters (meta
tensors take the fake implementation), a call needing no autograd runs the
implementation and one through which a gradient flows the operator's
autograd function.  Everything else goes through the registered
`torch.library` operator, which runs the same implementation.

The key of a layout includes each address modulo 16: an operand the kernels
cannot read in place because of its alignment is copied, so alignment
changes the call.  The key does not see the contents or the storage
identity of a tensor, only what the checks read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import torch

from tawa.torch import checks, kernels

_PLAIN = (torch.Tensor, torch.nn.Parameter)
CALLS_KEPT = 1024
"""Calls remembered per operator (a model has a few dozen layouts)."""


IMPLEMENTATION, FUNCTION, DISPATCHER = "implementation", "function", "dispatcher"
"""How `route` says an operator call runs."""


def route(*tensors: Any) -> str:
    """How an operator call on `tensors` runs (see the module docstring):
    outside `torch.compile` tracing, with no Python dispatch or
    torch-function mode active, on plain CUDA tensors, its implementation
    directly (`IMPLEMENTATION`), or where a gradient flows (grad mode on, a
    tensor requiring grad) its `torch.autograd.Function` directly
    (`FUNCTION`), as the operator's Autograd kernel would
    (`tawa.torch.library.define`) without the two trips through torch's
    dispatcher; anything else through the dispatcher (`DISPATCHER`)."""
    if torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack() or \
            torch._C._is_torch_function_mode_enabled():
        return DISPATCHER
    grad = torch.is_grad_enabled()
    needed = False
    for t in tensors:
        if type(t) not in _PLAIN or not t.is_cuda:
            return DISPATCHER
        needed = needed or (grad and t.requires_grad)
    return FUNCTION if needed else IMPLEMENTATION


def eager(*tensors: Any) -> bool:
    """Whether an operator call on `tensors` may run its implementation
    directly instead of through torch's dispatcher (`route`)."""
    return route(*tensors) is IMPLEMENTATION


def dense_copy(x: torch.Tensor) -> torch.Tensor:
    """A dense, aligned copy of `x` (`contiguous()` would return a contiguous
    but misaligned `x` itself)."""
    return torch.empty(x.shape, dtype=x.dtype, device=x.device).copy_(x)


_CACHES: list[dict[Any, Any]] = []


def call_cache() -> dict[Any, Any]:
    """A new cache of an operator's calls, emptied by `forget`."""
    cache: dict[Any, Any] = {}
    _CACHES.append(cache)
    return cache


def forget() -> None:
    """Forgets every operator's calls (and so their kernels and launch
    templates): the next call of each layout checks and chooses again."""
    for cache in _CACHES:
        cache.clear()


def layout_key(*tensors: torch.Tensor) -> tuple:
    """What an operator's checks read of `tensors`, the key of its remembered
    calls: shapes, strides, dtypes, devices and each address modulo 16 (an
    operand TMA cannot read at its alignment is copied)."""
    return tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() & 15) for t in tensors)


def remember(cache: dict[Any, Any], key: Any, call: Any) -> None:
    """Keeps `call` under `key`, dropping the oldest call beyond `CALLS_KEPT`."""
    if len(cache) >= CALLS_KEPT:
        cache.pop(next(iter(cache)))
    cache[key] = call


@dataclass(eq=False)
class KernelStep:
    """One kernel launch of an operator's call (`launch` runs it): the
    kernel, its grid and, from the first launch on, its launch template."""

    kernel: Any
    grid: Any
    bound: Any = field(default=None)
    launches: int = 0


def launch(call: Any, args: tuple, arrays: int) -> None:
    """Launches `call.kernel` on `args` (its first `arrays` are tensors):
    through the call's launch template where it has one, else through the
    checked launch, whose first run makes the template."""
    bound = call.bound
    if bound is not None and bound.launch(tuple(a.data_ptr() for a in args[:arrays])):
        return
    call.kernel(*args, grid=call.grid)
    call.launches += 1
    if call.launches == 1 and hasattr(call.kernel, "template"):
        call.bound = call.kernel.template(*args, grid=call.grid)


# --------------------------------------------------------------------------- matmul


@dataclass(eq=False)
class MatmulCall:
    """Everything a matmul call on operands of one layout decides."""

    out_shape: tuple[int, ...]
    M: int
    N: int
    K: int
    copy_a: bool
    b_name: str
    """"matmul" (B read as [K, N]) or "gemm" (B read as [N, K])."""
    copy_b: bool
    kernel: Any
    """A `tawa.Kernel`, or a split-K GEMM (`tawa.runtime.splitk.SplitKGemm`)."""
    grid: Any
    a_transposed: bool = False
    """A (seen as [M, K]) is the transpose of a row-major [K, M]: the kernel
    reads that [K, M] in place (`checks.matmul_a_operand`)."""
    bound: Any = field(default=None)
    """The `BoundLaunch` of `kernel` (made at the second call: the first
    launches through the checked path)."""
    launches: int = 0

    def operands(self, a: torch.Tensor, b: torch.Tensor, transpose_b: bool) -> tuple[torch.Tensor, torch.Tensor]:
        if self.a_transposed:
            a2 = a.view(self.M, self.K).t()  # the row-major [K, M] that a is the transpose of
        else:
            a2 = dense_copy(a).view(self.M, self.K) if self.copy_a else a.reshape(self.M, self.K)
        b_kn = b.t() if transpose_b else b
        operand = b_kn if self.b_name == "matmul" else b_kn.t()
        return a2, dense_copy(operand) if self.copy_b else operand


_MATMUL: dict[Any, MatmulCall] = call_cache()


def _matmul_call(a: torch.Tensor, b: torch.Tensor, transpose_b: bool) -> MatmulCall:
    p = checks.check_matmul(checks.describe(a), checks.describe(b), transpose_b)
    M, N, K = p.M, p.N, p.K
    a_info = checks.describe(a)
    b_kn = b.t() if transpose_b else b
    name, copy_b = checks.matmul_b_operand(checks.describe(b_kn))
    flat = _flat_strides(a, M, K)
    a_transposed, copy_a = (False, True) if flat is None else checks.matmul_a_operand(
        checks.TensorInfo((M, K), a_info.dtype, a_info.device, flat, a_info.data_ptr))
    kernel = grid = None
    if M * N and K:
        tune = os.environ.get(kernels.AUTOTUNE_ENV) == "1" and not torch.cuda.is_current_stream_capturing()
        kernel, grid = kernels.matmul_kernel(kernels.matmul_kernel_name(name, a_transposed), p.dtype, M, N, K,
                                             sm_count(a.device), tune)
    return MatmulCall(tuple(p.out_shape), M, N, K, copy_a, name, copy_b, kernel, grid, a_transposed)


def _flat_strides(a: torch.Tensor, M: int, K: int) -> tuple[int, int] | None:
    """a's strides seen as [M, K], or None if a cannot be seen so without a copy."""
    try:
        return tuple(a.view(M, K).stride())  # type: ignore[return-value]
    except RuntimeError:
        return None


def matmul(a: torch.Tensor, b: torch.Tensor, transpose_b: bool) -> torch.Tensor:
    """The matmul operator's implementation (`tawa::matmul`)."""
    key = (a.shape, a.stride(), a.dtype, a.device, a.data_ptr() & 15,
           b.shape, b.stride(), b.dtype, b.device, b.data_ptr() & 15, transpose_b)
    call = _MATMUL.get(key)
    if call is None:
        call = _matmul_call(a, b, transpose_b)
        remember(_MATMUL, key, call)
    # The output first: nothing else is allocated before it (the GPU tests
    # poison the block the caching allocator hands out next).
    out = torch.empty(call.out_shape, dtype=a.dtype, device=a.device)
    if call.kernel is None:
        # An empty output, or K = 0: launching would need scratch tensor maps
        # (a device allocation, which CUDA graph capture forbids); C = 0 is the answer.
        return out if out.numel() == 0 else out.zero_()
    bound = call.bound
    if bound is not None and not (call.copy_a or call.copy_b):
        if bound.launch((a.data_ptr(), b.data_ptr(), out.data_ptr())):
            return out
    a2, operand = call.operands(a, b, transpose_b)
    c = out.view(call.M, call.N)
    launch(call, (a2, operand, c, call.M, call.N, call.K), 3)
    return out


_SM_COUNTS: dict[Any, int] = {}


def sm_count(device: torch.device) -> int:
    """The device's SMs (the heuristic sizes tiles to keep them busy)."""
    n = _SM_COUNTS.get(device)
    if n is None:
        n = kernels.SM_COUNT if device.type != "cuda" else torch.cuda.get_device_properties(device).multi_processor_count
        _SM_COUNTS[device] = n
    return n


# --------------------------------------------------------------------------- attention


@dataclass(eq=False)
class AttentionCall:
    """Everything an attention call on q, k, v of one layout decides."""

    out_shape: tuple[int, int, int, int]
    out_strides: tuple[int, ...]
    copies: tuple[bool, bool, bool]
    """q, k, v: copied (a tensor map cannot describe the view) or read in place."""
    kernel: Any
    grid: Any
    scalars: tuple[int, int, float, int]
    """q_len, kv_len, the softmax scale, the group of query heads per KV head."""
    bound: Any = field(default=None)
    launches: int = 0


_ATTENTION: dict[Any, AttentionCall] = call_cache()


def _attention_call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                    scale: float | None) -> AttentionCall:
    p = checks.check_attention(checks.describe(q), checks.describe(k), checks.describe(v), causal=causal)
    sm_scale = checks.attention_scale(p.D, scale)
    out_shape = (p.B, p.H, p.S, p.D)
    out_strides = checks.attention_out_strides(q.shape, q.stride())
    # Views a tensor map describes are read in place (the kernels take 4-D
    # operands with their strides); anything else is copied.
    copies = tuple(not checks.tma_readable(checks.describe(t)) for t in (q, k, v))
    kernel = grid = None
    if p.B * p.H * p.S * p.D:
        variant = checks.attention_variant(p.D, causal, p.S, p.B * p.H, sm_count(q.device), p.kv_len)
        kernel = kernels.compiled(variant.kernel, "bfloat16",
                                  **{**dict(variant.options), **kernels.options_for(variant.kernel)})
        grid = checks.attention_grid(p.S, p.H, variant.kernel, p.B)
    # O is written in place in either order of heads and positions: by a
    # tensor map, or by the threads of the kernels that store it themselves
    # (the 80-key head-dim-256 ones), which take its strides.
    return AttentionCall(out_shape, out_strides, copies, kernel, grid,  # type: ignore[arg-type]
                         (p.S, p.kv_len, sm_scale, p.group))


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float | None) -> torch.Tensor:
    """The attention operator's implementation (`tawa::attention`)."""
    key = (q.shape, q.stride(), q.dtype, q.device, q.data_ptr() & 15,
           k.shape, k.stride(), k.dtype, k.device, k.data_ptr() & 15,
           v.shape, v.stride(), v.dtype, v.device, v.data_ptr() & 15, causal, scale)
    call = _ATTENTION.get(key)
    if call is None:
        call = _attention_call(q, k, v, causal, scale)
        remember(_ATTENTION, key, call)
    # The output first: nothing else is allocated before it (the GPU tests
    # poison the block the caching allocator hands out next).
    out = torch.empty_strided(call.out_shape, call.out_strides, dtype=q.dtype, device=q.device)
    if call.kernel is None:
        return out
    bound = call.bound
    if bound is not None and not any(call.copies):
        if bound.launch((q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr())):
            return out
    q4, k4, v4 = (dense_copy(t) if copy else t for t, copy in zip((q, k, v), call.copies, strict=True))
    launch(call, (q4, k4, v4, out, *call.scalars), 4)
    return out
