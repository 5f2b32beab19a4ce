"""tawa: automatic warp specialization of tile programs for Hopper GPUs.

Public interface (docs/architecture.md):
- `tawa.parse(text) -> ModuleOp`
- `tawa.context() -> Context` with tawa's and xdsl's dialects registered
"""

from __future__ import annotations

__version__ = "0.1.0"

from tawa.ir import context, parse

__all__ = ["__version__", "context", "parse"]
