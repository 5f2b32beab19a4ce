"""tawa's operators in torch's dispatcher (`torch.library`), one Python call deep.

    matmul = define("matmul", matmul_impl, matmul_fake)   # torch.ops.tawa.matmul.default

`torch.library.custom_op` puts Python layers between the dispatcher and an
implementation (an autograd function, a redispatch below it, a check that
no output aliases an input), which every call through the dispatcher pays:
every call from a `torch.compile`d graph, for one.  `define` registers the
same operator at the cost of one Python call instead:

* the schema, inferred from the implementation's annotations
  (`torch.library.infer_schema`; no operator mutates its arguments);
* the implementation for the CPU and CUDA keys, and the fake one
  (`torch.library.register_fake`) that `torch.compile`, `make_fx` and meta
  tensors run;
* one kernel for the Autograd keys, which the dispatcher reaches first on
  ordinary tensors.  Where a gradient would flow through the call (grad
  mode on, an input requiring grad) it runs the operator's
  `torch.autograd.Function` (`define`'s `function`: tawa.torch.grads), or,
  for an operator without a backward, the operator inside one whose
  backward raises, saying so; on plain CUDA tensors otherwise (a compiled
  graph's call at run time; `calls.eager`'s conditions) it runs the
  implementation itself; anything else (fake or functional tensors while
  tracing, meta and CPU tensors, an active dispatch mode) goes on below
  autograd, to the fake implementation or the backend's kernel.

`torch.library.register_autograd` would replace that one kernel with its
own layers, and its backward sees only the operator's inputs and output:
attention's backward needs the log-sum-exp its training forward computes
besides the output.
"""

from collections.abc import Callable
from typing import Any

import torch

from tawa.torch import calls

LIBRARY = torch.library.Library("tawa", "DEF")
"""The `tawa` namespace of operators (`torch.ops.tawa`)."""
_DEFINED: dict[str, tuple[Callable[..., Any], Any]] = {}
"""name → (implementation, overload) of each operator `define` registered."""


class _NoBackward(torch.autograd.Function):
    """The operator's output in an autograd graph whose backward raises."""

    @staticmethod
    def forward(ctx: Any, overload: Any, *args: Any) -> Any:
        ctx.name = overload.name()
        with torch._C._AutoDispatchBelowAutograd():
            return overload(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError(f"{ctx.name} has no backward (docs/runtime.md, \"Autograd\" lists the operators "
                           "that have one): call it on tensors that need no gradient, e.g. under torch.no_grad()")


def define(name: str, impl: Callable[..., torch.Tensor], fake: Callable[..., torch.Tensor],
           function: Any = None) -> Any:
    """Registers `tawa::<name>` (module docstring); returns its overload.
    `function`, a `torch.autograd.Function` taking the operator's arguments,
    computes the output where a gradient flows through the call; without
    one the backward raises."""
    LIBRARY.define(name + torch.library.infer_schema(impl, mutates_args=()))
    for key in ("CPU", "CUDA"):
        LIBRARY.impl(name, impl, key)
    torch.library.register_fake(f"tawa::{name}", fake, lib=LIBRARY)
    overload = getattr(torch.ops.tawa, name).default

    def autograd(*args: Any) -> torch.Tensor:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            if function is not None:
                return function.apply(*args)
            return _NoBackward.apply(overload, *args)
        if calls.eager(*tensors):
            return impl(*args)
        with torch._C._AutoDispatchBelowAutograd():
            return overload(*args)

    LIBRARY.impl(name, autograd, "Autograd")
    _DEFINED[name] = (impl, overload)
    return overload


def call(name: str, *args: Any) -> Any:
    """`tawa::<name>` on `args` as `tawa.torch`'s functions call it: the
    implementation itself where `calls.eager` allows, else through the
    dispatcher (the backward passes call the operators so)."""
    impl, overload = _DEFINED[name]
    if calls.eager(*(a for a in args if isinstance(a, torch.Tensor))):
        return impl(*args)
    return overload(*args)


__all__ = ["LIBRARY", "call", "define"]
