"""From a kernel's Python source to a `func.func` of `tile` IR.

The function's AST is walked once per specialization (constexpr values).
Expressions over compile-time values are evaluated by Python; the others
become ops located at the user's line and column.  Control flow:
- `for i in tl.range(lo, hi, step)` is an `scf.for`; the names assigned in the
  body that are defined before the loop and read again (in the body or after
  it) are its iter_args, which must keep their shape and dtype;
- `if` on a compile-time condition builds only the branch taken;
- everything else (`while`, `try`, `if` on a runtime value, ...) is an error
  located at the statement.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import operator
import textwrap
import types
from collections.abc import Iterator
from typing import Any

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

import tawa.language as tl
from tawa.diagnostics import TawaError, first_line, verify
from tawa.frontend import builtins as tl_builtins
from tawa.frontend.builtins import expand
from tawa.frontend.emitter import Emitter
from tawa.frontend.values import (
    TILE_DTYPES,
    Method,
    Ref,
    Scalar,
    Tile,
    describe,
    ir_type,
    is_runtime,
    memref_type,
)

MAX_EXPR_DEPTH = 64
"""Deepest nesting of expressions in a kernel.  Building and describing one
(`ast.unparse` in messages) recurses in Python, a few frames per level: this
keeps both well inside Python's default recursion limit of 1000."""

_PURE_BUILTINS = {name: getattr(builtins, name) for name in
                  ("abs", "min", "max", "int", "float", "bool", "len", "round", "isinstance", "tuple")}
"""Python functions a kernel may call on compile-time values."""

_STATEMENT_NAMES = {
    ast.While: "while loop", ast.Try: "try statement", ast.With: "with statement",
    ast.FunctionDef: "nested function", ast.ClassDef: "class definition", ast.Lambda: "lambda",
    ast.Global: "global statement", ast.Nonlocal: "nonlocal statement", ast.Delete: "del statement",
    ast.Raise: "raise statement", ast.Import: "import", ast.ImportFrom: "import",
    ast.Break: "break", ast.Continue: "continue", ast.AsyncFunctionDef: "async function",
    ast.AsyncFor: "async for", ast.AsyncWith: "async with", ast.ListComp: "list comprehension",
    ast.DictComp: "dict comprehension", ast.SetComp: "set comprehension",
    ast.GeneratorExp: "generator expression", ast.Yield: "yield", ast.Await: "await",
    ast.Match: "match statement", ast.NamedExpr: "assignment expression", ast.Starred: "starred expression",
    ast.JoinedStr: "f-string", ast.Dict: "dict", ast.Set: "set", ast.Slice: "slice",
}


class Source:
    """A kernel function's parsed source and where it lies in its file."""

    def __init__(self, fn: types.FunctionType):
        self.fn = fn
        self.filename = fn.__code__.co_filename
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as err:
            raise TawaError(f"cannot read the source of {fn.__qualname__}: {err}",
                            self.filename) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        self.col_offset = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
        self.line_offset = first - 1
        try:
            node = ast.parse(dedented).body[0]
        except SyntaxError as err:  # a lambda in the middle of an expression
            raise TawaError(f"cannot parse the source of {fn.__qualname__}: {err.msg}", self.filename) from None
        if not isinstance(node, ast.FunctionDef):
            raise TawaError(f"{fn.__qualname__}: a kernel is a plain `def` (not a lambda or async def)",
                            f"{self.filename}:{first}")
        self.tree = node


class KernelBuilder(Emitter):
    """Builds one specialization of a kernel (`build`)."""

    def __init__(self, source: Source, constexprs: dict[str, Any]):
        super().__init__(source.filename, source.line_offset, source.col_offset)
        self.src = source
        self.fn = source.fn
        self.constexprs = constexprs
        self.env: dict[str, Any] = {}
        self.assigned_at: dict[str, ast.AST] = {}
        self.loop_locals: dict[str, int] = {}
        """Names assigned only inside a loop body that ended: their lines."""
        self.live_after: set[str] = set()
        self.depth = 0
        """How deep in nested expressions the walk is."""

    # ------------------------------------------------------------------ the function

    def build(self) -> func.FuncOp:
        tree = self.src.tree
        self.node = tree
        params = self.parameters(tree)
        arg_types = [memref_type(kind.dtype, kind.rank) if isinstance(kind, tl.tensor_ref) else ir_type(kind)
                     for _, kind, _ in params]
        entry = Block(arg_types=arg_types)
        self.block = entry
        for (name, kind, node), arg in zip(params, entry.args):
            arg.name_hint = name
            arg.location = self.location(node)
            self.env[name] = (Ref(arg, kind.dtype, kind.rank, name) if isinstance(kind, tl.tensor_ref)
                              else Scalar(arg, kind))
        for name, value in self.constexprs.items():
            self.env[name] = value
        body = list(tree.body)
        if body and isinstance(body[-1], ast.Return) and body[-1].value is None:
            body.pop()
        self.statements(body, set())
        self.node = tree
        self.emit(func.ReturnOp())
        self.place_constants(entry)
        fn = func.FuncOp(tree.name, (arg_types, []), Region(entry))
        fn.location = self.location()
        verify(ModuleOp([fn.clone()]))
        return fn

    def parameters(self, tree: ast.FunctionDef) -> list[tuple[str, Any, ast.arg]]:
        """The runtime parameters: (name, tl.tensor_ref or dtype, node)."""
        args = tree.args
        for extra in (args.vararg, args.kwarg):
            if extra is not None:
                raise self.error("kernels take named parameters only (no *args or **kwargs)", extra)
        out = []
        for a in args.posonlyargs + args.args + args.kwonlyargs:
            if a.annotation is None:
                raise self.error(f"parameter '{a.arg}' has no annotation: annotate it "
                                 "tl.tensor_ref(dtype, rank), tl.index, a scalar dtype (tl.f32) "
                                 "or tl.constexpr", a)
            self.node = a.annotation
            kind = self.expr(a.annotation)
            if kind is tl.constexpr:
                continue
            if isinstance(kind, tl.tensor_ref):
                self.check_dtype(kind.dtype, f"parameter '{a.arg}'")
                if not isinstance(kind.rank, int) or not 1 <= kind.rank <= 5:
                    raise self.error(f"parameter '{a.arg}': rank must be 1 to 5, got {kind.rank!r}",
                                     a.annotation)
            elif isinstance(kind, tl.dtype):
                self.check_dtype(kind, f"parameter '{a.arg}'")
            else:
                raise self.error(f"parameter '{a.arg}': annotation {describe(kind)} is not "
                                 "tl.tensor_ref(dtype, rank), a dtype or tl.constexpr", a.annotation)
            out.append((a.arg, kind, a))
        return out

    # ------------------------------------------------------------------ statements

    def statements(self, body: list[ast.stmt], live_after: set[str]) -> None:
        for i, stmt in enumerate(body):
            self.live_after = _loads(body[i + 1 :]) | live_after
            self.node = stmt
            with self.located():
                self.statement(stmt)

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return  # a docstring
            self.expr(s.value)
        elif isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise self.error("chained assignment (a = b = ...) is not supported", s)
            self.assign(s.targets[0], self.expr(s.value), s)
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name):
                raise self.error("augmented assignment to anything but a name is not supported", s)
            current = self.name(s.target.id, s.target)
            self.node = s
            self.assign(s.target, self.operator(s.op, current, self.expr(s.value), s), s)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, self.expr(s.value), s)
        elif isinstance(s, ast.For):
            self.for_loop(s)
        elif isinstance(s, ast.If):
            cond = self.expr(s.test)
            if is_runtime(cond):
                raise self.error(f"if on a runtime value ({describe(cond)}): only constexpr conditions "
                                 "are supported (use tl.where for an elementwise choice)", s.test)
            live = self.live_after
            self.statements(s.body if cond else s.orelse, live)
        elif isinstance(s, ast.Assert):
            cond = self.expr(s.test)
            if is_runtime(cond):
                raise self.error("assert on a runtime value: only constexpr conditions are checked", s.test)
            if not cond:
                msg = self.expr(s.msg) if s.msg is not None else ast.unparse(s.test)
                raise self.error(f"assertion failed: {msg}", s)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Return):
            what = "a value" if s.value is not None else "early"
            raise self.error(f"kernels do not return {what}: write results with tl.store", s)
        else:
            raise self.error(f"unsupported Python construct in a kernel: {_construct(s)}", s)

    def assign(self, target: ast.expr, value: Any, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, Scalar | Tile) and value.value.name_hint is None and target.id.isidentifier():
                value.value.name_hint = target.id
            self.env[target.id] = value
            self.assigned_at[target.id] = stmt
            self.loop_locals.pop(target.id, None)
        elif isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                n = len(value) if isinstance(value, tuple) else 1
                raise self.error(f"cannot unpack {n} value(s) into {len(target.elts)} names", stmt)
            for t, v in zip(target.elts, value):
                self.assign(t, v, stmt)
        else:
            raise self.error(f"assignment to {_construct(target)} is not supported "
                             "(tiles are values: build a new one)", target)

    def for_loop(self, s: ast.For) -> None:
        it = s.iter
        python_range = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
        fn = self.expr(it.func) if isinstance(it, ast.Call) and not python_range else None
        if fn is not tl.range:
            raise self.error("for loops iterate over tl.range(start, end, step) only", s.iter)
        if s.orelse:
            raise self.error("for ... else is not supported", s.orelse[0])
        if not isinstance(s.target, ast.Name):
            raise self.error("the loop variable must be a single name", s.target)
        if s.target.id in self.env:
            # Python would rebind the name to the loop's last index; a loop's index here is
            # its own, gone after the loop, so a value of that name before it cannot be kept.
            at = self.assigned_at.get(s.target.id)
            where = f" (line {at.lineno + self.line_offset})" if at is not None else ""
            raise self.error(f"the loop variable '{s.target.id}' reuses the name of a value defined before the "
                             f"loop{where}: give the loop its own variable", s.target)
        assert isinstance(it, ast.Call)
        self.node = it
        args = [self.expr(a) for a in it.args]
        kwargs = {k.arg: self.expr(k.value) for k in it.keywords if k.arg}
        try:
            bound = inspect.signature(tl.range.__wrapped__).bind(*args, **kwargs)
        except TypeError as err:
            raise self.error(f"tl.range: {err}") from None
        bound.apply_defaults()
        lo, hi, step = bound.arguments["start"], bound.arguments["end"], bound.arguments["step"]
        if hi is None:
            lo, hi = 0, lo
        if not is_runtime(step) and isinstance(step, int) and step <= 0:
            raise self.error(f"tl.range: the step must be positive, got {step}")
        lb, ub, st = (self.index(x, "tl.range") for x in (lo, hi, step))

        assigned = _stores(s.body)
        live = _loads(s.body) | self.live_after
        # In order of definition before the loop (the iter_args' order).
        carried = [n for n in self.env if n in assigned and n in live and n != s.target.id]
        for n in carried:
            v = self.env[n]
            if not isinstance(v, Scalar | Tile):
                raise self.error(f"'{n}' is assigned in the loop, but before it is {describe(v)}: "
                                 "only tiles and runtime scalars can be loop-carried",
                                 self.assigned_at.get(n, s))
        inits = [self.env[n] for n in carried]
        body = Block(arg_types=[ir_type(tl.index)] + [v.value.type for v in inits])
        body.args[0].name_hint = s.target.id
        body.args[0].location = self.location(s.target)
        for arg in body.args[1:]:
            arg.location = self.location(s)
        outer_env, outer_block, outer_live = dict(self.env), self.block, self.live_after
        for n, v, arg in zip(carried, inits, body.args[1:]):
            arg.name_hint = n
            self.env[n] = Tile(arg, v.shape, v.dtype) if isinstance(v, Tile) else Scalar(arg, v.dtype)
        self.env[s.target.id] = Scalar(body.args[0], tl.index)
        self.block = body
        self.statements(s.body, live)
        results = []
        for n, init in zip(carried, inits):
            v = self.env[n]
            at = self.assigned_at.get(n, s)
            self.node = at
            if isinstance(v, Scalar | Tile) and type(v) is type(init) and v.dtype == init.dtype and (
                    not isinstance(v, Tile) or v.shape == init.shape):  # type: ignore[union-attr]
                results.append(v.value)
                continue
            if not is_runtime(v) and isinstance(init, Scalar):
                results.append(self.scalar_of(v, init.dtype, n))
                continue
            change = ("dtype" if isinstance(v, Tile) and isinstance(init, Tile) and v.shape == init.shape
                      else "shape")
            raise self.error(f"loop-carried '{n}' changes {change} in the loop: {describe(init)} before "
                             f"it, {describe(v)} after the body (a loop-carried value keeps its type)", at)
        self.node = s
        self.emit(scf.YieldOp(*results))
        self.block = outer_block
        loop = self.emit(scf.ForOp(lb, ub, st, [v.value for v in inits], Region(body)))
        body_env = self.env
        self.env, self.live_after = outer_env, outer_live
        for n, init, res in zip(carried, inits, loop.results):
            res.name_hint = n
            self.env[n] = Tile(res, init.shape, init.dtype) if isinstance(init, Tile) else Scalar(res, init.dtype)
        for n in set(body_env) - set(carried):
            if n not in outer_env or body_env[n] is not outer_env[n]:
                self.env.pop(n, None)
                self.loop_locals[n] = self.assigned_at[n].lineno + self.line_offset \
                    if n in self.assigned_at else s.lineno + self.line_offset

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Any:
        saved = self.node
        self.node = node
        self.depth += 1
        try:
            if self.depth > MAX_EXPR_DEPTH:
                raise self.error(f"expression nested more than {MAX_EXPR_DEPTH} deep (split it with assignments)")
            with self.located():
                return self._expr(node)
        finally:
            self.node = saved
            self.depth -= 1

    @contextlib.contextmanager
    def located(self) -> Iterator[None]:
        """Any error but a TawaError becomes one at the innermost node being
        built: an xdsl verifier's (a value its attribute cannot hold) as
        itself, anything else as an internal error, still one located line."""
        try:
            yield
        except TawaError:
            raise
        except VerifyException as err:
            raise self.error(first_line(err).removeprefix("Operation does not verify: ")) from None
        except RecursionError:
            raise self.error("expression nested too deeply to build") from None
        except Exception as err:  # noqa: BLE001 - a bug of the front end, reported where it happened
            raise self.error(f"internal error: {type(err).__name__}: {first_line(err)}") from None

    def _expr(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node.id, node)
        if isinstance(node, ast.Tuple | ast.List):
            return tuple(self.expr(e) for e in node.elts)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.expr(node.value), node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            return self.operator(node.op, self.expr(node.left), self.expr(node.right), node)
        if isinstance(node, ast.UnaryOp):
            x = self.expr(node.operand)
            if not is_runtime(x):
                return _python(self, lambda: _UNARY[type(node.op)](x))
            if isinstance(node.op, ast.USub) and isinstance(x, Scalar | Tile):
                if x.dtype.is_float:
                    return self.wrap(self.result(arith.NegfOp(x.value)), x.dtype,
                                     x.shape if isinstance(x, Tile) else None)
                return self.binary(ast.Sub(), 0, x)
            if isinstance(node.op, ast.UAdd):
                return x
            raise self.error(f"{ast.unparse(node)}: operator not supported on {describe(x)}")
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.error("chained comparisons are not supported", node)
            a, b = self.expr(node.left), self.expr(node.comparators[0])
            if not is_runtime(a) and not is_runtime(b):
                return _python(self, lambda: _COMPARE[type(node.ops[0])](a, b))
            return self.compare(node.ops[0], a, b)
        if isinstance(node, ast.BoolOp):
            values = [self.expr(v) for v in node.values]
            if any(is_runtime(v) for v in values):
                raise self.error("and/or take constexpr values only (use & and | on mask tiles)", node)
            result = values[0]
            for v in values[1:]:
                result = (result and v) if isinstance(node.op, ast.And) else (result or v)
            return result
        if isinstance(node, ast.IfExp):
            cond = self.expr(node.test)
            if is_runtime(cond):
                raise self.error("a conditional expression needs a constexpr condition "
                                 "(use tl.where for an elementwise choice)", node.test)
            return self.expr(node.body if cond else node.orelse)
        if isinstance(node, ast.Subscript):
            return self.subscript(self.expr(node.value), node)
        raise self.error(f"unsupported Python construct in a kernel: {_construct(node)}", node)

    def name(self, name: str, node: ast.AST) -> Any:
        if name in self.env:
            return self.env[name]
        if name in self.loop_locals:
            raise self.error(f"'{name}' is assigned only inside the loop (line {self.loop_locals[name]}): "
                             "define it before the loop to carry it out", node)
        g = self.fn.__globals__
        if name in g:
            return g[name]
        closure = inspect.getclosurevars(self.fn).nonlocals
        if name in closure:
            return closure[name]
        if name in _PURE_BUILTINS:
            return _PURE_BUILTINS[name]
        raise self.error(f"name '{name}' is not defined", node)

    def attribute(self, obj: Any, node: ast.Attribute) -> Any:
        attr = node.attr
        if obj is tl:
            if not hasattr(tl, attr) or attr.startswith("_"):
                raise self.error(f"unknown tl function tl.{attr}", node)
            return getattr(tl, attr)
        if isinstance(obj, Tile | Scalar):
            if attr == "dtype":
                return obj.dtype
            if attr == "shape":
                return obj.shape if isinstance(obj, Tile) else ()
            if attr == "T":
                return tl_builtins.call(self, tl.trans, [obj], {})
            if attr == "to":
                return Method(obj, attr)
            raise self.error(f"{describe(obj)} has no attribute '{attr}' (it has .to, .shape, .dtype, .T)",
                             node)
        if isinstance(obj, Ref):
            if attr == "dtype":
                return obj.dtype
            raise self.error(f"{describe(obj)} has no attribute '{attr}'", node)
        if isinstance(obj, types.ModuleType | type) or not is_runtime(obj):
            if not hasattr(obj, attr):
                raise self.error(f"{describe(obj)} has no attribute '{attr}'", node)
            return getattr(obj, attr)
        raise self.error(f"{describe(obj)} has no attribute '{attr}'", node)

    def call(self, node: ast.Call) -> Any:
        fn = self.expr(node.func)
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error("*args in calls are not supported", a)
        args = [self.expr(a) for a in node.args]
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.error("**kwargs in calls are not supported", k.value)
            kwargs[k.arg] = self.expr(k.value)
        self.node = node
        if isinstance(fn, tl._Builtin):
            return tl_builtins.call(self, fn, args, kwargs)
        if isinstance(fn, Method):
            if len(args) != 1 or kwargs:
                raise self.error(f".to takes one dtype, got {len(args)} arguments", node)
            return self.convert(fn.target, args[0])
        if callable(fn) and not is_runtime(fn):
            runtime = [v for v in [*args, *kwargs.values()] if is_runtime(v)]
            if runtime:
                raise self.error(f"{ast.unparse(node.func)} is Python, evaluated while the kernel is built: "
                                 f"it cannot take the runtime value {describe(runtime[0])} "
                                 "(only tl functions run in the kernel)", node)
            return _python(self, lambda: fn(*args, **kwargs))
        raise self.error(f"{describe(fn)} is not callable", node)

    def operator(self, op: ast.operator, a: Any, b: Any, node: ast.AST) -> Any:
        saved = self.node
        self.node = node
        try:
            if not is_runtime(a) and not is_runtime(b):
                return _python(self, lambda: _BINARY[type(op)](a, b))
            return self.binary(op, a, b)
        finally:
            self.node = saved

    def subscript(self, obj: Any, node: ast.Subscript) -> Any:
        if not is_runtime(obj):
            key = self.expr(node.slice)
            return _python(self, lambda: obj[key])
        if not isinstance(obj, Tile):
            raise self.error(f"{describe(obj)} cannot be indexed", node)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        full = [isinstance(i, ast.Slice) and i.lower is None and i.upper is None and i.step is None
                for i in items]
        new = [isinstance(i, ast.Constant) and i.value is None for i in items]
        if not all(f or n for f, n in zip(full, new)) or sum(full) != len(obj.shape):
            raise self.error(f"tiles are indexed only to add dimensions: x[None, :] or x[:, None] with one ':' "
                             f"per dimension of {describe(obj)}", node)
        out = obj
        for axis, is_new in enumerate(new):
            if is_new:
                out = expand(self, out, axis)
        return out


# ---------------------------------------------------------------- helpers

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.MatMult: operator.matmul,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}


def _python(b: KernelBuilder, thunk: Any) -> Any:
    """Evaluates compile-time Python; its exceptions become located errors."""
    try:
        return thunk()
    except TawaError:
        raise
    except Exception as err:  # noqa: BLE001 - any error of user code at compile time
        raise b.error(f"{b.source()}: {type(err).__name__}: {err}") from None


def _construct(node: ast.AST) -> str:
    return _STATEMENT_NAMES.get(type(node), type(node).__name__)


def _stores(body: list[ast.stmt]) -> list[str]:
    """Names assigned in `body`, in order of first assignment."""
    out: dict[str, None] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.setdefault(node.id)
    return list(out)


def _loads(body: list[ast.stmt]) -> set[str]:
    """Names read in `body` (augmented assignments read their target)."""
    out = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                out.add(node.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                out.add(node.target.id)
    return out


__all__ = ["TILE_DTYPES", "KernelBuilder", "Source"]
