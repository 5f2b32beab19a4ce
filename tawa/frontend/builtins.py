"""The IR of each `tl` function (tawa/language): shape and dtype checks first,
each failure one located error, then the ops.

`call` binds the arguments to the signature of the function in
`tawa.language` (so arity errors name it) and runs the rule of the same name.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation

import tawa.language as tl
from tawa.dialects import tile
from tawa.frontend.emitter import Emitter
from tawa.frontend.values import (
    Ref,
    Scalar,
    Tile,
    broadcast_shapes,
    describe,
    is_runtime,
    shape_str,
    tensor_type,
)

Rule = Callable[..., Any]
RULES: dict[str, Rule] = {}


def rule(fn: Rule) -> Rule:
    RULES[fn.__name__.removeprefix("_")] = fn
    return fn


def call(e: Emitter, builtin: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    name = builtin.name
    sig = inspect.signature(builtin.__wrapped__)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as err:
        raise e.error(f"tl.{name}: {err} (signature: tl.{name}{sig})") from None
    bound.apply_defaults()
    if name not in RULES:
        raise e.error(f"tl.{name} is only allowed as the iterable of a for loop")
    return RULES[name](e, **bound.arguments)


# ---------------------------------------------------------------- helpers


def _constexpr_shape(e: Emitter, shape: Any, what: str) -> tuple[int, ...]:
    """A tile shape: a tuple of positive compile-time ints."""
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, tuple) or not shape:
        raise e.error(f"{what}: the shape must be a tuple of constexpr sizes, got {describe(shape)}")
    for d in shape:
        if is_runtime(d):
            raise e.error(f"{what}: tile sizes must be constexpr, got {describe(d)} in the shape "
                          "(annotate the parameter tl.constexpr)")
        if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
            raise e.error(f"{what}: tile sizes must be positive ints, got {d!r}")
    return shape


def _tile(e: Emitter, x: Any, what: str) -> Tile:
    if not isinstance(x, Tile):
        raise e.error(f"{what}: expected a tile, got {describe(x)}")
    return x


def _axis(e: Emitter, axis: Any, rank: int, what: str, x: Any, extra: int = 0) -> int:
    if is_runtime(axis) or not isinstance(axis, int) or isinstance(axis, bool):
        raise e.error(f"{what}: axis must be a constexpr int, got {describe(axis)}")
    bound = rank + extra
    if not -bound <= axis < bound:
        raise e.error(f"{what}: axis {axis} is out of range for the {rank}-D tile {describe(x)}")
    return axis % bound


def _ref(e: Emitter, ref: Any, what: str) -> Ref:
    if not isinstance(ref, Ref):
        raise e.error(f"{what}: expected a tensor parameter (tl.tensor_ref), got {describe(ref)}")
    return ref


def _offsets(e: Emitter, ref: Ref, offsets: Any, what: str) -> list[Any]:
    if not isinstance(offsets, tuple):
        offsets = (offsets,)
    if len(offsets) != ref.rank:
        raise e.error(f"{what}: {ref.name} has rank {ref.rank} but {len(offsets)} offsets are given")
    return [e.index(o, what) for o in offsets]


# ---------------------------------------------------------------- rules


@rule
def _program_id(e: Emitter, axis: Any) -> Scalar:
    return Scalar(e.result(_grid_op(e, tile.ProgramIdOp, axis, "tl.program_id")), tl.index)


@rule
def _num_programs(e: Emitter, axis: Any) -> Scalar:
    return Scalar(e.result(_grid_op(e, tile.NumProgramsOp, axis, "tl.num_programs")), tl.index)


def _grid_op(e: Emitter, cls: Any, axis: Any, what: str) -> Operation:
    # `1.0 in (0, 1, 2)` holds: the type is checked first.
    if is_runtime(axis) or not isinstance(axis, int) or isinstance(axis, bool) or axis not in (0, 1, 2):
        raise e.error(f"{what}: axis must be 0, 1 or 2, got {describe(axis)}")
    return cls.build(properties={"axis": IntegerAttr(axis, 64)}, result_types=[IndexType()])


@rule
def _load(e: Emitter, ref: Any, offsets: Any, shape: Any) -> Tile | Scalar:
    ref = _ref(e, ref, "tl.load")
    if shape is None:  # one element, a scalar
        if ref.dtype not in (tl.i32, tl.f32):
            raise e.error(f"tl.load: a scalar (no shape) is read from an i32 or f32 tensor_ref, "
                          f"but {ref.name} holds {ref.dtype.name}")
        offs = _offsets(e, ref, offsets, "tl.load")
        return Scalar(e.result(tile.LoadScalarOp(ref.value, offs)), ref.dtype)
    shape = _constexpr_shape(e, shape, "tl.load")
    if len(shape) > ref.rank:
        raise e.error(f"tl.load: a {len(shape)}-D tile {shape_str(shape)} does not fit the "
                      f"{ref.rank}-D {ref.name}")
    offs = _offsets(e, ref, offsets, "tl.load")
    op = tile.LoadOp.build(operands=[ref.value, offs], result_types=[tensor_type(shape, ref.dtype)])
    return Tile(e.result(op), shape, ref.dtype)


@rule
def _store(e: Emitter, ref: Any, offsets: Any, value: Any) -> None:
    ref = _ref(e, ref, "tl.store")
    value = _tile(e, value, "tl.store")
    if len(value.shape) > ref.rank:
        raise e.error(f"tl.store: the {len(value.shape)}-D tile {describe(value)} does not fit the "
                      f"{ref.rank}-D {ref.name}")
    if value.dtype != ref.dtype:
        raise e.error(f"tl.store: the value is {describe(value)} but {ref.name} holds {ref.dtype.name} "
                      f"(convert with .to(tl.{ref.dtype.name}))")
    offs = _offsets(e, ref, offsets, "tl.store")
    e.emit(tile.StoreOp.build(operands=[value.value, ref.value, offs]))


@rule
def _atomic_add(e: Emitter, ref: Any, offsets: Any, value: Any) -> None:
    ref = _ref(e, ref, "tl.atomic_add")
    value = _tile(e, value, "tl.atomic_add")
    if len(value.shape) > ref.rank:
        raise e.error(f"tl.atomic_add: the {len(value.shape)}-D tile {describe(value)} does not fit the "
                      f"{ref.rank}-D {ref.name}")
    if value.dtype != tl.f32 or ref.dtype != tl.f32:
        raise e.error(f"tl.atomic_add: adds f32 tiles into an f32 tensor_ref, got {describe(value)} into "
                      f"{ref.name} of {ref.dtype.name}")
    offs = _offsets(e, ref, offsets, "tl.atomic_add")
    e.emit(tile.AtomicAddOp.build(operands=[value.value, ref.value, offs]))


@rule
def _dot(e: Emitter, a: Any, b: Any, acc: Any, trans_b: Any, trans_a: Any) -> Tile:
    a, b = _tile(e, a, "tl.dot"), _tile(e, b, "tl.dot")
    for flag, value in (("trans_b", trans_b), ("trans_a", trans_a)):
        if not isinstance(value, bool):
            raise e.error(f"tl.dot: {flag} must be a constexpr bool, got {describe(value)}")
    for x in (a, b):
        if len(x.shape) != 2:
            raise e.error(f"tl.dot: operands must be 2-D tiles, got {describe(a)} and {describe(b)}")
        if tile.dot_operand_type(tensor_type(x.shape, x.dtype).get_element_type()) is None:
            raise e.error(f"tl.dot: unsupported operand dtype {x.dtype.name} "
                          f"(wgmma multiplies {tile.DOT_OPERAND_TYPES})")
    if trans_a:
        et = tile.dot_operand_type(tensor_type(a.shape, a.dtype).get_element_type())
        if et is not None and not et.mn_major:
            raise e.error(f"tl.dot: trans_a reads a {a.dtype.name} operand transposed in place, which wgmma "
                          "does only for 16-bit types (bf16, f16): store A as M×K")
    k, m = a.shape if trans_a else a.shape[::-1]
    n, k2 = b.shape if trans_b else b.shape[::-1]
    if k != k2:
        hint = ""
        other_k = b.shape[0] if trans_b else b.shape[1]
        other_a = a.shape[1] if trans_a else a.shape[0]
        args = _call_args(e)
        if other_k == k:
            hint = (f" (did you mean tl.dot({args}, trans_b={not trans_b})?)")
        elif other_a == k2:
            hint = (f" (did you mean tl.dot({args}, trans_a={not trans_a})?)")
        flags = " with " + " and ".join(f for f, on in (("trans_a", trans_a), ("trans_b", trans_b)) if on)
        raise e.error(f"tl.dot: contraction sizes differ: {shape_str(a.shape)} and "
                      f"{shape_str(b.shape)}{flags if trans_a or trans_b else ''}{hint}")
    if acc is None:
        acc_value = e.result(tile.ZerosOp(tensor_type((m, n), tl.f32)))
    else:
        acc = _tile(e, acc, "tl.dot accumulator")
        if acc.shape != (m, n) or acc.dtype is not tl.f32:
            raise e.error(f"tl.dot: the accumulator is {describe(acc)} but the product of "
                          f"{describe(a)} and {describe(b)} is {m}x{n}xf32")
        acc_value = acc.value
    return Tile(e.result(tile.DotOp(a.value, b.value, acc_value, rhs_transposed=trans_b, lhs_transposed=trans_a)),
                (m, n), tl.f32)


def _call_args(e: Emitter) -> str:
    node = e.node
    if isinstance(node, ast.Call) and len(node.args) >= 2:
        return ", ".join(ast.unparse(x) for x in node.args[:3])
    return "a, b"


@rule
def _zeros(e: Emitter, shape: Any, dtype: Any) -> Tile:
    shape = _constexpr_shape(e, shape, "tl.zeros")
    dtype = e.check_dtype(dtype, "tl.zeros")
    return Tile(e.result(tile.ZerosOp(tensor_type(shape, dtype))), shape, dtype)


@rule
def _full(e: Emitter, shape: Any, value: Any, dtype: Any) -> Tile:
    shape = _constexpr_shape(e, shape, "tl.full")
    dtype = e.check_dtype(dtype, "tl.full")
    return e.tile_of(value, shape, dtype, "tl.full")


@rule
def _arange(e: Emitter, start: Any, end: Any) -> Tile:
    if end is None:
        start, end = 0, start
    for x in (start, end):
        if is_runtime(x) or not isinstance(x, int):
            raise e.error(f"tl.arange: bounds must be constexpr ints, got {describe(x)}")
    if end <= start:
        raise e.error(f"tl.arange: empty range [{start}, {end})")
    shape = (end - start,)
    iota = Tile(e.result(tile.IotaOp.build(result_types=[tensor_type(shape, tl.i32)])), shape, tl.i32)
    if start:
        return e.binary(ast.Add(), iota, start)
    return iota


@rule
def _trans(e: Emitter, x: Any) -> Tile:
    x = _tile(e, x, "tl.trans")
    if len(x.shape) != 2:
        raise e.error(f"tl.trans: expected a 2-D tile, got {describe(x)}")
    shape = x.shape[::-1]
    return Tile(e.result(tile.TransOp.build(operands=[x.value], result_types=[tensor_type(shape, x.dtype)])),
                shape, x.dtype)


@rule
def _expand_dims(e: Emitter, x: Any, axis: Any) -> Tile:
    x = _tile(e, x, "tl.expand_dims")
    axis = _axis(e, axis, len(x.shape), "tl.expand_dims", x, extra=1)
    return expand(e, x, axis)


def expand(e: Emitter, x: Tile, axis: int) -> Tile:
    shape = x.shape[:axis] + (1,) + x.shape[axis:]
    op = tile.ExpandDimsOp.build(operands=[x.value], properties={"axis": IntegerAttr(axis, 64)},
                                 result_types=[tensor_type(shape, x.dtype)])
    return Tile(e.result(op), shape, x.dtype)


@rule
def _broadcast_to(e: Emitter, x: Any, shape: Any) -> Tile:
    shape = _constexpr_shape(e, shape, "tl.broadcast_to")
    x = _tile(e, x, "tl.broadcast_to")
    return e.broadcast(x, shape, "tl.broadcast_to")


@rule
def _where(e: Emitter, mask: Any, x: Any, y: Any) -> Tile:
    mask = _tile(e, mask, "tl.where")
    if mask.dtype is not tl.i1:
        raise e.error(f"tl.where: the mask must be an i1 tile (a comparison), got {describe(mask)}")
    (xv, yv), dtype, shape = e.unify([x, y], "tl.where")
    shape = shape or ()
    full = broadcast_shapes(mask.shape, shape)
    if full is None:
        raise e.error(f"tl.where: cannot broadcast shapes {shape_str(mask.shape)} and {shape_str(shape)} "
                      f"(the mask and the values)")
    m = e.broadcast(mask, full, "tl.where")
    xt = e.tile_of(e.wrap(xv, dtype, shape or None), full, dtype, "tl.where")
    yt = e.tile_of(e.wrap(yv, dtype, shape or None), full, dtype, "tl.where")
    return Tile(e.result(tile.SelectOp.build(operands=[m.value, xt.value, yt.value],
                                             result_types=[tensor_type(full, dtype)])), full, dtype)


def _minmax(e: Emitter, x: Any, y: Any, what: str, ops: tuple[Any, Any, Any]) -> Any:
    if not is_runtime(x) and not is_runtime(y):  # compile-time numbers: Python computes it
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y))
        if numbers:
            return max(x, y) if what == "tl.maximum" else min(x, y)
    (xv, yv), dtype, shape = e.unify([x, y], what)
    float_op, signed_op, index_op = ops
    cls = float_op if dtype.is_float else index_op if dtype is tl.index else signed_op
    return e.wrap(e.result(cls(xv, yv)), dtype, shape)


@rule
def _maximum(e: Emitter, x: Any, y: Any) -> Any:
    return _minmax(e, x, y, "tl.maximum", (arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp))


@rule
def _minimum(e: Emitter, x: Any, y: Any) -> Any:
    return _minmax(e, x, y, "tl.minimum", (arith.MinimumfOp, arith.MinSIOp, arith.MinUIOp))


def _reduce(e: Emitter, x: Any, axis: Any, kind: tile.ReduceKind) -> Tile:
    what = f"tl.{kind.value}"
    x = _tile(e, x, what)
    axis = _axis(e, axis, len(x.shape), what, x)
    if len(x.shape) < 2:
        raise e.error(f"{what}: reductions to a scalar are not supported; reduce a 2-D tile, "
                      f"got {describe(x)}")
    shape = x.shape[:axis] + x.shape[axis + 1 :]
    op = tile.ReduceOp.build(operands=[x.value], result_types=[tensor_type(shape, x.dtype)],
                             properties={"kind": tile.ReduceKindAttr(kind), "axis": IntegerAttr(axis, 64)})
    return Tile(e.result(op), shape, x.dtype)


@rule
def _max(e: Emitter, x: Any, axis: Any) -> Tile:
    return _reduce(e, x, axis, tile.ReduceKind.MAX)


@rule
def _sum(e: Emitter, x: Any, axis: Any) -> Tile:
    return _reduce(e, x, axis, tile.ReduceKind.SUM)


def _unary(cls: Any, name: str) -> Rule:
    def fn(e: Emitter, x: Any) -> Any:
        what = f"tl.{name}"
        if not is_runtime(x):
            raise e.error(f"{what}: expected a tile or scalar, got {describe(x)} "
                          "(use Python's math module on constexprs)")
        if not isinstance(x, Scalar | Tile) or not x.dtype.is_float:
            raise e.error(f"{what}: expected float values, got {describe(x)}")
        return e.wrap(e.result(cls(x.value)), x.dtype, x.shape if isinstance(x, Tile) else None)

    fn.__name__ = name
    return fn


for _name, _cls in (("exp", math.ExpOp), ("exp2", math.Exp2Op), ("log", math.LogOp), ("log2", math.Log2Op),
                    ("sqrt", math.SqrtOp), ("rsqrt", math.RsqrtOp), ("tanh", math.TanhOp),
                    ("abs", math.AbsFOp)):
    RULES[_name] = _unary(_cls, _name)
