"""tawa: automatic warp specialization of tile programs for Hopper GPUs.

Public interface (docs/architecture.md):
- `tawa.parse(text) -> ModuleOp`
- `tawa.context() -> Context` with tawa's and xdsl's dialects registered
- `tawa.interpret(module_or_text, kernel, grid, *args)` runs a tile kernel on
  NumPy arrays over its launch grid (docs/interpreter.md)
- `tawa.compile(module_or_text, kernel, **options) -> tawa.Kernel` compiles it
  for Hopper; `kernel(*args, grid=...)` launches it on CuPy arrays or torch
  tensors (docs/runtime.md)
- `@tawa.kernel` turns a Python function written in `tawa.language` into tile
  IR for all of the above (docs/frontend.md)
- `tawa.autotune(GemmProblem(M, N, K)) -> Choice` picks a generated GEMM's
  configuration by timing candidates on the GPU, cached on disk
  (tawa.runtime.autotune, docs/runtime.md)
- `tawa.TawaError`: what all of these raise for bad input, one line
  `where: error: message` (its subclasses: CompileError, LaunchError, ...)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tawa import code_cache, startup

# Before xDSL's dialects are defined: their dataclasses' methods are most of
# what importing tawa compiles (tawa.code_cache), and the collector would
# scan their classes over and over while they are made (tawa.startup).
code_cache.install()
with startup.paused_collector():
    from tawa.diagnostics import TawaError  # noqa: E402
    from tawa.ir import context, parse  # noqa: E402
    from tawa.version import __version__  # noqa: E402

if TYPE_CHECKING:
    from tawa.frontend import kernel
    from tawa.interpreters import interpret
    from tawa.runtime import Kernel, compile
    from tawa.runtime.autotune import autotune


def __getattr__(name: str) -> Any:
    # The interpreter pulls in xdsl's interpreters (~0.3 s): import it on first use.
    if name == "interpret":
        from tawa.interpreters import interpret

        return interpret
    # The runtime imports CuPy only when a kernel is launched.
    if name == "compile":
        from tawa.runtime import compile

        return compile
    if name == "kernel":
        from tawa.frontend import kernel

        return kernel
    if name == "autotune":
        from tawa.runtime.autotune import autotune

        return autotune
    if name == "Kernel":
        from tawa.runtime import Kernel

        return Kernel
    raise AttributeError(f"module 'tawa' has no attribute {name!r}")


__all__ = ["Kernel", "TawaError", "__version__", "autotune", "compile", "context", "interpret", "kernel", "parse"]
