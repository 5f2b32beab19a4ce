"""The PTX backend: `print_ptx` and the `ptx` target of tawa-opt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target


@dataclass(frozen=True)
class PTXTarget(Target):
    """Prints lowered kernels as sm_90a PTX (run tawa-hopper-pipeline first)."""

    name = "ptx"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from tawa.backend.ptx.printer import print_ptx

        output.write(print_ptx(module))
