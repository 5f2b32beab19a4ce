"""Checking launch arguments and packing kernel parameters (pure Python, no GPU).

Everything between `kernel(*args, grid=...)` and the CUDA launch that can be
decided without a GPU lives here, so it is unit-tested on the CPU with fake
array objects (what it reads of each array: `tawa.runtime.arrays`):

- `plan_launch(abi, args, grid)` checks every argument against the kernel's
  signature and returns a `LaunchPlan`: the physical launch shape and the
  parameter list as `(kind, value)` entries in ABI order
  (`tawa.backend.ptx.abi`), tensor maps as `TensorMapSpec`s (the arguments
  of `cuTensorMapEncodeTiled`, innermost dimension first);
- `kernel_arguments(plan.params, encode)` turns the entries into the bytes
  that `tawa.runtime.params.PackedParams` lays out for the driver
  (`encode` builds a 128-byte tensor map);
- `LaunchKeys(kinds)(args, grid)` reads what a plan depends on, cheaply, so
  that a kernel launched again with the same arguments reuses its packed
  parameters (`tawa.Kernel.__call__`);
- `physical_launch(abi, grid)` is the one place that maps the tile program's
  logical grid (program ids) to the CTA grid: one CTA per program, or for
  persistent kernels `ctas_per_sm` per SM (whole clusters for clustered ones,
  `nvgpu.persistent_ctas`).

Empty tensors (a zero-size dimension) are accepted.  A launch whose logical
grid has no programs does nothing.  Otherwise the kernel runs, and every
tensor map over an empty tensor is built over a private zero-filled scratch
buffer whose dimensions are all 1 (`TensorMapSpec.address is None`; the GPU
side allocates it): TMA loads through it read zeros and TMA stores through it
land in the scratch buffer, which is what the tile semantics prescribe for
accesses outside a tensor (every access to an empty tensor is outside it).
`cuTensorMapEncodeTiled` itself rejects zero dimensions.  The pointer and
dimension parameters still carry the real (zero) sizes.

Every error is a one-line `ArgumentError` / `LaunchError` naming the argument.
"""

from __future__ import annotations

import functools
import math
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    Float32Type,
    IndexType,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Attribute

from tawa.backend.ptx.abi import KernelABI, Param
from tawa.dialects.nvgpu.kernel_info import persistent_ctas
from tawa.runtime.arrays import (
    ArrayInfo,
    ElementType,
    array_info,
    dense_strides,
    describe_value,
    element_type,
    is_dense_row_major,
)
from tawa.runtime.errors import ArgumentError, LaunchError, TensorMapError
from tawa.target.hopper import L2_SECTOR_BYTES

TMA_ALIGN = 16
"""Bytes: TMA needs the base address and every non-innermost stride aligned to this."""
MAX_TMA_RANK = 5
MAX_TMA_DIM = 1 << 32
MAX_TMA_STRIDE = 1 << 40
MAX_TMA_BOX = 256
SCRATCH_BYTES = 128
"""Bytes of zero-filled scratch per tensor map over an empty tensor (16 needed)."""
MAX_GRID = (2**31 - 1, 65535, 65535)


# --------------------------------------------------------------------------- tensor maps

_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}


@dataclass(frozen=True)
class TensorMapSpec:
    """The arguments of `cuTensorMapEncodeTiled`, innermost dimension first.
    Enum fields hold member names of `cuda.bindings.driver`'s enums."""

    data_type: str
    """`CUtensorMapDataType` member, e.g. `CU_TENSOR_MAP_DATA_TYPE_BFLOAT16`."""
    address: int | None
    """Global address; None: over a zero-filled scratch buffer (empty tensor)."""
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    """Bytes, for dimensions 1..rank-1 (innermost first), rank-1 entries."""
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: str
    interleave: str = "CU_TENSOR_MAP_INTERLEAVE_NONE"
    l2_promotion: str = "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"
    """How much a miss fills into the L2 (`l2_promotion`)."""
    oob_fill: str = "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"
    arg: int = -1
    """The kernel argument it describes (for messages)."""

    @property
    def rank(self) -> int:
        return len(self.dims)


def _check_box(abi: KernelABI, p: Param, rank: int, elem: ElementType) -> None:
    """The compiler's side of TMA's rules (a failure here is a tawa bug)."""
    problem = None
    if len(p.box) != rank:
        problem = f"box {list(p.box)} has rank {len(p.box)}, the array rank {rank}"
    elif not 1 <= rank <= MAX_TMA_RANK:
        problem = f"TMA supports ranks 1 to {MAX_TMA_RANK}, got {rank}"
    elif any(not 1 <= b <= MAX_TMA_BOX for b in p.box):
        problem = f"box dims must be 1 to {MAX_TMA_BOX}, got {list(p.box)}"
    elif (p.box[-1] * elem.itemsize) % TMA_ALIGN:
        problem = f"the inner box dim spans {p.box[-1] * elem.itemsize} bytes, not a multiple of 16"
    elif p.swizzle not in _SWIZZLES:
        problem = f"swizzle must be 0, 32, 64 or 128 bytes, got {p.swizzle}"
    elif p.swizzle and p.box[-1] * elem.itemsize > p.swizzle:
        problem = (
            f"the inner box dim spans {p.box[-1] * elem.itemsize} bytes, more than the "
            f"{p.swizzle}B swizzle span"
        )
    if problem:
        raise LaunchError(f"@{abi.name}: tensor map {p.name}: {problem} (a compiler bug)")


def _tensormap(p: Param, info: ArrayInfo, strides: tuple[int, ...], elem: ElementType) -> TensorMapSpec:
    """The `cuTensorMapEncodeTiled` arguments of tensor-map parameter `p` over
    array `info` (checked: dense row-major with byte `strides`, aligned)."""
    rank = len(info.shape)
    if 0 in info.shape:  # see the module docstring: a scratch tensor of all-1 dims
        dims: tuple[int, ...] = (1,) * rank
        gstrides: tuple[int, ...] = (TMA_ALIGN,) * (rank - 1)
        address = None
    else:
        dims = info.shape[::-1]
        gstrides = strides[-2::-1]
        address = info.ptr
    return TensorMapSpec(
        data_type=f"CU_TENSOR_MAP_DATA_TYPE_{elem.tensormap}",
        address=address,
        dims=dims,
        strides=gstrides,
        box=p.box[::-1],
        element_strides=(1,) * rank,
        swizzle=f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLES[p.swizzle]}",
        l2_promotion=l2_promotion(gstrides),
        arg=p.arg,
    )


def l2_promotion(strides: tuple[int, ...]) -> str:
    """The L2 fill of a tensor map with byte `strides`: 256 bytes a miss,
    except where rows are not whole L2 sectors apart (`L2_SECTOR_BYTES`):
    a box row then straddles lines, and 256-byte fills fetch lines no row
    reads (128 measured faster on such a GEMM, no different on aligned
    rows; docs/perf.md, "Rows that are not whole sectors").  Decided by
    the strides alone, so that a launch template made for one address
    holds for every address of the layout."""
    if any(s % L2_SECTOR_BYTES for s in strides):
        return "CU_TENSOR_MAP_L2_PROMOTION_L2_128B"
    return "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class LaunchShape:
    """A CUDA launch: CTA grid, CTA shape and dynamic shared memory."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem_bytes: int
    persistent: bool = False
    """`grid` counts programs; launch at most one CTA per SM (`launch_grid`)."""
    cluster: int = 1
    """CTAs per thread-block cluster (persistent kernels): the CTA grid is whole clusters."""
    ctas_per_sm: int = 1
    """CTAs an SM holds at once (`tawa-occupancy`): a persistent kernel launches this many per SM."""

    def launch_grid(self, num_sms: int) -> tuple[int, int, int]:
        """The CTA grid on a device with `num_sms` multiprocessors."""
        if not self.persistent:
            return self.grid
        return (persistent_ctas(self.grid, num_sms * self.ctas_per_sm, self.cluster), 1, 1)


@dataclass(frozen=True)
class LaunchPlan:
    shape: LaunchShape
    params: tuple[tuple[str, Any], ...]
    """In ABI order: `("u64", int)`, `("u32", int)`, `("f32", float)`,
    `("tensormap", TensorMapSpec)` or `("watchdog", KernelABI)` (the launch
    passes the loaded kernel's watchdog buffer there)."""
    device: int | None
    """The CUDA device of the array arguments (None: the current device)."""
    uses_torch: bool
    """Some argument is a torch tensor (launch on torch's current stream)."""
    empty: bool
    """The logical grid has no programs: the launch does nothing."""


def normalize_grid(grid: Any, where: str) -> tuple[int, int, int]:
    """The logical grid padded to three axes: 1 to 3 non-negative ints."""
    if type(grid) is tuple and 1 <= len(grid) <= 3 and all(type(d) is int and d >= 0 for d in grid):
        return grid + (1,) * (3 - len(grid))  # type: ignore[return-value]
    dims = (grid,) if isinstance(grid, int | np.integer) else grid
    try:
        ok = 1 <= len(dims) <= 3 and all(
            isinstance(d, int | np.integer) and not isinstance(d, bool | np.bool_) and d >= 0
            for d in dims
        )
    except TypeError:
        ok = False
    if not ok:
        raise LaunchError(f"{where}: grid must be 1 to 3 non-negative integers, got {grid!r}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


def physical_launch(abi: KernelABI, grid: tuple[int, int, int]) -> LaunchShape:
    """How the logical `grid` runs: one CTA per program, or, for persistent
    kernels, `ctas_per_sm` CTAs per SM of the device (at most one per
    program), each looping over programs (the count is settled at launch)."""
    if abi.persistent:
        batched = any(p.kind == "grid" and p.dim == 2 for p in abi.params)
        if grid[2] != 1 and not batched:
            raise LaunchError(
                f"@{abi.name} is persistent and uses no program id along axis 2: its grid must be 1-D or 2-D, got {grid}"
            )
        return LaunchShape(grid, (abi.threads, 1, 1), abi.smem_bytes, persistent=True, cluster=abi.cluster,
                           ctas_per_sm=abi.ctas_per_sm)
    for axis, (g, limit) in enumerate(zip(grid, MAX_GRID)):
        if g > limit:
            raise LaunchError(
                f"@{abi.name}: grid axis {axis} has {g} programs, more than CUDA's {limit}"
            )
    return LaunchShape(grid, (abi.threads, 1, 1), abi.smem_bytes)


def arg_names(abi: KernelABI) -> tuple[str, ...]:
    """The source names of the kernel's arguments (`A`, `M`, ...; the
    position when the IR had none), recovered from the ABI's parameter names."""
    names = [str(i) for i in range(len(abi.arg_types))]
    for p in abi.params:
        if p.kind in ("tensormap", "dim", "stride", "grid") or not 0 <= p.arg < len(names):
            continue
        name = p.name.removesuffix("_ptr") if p.kind == "ptr" else p.name
        prefix = f"arg{p.arg}_"
        if name.startswith(prefix):
            names[p.arg] = name[len(prefix) :]
    return tuple(names)


def _signature_text(abi: KernelABI, names: Sequence[str]) -> str:
    return ", ".join(f"%{n}: {t}" for n, t in zip(names, abi.arg_types))


@dataclass(frozen=True)
class ArgSpec:
    """What the runtime checks of one kernel argument (from the ABI, once)."""

    index: int
    label: str
    """`@gemm argument 0 (%A)`, for messages."""
    type: Attribute
    kind: str
    """`array`, `int`, `f32`, or `unsupported` (`problem` says why)."""
    elem: ElementType | None = None
    rank: int = 0
    static: tuple[tuple[int, int], ...] = ()
    """(axis, size) of the memref's static dimensions."""
    tma: bool = False
    """Read or written through a tensor map: TMA's alignment rules apply."""
    tma_only: bool = False
    """Accessed only through tensor maps (no address of the kernel's own):
    leading strides need not be dense, as long as TMA can describe them.
    An array the kernel addresses itself takes its strides as parameters
    (`stride`): its rows must be contiguous and its other strides positive."""
    bits: int = 0
    lo: int = 0
    hi: int = 0
    packed: str = ""
    """`u64`, `u32` or `f32`."""
    problem: str = ""


@dataclass(frozen=True)
class Signature:
    """A kernel's arguments and how its parameters are filled in, worked out
    once per ABI so that each launch only checks and packs."""

    abi: KernelABI
    names: tuple[str, ...]
    args: tuple[ArgSpec, ...]
    program: tuple[tuple[Any, ...], ...]
    """Per parameter: `("ptr", arg)`, `("dim", arg, axis)`, `("stride", arg, axis)`, `("scalar", arg)`,
    `("grid", axis)`, `("tensormap", arg, param)` or `("watchdog", -1)`."""


def _arg_spec(abi: KernelABI, i: int, t: Attribute, label: str, tma: bool, tma_only: bool = False) -> ArgSpec:
    if isinstance(t, MemRefType):
        try:
            elem = element_type(t.get_element_type())
        except ArgumentError as err:
            return ArgSpec(i, label, t, "unsupported", problem=err.message)
        static = tuple((axis, d) for axis, d in enumerate(t.get_shape()) if d >= 0)
        return ArgSpec(i, label, t, "array", elem, t.get_num_dims(), static, tma, tma_only)
    if isinstance(t, IndexType | IntegerType):
        bits = 64 if isinstance(t, IndexType) else t.width.data
        lo = -(1 << (bits - 1))
        hi = (1 << (bits - 1)) if isinstance(t, IndexType) else (1 << bits)
        return ArgSpec(i, label, t, "int", bits=bits, lo=lo, hi=hi, packed="u64" if bits == 64 else "u32")
    if isinstance(t, Float32Type):
        return ArgSpec(i, label, t, "f32", packed="f32")
    return ArgSpec(i, label, t, "unsupported", problem=f"arguments of type {t} are not supported by the runtime")


def argument_kinds(abi: KernelABI) -> tuple[str, ...]:
    """`ArgSpec.kind` of each of the kernel's arguments (without the checks
    of `signature`)."""
    return tuple(_arg_spec(abi, i, t, "", False).kind for i, t in enumerate(abi.arg_types))


@functools.lru_cache(maxsize=256)
def signature(abi: KernelABI, names: tuple[str, ...] | None = None) -> Signature:
    """The launch signature of `abi` (LaunchError if its tensor maps break
    TMA's rules: a compiler bug)."""
    names = names if names is not None else arg_names(abi)
    tma_args = {p.arg for p in abi.params if p.kind == "tensormap"}
    addressed = set(abi.addressed)
    args = tuple(
        _arg_spec(abi, i, t, f"@{abi.name} argument {i} (%{names[i]})", i in tma_args,
                  i in tma_args and i not in addressed)
        for i, t in enumerate(abi.arg_types)
    )
    program: list[tuple[Any, ...]] = []
    for p in abi.params:
        if p.kind == "ptr":
            program.append(("ptr", p.arg))
        elif p.kind == "dim":
            program.append(("dim", p.arg, p.dim))
        elif p.kind == "stride":
            program.append(("stride", p.arg, p.dim))
        elif p.kind == "grid":
            program.append(("grid", p.dim))
        elif p.kind == "watchdog":
            program.append(("watchdog", -1))
        elif p.kind == "tensormap":
            a = args[p.arg]
            if a.kind == "array":
                assert a.elem is not None
                _check_box(abi, p, a.rank, a.elem)
            program.append(("tensormap", p.arg, p))
        else:
            expected = {"index": "u64", "i64": "u64", "i32": "u32", "f32": "f32"}[p.kind]
            assert args[p.arg].packed == expected, (p, args[p.arg])
            program.append(("scalar", p.arg))
    return Signature(abi, names, args, tuple(program))


def _check_array(a: ArgSpec, value: Any) -> tuple[ArrayInfo, tuple[int, ...]]:
    """The array's info and byte strides (dense ones for its size-1
    dimensions, whose own are arbitrary), or an ArgumentError."""
    label, elem, rank = a.label, a.elem, a.rank
    assert elem is not None
    try:
        info = array_info(value)
    except ArgumentError as err:
        raise ArgumentError(f"{label}: {err.message}") from None
    if info is None:
        want = f"a rank-{rank} {elem.ir} CUDA array (CuPy array or torch tensor)"
        raise ArgumentError(f"{label}: expected {want}, got {describe_value(value)}")
    if not info.on_gpu:
        want = f"a rank-{rank} {elem.ir} CUDA array (CuPy array or torch tensor)"
        raise ArgumentError(f"{label}: expected {want}, got a {info.describe()}; move it to the GPU")
    if info.dtype not in elem.dtypes:
        hint = ""
        if elem.ir == "bf16" and info.kind == "CuPy array" and info.dtype in ("uint16", "int16"):
            hint = " (pass tawa.runtime.reinterpret(x, 'bf16') to read 16-bit integers as bf16 bits)"
        elif elem.ir.startswith("f8") and info.kind == "CuPy array" and info.dtype in ("uint8", "int8"):
            # CuPy has no fp8 dtype either.
            hint = f" (pass tawa.runtime.reinterpret(x, '{elem.ir}') to read bytes as {elem.ir} bits)"
        raise ArgumentError(f"{label}: expected {elem.ir} elements, got a {info.describe()}{hint}")
    shape = info.shape
    if len(shape) != rank:
        raise ArgumentError(f"{label}: expected a rank-{rank} array ({a.type}), got shape {shape}")
    for axis, size in a.static:
        if shape[axis] != size:
            raise ArgumentError(f"{label}: dimension {axis} must be {size} ({a.type}), got shape {shape}")
    strides = dense_strides(shape, info.itemsize)
    if not is_dense_row_major(shape, info.strides, info.itemsize):
        problem = _stride_problem(shape, info.strides, info.itemsize)
        if problem is not None:
            why = (
                "a tensor map reads it: its rows must be contiguous and its other strides positive multiples of 16 bytes"
                if a.tma_only else
                "the kernel addresses it itself: its rows must be contiguous and its other strides positive"
            )
            error = TensorMapError if a.tma_only else ArgumentError
            raise error(
                f"{label}: {problem}: got byte strides {info.strides} "
                f"for shape {shape} ({why}); pass a contiguous copy"
            )
        assert info.strides is not None
        # Size-1 dimensions keep their dense stride: theirs is arbitrary.
        strides = tuple(st if d != 1 else dense for d, st, dense in zip(shape, info.strides, strides))
    if 0 in shape:
        return info, strides
    if info.ptr % info.itemsize:
        raise ArgumentError(f"{label}: address {info.ptr:#x} is not aligned to its {info.itemsize}-byte elements")
    if a.tma:
        if info.ptr % TMA_ALIGN:
            raise TensorMapError(
                f"{label}: address {info.ptr:#x} is not 16-byte aligned, which TMA requires "
                f"(a view starting {info.ptr % TMA_ALIGN} bytes into an allocation?)"
            )
        for axis in range(rank - 1):
            if strides[axis] % TMA_ALIGN:
                inner = math.prod(shape[axis + 1 :])
                raise TensorMapError(
                    f"{label}: the stride of dimension {axis} is {strides[axis]} bytes, not a "
                    f"multiple of 16 as TMA requires (shape {shape}: the trailing "
                    f"{inner} elements should be a multiple of {TMA_ALIGN // info.itemsize})"
                )
        if rank > 1 and strides[0] >= MAX_TMA_STRIDE:
            raise TensorMapError(f"{label}: the stride of dimension 0 ({strides[0]} bytes) is too large for TMA (< 2^40)")
        if any(d > MAX_TMA_DIM for d in shape):
            raise TensorMapError(f"{label}: shape {shape} has a dimension above 2^32, too large for TMA")
    return info, strides


def _stride_problem(shape: Sequence[int], strides: Sequence[int] | None, itemsize: int) -> str | None:
    """What keeps a non-dense array from being read in place, naming the
    dimension, or None: a kernel reads it through a tensor map or its own
    addresses (`nvgpu.memref_stride`) with unit stride along the last
    dimension and positive strides, whole elements, along the others (a
    tensor map's 16-byte alignment is checked as for dense arrays).  A slice
    of a bigger matrix (`x[:, :k]`) or one head of a [B, S, H, D] tensor
    is read in place; a transposed view is not."""
    if strides is None or not shape:
        return "must be dense row-major (C-contiguous)"
    if shape[-1] != 1 and strides[-1] != itemsize:
        return f"the stride of its last dimension is {strides[-1]} bytes, not one {itemsize}-byte element"
    for axis, (d, st) in enumerate(zip(shape[:-1], strides[:-1])):
        if d != 1 and (st <= 0 or st % itemsize):
            return f"the stride of dimension {axis} is {st} bytes, not a positive multiple of its {itemsize}-byte elements"
    return None


def _check_scalar(a: ArgSpec, value: Any) -> int | float:
    if a.kind == "int":
        if type(value) is not int and (
            isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer)
        ):
            raise ArgumentError(f"{a.label}: expected a Python int ({a.type}), got {describe_value(value)}")
        v = int(value)
        if not a.lo <= v < a.hi:
            raise ArgumentError(f"{a.label}: {v} does not fit in {a.type}")
        return v & ((1 << a.bits) - 1)
    if a.kind == "f32":
        if isinstance(value, bool | np.bool_) or not isinstance(value, float | int | np.floating | np.integer):
            raise ArgumentError(f"{a.label}: expected a float (f32), got {describe_value(value)}")
        return float(np.float32(value))
    raise ArgumentError(f"{a.label}: {a.problem}")


def plan_launch(
    abi: KernelABI | Signature,
    args: Sequence[Any],
    grid: Any,
    names: Sequence[str] | None = None,
) -> LaunchPlan:
    """Checks `args` against the kernel's signature and packs its parameters.
    Raises a one-line ArgumentError naming the first bad argument.  Pass the
    `signature(abi)` to save working it out (hashing the ABI) every time."""
    if isinstance(abi, Signature):
        sig = abi
        abi = sig.abi
    else:
        sig = signature(abi, None if names is None else tuple(names))
    logical = normalize_grid(grid, f"@{abi.name}")
    if len(args) != len(sig.args):
        raise ArgumentError(
            f"@{abi.name} takes {len(sig.args)} arguments ({_signature_text(abi, sig.names)}), got {len(args)}"
        )
    values: list[Any] = []
    device: tuple[int, int] | None = None  # (argument, device) of the first array that says
    uses_torch = False
    for a, value in zip(sig.args, args):
        if a.kind != "array":
            values.append(_check_scalar(a, value))
            continue
        info, strides = _check_array(a, value)
        values.append((info, strides))
        uses_torch = uses_torch or info.is_torch
        if info.device is None:
            continue
        if device is None:
            device = (a.index, info.device)
        elif info.device != device[1]:
            j = device[0]
            raise ArgumentError(
                f"{a.label} is on CUDA device {info.device}, "
                f"argument {j} (%{sig.names[j]}) on device {device[1]}"
            )

    params: list[tuple[str, Any]] = []
    for step in sig.program:
        op, i = step[0], step[1]
        if op == "ptr":
            params.append(("u64", values[i][0].ptr))
        elif op == "dim":
            params.append(("u64", values[i][0].shape[step[2]]))
        elif op == "stride":
            info, strides = values[i]
            params.append(("u64", strides[step[2]] // info.itemsize))
        elif op == "scalar":
            params.append((sig.args[i].packed, values[i]))
        elif op == "grid":
            params.append(("u64", logical[i]))
        elif op == "watchdog":  # the buffer is the loaded kernel's (tawa.runtime.watchdog)
            params.append(("watchdog", abi))
        else:
            info, strides = values[i]
            elem = sig.args[i].elem
            assert elem is not None
            params.append(("tensormap", _tensormap(step[2], info, strides, elem)))

    return LaunchPlan(
        shape=physical_launch(abi, logical),
        params=tuple(params),
        device=None if device is None else device[1],
        uses_torch=uses_torch,
        empty=0 in logical,
    )


# --------------------------------------------------------------------------- launch keys


def _torch_read(v: str) -> str:
    # A contiguous tensor's plan depends on its shape only (the checks take
    # dense strides, ignoring those of size-1 dimensions, as torch's
    # is_contiguous does), and is_contiguous() is cheaper than stride().
    return f"{v}.data_ptr(), {v}.shape, {v}.is_contiguous() or {v}.stride(), {v}.dtype"


def _torch_layout(v: str, p: str) -> tuple[str, str]:
    # The device is read from the tensor (-1 on the CPU): the address no
    # longer names it.
    return f"{p} = {v}.data_ptr()", f"{p} & 15, {v}.get_device(), {v}.shape, {v}.is_contiguous() or {v}.stride(), {v}.dtype"


def _cupy_read(v: str) -> str:
    return f"{v}.data.ptr, {v}.shape, {v}.strides, {v}.dtype"


def _cupy_layout(v: str, p: str) -> tuple[str, str]:
    return f"{p} = {v}.data.ptr", f"{p} & 15, {v}.data.device_id, {v}.shape, {v}.strides, {v}.dtype"


def _array_read(t: type, addresses: bool = True) -> Callable[..., Any] | None:
    """The key's read of an array of exact type `t`, or None: no cheap read.
    With `addresses`, a function of the argument's variable name giving the
    key's Python source; without, of the variable and the name its address
    goes to, giving the statement that reads the address and the key's
    source (`LaunchKeys`'s layout keys)."""
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(t, torch.Tensor):
        return _torch_read if addresses else _torch_layout
    cupy = sys.modules.get("cupy")
    if cupy is not None and issubclass(t, cupy.ndarray):
        return _cupy_read if addresses else _cupy_layout
    return None


_SCALAR_TYPES = {"int": (int,), "f32": (int, float)}
"""Python types a scalar argument's key accepts: a plan depends only on the
value (the checks reject bool and NumPy scalars: they take the full path)."""


class LaunchKeys:
    """Reads launch keys for a kernel with argument kinds `kinds`
    (`ArgSpec.kind`: `array`, `int`, `f32`, `unsupported`).

    `keys(args, grid)` is what a launch's checks and packed parameters
    depend on, or None when some argument has no cheap read: two launches
    with equal keys get the same `LaunchPlan`.  For a torch tensor or a
    CuPy array the key holds its pointer, shape, strides (torch: True when
    contiguous) and dtype; under CUDA's unified addressing the pointer names
    the device too.  For an int or f32 scalar, its value.  Anything else
    (NumPy scalars, bools, `reinterpret` views, other arrays, a wrong number
    of arguments) gives None, and the launch is checked in full.

    A key is read by a function generated for the exact Python types of the
    arguments and the grid's number of axes (one tuple, no loop, no type
    dispatch), made when they are first seen; for `gemm(A, B, C, M, N, K)`
    with torch tensors and a 2-D grid:

        def read(args, grid):
            try:
                [a0, a1, a2, a3, a4, a5] = args
                [g0, g1] = grid
            except (ValueError, TypeError):
                return miss(args, grid)
            if type(a0) is t0 and ... and type(a5) is t5 and type(g0) is int and type(g1) is int:
                return (mark, g0, g1, a0.data_ptr(), a0.shape, a0.is_contiguous() or a0.stride(),
                        a0.dtype, ..., a3, a4, a5)
            return miss(args, grid)

    `mark` (the types and the grid's rank) starts every key, so keys read
    for different types never compare equal; `miss` looks up or makes the
    reader of the new types.  A grid of ints as a list keys like the tuple
    (the checks take both alike); grids of other numbers take the full path.
    Every key is hashable.

    `LaunchKeys(kinds, addresses=False)` reads *layout keys*: each array's
    address modulo 16 and device in place of its address, and the
    addresses themselves beside the key, `(key, (p0, p2))`, in argument
    order.  Two launches with equal layout keys get plans that differ only
    in the addresses, which a launch template writes
    (`tawa.runtime.template`): every check that reads an address reads its
    alignment (at most 16 bytes) or its device."""

    def __init__(self, kinds: Sequence[str], addresses: bool = True):
        self.kinds = tuple(kinds)
        self.addresses = addresses
        self._readers: dict[tuple[type, ...], Callable[[Sequence[Any], Any], Any]] = {}
        self.read: Callable[[Sequence[Any], Any], tuple[Any, ...] | None] = self._miss
        """The reader of the types seen last (what `__call__` runs)."""

    def __call__(self, args: Sequence[Any], grid: Any) -> tuple[Any, ...] | None:
        return self.read(args, grid)

    def _miss(self, args: Sequence[Any], grid: Any) -> tuple[Any, ...] | None:
        if len(args) != len(self.kinds):
            return None
        if type(grid) is int:
            rank = 0
        elif type(grid) in (tuple, list) and 1 <= len(grid) <= 3 and all(type(d) is int for d in grid):
            rank = len(grid)
        else:  # the checks take NumPy integers too, and reject floats and bools
            return None
        types = (*map(type, args), rank)
        reader = self._readers.get(types)
        if reader is None:
            reader = self._reader(types[:-1], rank)
            if reader is None:
                return None
            self._readers[types] = reader
        self.read = reader
        return reader(args, grid)

    def _reader(self, types: tuple[type, ...], rank: int) -> Callable[[Sequence[Any], Any], Any] | None:
        """The reader of arguments of `types` and a grid of `rank` ints (0:
        an int), or None if an argument has no cheap read."""
        reads, loads, ptrs = [], [], []
        for i, (kind, t) in enumerate(zip(self.kinds, types)):
            if kind == "array":
                read = _array_read(t, self.addresses)
                if read is None:
                    return None
                if self.addresses:
                    reads.append(read(f"a{i}"))
                else:
                    load, key = read(f"a{i}", f"p{i}")
                    loads.append(f"        {load}\n")
                    reads.append(key)
                    ptrs.append(f"p{i}")
            elif t in _SCALAR_TYPES.get(kind, ()):
                reads.append(f"a{i}")
            else:
                return None
        n = len(types)
        # Unpacking raises for another count of arguments or grid axes.
        unpack = f"        [{', '.join(f'a{i}' for i in range(n))}] = args\n"
        if rank:
            unpack += f"        [{', '.join(f'g{j}' for j in range(rank))}] = grid\n"
        guard = [f"type(a{i}) is t{i}" for i in range(n)]
        guard += [f"type(g{j}) is int" for j in range(rank)] if rank else ["type(grid) is int"]
        grid = [f"g{j}" for j in range(rank)] if rank else ["grid"]
        result = f"(mark, {', '.join(grid + reads)})"
        if not self.addresses:
            result = f"{result}, ({''.join(p + ', ' for p in ptrs)})"
        source = (
            "def read(args, grid):\n"
            "    try:\n"
            f"{unpack}"
            "    except (ValueError, TypeError):\n"
            "        return miss(args, grid)\n"
            f"    if {' and '.join(guard)}:\n"
            f"{''.join(loads)}"
            f"        return {result}\n"
            "    return miss(args, grid)\n"
        )
        scope: dict[str, Any] = {f"t{i}": t for i, t in enumerate(types)}
        scope.update(mark=(*types, rank), miss=self._miss)
        exec(compile(source, f"<launch key of {n} arguments>", "exec"), scope)
        return scope["read"]


_PACK = {"u64": struct.Struct("<Q").pack, "u32": struct.Struct("<I").pack, "f32": struct.Struct("<f").pack}


def kernel_arguments(
    params: Sequence[tuple[str, Any]], encode: Callable[[TensorMapSpec], bytes]
) -> tuple[bytes, ...]:
    """The bytes the driver copies for each of `params` (little-endian `u64`,
    `u32`, `f32`; `encode(spec)`, 128 bytes, per tensor map), for
    `tawa.runtime.params.PackedParams` to lay out."""
    out: list[bytes] = []
    for kind, value in params:
        if kind == "tensormap":
            out.append(encode(value))
        elif kind in _PACK:
            out.append(_PACK[kind](value))
        else:
            raise AssertionError(f"unknown parameter kind {kind!r}")
    return tuple(out)


def tensormap_by_value(opaque: Sequence[int]) -> bytes:
    """A 128-byte tensor map (16 uint64 words, `CUtensorMap.opaque`: ints, or
    cuda-bindings' `cuuint64_t`, which converts with `int`) as the bytes of
    a `.param .align 128 .b8 [128]` parameter."""
    words = [int(w) for w in opaque]
    if len(words) != 16:
        raise LaunchError(f"a CUtensorMap has 16 words, got {len(words)}")
    return struct.pack("<16Q", *words)
