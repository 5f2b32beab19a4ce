"""How the interpreter represents IR values in Python, and the number formats.

| IR type                         | Python value                                            |
|---------------------------------|---------------------------------------------------------|
| `index`, `iN` (N > 1)           | `int`, normalised to signed N bits (index: 64 bits)      |
| `i1`                            | `bool`                                                  |
| `f32`, `f16`, `bf16`, `f8...`   | NumPy scalar of the exact dtype (`np.float32`, ...)     |
| `tensor<...xT>`                 | read-only `np.ndarray` of T's dtype and the static shape |
| `memref<...xT>`                 | the caller's `np.ndarray` of T's dtype (written in place) |

Float dtypes: f64 `np.float64`, f32 `np.float32`, f16 `np.float16`,
bf16 `ml_dtypes.bfloat16`, f8E4M3FN `ml_dtypes.float8_e4m3fn`,
f8E5M2 `ml_dtypes.float8_e5m2`.  Integer tensors use the signed NumPy integer
of the same width (`index`: int64, `i1`: bool).

Operands of a matrix product (`tile.dot`, wgmma) are read as the tensor core
reads them (`mma_operand`): the 16- and 8-bit formats exactly, f32 as tf32.

Conversions to a narrower float format round to nearest, ties to even, as
`cvt.rn` does.  Conversions to the f8 formats saturate like
`cvt.rn.satfinite` (the only f8 conversion PTX has): values beyond the largest
finite value, infinities included, become that value with their sign; NaN
stays NaN.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute

from tawa.target.hopper import TF32_DROPPED_MANTISSA_BITS

INDEX_BITS = 64

_FLOAT_DTYPES: dict[type[Attribute], np.dtype] = {
    Float64Type: np.dtype(np.float64),
    Float32Type: np.dtype(np.float32),
    Float16Type: np.dtype(np.float16),
    BFloat16Type: np.dtype(ml_dtypes.bfloat16),
    Float8E4M3FNType: np.dtype(ml_dtypes.float8_e4m3fn),
    Float8E5M2Type: np.dtype(ml_dtypes.float8_e5m2),
}
_INT_DTYPES: dict[int, np.dtype] = {
    1: np.dtype(np.bool_),
    8: np.dtype(np.int8),
    16: np.dtype(np.int16),
    32: np.dtype(np.int32),
    64: np.dtype(np.int64),
}
_UNSIGNED: dict[np.dtype, np.dtype] = {
    np.dtype(np.int8): np.dtype(np.uint8),
    np.dtype(np.int16): np.dtype(np.uint16),
    np.dtype(np.int32): np.dtype(np.uint32),
    np.dtype(np.int64): np.dtype(np.uint64),
    np.dtype(np.bool_): np.dtype(np.bool_),
}
# Formats whose conversions saturate (cvt.rn.satfinite), with their largest finite value.
_SATURATING: dict[np.dtype, float] = {
    np.dtype(ml_dtypes.float8_e4m3fn): float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max),
    np.dtype(ml_dtypes.float8_e5m2): float(ml_dtypes.finfo(ml_dtypes.float8_e5m2).max),
}
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)


class UnsupportedType(ValueError):
    """An IR type the interpreter has no Python representation for."""


def is_float_type(t: Attribute) -> bool:
    return type(t) in _FLOAT_DTYPES


def is_int_type(t: Attribute) -> bool:
    return isinstance(t, IndexType | IntegerType)


def int_bits(t: Attribute) -> int:
    """Bit width of an integer or index type."""
    if isinstance(t, IndexType):
        return INDEX_BITS
    assert isinstance(t, IntegerType)
    return t.width.data


def element_dtype(t: Attribute) -> np.dtype:
    """The NumPy dtype of elements of scalar type `t`."""
    if (dt := _FLOAT_DTYPES.get(type(t))) is not None:
        return dt
    if isinstance(t, IndexType):
        return _INT_DTYPES[INDEX_BITS]
    if isinstance(t, IntegerType) and (dt := _INT_DTYPES.get(t.width.data)) is not None:
        return dt
    raise UnsupportedType(f"the interpreter does not support element type {t}")


def dtype_of(t: Attribute) -> np.dtype:
    """The dtype of a tensor's or memref's elements, or of a scalar type."""
    if isinstance(t, TensorType | MemRefType):
        return element_dtype(t.get_element_type())
    return element_dtype(t)


def unsigned(dt: np.dtype) -> np.dtype:
    """The unsigned dtype of the same width as the integer dtype `dt`."""
    return _UNSIGNED[np.dtype(dt)]


def compute_dtype(dt: np.dtype) -> np.dtype:
    """The dtype float math on `dt` is carried out in: f32 for the formats
    narrower than f32 (the result is then rounded once), else `dt` itself."""
    return F32 if dt.itemsize < 4 else dt


_TF32_MASK = np.uint32((0xFFFFFFFF << TF32_DROPPED_MANTISSA_BITS) & 0xFFFFFFFF)


def mma_operand(x: np.ndarray) -> np.ndarray:
    """Operand `x` of a matrix product as the tensor core reads it, in f32:
    bf16, f16 and the f8 formats convert exactly; f32 is read as tf32, the
    13 low mantissa bits dropped (rounded toward zero, as wgmma `.tf32` does
    with f32 data; `tawa.target.hopper.WGMMA_OPERAND_TYPES`).  NaN stays NaN."""
    if x.dtype != F32:
        return x.astype(F32)
    bits = np.ascontiguousarray(x).view(np.uint32) & _TF32_MASK
    return np.where(np.isnan(x), x, bits.view(np.float32))


def round_float(x: Any, dt: np.dtype) -> Any:
    """`x` (a float array or NumPy float scalar) converted to the float dtype `dt`:
    round to nearest even; f8 formats saturate (see the module docstring)."""
    dt = np.dtype(dt)
    src = np.asarray(x).dtype
    if src == dt:
        return x
    if dt in _SATURATING:
        big = _SATURATING[dt]
        x = np.clip(x, -big, big)  # NaN stays NaN
    if src == F64 and dt.itemsize < 4:
        # ml_dtypes converts f64 through f32, which can round twice.  Rounding
        # to f32 with round-to-odd first makes the second rounding exact.
        x = _f64_to_f32_round_to_odd(x)
    if isinstance(x, np.ndarray):
        return x.astype(dt)
    return dt.type(x)


def _f64_to_f32_round_to_odd(x: Any) -> Any:
    x64 = np.asarray(x, dtype=F64)
    r = x64.astype(F32)
    inexact = np.isfinite(r) & (r.astype(F64) != x64)
    even = (r.view(np.uint32) & 1) == 0
    fix = inexact & even
    if np.any(fix):
        toward = np.where(x64 > r.astype(F64), np.float32(np.inf), np.float32(-np.inf))
        r = np.where(fix, np.nextafter(r, toward), r)
    return r if isinstance(x, np.ndarray) else F32.type(r)


def wrap_int(value: int, bits: int) -> int | bool:
    """`value` reduced to a signed `bits`-bit integer (i1: a bool)."""
    if bits == 1:
        return bool(value & 1)
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def to_unsigned(value: int, bits: int) -> int:
    return int(value) & ((1 << bits) - 1)


def scalar_from_python(value: float | int | bool, t: Attribute) -> Any:
    """A Python number as the interpreter's value of scalar type `t` (floats
    rounded to nearest even, integers wrapped)."""
    if is_float_type(t):
        return round_float(F64.type(value), element_dtype(t))
    return wrap_int(int(value), int_bits(t))


def describe_type_mismatch(value: Any, t: Attribute) -> str | None:
    """None when `value` is a valid interpreter value of IR type `t`, else what
    is wrong with it.  Types the interpreter does not model are not checked."""
    if isinstance(t, TensorType):
        dt = dtype_of(t)
        shape = tuple(t.get_shape())
        if not isinstance(value, np.ndarray):
            return f"expected an array for {t}, got {type(value).__name__}"
        if value.dtype != dt or value.shape != shape:
            return (
                f"expected a {dt.name} array of shape {shape} for {t}, "
                f"got a {value.dtype.name} array of shape {value.shape}"
            )
        return None
    if isinstance(t, MemRefType):
        if not isinstance(value, np.ndarray) or value.dtype != dtype_of(t):
            return f"expected a {dtype_of(t).name} array for {t}, got {type(value).__name__}"
        return None
    if isinstance(t, IntegerType) and t.width.data == 1:
        if isinstance(value, bool):
            return None
        return f"expected a bool for i1, got {type(value).__name__}"
    if is_int_type(t):
        if type(value) is not int:
            return f"expected an int for {t}, got {type(value).__name__}"
        bits = int_bits(t)
        if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
            return f"{value} is out of range for {t}"
        return None
    if is_float_type(t):
        dt = element_dtype(t)
        if not isinstance(value, np.generic) or value.dtype != dt:
            return f"expected a {dt.name} scalar for {t}, got {type(value).__name__}"
        return None
    return None
