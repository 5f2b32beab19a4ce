"""`python -m tawa.frontend file.py [--constexpr NAME=VALUE ...] [--kernel NAME]`

Prints one module with the `tile` IR of every `@tawa.kernel` in `file.py`
(or of the named ones), for `tawa-opt` and FileCheck.  A constexpr given on
the command line applies to every kernel that has it; the others take their
defaults.  VALUE is a Python literal (`128`, `True`, `0.5`) or a dtype
(`bf16`, `tl.bf16`).  Each op is followed by its location in `file.py`
(`loc("file.py":12:5)`, the path as given), which `tawa-opt` reads back: an
error of any pass names the Python line, not a line of the printed IR
(`--no-locations` leaves them out).

Errors print as one line and exit 1 (as `tawa-opt` and `tawa-run` do, usage
errors included): `file.py:LINE:COL: error: ...` for a mistake in the file, or
in an option that names something in it (a `--constexpr` value is located at
its parameter, an unknown `--kernel` at the first kernel), and
`python -m tawa.frontend: error: ...` for a malformed command line.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import os
import sys
import tokenize
import traceback
from typing import Any, NoReturn

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr

import tawa.language as tl
from tawa.diagnostics import TawaError, first_line
from tawa.frontend.kernel import KernelFunction, module_text

PROG = "python -m tawa.frontend"


def parse_value(text: str) -> Any:
    """A `--constexpr` value: a dtype or a Python literal (ValueError if neither)."""
    name = text.removeprefix("tl.")
    if name in tl.DTYPES:
        return tl.DTYPES[name]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError("not a Python literal or a dtype") from None


def load_kernels(path: str) -> list[KernelFunction]:
    """The kernels a Python file defines, in order of definition."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise TawaError(f"cannot open input: {err.strerror}", path) from None
    _check_bytes(path, data)
    spec = importlib.util.spec_from_file_location("__tawa_frontend_input__", path)
    if spec is None or spec.loader is None:
        raise TawaError("not a Python file", f"{path}:1:1")
    module = importlib.util.module_from_spec(spec)
    try:
        # Compiled under the path as given (not the absolute one the loader
        # would use), so that every location names the file as the user does.
        exec(compile(data, path, "exec", dont_inherit=True), vars(module))  # noqa: S102 - the user's kernel file
    except SyntaxError as err:
        raise TawaError(err.msg, f"{path}:{err.lineno or 1}:{err.offset or 1}") from None
    except TawaError:
        raise
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the user's module failed to import
        raise TawaError(f"importing the file raised {type(err).__name__}: {first_line(err)}",
                        _import_error_location(path, data, err)) from None
    kernels = [v for v in vars(module).values() if isinstance(v, KernelFunction)]
    return sorted(kernels, key=lambda k: k.fn.__code__.co_firstlineno)


def _check_bytes(path: str, data: bytes) -> None:
    """A NUL byte, or a byte its encoding (UTF-8 unless declared) does not
    decode, is an error at that byte: Python's own errors have no line."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise TawaError("the file contains a NUL byte", _byte_location(path, data, nul))
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except SyntaxError as err:  # an unknown or contradictory coding declaration
        raise TawaError(err.msg, f"{path}:1:1") from None
    except UnicodeDecodeError as err:
        raise TawaError(f"the file is not valid {encoding} (byte 0x{data[err.start]:02x})",
                        _byte_location(path, data, err.start)) from None


def _byte_location(path: str, data: bytes, pos: int) -> str:
    """`path:line:col` of byte `pos`, the column counted in characters."""
    start = data.rfind(b"\n", 0, pos) + 1
    line = data.count(b"\n", 0, pos) + 1
    return f"{path}:{line}:{len(data[start:pos].decode('utf-8', 'replace')) + 1}"


def _import_error_location(path: str, data: bytes, err: BaseException) -> str:
    """`path:line:col` of the innermost frame of `path` in the traceback
    (the expression's column where Python records it); for an error raised
    while Python compiled the file (a RecursionError), the first statement
    that Python cannot compile alone."""
    real = os.path.realpath(path)
    frames = [f for f in traceback.extract_tb(err.__traceback__) if os.path.realpath(f.filename) == real]
    lines = data.decode("utf-8", "replace").splitlines()
    if frames:
        frame = frames[-1]
        line = frame.lineno or 1
        text = lines[line - 1] if line <= len(lines) else ""
        if frame.colno is not None and frame.lineno == getattr(frame, "end_lineno", frame.lineno):
            col = len(text.encode()[: frame.colno].decode("utf-8", "replace")) + 1  # colno counts bytes
        else:
            col = len(text) - len(text.lstrip()) + 1
        return f"{path}:{line}:{col}"
    return f"{path}:{_uncompilable_statement(data)}"


def _uncompilable_statement(data: bytes) -> str:
    """`line:col` of the first logical line that Python cannot compile on its
    own for a RecursionError (too deeply nested), else `1:1`."""
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(data).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return "1:1"
    start = None
    for tok in tokens:
        if start is None and tok.type not in (tokenize.ENCODING, tokenize.NL, tokenize.COMMENT,
                                              tokenize.INDENT, tokenize.DEDENT):
            start = tok
        if tok.type == tokenize.NEWLINE and start is not None:
            text = " ".join(t.string for t in tokens if start.start <= t.start < tok.start)
            try:  # a compound statement's header alone, given an empty body
                compile(f"{text} pass" if text.endswith(":") else text, "<line>", "exec")
            except RecursionError:
                return f"{start.start[0]}:{start.start[1] + 1}"
            except (SyntaxError, ValueError, MemoryError):
                pass
            start = None
    return "1:1"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line and exit 1, like tawa-opt
        raise TawaError(message, PROG)


def _constexprs(items: list[str]) -> dict[str, str]:
    """NAME=VALUE pairs of --constexpr (values parsed once the kernels are known)."""
    given = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise TawaError(f"--constexpr expects NAME=VALUE, got {item!r}", PROG)
        given[name] = value
    return given


def _values(given: dict[str, str], kernels: list[KernelFunction], path: str) -> dict[str, Any]:
    """The --constexpr values; an unknown name or a bad value is located at
    the first kernel, or at the parameter whose value it is."""
    values = {}
    for name, text in given.items():
        owner = next((k for k in kernels if name in k.constexpr_names), None)
        if owner is None:
            names = sorted({n for k in kernels for n in k.constexpr_names})
            where = kernels[0].where_parameter("") if kernels else f"{path}:1:1"
            raise TawaError(f"--constexpr {name}: no kernel has a constexpr named {name} "
                            f"(constexprs: {', '.join(names) or 'none'})", where)
        try:
            values[name] = parse_value(text)
        except ValueError:
            shown = text if len(text) <= 40 else f"{text[:37]}..."
            raise TawaError(f"--constexpr {name}={shown}: not a Python literal or a dtype",
                            owner.where_parameter(name)) from None
    return values


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog=PROG, description=__doc__.splitlines()[2])
    parser.add_argument("file")
    parser.add_argument("--constexpr", "-D", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--kernel", action="append", default=[], metavar="NAME",
                        help="print only these kernels")
    parser.add_argument("--no-locations", action="store_true",
                        help="leave out each op's location in FILE (loc(...))")
    try:
        args = parser.parse_args(argv)
        given = _constexprs(args.constexpr)
        kernels = load_kernels(args.file)
        if args.kernel:
            missing = set(args.kernel) - {k.name for k in kernels}
            if missing:
                where = kernels[0].where_parameter("") if kernels else f"{args.file}:1:1"
                raise TawaError(f"no kernel named {', '.join(sorted(missing))} "
                                f"(kernels: {', '.join(k.name for k in kernels) or 'none'})", where)
            kernels = [k for k in kernels if k.name in args.kernel]
        values = _values(given, kernels, args.file)
        funcs = []
        for k in kernels:
            mine = {n: v for n, v in values.items() if n in k.constexpr_names}
            funcs.append(k.specialize(**mine).clone())
        module = ModuleOp(funcs)
        module.location = FileLineColLoc(StringAttr(args.file), IntAttr(1), IntAttr(1))
        print(module_text(module, locations=not args.no_locations))
    except TawaError as err:
        print(err, file=sys.stderr)
        return 1
    except BrokenPipeError:  # `... | head`: the reader has what it wanted
        sys.stdout = None  # type: ignore[assignment]  # nothing left to flush at exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
