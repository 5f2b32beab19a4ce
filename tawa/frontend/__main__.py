"""`python -m tawa.frontend file.py [--constexpr NAME=VALUE ...] [--kernel NAME]`

Prints one module with the `tile` IR of every `@tawa.kernel` in `file.py`
(or of the named ones), for `tawa-opt` and FileCheck.  A constexpr given on
the command line applies to every kernel that has it; the others take their
defaults.  VALUE is a Python literal (`128`, `True`, `0.5`) or a dtype
(`bf16`, `tl.bf16`).  Errors print as `file.py:LINE:COL: error: ...` and exit 1.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
import traceback
from typing import Any

from xdsl.dialects.builtin import ModuleOp

import tawa.language as tl
from tawa.diagnostics import TawaError
from tawa.frontend.kernel import KernelFunction


def parse_value(text: str) -> Any:
    name = text.removeprefix("tl.")
    if name in tl.DTYPES:
        return tl.DTYPES[name]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise TawaError(f"--constexpr value {text!r} is not a Python literal or a dtype", "tawa.frontend") from None


def load_kernels(path: str) -> list[KernelFunction]:
    """The kernels a Python file defines, in order of definition."""
    spec = importlib.util.spec_from_file_location("__tawa_frontend_input__", path)
    if spec is None or spec.loader is None:
        raise TawaError("not a Python file", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError:
        raise TawaError("no such file", path) from None
    except SyntaxError as err:
        raise TawaError(f"{err.msg}", f"{path}:{err.lineno}:{err.offset}") from None
    except TawaError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's module failed to import
        tb = traceback.extract_tb(err.__traceback__)
        frame = next((f for f in reversed(tb) if f.filename == path), None)
        where = f"{path}:{frame.lineno}" if frame else path
        raise TawaError(f"importing the file raised {type(err).__name__}: {err}", where) from None
    kernels = [v for v in vars(module).values() if isinstance(v, KernelFunction)]
    return sorted(kernels, key=lambda k: k.fn.__code__.co_firstlineno)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.frontend", description=__doc__.splitlines()[2])
    parser.add_argument("file")
    parser.add_argument("--constexpr", "-D", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--kernel", action="append", default=[], metavar="NAME",
                        help="print only these kernels")
    args = parser.parse_args(argv)
    try:
        given = {}
        for item in args.constexpr:
            name, sep, value = item.partition("=")
            if not sep or not name.isidentifier():
                raise TawaError(f"--constexpr expects NAME=VALUE, got {item!r}", "tawa.frontend")
            given[name] = parse_value(value)
        kernels = load_kernels(args.file)
        if args.kernel:
            missing = set(args.kernel) - {k.name for k in kernels}
            if missing:
                raise TawaError(f"no kernel named {', '.join(sorted(missing))} "
                                f"(kernels: {', '.join(k.name for k in kernels) or 'none'})", args.file)
            kernels = [k for k in kernels if k.name in args.kernel]
        unused = set(given) - {n for k in kernels for n in k.constexpr_names}
        if unused:
            raise TawaError(f"no kernel has a constexpr named {', '.join(sorted(unused))}", args.file)
        funcs = []
        for k in kernels:
            mine = {n: v for n, v in given.items() if n in k.constexpr_names}
            funcs.append(k.specialize(**mine).clone())
        print(ModuleOp(funcs))
    except TawaError as err:
        print(err, file=sys.stderr)
        return 1
    except BrokenPipeError:  # `... | head`: the reader has what it wanted
        sys.stdout = None  # type: ignore[assignment]  # nothing left to flush at exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
