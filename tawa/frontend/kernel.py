"""`@tawa.kernel`: one Python tile program for every tool.

- `k.ir(**constexprs)`: the `tile` IR text (what `tawa-opt` parses), each op
  followed by its Python location (`loc("k.py":12:5)`), so that the errors
  of any later pass name the kernel's file, line and column;
- `k.module(**constexprs)`: the same as a `ModuleOp`, ops located at the
  Python source;
- `k.interpret(grid, *arrays, **constexprs)`: `tawa.interpret` on NumPy arrays;
- `k.compile(options=None, **constexprs)`: `tawa.compile` (a `tawa.Kernel`);
- `k[grid](*args, **constexprs)`: compile (cached) and launch on CuPy arrays
  or torch tensors.

Constexpr parameters take the keyword values given, else their defaults; each
tuple of constexpr values is built once (`specialize`).
"""

from __future__ import annotations

import functools
import inspect
import io
import types
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

import tawa.language as tl
from tawa.diagnostics import TawaError


class KernelFunction:
    """A Python function written in `tawa.language`, built into `tile` IR on
    demand."""

    def __init__(self, fn: types.FunctionType):
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"@tawa.kernel decorates a function, got {type(fn).__name__}")
        self.fn = fn
        self.name = fn.__name__
        functools.update_wrapper(self, fn)
        self._source: Any = None
        self._built: dict[tuple[tuple[str, str], ...], func.FuncOp] = {}
        self._compiled: dict[Any, Any] = {}

    def __repr__(self) -> str:
        return f"<tawa.kernel {self.name}>"

    @property
    def constexpr_names(self) -> list[str]:
        """The constexpr parameters, read from the annotations."""
        return [name for name, p in self._signature().parameters.items()
                if self._annotation(p) is tl.constexpr]

    def _signature(self) -> inspect.Signature:
        return inspect.signature(self.fn)

    def _annotation(self, p: inspect.Parameter) -> Any:
        ann = p.annotation
        if isinstance(ann, str):  # `from __future__ import annotations`
            try:
                return eval(ann, dict(self.fn.__globals__))  # noqa: S307 - the user's own annotation
            except Exception:  # noqa: BLE001 - reported, located, when the kernel is built
                return ann
        return ann

    def source(self) -> Any:
        """The parsed source (`codegen.Source`), read once."""
        from tawa.frontend.codegen import Source

        if self._source is None:
            self._source = Source(self.fn)
        return self._source

    def _where(self, parameter: str | None = None) -> str:
        """`file:line:col` of the `def`, or of one of its parameters."""
        try:
            source = self.source()
        except TawaError:  # no source to read (reported when the kernel is built)
            code = self.fn.__code__
            return f"{code.co_filename}:{code.co_firstlineno}:1"
        node = source.tree
        if parameter is not None:
            args = node.args
            node = next((a for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg == parameter), node)
        return f"{source.filename}:{node.lineno + source.line_offset}:{node.col_offset + source.col_offset + 1}"

    def where_parameter(self, name: str) -> str:
        """`file:line:col` of parameter `name` (of the `def` if there is none)."""
        return self._where(name)

    def constexprs(self, given: dict[str, Any]) -> dict[str, Any]:
        """The constexpr values of a specialization: `given`, then defaults."""
        names = self.constexpr_names
        for name in given:
            if name not in names:
                runtime = name in self._signature().parameters
                why = "a runtime parameter" if runtime else "not a parameter"
                raise TawaError(f"{self.name}: '{name}' is {why}, not a constexpr "
                                f"(its constexprs: {', '.join(names) or 'none'})", self._where())
        values = {}
        for name in names:
            if name in given:
                values[name] = given[name]
            else:
                default = self._signature().parameters[name].default
                if default is inspect.Parameter.empty:
                    raise TawaError(f"{self.name}: constexpr '{name}' has no value: give it as {name}=... "
                                    "(or a default in the signature)", self._where(name))
                values[name] = default
        return values

    def specialize(self, **constexprs: Any) -> func.FuncOp:
        """The `func.func` of this kernel for these constexpr values (built
        once per tuple of values; do not modify it)."""
        from tawa.frontend.codegen import KernelBuilder

        values = self.constexprs(constexprs)
        key = self._key(values)
        fn = self._built.get(key)
        if fn is None:
            fn = KernelBuilder(self.source(), values).build()
            self._built[key] = fn
        return fn

    @staticmethod
    def _key(values: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        return tuple((k, f"{type(v).__name__}:{v!r}") for k, v in sorted(values.items()))

    def module(self, **constexprs: Any) -> ModuleOp:
        """A fresh module holding this kernel's `func.func` (located at its `def`)."""
        fn = self.specialize(**constexprs).clone()
        module = ModuleOp([fn])
        module.location = fn.location
        return module

    def ir(self, **constexprs: Any) -> str:
        """The `tile` IR text of the kernel, for `tawa-opt` and FileCheck,
        each op's Python location after it (`loc(...)`, which `tawa-opt`
        reads back; `module_text(k.module(), locations=False)` leaves them
        out)."""
        return module_text(self.module(**constexprs))

    def interpret(self, grid: Any, *args: Any, **constexprs: Any) -> None:
        """Runs the kernel with `tawa.interpret` (NumPy arrays written in place)."""
        from tawa.interpreters import interpret

        interpret(self.module(**constexprs), self.name, grid, *args)

    def compile(self, options: dict[str, Any] | None = None, **constexprs: Any) -> Any:
        """`tawa.compile` of the kernel (cached on the IR and options)."""
        from tawa.runtime import compile

        values = self.constexprs(constexprs)
        key = (self._key(values), tuple((k, repr(v)) for k, v in sorted((options or {}).items())))
        hit = self._compiled.get(key)
        if hit is None:  # launches skip rebuilding and reprinting the module
            hit = self._compiled[key] = compile(self.module(**values), self.name, **(options or {}))
        return hit

    def __getitem__(self, grid: Any) -> Any:
        """`k[grid](*args, **constexprs)` compiles and launches over `grid`
        (`stream=` and `options=` are passed on)."""

        def launch(*args: Any, stream: Any = None, options: dict[str, Any] | None = None,
                   **constexprs: Any) -> None:
            self.compile(options, **constexprs)(*args, grid=grid, stream=stream)

        return launch

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"launch {self.name} with {self.name}[grid](...), or run it with "
                        f"{self.name}.interpret(grid, ...)")


def kernel(fn: types.FunctionType) -> KernelFunction:
    """Decorator: `fn`, written in `tawa.language`, becomes a `KernelFunction`."""
    return KernelFunction(fn)


def module_text(module: ModuleOp, locations: bool = True) -> str:
    """`module` as text; with `locations`, each op and block argument
    followed by its location, as `mlir-opt --mlir-print-debuginfo` prints
    it: `loc("k.py":12:5)`.  `tawa-opt` parses these back (its parser keeps
    a written location), so its errors name the Python source."""
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=locations).print_op(module)
    return out.getvalue()
