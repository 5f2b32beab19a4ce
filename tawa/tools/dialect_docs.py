"""Renders docs/dialects.md from the dialects' docstrings.

    python -m tawa.tools.dialect_docs > docs/dialects.md

A test checks that the committed file equals this output, so the reference
cannot drift from the code.
"""

from __future__ import annotations

import importlib
import inspect
import sys

from xdsl.ir import Dialect

DIALECT_MODULES = ("tawa.dialects.tile", "tawa.dialects.aref", "tawa.dialects.nvgpu")


def _doc(obj: object) -> str:
    return inspect.cleandoc(obj.__doc__ or "(undocumented)")


def _dialect_of(module: object) -> Dialect:
    return next(v for v in vars(module).values() if isinstance(v, Dialect))


def render() -> str:
    out = [
        "# tawa dialects",
        "",
        "Generated from the docstrings by `python -m tawa.tools.dialect_docs`; do not edit.",
        "",
    ]
    for mod_name in DIALECT_MODULES:
        module = importlib.import_module(mod_name)
        dialect = _dialect_of(module)
        out += [f"## `{dialect.name}`", "", _doc(module), ""]
        attrs = list(dialect.attributes)
        if attrs:
            out += ["### Types and attributes", ""]
            for attr in attrs:
                out += [f"#### `{attr.name}`", "", _doc(attr), ""]
        out += ["### Operations", ""]
        for op in dialect.operations:
            out += [f"#### `{op.name}`", "", _doc(op), ""]
    return "\n".join(out).rstrip() + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
