"""The fused linear operators: `torch.library` operators `tawa::linear` and
`tawa::gated_mlp` (imported by `tawa.torch` when torch ≥ 2.5 is there; it
imports torch), registered by `tawa.torch.library.define`, and their
training forward passes (`tawa.torch.grads`): `tawa::linear_save` (an
activated linear layer) returns `linear`'s output and the pre-activation
P = x·wᵀ + bias, `tawa::gated_mlp_save` `gated_mlp`'s output and both
products G = x·w_gateᵀ and U = x·w_upᵀ, for the backward pass to read
instead of recomputing the products: each from one kernel whose consumers
store them all (the epilogue's `save_pre`), except the gated MLP of silu on
bf16, whose G and U come from two matmuls and Y from the elementwise
`swiglu` kernel (`tawa.torch.norm_ops`): a kernel storing three [M, N]
tiles runs smaller tiles than a GEMM (its registers), and was slower at
every size but the smallest (docs/perf.md, "Training steps").

Each runs one generated GEMM kernel with its epilogue fused
(`tawa.torch.linear_kernels`); nothing else is launched but copies of
operands the kernel cannot read in place (`tawa.torch.linear_checks`).  The
host path is matmul's (`tawa.torch.calls`): what a call decides from its
arguments' layout — checks, output shape, copies, kernel, grid — is kept as
a `FusedCall` per layout, and from the second call on the kernel is launched
through a launch template with the new addresses.  The implementation
allocates and launches only (no synchronization, no host reads of device
memory), so CUDA graphs capture it once a first call has loaded the kernel;
the fake implementation runs the same checks on metadata and returns an
empty tensor of the output's shape.

Both have backward passes on tawa's matmul (`tawa.torch.grads`).

This module has no `from __future__ import annotations`: torch infers the
operators' schemas from the annotations, as objects.
"""

from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from tawa.torch import calls, grads, library, linear_kernels, norm_ops
from tawa.torch import linear_checks as lc
from tawa.torch.calls import call_cache, dense_copy, launch, remember, sm_count
from tawa.torch.checks import TensorInfo, describe

_ACTIVATIONS = {
    None: lambda y: y,
    "gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
    "silu": torch.nn.functional.silu,
    "relu": torch.relu,
}
"""The activations in torch, for K = 0 only (no product: nothing to launch a GEMM for)."""


@dataclass(eq=False)
class FusedCall:
    """Everything a `linear` or `gated_mlp` call on operands of one layout decides."""

    out_shape: tuple
    M: int
    N: int
    K: int
    layout: str
    """B's layout: "nk" (weights read as [N, K]) or "kn" (read as wᵀ, [K, N])."""
    copies: tuple
    """Per kernel operand (x, the weights, bias, residual, those given): whether it is copied."""
    kernel: Any
    """A `tawa.Kernel`; None where nothing is launched (an empty output, K = 0)."""
    grid: Any
    save_pre: bool = False
    """Whether the kernel also stores the pre-activation: one output more per weight (the `_save` operators)."""
    bound: Any = field(default=None)
    """The kernel's launch template (`BoundLaunch`), made at the second call."""
    launches: int = 0

    def operands(self, x: torch.Tensor, weights: tuple, bias: Optional[torch.Tensor],
                 residual: Optional[torch.Tensor]) -> list:
        """The kernel's array operands before C: x as [M, K], the weights in
        `layout`, the bias, the residual as [M, N]; copies where decided."""
        kn = self.layout == "kn"
        given = [(x, (self.M, self.K))] + [(w.t() if kn else w, None) for w in weights]
        given += [(t, shape) for t, shape in ((bias, None), (residual, (self.M, self.N))) if t is not None]
        ops = []
        for (t, shape), copy in zip(given, self.copies, strict=True):
            t = dense_copy(t) if copy else t
            ops.append(t if shape is None else t.view(shape))
        return ops


_CALLS: dict = call_cache()


def _layout_key(t: Optional[torch.Tensor]) -> Any:
    if t is None:
        return None
    return (t.shape, t.stride(), t.dtype, t.device, t.data_ptr() & 15)


def _flat(t: torch.Tensor, shape: tuple) -> Optional[TensorInfo]:
    """`t` described as viewed in `shape`, or None where no view exists."""
    try:
        return describe(t.view(shape))
    except RuntimeError:
        return None


def _call(p: lc.LinearProblem, x: torch.Tensor, weights: tuple, bias: Optional[torch.Tensor],
          activation: Optional[str], residual: Optional[torch.Tensor], save_pre: bool = False) -> FusedCall:
    """The call of a checked problem: copies, the weights' layout, the kernel."""
    M, N, K = p.M, p.N, p.K
    flat_x = _flat(x, (M, K))
    copies = [flat_x is None or not lc.tma_rows(flat_x)]
    layouts = [lc.b_operand(describe(w)) for w in weights]
    if all(b == ("kn", False) for b in layouts):
        layout = "kn"
        copies += [False] * len(weights)
    else:  # one layout for all B operands: [N, K], copied where a tensor map cannot read w so
        layout = "nk"
        copies += [b != ("nk", False) for b in layouts]
    if bias is not None:
        copies.append(not lc.dense(describe(bias)))
    if residual is not None:
        flat_r = _flat(residual, (M, N))
        copies.append(flat_r is None or not lc.dense(flat_r))
    kernel = grid = None
    if M * N and K:
        kernel, grid = linear_kernels.linear_kernel(layout, p.dtype, M, N, K, bias is not None, activation,
                                                    residual is not None, len(weights) == 2, sm_count(x.device),
                                                    save_pre)
    return FusedCall(tuple(p.out_shape), M, N, K, layout, tuple(copies), kernel, grid, save_pre)


def _degenerate(out: torch.Tensor, bias, activation, residual, gated: bool) -> torch.Tensor:
    """`out` where no kernel is launched: empty, or for K = 0 computed by
    torch (the products are zeros; a launch would need scratch tensor maps,
    a device allocation, which CUDA graph capture forbids)."""
    if out.numel() == 0:
        return out
    y = torch.zeros(out.shape, dtype=torch.float32, device=out.device)
    if bias is not None:
        y += bias.float()
    y = torch.zeros_like(y) if gated else _ACTIVATIONS[activation](y)  # act(0) · 0 = 0
    if residual is not None:
        y += residual.float()
    return out.copy_(y)


def _run(call: FusedCall, x: torch.Tensor, weights: tuple, bias, activation, residual) -> Any:
    """The output, or with `call.save_pre` (the output, the pre-activation of
    each weight's product)."""
    # The outputs first: nothing else is allocated before them (the GPU tests
    # poison the blocks the caching allocator hands out next).
    out = torch.empty(call.out_shape, dtype=x.dtype, device=x.device)
    saved = len(weights) if call.save_pre else 0
    outs = (out, *(torch.empty(call.out_shape, dtype=x.dtype, device=x.device) for _ in range(saved)))
    result = outs if saved else out
    if call.kernel is None:
        for pre in outs[1:]:  # of a product of zeros: the bias (linear), zeros (gated)
            _degenerate(pre, bias, None, None, False)
        _degenerate(out, bias, activation, residual, len(weights) == 2)
        return result
    bound = call.bound
    if bound is not None and not any(call.copies):
        ptrs = (x.data_ptr(), *(w.data_ptr() for w in weights), *(t.data_ptr() for t in (bias, residual) if t is not None),
                *(o.data_ptr() for o in outs))
        if bound.launch(ptrs):
            return result
    arrays = (*call.operands(x, weights, bias, residual), *(o.view(call.M, call.N) for o in outs))
    launch(call, (*arrays, call.M, call.N, call.K), len(arrays))
    return result


def _described(t: Optional[torch.Tensor]) -> Optional[TensorInfo]:
    return None if t is None else describe(t)


def _linear(op: str, x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], activation: Optional[str],
            residual: Optional[torch.Tensor], save_pre: bool) -> Any:
    """The call of `tawa::<op>` (`linear` or `linear_save`) remembered for
    its operands' layouts (made the first time), run on them."""
    key = (op, _layout_key(x), _layout_key(w), _layout_key(bias), activation, _layout_key(residual))
    call = _CALLS.get(key)
    if call is None:
        if save_pre:
            lc.check_activation(op, activation, allow_none=False)
        p = lc.check_linear(describe(x), describe(w), _described(bias), activation, _described(residual))
        call = _call(p, x, (w,), bias, activation, residual, save_pre=save_pre)
        remember(_CALLS, key, call)
    return _run(call, x, (w,), bias, activation, residual)


def linear_impl(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], activation: Optional[str],
                residual: Optional[torch.Tensor]) -> torch.Tensor:
    """The linear operator's implementation (`tawa::linear`)."""
    return _linear("linear", x, w, bias, activation, residual, save_pre=False)


def linear_save_impl(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], activation: str,
                     residual: Optional[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """`linear_impl`'s output and the pre-activation x·wᵀ + bias, both
    [..., N] (`tawa::linear_save`; an activation is required)."""
    return _linear("linear_save", x, w, bias, activation, residual, save_pre=True)


def gated_mlp_impl(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, activation: str) -> torch.Tensor:
    """The gated MLP operator's implementation (`tawa::gated_mlp`)."""
    key = ("gated_mlp", _layout_key(x), _layout_key(w_gate), _layout_key(w_up), activation)
    call = _CALLS.get(key)
    if call is None:
        p = lc.check_gated_mlp(describe(x), describe(w_gate), describe(w_up), activation)
        call = _call(p, x, (w_gate, w_up), None, activation, None)
        remember(_CALLS, key, call)
    return _run(call, x, (w_gate, w_up), None, activation, None)


def gated_mlp_save_impl(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor,
                        activation: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`gated_mlp_impl`'s output and the products x·w_gateᵀ and x·w_upᵀ,
    all [..., N] (`tawa::gated_mlp_save`)."""
    key = ("gated_mlp_save", _layout_key(x), _layout_key(w_gate), _layout_key(w_up), activation)
    call = _CALLS.get(key)
    if call is None:
        p = lc.check_gated_mlp(describe(x), describe(w_gate), describe(w_up), activation)
        if norm_ops.has_gate_kernels(activation, x.dtype):
            call = _PRODUCTS_THEN_GATE
        else:
            call = _call(p, x, (w_gate, w_up), None, activation, None, save_pre=True)
        remember(_CALLS, key, call)
    if call is _PRODUCTS_THEN_GATE:
        g, u = calls.matmul(x, w_gate, True), calls.matmul(x, w_up, True)
        return norm_ops.swiglu_impl(g, u), g, u
    return _run(call, x, (w_gate, w_up), None, activation, None)


_PRODUCTS_THEN_GATE = object()
"""In `_CALLS`: a gated_mlp_save call of two matmuls and the swiglu kernel (module docstring)."""


def _linear_op(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor],
    activation: Optional[str],
    residual: Optional[torch.Tensor],
) -> torch.Tensor:
    """activation(x [..., K] · w [N, K]ᵀ + bias [N]) + residual [..., N] → [..., N]."""
    return linear_impl(x, w, bias, activation, residual)


def _linear_fake(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor],
    activation: Optional[str],
    residual: Optional[torch.Tensor],
) -> torch.Tensor:
    x_, w_, bias_, residual_ = (None if t is None else describe(t, fake=True) for t in (x, w, bias, residual))
    p = lc.check_linear(x_, w_, bias_, activation, residual_, fake=True)
    return x.new_empty(p.out_shape)


def _linear_save_op(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor],
    activation: str,
    residual: Optional[torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """(activation(p) + residual, p) for p = x [..., K] · w [N, K]ᵀ + bias [N] → two [..., N]."""
    return linear_save_impl(x, w, bias, activation, residual)


def _linear_save_fake(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor],
    activation: str,
    residual: Optional[torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    lc.check_activation("linear_save", activation, allow_none=False)
    x_, w_, bias_, residual_ = (None if t is None else describe(t, fake=True) for t in (x, w, bias, residual))
    p = lc.check_linear(x_, w_, bias_, activation, residual_, fake=True)
    return x.new_empty(p.out_shape), x.new_empty(p.out_shape)


def _gated_mlp_save_op(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor,
                       activation: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(activation(g) · u, g, u) for g = x [..., K] · w_gate [N, K]ᵀ, u = x · w_upᵀ → three [..., N]."""
    return gated_mlp_save_impl(x, w_gate, w_up, activation)


def _gated_mlp_save_fake(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor,
                         activation: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    p = lc.check_gated_mlp(*(describe(t, fake=True) for t in (x, w_gate, w_up)), activation, fake=True)
    return x.new_empty(p.out_shape), x.new_empty(p.out_shape), x.new_empty(p.out_shape)


def _gated_mlp_op(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, activation: str) -> torch.Tensor:
    """activation(x [..., K] · w_gate [N, K]ᵀ) · (x · w_upᵀ) → [..., N]."""
    return gated_mlp_impl(x, w_gate, w_up, activation)


def _gated_mlp_fake(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, activation: str) -> torch.Tensor:
    p = lc.check_gated_mlp(*(describe(t, fake=True) for t in (x, w_gate, w_up)), activation, fake=True)
    return x.new_empty(p.out_shape)


linear = library.define("linear", _linear_op, _linear_fake, grads.Linear)
"""The operator's overload, what `tawa.torch.linear` calls outside eager calls (torch.compile traces it as one call)."""
linear_save = library.define("linear_save", _linear_save_op, _linear_save_fake)
"""The operator's overload: the training forward pass of an activated linear layer (no backward of its own)."""
gated_mlp = library.define("gated_mlp", _gated_mlp_op, _gated_mlp_fake, grads.GatedMlp)
"""The operator's overload, what `tawa.torch.gated_mlp` calls outside eager calls."""
gated_mlp_save = library.define("gated_mlp_save", _gated_mlp_save_op, _gated_mlp_save_fake)
"""The operator's overload: the training forward pass of the gated MLP (no backward of its own)."""
