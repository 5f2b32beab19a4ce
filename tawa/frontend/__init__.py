"""tawa's Python front end: `@tawa.kernel` functions written in
`tawa.language` become `tile` IR (docs/frontend.md).

- `kernel`: the decorator (also `tawa.kernel`), giving a `KernelFunction`;
- `codegen`: the AST walk that builds a specialization's `func.func`;
- `emitter`, `builtins`, `values`: ops, the `tl` functions, typing rules;
- `python -m tawa.frontend file.py`: the IR of every kernel in a file.
"""

from __future__ import annotations

from tawa.frontend.kernel import KernelFunction, kernel

__all__ = ["KernelFunction", "kernel"]
