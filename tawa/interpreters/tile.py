"""NumPy semantics of the `tile` dialect (docstrings of `tawa.dialects.tile`).

Each op works on whole tiles with NumPy, never element by element in Python.
The program id and grid of the running kernel instance are interpreter data
(`set_launch` / `get_launch`), so several interpreters (one per program, or
one per concurrent task of a program) can run side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import memref
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.utils.exceptions import InterpretationError

from tawa.dialects import tile
from tawa.dialects.tile import CmpIPredicate, ReduceKind
from tawa.interpreters.arith import tensor
from tawa.interpreters.dtypes import compute_dtype, dtype_of, mma_operand, round_float, scalar_from_python, unsigned


@dataclass(frozen=True)
class Launch:
    """Where a kernel instance runs: its program id and the launch grid, both
    padded to three axes (missing axes: id 0, extent 1)."""

    program_id: tuple[int, int, int]
    grid: tuple[int, int, int]


def set_launch(interpreter: Interpreter, launch: Launch) -> None:
    interpreter.set_data(TileFunctions, "launch", launch)


def get_launch(interpreter: Interpreter) -> Launch:
    launch = interpreter.get_data(TileFunctions, "launch", lambda: None)
    if launch is None:
        raise InterpretationError("no launch: program ids are only defined inside a launch grid")
    return launch


def inside_box(
    array_shape: tuple[int, ...], offsets: PythonValues, tile_shape: tuple[int, ...]
) -> tuple[tuple[slice, ...], tuple[slice, ...], tuple[int, ...]] | None:
    """The part of the box at `offsets` with `tile_shape` (padded with leading
    1s to the array's rank) that lies inside the array: (array slices, box
    slices, padded box shape), or None when nothing does."""
    shape = (1,) * (len(array_shape) - len(tile_shape)) + tile_shape
    src: list[slice] = []
    dst: list[slice] = []
    for off, size, extent in zip(offsets, shape, array_shape):
        lo, hi = max(off, 0), min(off + size, extent)
        if lo >= hi:
            return None
        src.append(slice(lo, hi))
        dst.append(slice(lo - off, hi - off))
    return tuple(src), tuple(dst), shape


@register_impls
class TileFunctions(InterpreterFunctions):
    """NumPy implementations of the `tile` ops."""

    @impl(tile.ProgramIdOp)
    def run_program_id(self, interpreter: Interpreter, op: tile.ProgramIdOp, args: PythonValues):
        return (get_launch(interpreter).program_id[op.axis.value.data],)

    @impl(tile.NumProgramsOp)
    def run_num_programs(
        self, interpreter: Interpreter, op: tile.NumProgramsOp, args: PythonValues
    ):
        return (get_launch(interpreter).grid[op.axis.value.data],)

    @impl(tile.LoadOp)
    def run_load(self, interpreter: Interpreter, op: tile.LoadOp, args: PythonValues):
        """Copies the box into a fresh tile; elements outside the array read 0."""
        array, *offsets = args
        tile_shape = tuple(op.result.type.get_shape())
        out = np.zeros(tile_shape, dtype=dtype_of(op.result.type))
        box = inside_box(array.shape, offsets, tile_shape)
        if box is not None:
            src, dst, shape = box
            out.reshape(shape)[dst] = array[src]
        return (tensor(out),)

    @impl(tile.StoreOp)
    def run_store(self, interpreter: Interpreter, op: tile.StoreOp, args: PythonValues):
        """Writes the box into the array in place; elements outside it are dropped."""
        value, array, *offsets = args
        if not array.flags.writeable:
            raise InterpretationError("tile.store: the destination array is read-only")
        box = inside_box(array.shape, offsets, value.shape)
        if box is not None:
            src, dst, shape = box
            array[src] = value.reshape(shape)[dst]
        return ()

    @impl(tile.AtomicAddOp)
    def run_atomic_add(self, interpreter: Interpreter, op: tile.AtomicAddOp, args: PythonValues):
        """Adds the box into the array in place, in f32 (each element
        rounded once per add, as `red.global.add.f32` does); elements
        outside it are dropped.  Programs run one at a time here, so every
        add is atomic; another program order changes only the rounding."""
        value, array, *offsets = args
        if not array.flags.writeable:
            raise InterpretationError("tile.atomic_add: the destination array is read-only")
        box = inside_box(array.shape, offsets, value.shape)
        if box is not None:
            src, dst, shape = box
            array[src] += value.reshape(shape)[dst].astype(np.float32)
        return ()

    @impl(tile.CounterArriveOp)
    def run_counter_arrive(self, interpreter: Interpreter, op: tile.CounterArriveOp, args: PythonValues):
        """Increments counters[index], wrapping to 0 at the last of `count`
        arrivals (PTX `atom.inc`), and tells whether this arrival was the
        last.  Programs run one at a time here, so every store of an
        earlier program is already visible: release and acquire hold."""
        counters, index, count = args
        count = int(count)
        old = int(counters[index])
        if not 0 <= old < count:
            raise InterpretationError(f"tile.counter_arrive: counter {index} holds {old}, outside [0, {count}): "
                                      "it was not zeroed, or programs of another count share it")
        counters[index] = 0 if old == count - 1 else old + 1
        return (old == count - 1,)

    @impl(tile.LoadScalarOp)
    def run_load_scalar(self, interpreter: Interpreter, op: tile.LoadScalarOp, args: PythonValues):
        """The element at the offsets as a scalar of its type; 0 outside the array."""
        array, *offsets = args
        inside = all(0 <= o < n for o, n in zip(offsets, array.shape, strict=True))
        value = array[tuple(offsets)] if inside else 0
        return (scalar_from_python(float(value) if array.dtype.kind == "f" else int(value), op.result.type),)

    @impl(memref.DimOp)
    def run_dim(self, interpreter: Interpreter, op: memref.DimOp, args: PythonValues):
        """The array's extent along an axis: the guards of accesses placed
        by loaded values compare offsets with it (`tawa-warp-specialize`)."""
        array, axis = args
        return (int(array.shape[axis]),)

    @impl(tile.DotOp)
    def run_dot(self, interpreter: Interpreter, op: tile.DotOp, args: PythonValues):
        """lhs · rhs (lhsᵀ with `lhs_transposed`, rhsᵀ with `rhs_transposed`)
        + acc: operands converted to f32 as the tensor core reads them
        (exactly; f32 as tf32), products summed in f32."""
        lhs, rhs, acc = args
        a = mma_operand(lhs)
        b = mma_operand(rhs)
        if op.lhs_transposed is not None:
            a = a.T
        if op.rhs_transposed is not None:
            b = b.T
        return (tensor(np.matmul(a, b) + acc),)

    @impl(tile.ZerosOp)
    def run_zeros(self, interpreter: Interpreter, op: tile.ZerosOp, args: PythonValues):
        t = op.result.type
        return (tensor(np.zeros(tuple(t.get_shape()), dtype=dtype_of(t))),)

    @impl(tile.SplatOp)
    def run_splat(self, interpreter: Interpreter, op: tile.SplatOp, args: PythonValues):
        t = op.result.type
        return (tensor(np.full(tuple(t.get_shape()), args[0], dtype=dtype_of(t))),)

    @impl(tile.IotaOp)
    def run_iota(self, interpreter: Interpreter, op: tile.IotaOp, args: PythonValues):
        t = op.result.type
        return (tensor(np.arange(t.get_shape()[0]).astype(dtype_of(t))),)

    @impl(tile.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: tile.ReduceOp, args: PythonValues):
        """max: NaN-propagating maximum.  sum: f32 sums for float tiles (narrow
        formats summed in f32 and rounded once), wrapping sums for integers."""
        (x,) = args
        axis = op.axis.value.data
        dt = x.dtype
        kind = op.kind.data
        if dt == np.bool_:  # i1: max is "or", sum is "xor"
            out = np.any(x, axis) if kind == ReduceKind.MAX else np.logical_xor.reduce(x, axis)
        elif kind == ReduceKind.MAX:
            out = np.max(x, axis)
        elif np.issubdtype(dt, np.integer):
            out = np.sum(x, axis, dtype=dt)
        else:
            out = round_float(np.sum(x, axis, dtype=compute_dtype(dt)), dt)
        return (tensor(np.asarray(out, dtype=dt)),)

    @impl(tile.ExpandDimsOp)
    def run_expand_dims(self, interpreter: Interpreter, op: tile.ExpandDimsOp, args: PythonValues):
        return (tensor(np.expand_dims(args[0], op.axis.value.data)),)

    @impl(tile.BroadcastOp)
    def run_broadcast(self, interpreter: Interpreter, op: tile.BroadcastOp, args: PythonValues):
        shape = tuple(op.result.type.get_shape())
        return (tensor(np.broadcast_to(args[0], shape).copy()),)

    @impl(tile.TransOp)
    def run_trans(self, interpreter: Interpreter, op: tile.TransOp, args: PythonValues):
        return (tensor(np.ascontiguousarray(args[0].T)),)

    @impl(tile.CmpIOp)
    def run_cmpi(self, interpreter: Interpreter, op: tile.CmpIOp, args: PythonValues):
        lhs, rhs = args
        pred = CmpIPredicate(op.predicate.data)
        if pred.value.startswith("u"):
            lhs, rhs = lhs.view(unsigned(lhs.dtype)), rhs.view(unsigned(rhs.dtype))
        fn: Any = _CMP[pred.value.lstrip("su")]
        return (tensor(np.asarray(fn(lhs, rhs))),)

    @impl(tile.CmpFOp)
    def run_cmpf(self, interpreter: Interpreter, op: tile.CmpFOp, args: PythonValues):
        # NumPy's comparisons are IEEE's: ordered ones false on NaN, not_equal true (`une`).
        lhs, rhs = args
        return (tensor(np.asarray(_CMP[op.predicate.data.value[1:]](lhs, rhs))),)

    @impl(tile.SelectOp)
    def run_select(self, interpreter: Interpreter, op: tile.SelectOp, args: PythonValues):
        mask, on_true, on_false = args
        return (tensor(np.where(mask, on_true, on_false)),)


_CMP = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
