"""Masks on accumulator fragments: index tiles evaluated per register.

A tile program builds masks from `tile.iota`, splats, integer arithmetic,
`tile.expand_dims` / `tile.broadcast` and `tile.cmpi` (attention's key bound
and causal mask).  A 1-D iota has no layout of its own: it becomes the row or
the column coordinate only when expanded along an axis.  So these integer and
boolean tiles are first read as expressions over (row, column) — `symbolic` —
and only a mask that a `tile.select` on an accumulator needs is materialized,
as fragments computed from `nvgpu.frag_index` (`materialize`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, IntegerType, TensorType
from xdsl.ir import Operation, SSAValue

from tawa.dialects import nvgpu, tile


@dataclass(frozen=True)
class Iota:
    """The index along a 1-D tile's own axis."""


@dataclass(frozen=True)
class Coord:
    """The row (0) or column (1) coordinate of a 2-D tile."""

    axis: int


@dataclass(frozen=True)
class Scalar:
    value: SSAValue


@dataclass(frozen=True)
class Const:
    """An integer constant (a `tile.zeros` index tile: 0)."""

    value: int


@dataclass(frozen=True)
class Binary:
    kind: nvgpu.FragBinaryKind
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True)
class Compare:
    predicate: tile.CmpIPredicate
    lhs: Expr
    rhs: Expr


Expr = Iota | Coord | Scalar | Const | Binary | Compare

_BINARY = {
    arith.AddiOp: nvgpu.FragBinaryKind.ADDI,
    arith.SubiOp: nvgpu.FragBinaryKind.SUBI,
    arith.MuliOp: nvgpu.FragBinaryKind.MULI,
    arith.AndIOp: nvgpu.FragBinaryKind.ANDI,
    arith.OrIOp: nvgpu.FragBinaryKind.ORI,
}


def _on_axis(e: Expr, axis: int) -> Expr:
    """`e` (over a 1-D iota) read along `axis` of a 2-D tile."""
    match e:
        case Iota():
            return Coord(axis)
        case Binary(kind, lhs, rhs):
            return Binary(kind, _on_axis(lhs, axis), _on_axis(rhs, axis))
        case Compare(pred, lhs, rhs):
            return Compare(pred, _on_axis(lhs, axis), _on_axis(rhs, axis))
        case _:
            return e


def symbolic(value: SSAValue) -> Expr | None:
    """The expression an integer or boolean tile computes, or None when it is
    not built from iotas, splats, integer math, expansions and comparisons."""
    op = value.owner
    if isinstance(op, tile.IotaOp):
        return Iota()
    if isinstance(op, tile.SplatOp) and isinstance(op.value.type, IntegerType):
        return Scalar(op.value)
    if isinstance(op, tile.ZerosOp) and isinstance(value.type, TensorType) \
            and isinstance(value.type.get_element_type(), IntegerType):
        return Const(0)
    if isinstance(op, tile.BroadcastOp):
        return symbolic(op.input)
    if isinstance(op, tile.ExpandDimsOp):
        inner = symbolic(op.input)
        # expand_dims(x, 1): x runs down the rows; expand_dims(x, 0): along the columns.
        return None if inner is None else _on_axis(inner, 0 if op.axis.value.data == 1 else 1)
    if isinstance(op, tile.CmpIOp):
        lhs, rhs = symbolic(op.lhs), symbolic(op.rhs)
        if lhs is None or rhs is None:
            return None
        return Compare(tile.CmpIPredicate(op.predicate.data), lhs, rhs)
    if type(op) in _BINARY and isinstance(value.type, TensorType):
        lhs, rhs = symbolic(op.operands[0]), symbolic(op.operands[1])
        if lhs is None or rhs is None:
            return None
        return Binary(_BINARY[type(op)], lhs, rhs)
    return None


@dataclass
class Materializer:
    """Emits fragment ops (through `emit`) computing expressions over the
    coordinates of a 2-D fragment of type `like` (its shape and layout) of
    a warp group whose first row in the tile is `row0` (an i32 scalar)."""

    like: nvgpu.FragmentType
    row0: SSAValue
    emit: Callable[[Operation], SSAValue]

    def frag_type(self, element) -> nvgpu.FragmentType:
        return self.like.with_element_type(element)

    def __call__(self, e: Expr) -> SSAValue:
        match e:
            case Coord(0):
                rows = self.emit(
                    nvgpu.FragmentIndexOp.build(
                        properties={"axis": nvgpu.FragIndexAxisAttr(nvgpu.FragIndexAxis.ROW)},
                        result_types=[self.frag_type(IntegerType(32))],
                    )
                )
                return self.emit(nvgpu.FragmentBinaryOp(nvgpu.FragBinaryKind.ADDI, rows, self.row0))
            case Coord(1):
                return self.emit(
                    nvgpu.FragmentIndexOp.build(
                        properties={"axis": nvgpu.FragIndexAxisAttr(nvgpu.FragIndexAxis.COL)},
                        result_types=[self.frag_type(IntegerType(32))],
                    )
                )
            case Scalar(value):
                return value
            case Const(value):
                return self._const(value)
            case Binary(kind, lhs, rhs):
                return self._binary(kind, self(lhs), self(rhs))
            case Compare(pred, lhs, rhs):
                a, b = self(lhs), self(rhs)
                if not isinstance(a.type, nvgpu.FragmentType):
                    a, b, pred = b, a, _SWAPPED[pred]
                if not isinstance(a.type, nvgpu.FragmentType):
                    raise ValueError("a comparison of two scalars is not a mask")
                return self.emit(nvgpu.FragmentCmpIOp(pred, a, b))
        raise ValueError(f"a 1-D index tile ({e}) is used without being expanded to 2-D")

    def _binary(self, kind: nvgpu.FragBinaryKind, a: SSAValue, b: SSAValue) -> SSAValue:
        if not isinstance(a.type, nvgpu.FragmentType) and not isinstance(b.type, nvgpu.FragmentType):
            ops = {
                nvgpu.FragBinaryKind.ADDI: arith.AddiOp, nvgpu.FragBinaryKind.SUBI: arith.SubiOp,
                nvgpu.FragBinaryKind.MULI: arith.MuliOp, nvgpu.FragBinaryKind.ANDI: arith.AndIOp,
                nvgpu.FragBinaryKind.ORI: arith.OrIOp,
            }
            return self.emit(ops[kind](a, b))
        if not isinstance(a.type, nvgpu.FragmentType):
            if kind == nvgpu.FragBinaryKind.SUBI:
                neg = self.emit(nvgpu.FragmentBinaryOp(nvgpu.FragBinaryKind.MULI, b, self._const(-1)))
                return self.emit(nvgpu.FragmentBinaryOp(nvgpu.FragBinaryKind.ADDI, neg, a))
            a, b = b, a
        return self.emit(nvgpu.FragmentBinaryOp(kind, a, b))

    def _const(self, value: int) -> SSAValue:
        return self.emit(arith.ConstantOp(IntegerAttr(value, IntegerType(32))))


_SWAPPED = {
    tile.CmpIPredicate.EQ: tile.CmpIPredicate.EQ, tile.CmpIPredicate.NE: tile.CmpIPredicate.NE,
    tile.CmpIPredicate.SLT: tile.CmpIPredicate.SGT, tile.CmpIPredicate.SLE: tile.CmpIPredicate.SGE,
    tile.CmpIPredicate.SGT: tile.CmpIPredicate.SLT, tile.CmpIPredicate.SGE: tile.CmpIPredicate.SLE,
    tile.CmpIPredicate.ULT: tile.CmpIPredicate.UGT, tile.CmpIPredicate.ULE: tile.CmpIPredicate.UGE,
    tile.CmpIPredicate.UGT: tile.CmpIPredicate.ULT, tile.CmpIPredicate.UGE: tile.CmpIPredicate.ULE,
}


# --------------------------------------------------------------------------- all-true fast path


@dataclass(frozen=True)
class Affine:
    """`row·r + col·c + Σ k·scalar + const` over a tile's coordinates."""

    row: int
    col: int
    scalars: tuple[tuple[int, SSAValue], ...]
    const: int

    def __sub__(self, other: Affine) -> Affine:
        neg = tuple((-k, v) for k, v in other.scalars)
        return Affine(self.row - other.row, self.col - other.col, self.scalars + neg, self.const - other.const)

    def __add__(self, other: Affine) -> Affine:
        return Affine(self.row + other.row, self.col + other.col, self.scalars + other.scalars, self.const + other.const)


def affine(e: Expr) -> Affine | None:
    match e:
        case Coord(0):
            return Affine(1, 0, (), 0)
        case Coord(1):
            return Affine(0, 1, (), 0)
        case Scalar(value):
            return Affine(0, 0, ((1, value),), 0)
        case Const(value):
            return Affine(0, 0, (), value)
        case Binary(nvgpu.FragBinaryKind.ADDI, lhs, rhs):
            a, b = affine(lhs), affine(rhs)
            return None if a is None or b is None else a + b
        case Binary(nvgpu.FragBinaryKind.SUBI, lhs, rhs):
            a, b = affine(lhs), affine(rhs)
            return None if a is None or b is None else a - b
    return None


# lhs <pred> rhs  ⇔  (lhs - rhs) <pred> 0; holds everywhere when the extreme
# value of lhs - rhs does: its maximum for < and <=, its minimum for > and >=.
_NEEDS_MAX = {tile.CmpIPredicate.SLT: "slt", tile.CmpIPredicate.SLE: "sle"}
_NEEDS_MIN = {tile.CmpIPredicate.SGT: "sgt", tile.CmpIPredicate.SGE: "sge"}


def conjuncts(e: Expr) -> list[tuple[tile.CmpIPredicate, Affine]] | None:
    """The mask as a conjunction of signed comparisons of affine forms, or
    None when it is not one."""
    match e:
        case Binary(nvgpu.FragBinaryKind.ANDI, lhs, rhs):
            a, b = conjuncts(lhs), conjuncts(rhs)
            return None if a is None or b is None else a + b
        case Compare(pred, lhs, rhs) if pred in _NEEDS_MAX or pred in _NEEDS_MIN:
            a, b = affine(lhs), affine(rhs)
            return None if a is None or b is None else [(pred, a - b)]
    return None


def all_true_condition(
    e: Expr, rows: tuple[SSAValue, SSAValue], cols: tuple[int, int], emit: Callable[[Operation], SSAValue]
) -> SSAValue | None:
    """An i1 scalar that is true when mask `e` holds for every element of a
    fragment covering rows [rows[0], rows[1]] and columns [cols[0], cols[1]]
    (so the mask can be skipped), or None when `e` is not a conjunction of
    affine comparisons.  Scalars are i32."""
    parts = conjuncts(e)
    if not parts:
        return None
    i32 = IntegerType(32)

    def const(v: int) -> SSAValue:
        return emit(arith.ConstantOp(IntegerAttr(v, i32)))

    def scaled(k: int, v: SSAValue) -> SSAValue:
        return v if k == 1 else emit(arith.MuliOp(v, const(k)))

    result: SSAValue | None = None
    for pred, d in parts:
        want_max = pred in _NEEDS_MAX
        total = d.const + d.col * (cols[1] if (d.col > 0) == want_max else cols[0])
        acc = const(total)
        for k, v in d.scalars:
            acc = emit(arith.AddiOp(acc, scaled(k, v)))
        if d.row:
            extreme = rows[1] if (d.row > 0) == want_max else rows[0]
            acc = emit(arith.AddiOp(acc, scaled(d.row, extreme)))
        holds = emit(arith.CmpiOp(acc, const(0), (_NEEDS_MAX | _NEEDS_MIN)[pred]))
        result = holds if result is None else emit(arith.AndIOp(result, holds))
    return result
