"""Building `tile` IR for the front end: ops at the user's source location,
constants, and the typing rules of elementwise math.

Rules (docs/frontend.md, "Types"):
- Compile-time numbers take the dtype of the value they meet (a float
  literal does not meet an integer value).
- Runtime values of different dtypes never mix implicitly: write `x.to(dt)`.
  The one exception is an `index` scalar meeting an integer tile: offsets are
  `index`, index tiles are i32 (`arith.index_cast`, as the .mlir examples do).
- Shapes broadcast as in NumPy: missing leading dimensions are inserted
  (`tile.expand_dims`), extent-1 dimensions stretch (`tile.broadcast`), and a
  scalar becomes a tile with `tile.splat`.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import Block, Operation, SSAValue

import tawa.language as tl
from tawa.diagnostics import TawaError
from tawa.dialects import tile
from tawa.frontend.values import (
    TILE_DTYPES,
    Scalar,
    Tile,
    broadcast_shapes,
    describe,
    ir_type,
    is_runtime,
    shape_str,
    tensor_type,
)

_FLOAT_OPS = {ast.Add: arith.AddfOp, ast.Sub: arith.SubfOp, ast.Mult: arith.MulfOp, ast.Div: arith.DivfOp}
_INT_OPS = {
    ast.Add: arith.AddiOp, ast.Sub: arith.SubiOp, ast.Mult: arith.MuliOp,
    # Offsets and sizes are non-negative: unsigned division is exact for them.
    ast.FloorDiv: arith.DivUIOp, ast.Mod: arith.RemUIOp,
    ast.BitAnd: arith.AndIOp, ast.BitOr: arith.OrIOp, ast.BitXor: arith.XOrIOp,
}
_CMP = {ast.Lt: "slt", ast.LtE: "sle", ast.Gt: "sgt", ast.GtE: "sge", ast.Eq: "eq", ast.NotEq: "ne"}
_CMPF = {ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq", ast.NotEq: "une"}


class Emitter:
    """Inserts ops at the end of `block`, located at `node` of `filename`.

    `line_offset` and `col_offset` map positions in the parsed (dedented)
    source to the file's."""

    def __init__(self, filename: str, line_offset: int, col_offset: int):
        self.filename = filename
        self.line_offset = line_offset
        self.col_offset = col_offset
        self.node: ast.AST | None = None
        self.block: Block | None = None
        self.constants: dict[tuple[str, Any], arith.ConstantOp] = {}

    # ------------------------------------------------------------------ locations

    def where(self, node: ast.AST | None = None) -> str:
        node = node or self.node
        if node is None or not hasattr(node, "lineno"):
            return self.filename
        line, col = self.position(node)
        return f"{self.filename}:{line}:{col}"

    def position(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno + self.line_offset, node.col_offset + self.col_offset + 1  # type: ignore[attr-defined]

    def error(self, message: str, node: ast.AST | None = None) -> TawaError:
        return TawaError(message, self.where(node))

    def source(self, node: ast.AST | None = None) -> str:
        return ast.unparse(node or self.node) if (node or self.node) is not None else "?"

    def location(self, node: ast.AST | None = None) -> FileLineColLoc:
        """The location of `node` (default: the node being built)."""
        node = node or self.node
        line, col = self.position(node) if node is not None and hasattr(node, "lineno") else (0, 0)
        return FileLineColLoc(StringAttr(self.filename), IntAttr(line), IntAttr(col))

    # ------------------------------------------------------------------ ops

    def emit(self, op: Operation) -> Operation:
        assert self.block is not None
        op.location = self.location()
        self.block.add_op(op)
        return op

    def result(self, op: Operation) -> SSAValue:
        return self.emit(op).results[0]

    def constant(self, value: Any, dtype: tl.dtype) -> SSAValue:
        """An `arith.constant` of `dtype`; one per (value, dtype), placed at the
        top of the kernel by `place_constants`."""
        if dtype.is_float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self.error(f"{value!r} is not a {dtype.name} number")
            try:
                attr: Any = FloatAttr(float(value), ir_type(dtype))
            except OverflowError:  # f16 and f32 values are packed; the narrower types round to inf or NaN
                attr = None
            if attr is None or (math.isfinite(value) and not math.isfinite(attr.value.data)):
                raise self.error(f"the float {value!r} is out of range of {dtype.name}")
        else:
            if isinstance(value, float) and not value.is_integer():
                raise self.error(f"the float {value!r} meets an integer value ({dtype.name}): "
                                 "write an integer or convert with .to(...)")
            if not isinstance(value, int | float):
                raise self.error(f"{value!r} is not a {dtype.name} number")
            value = int(value)
            attr = IntegerAttr(-1 if dtype is tl.i1 and value else value, ir_type(dtype))
        key = (dtype.name, repr(float(value)) if dtype.is_float else value)
        op = self.constants.get(key)
        if op is None:
            op = arith.ConstantOp(attr)
            if dtype is tl.index:
                op.result.name_hint = f"c{value}" if value >= 0 else f"c_neg{-value}"
            op.location = self.location()
            self.constants[key] = op
        return op.result

    def place_constants(self, entry: Block) -> None:
        """Puts the constants at the start of `entry`: index constants by
        value, then the others in order of first use (the .mlir examples'
        order, so that a twin of one gives the same PTX)."""
        ops = list(self.constants.values())
        index = sorted((op for op in ops if op.result.type == ir_type(tl.index)),
                       key=lambda op: op.value.value.data)
        others = [op for op in ops if op.result.type != ir_type(tl.index)]
        first = entry.first_op
        for op in index + others:
            if first is None:
                entry.add_op(op)
            else:
                entry.insert_op_before(op, first)

    # ------------------------------------------------------------------ conversions

    def check_dtype(self, dtype: Any, what: str) -> tl.dtype:
        if not isinstance(dtype, tl.dtype):
            raise self.error(f"{what}: expected a dtype (tl.bf16, tl.f32, ...), got {describe(dtype)}")
        if not dtype.supported:
            raise self.error(f"{what}: unsupported dtype {dtype!r}: tiles hold {TILE_DTYPES}")
        return dtype

    def scalar_of(self, v: Any, dtype: tl.dtype, what: str) -> SSAValue:
        """`v` (a number or a scalar) as a scalar SSA value of `dtype`."""
        if isinstance(v, Scalar):
            if v.dtype == dtype:
                return v.value
            if v.dtype.is_int and dtype.is_int and tl.index in (v.dtype, dtype):
                return self.result(arith.IndexCastOp(v.value, ir_type(dtype)))
            raise self.error(f"{what}: dtypes differ: {describe(v)} where {dtype.name} is expected "
                             f"(convert with .to(tl.{dtype.name}))")
        if is_runtime(v) or not isinstance(v, int | float | bool):
            raise self.error(f"{what}: expected a {dtype.name} scalar, got {describe(v)}")
        return self.constant(v, dtype)

    def index(self, v: Any, what: str) -> SSAValue:
        if isinstance(v, Scalar) and v.dtype is not tl.index:
            raise self.error(f"{what}: expected an index, got {describe(v)} (convert with .to(tl.index))")
        if isinstance(v, float | bool) or (not is_runtime(v) and not isinstance(v, int)):
            raise self.error(f"{what}: expected an index, got {describe(v)}")
        return self.scalar_of(v, tl.index, what)

    def broadcast(self, v: Tile, shape: tuple[int, ...], what: str) -> Tile:
        """`v` broadcast to `shape` (NumPy rules)."""
        if v.shape == shape:
            return v
        if broadcast_shapes(v.shape, shape) != shape:
            raise self.error(f"{what}: cannot broadcast {describe(v)} to {shape_str(shape)}")
        value, cur = v.value, v.shape
        while len(cur) < len(shape):
            cur = (1, *cur)
            value = self.result(tile.ExpandDimsOp.build(
                operands=[value], properties={"axis": IntegerAttr(0, 64)},
                result_types=[tensor_type(cur, v.dtype)]))
        if cur != shape:
            value = self.result(tile.BroadcastOp.build(operands=[value], result_types=[tensor_type(shape, v.dtype)]))
        return Tile(value, shape, v.dtype)

    def tile_of(self, v: Any, shape: tuple[int, ...], dtype: tl.dtype, what: str) -> Tile:
        """`v` (a tile of `dtype`, a scalar or a number) as a tile of `shape`."""
        if isinstance(v, Tile):
            return self.broadcast(v, shape, what)
        scalar = self.scalar_of(v, dtype, what)
        splat = tile.SplatOp.build(operands=[scalar], result_types=[tensor_type(shape, dtype)])
        return Tile(self.result(splat), shape, dtype)

    def unify(self, values: list[Any], what: str) -> tuple[list[Any], tl.dtype, tuple[int, ...] | None]:
        """The operands of an elementwise op as SSA values of one dtype and
        shape (None: all scalars)."""
        runtime = [v for v in values if is_runtime(v)]
        if not runtime:
            raise self.error(f"{what}: expected a tile or a runtime scalar, got "
                             f"{' and '.join(describe(v) for v in values)}")
        for v in runtime:
            if not isinstance(v, Scalar | Tile):
                raise self.error(f"{what}: {describe(v)} is not a number or tile")
        tiles = [v for v in runtime if isinstance(v, Tile)]
        # The dtype: the tiles' if any, else the scalars'.
        lead = tiles or runtime
        dtype = lead[0].dtype
        for v in lead[1:]:
            if v.dtype != dtype:
                raise self.error(f"{what}: dtypes differ: {describe(lead[0])} and {describe(v)} "
                                 "(convert one with .to(...))")
        if not tiles:
            return [self.scalar_of(v, dtype, what) for v in values], dtype, None
        shape = tiles[0].shape
        for t in tiles[1:]:
            joined = broadcast_shapes(shape, t.shape)
            if joined is None:
                first = next(x for x in tiles if broadcast_shapes(x.shape, t.shape) is None)
                raise self.error(f"{what}: cannot broadcast shapes {shape_str(first.shape)} and "
                                 f"{shape_str(t.shape)} ({describe(first)} and {describe(t)})")
            shape = joined
        for v in runtime:
            if isinstance(v, Scalar) and v.dtype != dtype and not (v.dtype is tl.index and dtype.is_int):
                raise self.error(f"{what}: dtypes differ: {describe(v)} and {describe(tiles[0])} "
                                 f"(convert with .to(tl.{dtype.name}))")
        return [self.tile_of(v, shape, dtype, what).value for v in values], dtype, shape

    def wrap(self, value: SSAValue, dtype: tl.dtype, shape: tuple[int, ...] | None) -> Scalar | Tile:
        return Scalar(value, dtype) if shape is None else Tile(value, shape, dtype)

    # ------------------------------------------------------------------ math

    def binary(self, op: ast.operator, a: Any, b: Any) -> Any:
        """`a op b` for Python operator `op` on at least one runtime value."""
        what = self.source()
        (x, y), dtype, shape = self.unify([a, b], what)
        table = _FLOAT_OPS if dtype.is_float else _INT_OPS
        cls = table.get(type(op))
        if cls is None:
            raise self.error(f"{what}: operator {_op_text(op)} is not defined on {dtype.name} values")
        return self.wrap(self.result(cls(x, y)), dtype, shape)

    def compare(self, op: ast.cmpop, a: Any, b: Any) -> Tile:
        what = self.source()
        (x, y), dtype, shape = self.unify([a, b], what)
        if shape is None:
            raise self.error(f"{what}: comparisons of runtime scalars are not supported "
                             "(only constexpr conditions steer compilation; use tl.where on tiles)")
        if type(op) not in _CMP:
            raise self.error(f"{what}: tiles compare with <, <=, >, >=, == and != only")
        if not dtype.is_int:  # IEEE: ordered comparisons (false on NaN), != unordered (true on NaN)
            pred_f = tile.CmpFPredicate(_CMPF[type(op)])
            return Tile(self.result(tile.CmpFOp(pred_f, x, y)), shape, tl.i1)
        pred = tile.CmpIPredicate(_CMP[type(op)])
        return Tile(self.result(tile.CmpIOp(pred, x, y)), shape, tl.i1)

    def convert(self, v: Scalar | Tile, dtype: tl.dtype) -> Scalar | Tile:
        """`v.to(dtype)`."""
        what = f"{self.source()}"
        dtype = self.check_dtype(dtype, what)
        if v.dtype == dtype:
            return v
        shape = v.shape if isinstance(v, Tile) else None
        target = tensor_type(shape, dtype) if shape is not None else ir_type(dtype)
        src = v.dtype
        value = v.value
        if src.is_float and dtype.is_float:
            if src.bits == dtype.bits:  # bf16 <-> f16: through f32
                via = tensor_type(shape, tl.f32) if shape is not None else ir_type(tl.f32)
                value = self.result(arith.ExtFOp(value, via))
                op: Operation = arith.TruncFOp(value, target)
            elif dtype.bits > src.bits:
                op = arith.ExtFOp(value, target)
            else:
                op = arith.TruncFOp(value, target)
        elif src.is_int and dtype.is_int and tl.index in (src, dtype):
            op = arith.IndexCastOp(value, target)
        elif src is tl.index and dtype.is_float:  # through i32, as a row length is scaled by in a norm
            via = tensor_type(shape, tl.i32) if shape is not None else ir_type(tl.i32)
            value = self.result(arith.IndexCastOp(value, via))
            op = arith.SIToFPOp(value, target)
        elif src is tl.i32 and dtype.is_float:
            op = arith.SIToFPOp(value, target)
        elif src.is_float and dtype is tl.i32:
            op = arith.FPToSIOp(value, target)
        else:
            raise self.error(f"{what}: no conversion from {src.name} to {dtype.name}")
        return self.wrap(self.result(op), dtype, shape)


def _op_text(op: ast.operator) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
            ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
            ast.RShift: ">>", ast.MatMult: "@"}.get(type(op), type(op).__name__)
