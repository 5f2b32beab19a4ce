"""The row operators: `torch.library` operators `tawa::rms_norm`,
`tawa::layer_norm`, `tawa::add_rms_norm`, `tawa::rotary` and
`tawa::swiglu_grad` (the gated MLP's backward pass runs it: dG and dU of
silu(G)·U in one kernel) (imported by `tawa.torch` when
torch ≥ 2.5 is there; it imports torch), registered by
`tawa.torch.library.define`.

Each launches one kernel compiled from a tile program of
examples/python/norms.py (`tawa.torch.norm_kernels` decides its tile).
x is read as M rows, M the product of its leading dimensions, in place
where its rows are contiguous and evenly spaced (a column slice is), else
copied first (`norm_checks.dense`).  The host
path is the other operators' (`tawa.torch.calls`): what a call decides from
its arguments' layout — checks, copies, kernel, grid — is kept per layout,
and from the second call on the kernel is launched through a launch
template with the new addresses.  The implementation allocates and
launches only, so CUDA graphs capture it once a first call has loaded the
kernel; the fake implementation runs the same checks on metadata.

This module has no `from __future__ import annotations`: torch infers the
operators' schemas from the annotations, as objects.
"""

from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from tawa.torch import library, norm_kernels
from tawa.torch import norm_checks as nc
from tawa.torch.calls import call_cache, dense_copy, launch, remember
from tawa.torch.checks import describe


@dataclass(eq=False)
class RowCall:
    """Everything a call of a row kernel (a norm, the rotary embedding) on
    tensors of one layout decides."""

    out_shape: tuple
    views: tuple
    """Per array operand before the outputs: the 2-D shape the kernel reads it as, or None (as it is)."""
    out_view: tuple
    """The 2-D shape the kernel writes each output as."""
    copies: tuple
    """Per array operand before the outputs: whether it is copied (rows not contiguous or not evenly spaced)."""
    kernel: Any
    """A `tawa.Kernel`; None where nothing is launched (an empty output)."""
    grid: Any
    scalars: tuple
    """The kernel's arguments after its arrays."""
    bound: Any = field(default=None)
    """The kernel's launch template (`BoundLaunch`), made at the second call."""
    launches: int = 0


_CALLS: dict = call_cache()


def _layout_key(t: torch.Tensor) -> Any:
    return (t.shape, t.stride(), t.dtype, t.device)


def _norm_call(name: str, given: tuple, eps: float) -> RowCall:
    """The call of norm kernel `name` on `given` (x, the residual if any, the vectors)."""
    op = norm_kernels.KERNELS[name]
    x, *rest = given
    residual = rest.pop(0) if name == "add_rmsnorm" else None
    eps = nc.check_eps(op, eps)
    p = nc.check_norm(op, describe(x), [(n, describe(t)) for n, t in zip(("weight", "bias"), rest)],
                      None if residual is None else describe(residual))
    rows = (p.M, p.N)
    views = (rows,) + ((rows,) if residual is not None else ()) + (None,) * len(rest)
    kernel = grid = None
    if p.M * p.N:
        kernel, block_m = norm_kernels.kernel(name, p.N, p.M)
        grid = (-(-p.M // block_m),)
    copies = tuple(not nc.dense(describe(t)) for t in given)
    return RowCall(tuple(p.shape), views, rows, copies, kernel, grid, (p.M, p.N, eps))


def _rotary_call(given: tuple, heads: Optional[int]) -> RowCall:
    x, cos, sin = given
    p = nc.check_rotary(describe(x), describe(cos), describe(sin), heads)
    kernel = grid = None
    if p.M * p.heads:
        kernel, block_m = norm_kernels.rotary_kernel(p.S, p.D)
        grid = (-(-p.M // block_m), p.heads)
    copies = tuple(not nc.dense(describe(t)) for t in given)
    return RowCall(tuple(p.out_shape), ((p.M, p.W), None, None), (p.M, p.heads * p.D), copies, kernel, grid,
                   (p.M, p.S))


def _elementwise_call(name: str, op: str, named: tuple) -> RowCall:
    p = nc.check_elementwise(op, [(n, describe(t)) for n, t in named])
    rows = (p.M, p.N)
    kernel = grid = None
    if p.M * p.N:
        kernel, t = norm_kernels.elementwise_kernel(name, p.N, p.M)
        grid = (-(-p.M // t["BLOCK_M"]), -(-p.N // t["BLOCK_N"]))
    copies = tuple(not nc.dense(describe(t)) for _, t in named)
    return RowCall(tuple(p.shape), (rows,) * len(named), rows, copies, kernel, grid, rows)


def _run(key: tuple, make: Any, given: tuple, outputs: int) -> list:
    """Runs the call remembered under `key` (made by `make()` the first
    time) on the `given` tensors; its `outputs` new tensors."""
    call = _CALLS.get(key)
    if call is None:
        call = make()
        remember(_CALLS, key, call)
    x = given[0]
    # The outputs first: nothing else is allocated before them (the GPU tests
    # poison the blocks the caching allocator hands out next).
    outs = [torch.empty(call.out_shape, dtype=x.dtype, device=x.device) for _ in range(outputs)]
    if call.kernel is None:
        return outs
    bound = call.bound
    if bound is not None and not any(call.copies):
        if bound.launch((*(t.data_ptr() for t in given), *(o.data_ptr() for o in outs))):
            return outs
    arrays = [dense_copy(t) if copy else t for t, copy in zip(given, call.copies, strict=True)]
    arrays = [t if view is None else t.view(view) for t, view in zip(arrays, call.views, strict=True)]
    arrays += [o.view(call.out_view) for o in outs]
    launch(call, (*arrays, *call.scalars), len(arrays))
    return outs


def _norm(name: str, given: tuple, eps: float, outputs: int) -> list:
    key = (name, *(_layout_key(t) for t in given), eps)
    return _run(key, lambda: _norm_call(name, given, eps), given, outputs)


def rms_norm_impl(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x / √(mean(x²) + eps) · weight over the last dimension (`tawa::rms_norm`)."""
    return _norm("rmsnorm", (x, weight), eps, 1)[0]


def layer_norm_impl(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    """(x − mean) / √(var + eps) · weight + bias over the last dimension (`tawa::layer_norm`)."""
    return _norm("layernorm", (x, weight, bias), eps, 1)[0]


def add_rms_norm_impl(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                      eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(s, weight, eps), s) for s = x + residual rounded to x's dtype (`tawa::add_rms_norm`)."""
    y, s = _norm("add_rmsnorm", (x, residual, weight), eps, 2)
    return y, s


def rotary_impl(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, heads: Optional[int]) -> torch.Tensor:
    """The first `heads` heads of x [..., S, W] rotated by cos, sin [S, D]
    (rotate-half pairs) → [..., S, heads·D] (`tawa::rotary`)."""
    given = (x, cos, sin)
    key = ("rotary", *(_layout_key(t) for t in given), heads)
    return _run(key, lambda: _rotary_call(given, heads), given, 1)[0]


def has_gate_kernels(activation: str, dtype: torch.dtype) -> bool:
    """Whether a gated MLP of `activation` on `dtype` has elementwise kernels
    for its gate and the gate's gradient (`swiglu`, `swiglu_bwd`: silu on bf16)."""
    return activation == "silu" and dtype == torch.bfloat16


def swiglu_impl(g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """silu(G)·U elementwise, f32 math on bf16 tensors of one shape (the gated
    MLP's training forward runs it after its two products)."""
    given = (g, u)
    key = ("swiglu", *(_layout_key(t) for t in given))
    return _run(key, lambda: _elementwise_call("swiglu", "gated_mlp", (("g", g), ("u", u))), given, 1)[0]


def swiglu_grad_impl(dy: torch.Tensor, g: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(dG, dU) of Y = silu(G)·U for Y's gradient dY, elementwise, f32 math
    on bf16 tensors of one shape (`tawa::swiglu_grad`)."""
    given = (dy, g, u)
    key = ("swiglu_bwd", *(_layout_key(t) for t in given))
    dg, du = _run(key, lambda: _elementwise_call("swiglu_bwd", "swiglu_grad", (("dy", dy), ("g", g), ("u", u))),
                  given, 2)
    return dg, du


def _fake_problem(op: str, x: torch.Tensor, vectors: list, eps: Any,
                  residual: Optional[torch.Tensor] = None) -> Any:
    if isinstance(eps, (int, float)):  # not a SymFloat: checked when traced
        nc.check_eps(op, eps)
    return nc.check_norm(op, describe(x, fake=True), [(n, describe(t, fake=True)) for n, t in vectors],
                         None if residual is None else describe(residual, fake=True), fake=True)


def _rms_norm_fake(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x.new_empty(_fake_problem("rms_norm", x, [("weight", weight)], eps).shape)


def _layer_norm_fake(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    return x.new_empty(_fake_problem("layer_norm", x, [("weight", weight), ("bias", bias)], eps).shape)


def _add_rms_norm_fake(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                       eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    shape = _fake_problem("add_rms_norm", x, [("weight", weight)], eps, residual).shape
    return x.new_empty(shape), x.new_empty(shape)


def _rotary_fake(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, heads: Optional[int]) -> torch.Tensor:
    p = nc.check_rotary(*(describe(t, fake=True) for t in (x, cos, sin)), heads, fake=True)
    return x.new_empty(p.out_shape)


def _swiglu_grad_fake(dy: torch.Tensor, g: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    p = nc.check_elementwise("swiglu_grad", [(n, describe(t, fake=True)) for n, t in (("dy", dy), ("g", g), ("u", u))],
                             fake=True)
    return dy.new_empty(p.shape), dy.new_empty(p.shape)


rms_norm = library.define("rms_norm", rms_norm_impl, _rms_norm_fake)
"""The operator's overload, what `tawa.torch.rms_norm` calls outside eager calls."""
layer_norm = library.define("layer_norm", layer_norm_impl, _layer_norm_fake)
"""The operator's overload, what `tawa.torch.layer_norm` calls outside eager calls."""
add_rms_norm = library.define("add_rms_norm", add_rms_norm_impl, _add_rms_norm_fake)
"""The operator's overload, what `tawa.torch.add_rms_norm` calls outside eager calls."""
rotary = library.define("rotary", rotary_impl, _rotary_fake)
"""The operator's overload, what `tawa.torch.rotary` calls outside eager calls."""
swiglu_grad = library.define("swiglu_grad", swiglu_grad_impl, _swiglu_grad_fake)
"""The operator's overload, what the gated MLP's backward pass calls (`library.call`)."""
