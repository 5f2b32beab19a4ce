"""The values of a kernel being built, and how they are described in errors.

While `tawa.frontend` walks a kernel, every Python expression evaluates to one
of:
- a compile-time value: a Python int, float, bool, tuple, `tl.dtype`, module
  or function (constexpr parameters and what is computed from them);
- a `Scalar`: an SSA value of a scalar type (`index`, `f32`, `i32`, ...);
- a `Tile`: an SSA value of a statically shaped tensor (`tensor<128x64xbf16>`);
- a `Ref`: a global tensor parameter (`memref<?x?xbf16>`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerType,
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue

import tawa.language as tl

TILE_DTYPES = "bf16, f16, f32, f8e4m3fn, f8e5m2, i32 or i1"


@dataclass(frozen=True)
class Scalar:
    value: SSAValue
    dtype: tl.dtype


@dataclass(frozen=True)
class Tile:
    value: SSAValue
    shape: tuple[int, ...]
    dtype: tl.dtype


@dataclass(frozen=True)
class Ref:
    value: SSAValue
    dtype: tl.dtype
    rank: int
    name: str


@dataclass(frozen=True)
class Method:
    """`x.to` before it is called."""

    target: Scalar | Tile
    name: str


Runtime = Scalar | Tile
"""Values that exist only when the kernel runs."""


def is_runtime(v: Any) -> bool:
    return isinstance(v, Scalar | Tile | Ref | Method)


def shape_str(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def describe(v: Any) -> str:
    """How errors name a value: `128x64xbf16`, `f32 scalar`, `tensor A`, `3`."""
    if isinstance(v, Tile):
        return f"{shape_str(v.shape)}x{v.dtype.name}"
    if isinstance(v, Scalar):
        return f"{v.dtype.name} scalar"
    if isinstance(v, Ref):
        return f"tensor {v.name} ({v.dtype.name}, rank {v.rank})"
    if isinstance(v, Method):
        return f"method .{v.name}"
    return repr(v)


_IR_TYPES: dict[str, Attribute] = {
    "bf16": BFloat16Type(),
    "f16": Float16Type(),
    "f32": Float32Type(),
    "f8e4m3fn": Float8E4M3FNType(),
    "f8e5m2": Float8E5M2Type(),
    "i1": IntegerType(1),
    "i32": IntegerType(32),
    "index": IndexType(),
}


def ir_type(dtype: tl.dtype) -> Attribute:
    """The IR element type of a supported dtype."""
    return _IR_TYPES[dtype.name]


def tensor_type(shape: tuple[int, ...], dtype: tl.dtype) -> TensorType:
    return TensorType(ir_type(dtype), shape)


def memref_type(dtype: tl.dtype, rank: int) -> MemRefType:
    return MemRefType(ir_type(dtype), [DYNAMIC_INDEX] * rank)


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy's broadcast of two shapes (trailing dimensions aligned; extent 1
    stretches), or None when they do not broadcast."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y) if 1 in (x, y) else x)
    return tuple(reversed(out))
