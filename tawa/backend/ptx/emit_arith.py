"""PTX emitters of the `arith` ops on scalars.

Integer constants are remembered (`p.consts`) so that a later operand may be
printed as an immediate, and get a register only if some instruction reads
one; that is spelling, not folding: every other op prints its instruction.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter

CMP = {
    "eq": "eq", "ne": "ne", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge",
    "ult": "lo", "ule": "ls", "ugt": "hi", "uge": "hs",
}
SIGNED = {"slt", "sle", "sgt", "sge"}
"""Integer comparison predicates that compare as signed."""
_INT_BINARY = {
    arith.AddiOp: "add.s", arith.SubiOp: "sub.s", arith.MuliOp: "mul.lo.s",
    arith.DivUIOp: "div.u", arith.RemUIOp: "rem.u", arith.DivSIOp: "div.s",
    arith.RemSIOp: "rem.s", arith.MinUIOp: "min.u", arith.MaxUIOp: "max.u",
    arith.MinSIOp: "min.s", arith.MaxSIOp: "max.s",
    arith.AndIOp: "and.b", arith.OrIOp: "or.b", arith.XOrIOp: "xor.b",
    arith.ShLIOp: "shl.b", arith.ShRUIOp: "shr.u", arith.ShRSIOp: "shr.s",
}
_SHIFTS = (arith.ShLIOp, arith.ShRUIOp, arith.ShRSIOp)
_PRED_BINARY = {arith.AndIOp: "and.pred", arith.OrIOp: "or.pred", arith.XOrIOp: "xor.pred"}
_FLOAT_BINARY = {
    arith.AddfOp: "add.f32", arith.SubfOp: "sub.f32", arith.MulfOp: "mul.f32",
    arith.DivfOp: "div.rn.f32", arith.MaximumfOp: "max.NaN.f32", arith.MinimumfOp: "min.NaN.f32",
}


def int_bits(t: Attribute) -> str:
    """PTX width suffix of an integer or index value."""
    return "32" if isinstance(t, IntegerType) and t.width.data == 32 else "64"


def emit_constant(p: KernelPrinter, op: arith.ConstantOp) -> None:
    v = op.value
    r = p.define(op.result)
    t = op.result.type
    if isinstance(v, IntegerAttr) and isinstance(t, IntegerType) and t.width.data == 1:
        tmp = p.regs.new("r")
        p.emit(f"mov.u32 {tmp}, {1 if v.value.data else 0};")
        p.emit(f"setp.ne.u32 {r}, {tmp}, 0;")
    elif isinstance(v, IntegerAttr):
        p.consts[op.result] = v.value.data
        p.emit_unless_unused(r, f"mov.u{int_bits(t)} {r}, {v.value.data};")
    elif isinstance(v, FloatAttr) and isinstance(t, Float32Type):
        bits = struct.unpack("<I", struct.pack("<f", v.value.data))[0]
        p.emit(f"mov.f32 {r}, 0f{bits:08X};")
    else:
        raise p.unsupported(op, f"constants of type {t}")


def emit_int_binary(p: KernelPrinter, op: Operation) -> None:
    lhs, rhs = op.operands
    r = p.define(op.results[0])
    t = op.results[0].type
    if isinstance(t, IntegerType) and t.width.data == 1:
        if type(op) not in _PRED_BINARY:
            raise p.unsupported(op, "on i1")
        p.emit(f"{_PRED_BINARY[type(op)]} {r}, {p.reg(lhs)}, {p.reg(rhs)};")
        return
    bits = int_bits(t)
    c = p.consts.get(rhs)
    if c is None and type(op) in _SHIFTS and bits == "64":
        raise p.unsupported(op, "64-bit shifts by a register")  # PTX shift amounts are .u32
    b = str(c) if c is not None and 0 <= c < 2**31 else p.reg(rhs)
    p.emit(f"{_INT_BINARY[type(op)]}{bits} {r}, {p.reg(lhs)}, {b};")


def emit_float_binary(p: KernelPrinter, op: Operation) -> None:
    lhs, rhs = op.operands
    p.emit(f"{_FLOAT_BINARY[type(op)]} {p.define(op.results[0])}, {p.reg(lhs)}, {p.reg(rhs)};")


def emit_negf(p: KernelPrinter, op: arith.NegfOp) -> None:
    """`neg.f32`: the sign flipped (of ±0, inf and NaN too)."""
    if not isinstance(op.result.type, Float32Type):
        raise p.unsupported(op, f"on {op.result.type}")
    p.emit(f"neg.f32 {p.define(op.result)}, {p.reg(op.operand)};")


def emit_cmpi(p: KernelPrinter, op: arith.CmpiOp) -> None:
    pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    sign = "s" if pred in SIGNED else "u"
    r = p.define(op.result)
    p.emit(f"setp.{CMP[pred]}.{sign}{int_bits(op.lhs.type)} {r}, {p.reg(op.lhs)}, {p.reg(op.rhs)};")


def emit_index_cast(p: KernelPrinter, op: arith.IndexCastOp) -> None:
    r = p.define(op.result)
    src, dst = op.input.type, op.result.type
    if isinstance(dst, IndexType):
        p.emit(f"cvt.s64.s{int_bits(src)} {r}, {p.reg(op.input)};")
    else:
        p.emit(f"cvt.u{int_bits(dst)}.u64 {r}, {p.reg(op.input)};")


def emit_int_to_float(p: KernelPrinter, op: arith.SIToFPOp | arith.UIToFPOp) -> None:
    """An integer scalar (a size, `N.to(tl.f32)`) as an f32, rounded to nearest."""
    if not isinstance(op.result.type, Float32Type):
        raise p.unsupported(op, f"conversions to {op.result.type}")
    sign = "s" if isinstance(op, arith.SIToFPOp) else "u"
    p.emit(f"cvt.rn.f32.{sign}{int_bits(op.input.type)} {p.define(op.result)}, {p.reg(op.input)};")


def emit_select(p: KernelPrinter, op: arith.SelectOp) -> None:
    r = p.define(op.result)
    kind = {"r": "b32", "rd": "b64", "f": "f32"}[p.reg_class(op.result.type)]
    p.emit(f"selp.{kind} {r}, {p.reg(op.lhs)}, {p.reg(op.rhs)}, {p.reg(op.cond)};")


EMITTERS: dict[type[Operation], Callable] = {
    arith.ConstantOp: emit_constant,
    arith.CmpiOp: emit_cmpi,
    arith.IndexCastOp: emit_index_cast,
    arith.SelectOp: emit_select,
    arith.NegfOp: emit_negf,
    arith.SIToFPOp: emit_int_to_float,
    arith.UIToFPOp: emit_int_to_float,
    **{cls: emit_int_binary for cls in _INT_BINARY},
    **{cls: emit_float_binary for cls in _FLOAT_BINARY},
}
"""Emitter of each op this module prints."""
