"""`arith` on scalars and on tensors (NumPy arrays).

xdsl's `ArithFunctions` handles scalars only; `TensorArithFunctions` extends it
and overrides every op a tile program uses so that it works elementwise on
tensors too, with the value representation of `tawa.interpreters.dtypes`.
Ops not overridden here (shifts, `cmpf`, ...) keep xdsl's scalar semantics.

Float math on f32 (and f64) is carried out in that type.  Float math on the
narrower formats (bf16, f16, f8) is carried out in f32 and rounded once to the
result type.  Integer math wraps around at the type's width.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import arith, builtin
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, TensorType
from xdsl.interpreter import Interpreter, PythonValues, impl, register_impls
from xdsl.interpreters.arith import ArithFunctions
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import InterpretationError

from tawa.interpreters.dtypes import (
    compute_dtype,
    dtype_of,
    element_dtype,
    int_bits,
    is_float_type,
    round_float,
    scalar_from_python,
    to_unsigned,
    unsigned,
    wrap_int,
)


def tensor(array: np.ndarray) -> np.ndarray:
    """Marks `array` as an immutable tile value (tiles have value semantics: no
    op may write into one; memref arrays are never aliased by one)."""
    array.flags.writeable = False
    return array


def result_type(op: Operation) -> Attribute:
    return op.results[0].type


def element_type(t: Attribute) -> Attribute:
    return t.get_element_type() if isinstance(t, TensorType) else t


# --------------------------------------------------------------------------- floats


def float_binary(op: Operation, args: PythonValues, fn: Callable[[Any, Any], Any]) -> Any:
    """`fn` applied elementwise in the compute type, rounded to the result type."""
    dt = dtype_of(result_type(op))
    ct = compute_dtype(dt)
    lhs, rhs = args
    out = fn(_as(lhs, ct), _as(rhs, ct))
    out = round_float(out, dt)
    return tensor(out) if isinstance(out, np.ndarray) else out


def float_unary(op: Operation, arg: Any, fn: Callable[[Any], Any]) -> Any:
    dt = dtype_of(result_type(op))
    out = round_float(fn(_as(arg, compute_dtype(dt))), dt)
    return tensor(out) if isinstance(out, np.ndarray) else out


def _as(x: Any, dt: np.dtype) -> Any:
    if isinstance(x, np.ndarray):
        return x if x.dtype == dt else x.astype(dt)
    return x if x.dtype == dt else dt.type(x)


def maximum(a: Any, b: Any) -> Any:
    """IEEE maximum: NaN if either is NaN, and +0 > -0 (arith.maximumf)."""
    out = np.maximum(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, a + b, out)[()] if np.any(both_zero) else out


def minimum(a: Any, b: Any) -> Any:
    """IEEE minimum: NaN if either is NaN, and -0 < +0 (arith.minimumf)."""
    out = np.minimum(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, -((-a) + (-b)), out)[()] if np.any(both_zero) else out


# --------------------------------------------------------------------------- integers


def int_binary(
    op: Operation,
    args: PythonValues,
    fn: Callable[[Any, Any], Any],
    *,
    is_unsigned: bool = False,
    divides: bool = False,
) -> Any:
    """`fn` applied to two integer operands (arrays elementwise), reading them
    as unsigned when `is_unsigned`; the result wraps at the type's width."""
    t = result_type(op)
    lhs, rhs = args
    if isinstance(lhs, np.ndarray):
        dt = dtype_of(t)
        if dt == np.bool_:  # i1: arithmetic modulo 2
            lhs, rhs = lhs.astype(np.uint8), rhs.astype(np.uint8)
        elif is_unsigned:
            lhs, rhs = lhs.view(unsigned(dt)), rhs.view(unsigned(dt))
        if divides and np.any(rhs == 0):
            raise InterpretationError(f"{op.name}: division by zero")
        out = np.asarray(fn(lhs, rhs))
        if dt == np.bool_:
            return tensor((out & 1).astype(np.bool_))
        return tensor(out.astype(lhs.dtype, copy=False).view(dt))
    bits = int_bits(t)
    if is_unsigned:
        lhs, rhs = to_unsigned(lhs, bits), to_unsigned(rhs, bits)
    else:
        lhs, rhs = int(lhs), int(rhs)
    if divides and rhs == 0:
        raise InterpretationError(f"{op.name}: division by zero")
    return wrap_int(int(fn(lhs, rhs)), bits)


def _divsi(a: Any, b: Any) -> Any:
    """Signed division rounding toward zero."""
    q = abs(a) // abs(b)
    return np.where((a < 0) != (b < 0), -q, q) if isinstance(a, np.ndarray) else (
        -q if (a < 0) != (b < 0) else q
    )


def _ceildiv(a: Any, b: Any) -> Any:
    return -((-a) // b)


def _ceildivu(a: Any, b: Any) -> Any:
    return a // b + (a % b != 0)


def _shift(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A shift; amounts of the type's width or more give a poison value in
    MLIR: the simulator reports them instead."""

    def shift(a: Any, b: Any) -> Any:
        if np.any(np.asarray(b) < 0) or np.any(np.asarray(b) >= 64):
            raise InterpretationError(f"shift by {b} bits is out of range")
        return fn(a, b)

    return shift


def _min(a: Any, b: Any) -> Any:
    return np.minimum(a, b) if isinstance(a, np.ndarray) else min(a, b)


def _max(a: Any, b: Any) -> Any:
    return np.maximum(a, b) if isinstance(a, np.ndarray) else max(a, b)


# --------------------------------------------------------------------------- casts


def cast_int(op: Operation, value: Any, *, is_unsigned: bool = False) -> Any:
    """An integer (or index) value converted to the result's integer type:
    truncation keeps the low bits; extension is by sign (or by zero when
    `is_unsigned`)."""
    src_t = element_type(op.operands[0].type)
    dst_t = element_type(result_type(op))
    src_bits = int_bits(src_t)
    if isinstance(value, np.ndarray):
        dt = dtype_of(dst_t)
        if value.dtype == np.bool_:  # i1 true is 1 unsigned, -1 signed
            src = value.astype(np.int8) if is_unsigned else -value.astype(np.int8)
        else:
            src = value.view(unsigned(value.dtype)) if is_unsigned else value
        if dt == np.bool_:
            return tensor((src & 1).astype(np.bool_))
        return tensor(src.astype(dt))
    if src_bits == 1:
        v = int(value) if is_unsigned else -int(value)
    else:
        v = to_unsigned(value, src_bits) if is_unsigned else int(value)
    return wrap_int(v, int_bits(dst_t))


def float_to_int(op: Operation, value: Any, *, is_unsigned: bool = False) -> Any:
    """Rounds toward zero and saturates at the result type's range, NaN giving
    0, as `cvt.rzi.s32.f32` / `cvt.rzi.u32.f32` do."""
    dst_t = element_type(result_type(op))
    bits = int_bits(dst_t)
    lo, hi = (0, (1 << bits) - 1) if is_unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    x = np.nan_to_num(np.trunc(np.asarray(value, dtype=np.float64)), nan=0.0)
    x = np.clip(x, lo, hi)
    if isinstance(value, np.ndarray):
        dt = dtype_of(dst_t)
        if is_unsigned:
            return tensor(x.astype(unsigned(dt)).view(dt).copy())
        return tensor(x.astype(dt))
    return wrap_int(int(x), bits)


def int_to_float(op: Operation, value: Any, *, is_unsigned: bool = False) -> Any:
    src_bits = int_bits(element_type(op.operands[0].type))
    dt = dtype_of(result_type(op))
    if isinstance(value, np.ndarray):
        src = value.view(unsigned(value.dtype)) if is_unsigned else value
        return tensor(round_float(src.astype(np.float64), dt))
    v = to_unsigned(value, src_bits) if is_unsigned else int(value)
    return round_float(np.float64(v), dt)


# --------------------------------------------------------------------------- constants


def constant_value(op: arith.ConstantOp) -> Any:
    """The Python value of an `arith.constant`."""
    attr = op.value
    t = result_type(op)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        assert isinstance(t, TensorType)
        dt = dtype_of(t)
        values = attr.get_values()
        if dt == np.bool_:
            array = np.array([v != 0 for v in values], dtype=np.bool_)
        elif is_float_type(t.get_element_type()):
            array = round_float(np.array(values, dtype=np.float64), dt)
        else:
            array = np.array([wrap_int(v, dt.itemsize * 8) for v in values], dtype=dt)
        return tensor(array.reshape(tuple(t.get_shape())))
    if isinstance(attr, IntegerAttr | FloatAttr):
        value = attr.value.data
        if isinstance(t, builtin.IntegerType) and t.width.data == 1:
            return bool(value & 1)
        return scalar_from_python(value, t)
    raise InterpretationError(f"arith.constant: unsupported value {attr}")


@register_impls
class TensorArithFunctions(ArithFunctions):
    """`arith` on scalars and tensors (see the module docstring)."""

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        # Constants are immutable values: build each once per interpreter.
        cache: dict[Operation, Any] = interpreter.get_data(TensorArithFunctions, "constants", dict)
        if op not in cache:
            cache[op] = constant_value(op)
        return (cache[op],)

    # Floats ----------------------------------------------------------------

    @impl(arith.AddfOp)
    def run_addf(self, interpreter: Interpreter, op: arith.AddfOp, args: PythonValues):
        return (float_binary(op, args, np.add),)

    @impl(arith.SubfOp)
    def run_subf(self, interpreter: Interpreter, op: arith.SubfOp, args: PythonValues):
        return (float_binary(op, args, np.subtract),)

    @impl(arith.MulfOp)
    def run_mulf(self, interpreter: Interpreter, op: arith.MulfOp, args: PythonValues):
        return (float_binary(op, args, np.multiply),)

    @impl(arith.DivfOp)
    def run_divf(self, interpreter: Interpreter, op: arith.DivfOp, args: PythonValues):
        return (float_binary(op, args, np.divide),)

    @impl(arith.MaximumfOp)
    def run_maximumf(self, interpreter: Interpreter, op: arith.MaximumfOp, args: PythonValues):
        return (float_binary(op, args, maximum),)

    @impl(arith.MinimumfOp)
    def run_minimumf(self, interpreter: Interpreter, op: arith.MinimumfOp, args: PythonValues):
        return (float_binary(op, args, minimum),)

    @impl(arith.MaxnumfOp)
    def run_maxnumf(self, interpreter: Interpreter, op: arith.MaxnumfOp, args: PythonValues):
        return (float_binary(op, args, np.fmax),)

    @impl(arith.MinnumfOp)
    def run_minnumf(self, interpreter: Interpreter, op: arith.MinnumfOp, args: PythonValues):
        return (float_binary(op, args, np.fmin),)

    @impl(arith.NegfOp)
    def run_negf(self, interpreter: Interpreter, op: arith.NegfOp, args: PythonValues):
        return (float_unary(op, args[0], np.negative),)

    # Integers --------------------------------------------------------------

    @impl(arith.AddiOp)
    def run_addi(self, interpreter: Interpreter, op: arith.AddiOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a + b),)

    @impl(arith.SubiOp)
    def run_subi(self, interpreter: Interpreter, op: arith.SubiOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a - b),)

    @impl(arith.MuliOp)
    def run_muli(self, interpreter: Interpreter, op: arith.MuliOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a * b),)

    @impl(arith.AndIOp)
    def run_andi(self, interpreter: Interpreter, op: arith.AndIOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a & b),)

    @impl(arith.OrIOp)
    def run_ori(self, interpreter: Interpreter, op: arith.OrIOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a | b),)

    @impl(arith.XOrIOp)
    def run_xori(self, interpreter: Interpreter, op: arith.XOrIOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a ^ b),)

    @impl(arith.MinSIOp)
    def run_minsi(self, interpreter: Interpreter, op: arith.MinSIOp, args: PythonValues):
        return (int_binary(op, args, _min),)

    @impl(arith.MaxSIOp)
    def run_maxsi(self, interpreter: Interpreter, op: arith.MaxSIOp, args: PythonValues):
        return (int_binary(op, args, _max),)

    @impl(arith.MinUIOp)
    def run_minui(self, interpreter: Interpreter, op: arith.MinUIOp, args: PythonValues):
        return (int_binary(op, args, _min, is_unsigned=True),)

    @impl(arith.MaxUIOp)
    def run_maxui(self, interpreter: Interpreter, op: arith.MaxUIOp, args: PythonValues):
        return (int_binary(op, args, _max, is_unsigned=True),)

    @impl(arith.DivSIOp)
    def run_divsi(self, interpreter: Interpreter, op: arith.DivSIOp, args: PythonValues):
        return (int_binary(op, args, _divsi, divides=True),)

    @impl(arith.RemSIOp)
    def run_remsi(self, interpreter: Interpreter, op: arith.RemSIOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a - _divsi(a, b) * b, divides=True),)

    @impl(arith.FloorDivSIOp)
    def run_floordivsi(self, interpreter: Interpreter, op: arith.FloorDivSIOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a // b, divides=True),)

    @impl(arith.CeilDivSIOp)
    def run_ceildivsi(self, interpreter: Interpreter, op: arith.CeilDivSIOp, args: PythonValues):
        return (int_binary(op, args, _ceildiv, divides=True),)

    @impl(arith.DivUIOp)
    def run_divui(self, interpreter: Interpreter, op: arith.DivUIOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a // b, is_unsigned=True, divides=True),)

    @impl(arith.RemUIOp)
    def run_remui(self, interpreter: Interpreter, op: arith.RemUIOp, args: PythonValues):
        return (int_binary(op, args, lambda a, b: a % b, is_unsigned=True, divides=True),)

    @impl(arith.CeilDivUIOp)
    def run_ceildivui(self, interpreter: Interpreter, op: arith.CeilDivUIOp, args: PythonValues):
        return (int_binary(op, args, _ceildivu, is_unsigned=True, divides=True),)

    @impl(arith.ShLIOp)
    def run_shli(self, interpreter: Interpreter, op: arith.ShLIOp, args: PythonValues):
        return (int_binary(op, args, _shift(lambda a, b: a << b)),)

    @impl(arith.ShRUIOp)
    def run_shrui(self, interpreter: Interpreter, op: arith.ShRUIOp, args: PythonValues):
        return (int_binary(op, args, _shift(lambda a, b: a >> b), is_unsigned=True),)

    @impl(arith.ShRSIOp)
    def run_shrsi(self, interpreter: Interpreter, op: arith.ShRSIOp, args: PythonValues):
        return (int_binary(op, args, _shift(lambda a, b: a >> b)),)

    @impl(arith.CmpiOp)
    def run_cmpi(self, interpreter: Interpreter, op: arith.CmpiOp, args: PythonValues):
        if any(isinstance(a, np.ndarray) for a in args):
            raise InterpretationError(
                "arith.cmpi on tensors is not supported (its result is typed i1); use tile.cmpi"
            )
        return (bool(super().run_cmpi(interpreter, op, args).values[0]),)

    @impl(arith.CmpfOp)
    def run_cmpf(self, interpreter: Interpreter, op: arith.CmpfOp, args: PythonValues):
        if any(isinstance(a, np.ndarray) for a in args):
            raise InterpretationError(
                "arith.cmpf on tensors is not supported (its result is typed i1)"
            )
        return (bool(super().run_cmpf(interpreter, op, args).values[0]),)

    @impl(arith.SelectOp)
    def run_select(self, interpreter: Interpreter, op: arith.SelectOp, args: PythonValues):
        cond, lhs, rhs = args
        if isinstance(cond, np.ndarray):
            return (tensor(np.where(cond, lhs, rhs)),)
        return (lhs if cond else rhs,)

    # Casts -----------------------------------------------------------------

    @impl(arith.TruncFOp)
    def run_truncf(self, interpreter: Interpreter, op: arith.TruncFOp, args: PythonValues):
        return (float_unary_cast(op, args[0]),)

    @impl(arith.ExtFOp)
    def run_extf(self, interpreter: Interpreter, op: arith.ExtFOp, args: PythonValues):
        return (float_unary_cast(op, args[0]),)

    @impl(arith.IndexCastOp)
    def run_indexcast(self, interpreter: Interpreter, op: arith.IndexCastOp, args: PythonValues):
        return (cast_int(op, args[0]),)

    @impl(arith.ExtSIOp)
    def run_extsi(self, interpreter: Interpreter, op: arith.ExtSIOp, args: PythonValues):
        return (cast_int(op, args[0]),)

    @impl(arith.ExtUIOp)
    def run_extui(self, interpreter: Interpreter, op: arith.ExtUIOp, args: PythonValues):
        return (cast_int(op, args[0], is_unsigned=True),)

    @impl(arith.TruncIOp)
    def run_trunci(self, interpreter: Interpreter, op: arith.TruncIOp, args: PythonValues):
        return (cast_int(op, args[0]),)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interpreter: Interpreter, op: arith.SIToFPOp, args: PythonValues):
        return (int_to_float(op, args[0]),)

    @impl(arith.UIToFPOp)
    def run_uitofp(self, interpreter: Interpreter, op: arith.UIToFPOp, args: PythonValues):
        return (int_to_float(op, args[0], is_unsigned=True),)

    @impl(arith.FPToSIOp)
    def run_fptosi(self, interpreter: Interpreter, op: arith.FPToSIOp, args: PythonValues):
        return (float_to_int(op, args[0]),)

    @impl(arith.FPToUIOp)
    def run_fptoui(self, interpreter: Interpreter, op: arith.FPToUIOp, args: PythonValues):
        return (float_to_int(op, args[0], is_unsigned=True),)


def float_unary_cast(op: Operation, value: Any) -> Any:
    """truncf / extf: one rounding to the result type (exact for extf)."""
    dt = element_dtype(element_type(result_type(op)))
    out = round_float(value, dt)
    if isinstance(out, np.ndarray):
        return tensor(out if out is not value else out.copy())
    return out
