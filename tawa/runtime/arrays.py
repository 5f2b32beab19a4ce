"""What the runtime reads of an array argument, and of its element type.

- `element_type(t)`: how the runtime sees a memref element type (accepted
  dtypes, size, the tensor-map data type);
- `array_info(obj)` reads pointer, shape, strides and dtype from a torch
  tensor (`data_ptr()`, `shape`, `stride()`, `dtype`: torch does not export
  bfloat16 through `__cuda_array_interface__`), from anything with a
  `__cuda_array_interface__` (CuPy arrays, Numba, ...), or from a
  `reinterpret(array, dtype)` view;
- `dense_strides`, `is_dense_row_major`: the layout rules the checks of
  `tawa.runtime.launch` apply.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute

from tawa.runtime.errors import ArgumentError

# --------------------------------------------------------------------------- element types


@dataclass(frozen=True)
class ElementType:
    """How the runtime sees a memref element type."""

    ir: str
    """As the IR spells it: `bf16`, `f16`, `f32`, `i32`, ..."""
    dtypes: frozenset[str]
    """Accepted array dtypes, by their NumPy/torch name (`bfloat16`, `float16`, ...)."""
    itemsize: int
    tensormap: str
    """The `CUtensorMapDataType` member used for TMA."""


def element_type(t: Attribute) -> ElementType:
    """The runtime's view of element type `t`; ArgumentError if unsupported."""
    floats: dict[type[Attribute], tuple[str, str, int, str]] = {
        BFloat16Type: ("bf16", "bfloat16", 2, "BFLOAT16"),
        Float16Type: ("f16", "float16", 2, "FLOAT16"),
        Float32Type: ("f32", "float32", 4, "FLOAT32"),
        Float64Type: ("f64", "float64", 8, "FLOAT64"),
        Float8E4M3FNType: ("f8E4M3FN", "float8_e4m3fn", 1, "UINT8"),
        Float8E5M2Type: ("f8E5M2", "float8_e5m2", 1, "UINT8"),
    }
    if type(t) in floats:
        ir, name, size, tm = floats[type(t)]
        return ElementType(ir, frozenset({name}), size, tm)
    if isinstance(t, IntegerType) and t.width.data in (8, 16, 32, 64):
        w = t.width.data
        signedness = t.signedness.data
        names = {f"int{w}", f"uint{w}"}
        if signedness == Signedness.SIGNED:
            names = {f"int{w}"}
        elif signedness == Signedness.UNSIGNED:
            names = {f"uint{w}"}
        tm = {8: "UINT8", 16: "UINT16", 32: "INT32", 64: "INT64"}[w]
        return ElementType(str(t), frozenset(names), w // 8, tm)
    raise ArgumentError(f"memrefs of {t} are not supported by the runtime")


# --------------------------------------------------------------------------- arrays


@dataclass(frozen=True)
class ArrayInfo:
    """What the runtime needs to know about one array argument."""

    kind: str
    """For messages: `torch tensor`, `CuPy array`, ..."""
    dtype: str
    """NumPy/torch dtype name (`bfloat16`, `float32`, ...)."""
    itemsize: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    """In bytes; None means dense row-major (C-contiguous)."""
    ptr: int
    on_gpu: bool
    device: int | None
    """CUDA device ordinal when the array says, else None (current device)."""
    is_torch: bool = False

    def describe(self) -> str:
        where = "" if self.on_gpu else " in host memory"
        return f"{self.dtype} {self.kind} of shape {self.shape}{where}"


class TypedArray:
    """A CUDA array whose elements are read as another dtype of the same size.

    `reinterpret(x, "bf16")` lets a CuPy `uint16` array (CuPy has no bfloat16)
    be passed where the kernel takes `memref<...xbf16>`.  The data are not
    converted: the bits are taken as they are.
    """

    def __init__(self, array: Any, dtype: str):
        self.array = array
        self.dtype = dtype

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self.array.__cuda_array_interface__

    def __repr__(self) -> str:
        return f"reinterpret({type(self.array).__name__}, {self.dtype!r})"


_DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "f8E4M3FN": "float8_e4m3fn",
    "f8E5M2": "float8_e5m2",
}
_DTYPE_SIZES = {
    "bfloat16": 2, "float16": 2, "float32": 4, "float64": 8,
    "float8_e4m3fn": 1, "float8_e5m2": 1,
    "int8": 1, "uint8": 1, "int16": 2, "uint16": 2,
    "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
}  # fmt: skip


def reinterpret(array: Any, dtype: Any) -> TypedArray:
    """View CUDA array `array` as holding `dtype` elements (same size), e.g.
    `reinterpret(cupy_uint16_array, "bf16")`.  `dtype` is an IR name
    (`bf16`), a NumPy/torch name (`bfloat16`) or a NumPy dtype."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    name = _DTYPE_ALIASES.get(name, name)
    if name not in _DTYPE_SIZES:
        raise ArgumentError(f"reinterpret: unknown dtype {dtype!r}")
    info = array_info(array)
    if info is None:
        raise ArgumentError(f"reinterpret: expected a CUDA array, got {type(array).__name__}")
    if info.itemsize != _DTYPE_SIZES[name]:
        raise ArgumentError(
            f"reinterpret: cannot view {info.dtype} elements ({info.itemsize} bytes) as "
            f"{name} ({_DTYPE_SIZES[name]} bytes)"
        )
    return TypedArray(array, name)


def _is_torch_like(obj: Any) -> bool:
    return all(callable(getattr(obj, a, None)) for a in ("data_ptr", "stride", "element_size")) and hasattr(
        obj, "dtype"
    )


def _torch_info(t: Any) -> ArrayInfo:
    itemsize = int(t.element_size())
    shape = tuple(t.shape)
    strides = tuple([s * itemsize for s in t.stride()])
    dev = getattr(t, "device", None)
    on_gpu = bool(getattr(t, "is_cuda", False))
    index = getattr(dev, "index", None) if on_gpu else None
    return ArrayInfo(
        "torch tensor",
        str(t.dtype).removeprefix("torch."),
        itemsize,
        shape,
        strides,
        int(t.data_ptr()),
        on_gpu,
        None if index is None else int(index),
        is_torch=True,
    )


def _cai_info(obj: Any, cai: dict[str, Any], dtype: str | None = None) -> ArrayInfo:
    np_dtype = np.dtype(cai["typestr"])
    shape = tuple(int(d) for d in cai["shape"])
    strides = cai.get("strides")
    dev = getattr(obj, "device", None)
    device = getattr(dev, "id", None)
    module = type(obj).__module__.split(".")[0]
    kind = "CuPy array" if module == "cupy" else f"{type(obj).__name__} array"
    if cai.get("mask") is not None:
        raise ArgumentError(f"masked CUDA arrays ({kind}) are not supported")
    return ArrayInfo(
        kind,
        dtype or np_dtype.name,
        np_dtype.itemsize,
        shape,
        None if strides is None else tuple(int(s) for s in strides),
        int(cai["data"][0] or 0),
        True,
        None if device is None else int(device),
    )


def array_info(obj: Any) -> ArrayInfo | None:
    """Pointer, shape, strides and dtype of a CUDA array, or None if `obj` is
    not an array the runtime knows (a torch tensor, anything with a
    `__cuda_array_interface__`, a `reinterpret` view)."""
    if isinstance(obj, TypedArray):
        inner = array_info(obj.array)
        assert inner is not None
        return ArrayInfo(
            f"{inner.kind} viewed as {obj.dtype}",
            obj.dtype,
            inner.itemsize,
            inner.shape,
            inner.strides,
            inner.ptr,
            inner.on_gpu,
            inner.device,
            inner.is_torch,
        )
    # torch first: its __cuda_array_interface__ raises for bfloat16 and CPU tensors.
    torch = sys.modules.get("torch")
    if (torch is not None and isinstance(obj, torch.Tensor)) or _is_torch_like(obj):
        return _torch_info(obj)
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        return None
    return _cai_info(obj, cai)


def dense_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a dense row-major array of `shape`."""
    strides = []
    step = itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def is_dense_row_major(shape: Sequence[int], strides: Sequence[int] | None, itemsize: int) -> bool:
    """Whether byte `strides` describe a C-contiguous array (strides of
    size-1 dimensions do not matter; empty arrays are always dense)."""
    if strides is None or 0 in shape:
        return True
    expected = itemsize
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def describe_value(value: Any) -> str:
    info = None
    try:
        info = array_info(value)
    except Exception:  # a broken array-like: describe it by type only
        pass
    if info is not None:
        return info.describe()
    if isinstance(value, np.ndarray):
        return f"{value.dtype.name} NumPy array of shape {value.shape} in host memory"
    return type(value).__name__
