"""tawa: automatic warp specialization of tile programs for Hopper GPUs.

Public interface (docs/architecture.md):
- `tawa.parse(text) -> ModuleOp`
- `tawa.context() -> Context` with tawa's and xdsl's dialects registered
- `tawa.interpret(module_or_text, kernel, grid, *args)` runs a tile kernel on
  NumPy arrays over its launch grid (docs/interpreter.md)
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

from tawa.ir import context, parse

if TYPE_CHECKING:
    from tawa.interpreters import interpret


def __getattr__(name: str) -> Any:
    # The interpreter pulls in xdsl's interpreters (~0.3 s): import it on first use.
    if name == "interpret":
        from tawa.interpreters import interpret

        return interpret
    raise AttributeError(f"module 'tawa' has no attribute {name!r}")


__all__ = ["__version__", "context", "interpret", "parse"]
