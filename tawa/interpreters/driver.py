"""Running tile kernels on the CPU: argument checks, the launch grid, errors.

    tawa.interpret(module_or_text, kernel, grid, *args)

runs `kernel` once per program id of `grid` (axis 0 fastest), on NumPy arrays
that stores write in place.  The pieces are reusable on their own:

- `make_interpreter(module)` builds an xdsl `Interpreter` with every
  implementation registered (`tile`, tensor-capable `arith` / `math` / `scf`,
  `func`).  An xdsl `Interpreter` is not thread-safe: concurrent tasks (e.g.
  the warp groups of `aref.warp_specialize`) each need their own, sharing the
  module; `set_launch` gives each the program id it runs under.
- `check_arguments(func_op, args)` validates and converts the arguments.
- `run_program(interpreter, func_op, launch, args)` runs one kernel instance
  and returns the function's results; `call(...)` does it from text, which
  is handy for testing single ops on small functions.

Every error is a `TawaError` (`InterpreterError`; `ArgumentError` for bad
arguments) with a one-line message.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, ModuleOp, TensorType
from xdsl.interpreter import PythonValues
from xdsl.ir import Attribute

from tawa.diagnostics import location_of, verify
from tawa.interpreters.aref import ArefFunctions
from tawa.interpreters.arith import tensor
from tawa.interpreters.cta import CtaFunctions, is_thread_level, run_grid
from tawa.interpreters.dtypes import (
    UnsupportedType,
    dtype_of,
    int_bits,
    is_float_type,
    is_int_type,
    round_float,
    wrap_int,
)
from tawa.interpreters.errors import ArgumentError, InterpreterError
from tawa.interpreters.fragments import FragmentFunctions
from tawa.interpreters.machine import make_interpreter, run_program
from tawa.interpreters.nvgpu import NvgpuFunctions
from tawa.interpreters.schedule import Schedule, program_order
from tawa.interpreters.tile import Launch
from tawa.interpreters.wgmma import WgmmaFunctions

# --------------------------------------------------------------------------- lookup


def as_module(module_or_text: ModuleOp | str | bytes, name: str = "<input>") -> ModuleOp:
    """A parsed and verified module."""
    if isinstance(module_or_text, ModuleOp):
        verify(module_or_text)
        return module_or_text
    if isinstance(module_or_text, str | bytes):
        from tawa.ir import parse

        return parse(module_or_text, name)
    raise InterpreterError(
        f"expected a ModuleOp or the text of one, got {type(module_or_text).__name__}",
        "tawa.interpret",
    )


def kernels_of(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.walk() if isinstance(op, func.FuncOp) and op.body.blocks]


def find_kernel(module: ModuleOp, kernel: str) -> func.FuncOp:
    """The function named `kernel` (with or without its leading '@')."""
    if not isinstance(kernel, str):
        raise InterpreterError(f"the kernel is named by a str (e.g. \"gemm\"), got {type(kernel).__name__}",
                               "tawa.interpret")
    name = kernel.removeprefix("@")
    funcs = kernels_of(module)
    for f in funcs:
        if f.sym_name.data == name:
            return f
    known = ", ".join(f"@{f.sym_name.data}" for f in funcs) or "none"
    raise InterpreterError(
        f"no kernel named @{name}; the module defines: {known}", "tawa.interpret"
    )


def normalize_grid(grid: int | Sequence[int]) -> tuple[int, int, int]:
    """The grid padded to three axes; 1 to 3 non-negative Python ints."""
    dims = (grid,) if isinstance(grid, int | np.integer) else grid
    try:
        ok = 1 <= len(dims) <= 3 and all(
            isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in dims
        )
    except TypeError:
        ok = False
    if not ok:
        raise InterpreterError(
            f"grid must be 1 to 3 non-negative integers, got {grid!r}", "tawa.interpret"
        )
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


# --------------------------------------------------------------------------- arguments


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype.name} array of shape {value.shape}"
    if isinstance(value, np.generic):
        return f"numpy {value.dtype.name} scalar"
    return type(value).__name__


def _expected(t: Attribute) -> str:
    if isinstance(t, MemRefType):
        return f"a rank-{t.get_num_dims()} {dtype_of(t).name} array"
    if isinstance(t, TensorType):
        return f"a {dtype_of(t).name} array of shape {tuple(t.get_shape())}"
    if isinstance(t, IntegerType) and t.width.data == 1:
        return "a bool (i1)"
    if is_int_type(t):
        return f"a Python int ({t})"
    if is_float_type(t):
        return f"a float ({t})"
    return str(t)


def check_argument(t: Attribute, value: Any) -> Any | str:
    """The interpreter's value for an argument of type `t`, or what is wrong."""
    if isinstance(t, MemRefType | TensorType):
        if not isinstance(value, np.ndarray) or value.dtype != dtype_of(t):
            return "mismatch"
        if value.ndim != t.get_num_dims():
            return "mismatch"
        shape = tuple(t.get_shape())
        if isinstance(t, TensorType) and value.shape != shape:
            return "mismatch"
        for axis, (want, got) in enumerate(zip(shape, value.shape)):
            if want >= 0 and want != got:
                return f"dimension {axis} must be {want} ({t}), got shape {value.shape}"
        if isinstance(t, TensorType):
            return tensor(value.copy())  # tiles are values: never alias the caller's array
        return value  # memrefs are the caller's memory: written in place
    if isinstance(t, IntegerType) and t.width.data == 1:
        if isinstance(value, bool | np.bool_):
            return bool(value)
        return "mismatch"
    if is_int_type(t):
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
            return "mismatch"
        bits = int_bits(t)
        lo = -(1 << (bits - 1))
        hi = (1 << (bits - 1)) if isinstance(t, IndexType) else (1 << bits)
        if not lo <= int(value) < hi:
            return f"{int(value)} does not fit in {t}"
        return wrap_int(int(value), bits)
    if is_float_type(t):
        if isinstance(value, bool | np.bool_) or not isinstance(
            value, float | int | np.floating | np.integer
        ):
            return "mismatch"
        return round_float(np.float64(value), dtype_of(t))
    return f"arguments of type {t} are not supported by the interpreter"


def check_arguments(func_op: func.FuncOp, args: Sequence[Any]) -> tuple[Any, ...]:
    """Validates `args` against the kernel's signature and converts scalars to
    the interpreter's representation (see `tawa.interpreters.dtypes`)."""
    name = f"@{func_op.sym_name.data}"
    where = location_of(func_op) or "tawa.interpret"
    params = func_op.body.blocks.first.args  # type: ignore[union-attr]
    if len(args) != len(params):
        sig = ", ".join(
            f"%{p.name_hint or i}: {p.type}" for i, p in enumerate(params)
        )
        raise ArgumentError(
            f"{name} takes {len(params)} arguments ({sig}), got {len(args)}", where
        )
    values = []
    for i, (param, value) in enumerate(zip(params, args)):
        label = f"{name} argument {i} (%{param.name_hint or i})"
        try:
            checked = check_argument(param.type, value)
        except UnsupportedType as err:
            raise ArgumentError(f"{label}: {err}", where) from None
        if isinstance(checked, str):
            if checked == "mismatch":
                checked = f"expected {_expected(param.type)}, got {_describe(value)}"
            raise ArgumentError(f"{label}: {checked}", where)
        values.append(checked)
    return tuple(values)


# --------------------------------------------------------------------------- running


def call(
    module_or_text: ModuleOp | str | bytes,
    kernel: str,
    *args: Any,
    program_id: Sequence[int] = (0, 0, 0),
    grid: Sequence[int] = (1, 1, 1),
) -> PythonValues:
    """Runs one instance of function `kernel` and returns its results.  For
    testing op semantics on small functions; kernels use `interpret`."""
    module = as_module(module_or_text)
    func_op = find_kernel(module, kernel)
    values = check_arguments(func_op, args)
    pid = tuple(program_id) + (0,) * (3 - len(program_id))
    launch = Launch(pid, normalize_grid(grid))  # type: ignore[arg-type]
    return run_program(make_interpreter(module), func_op, launch, values)


def interpret(
    module_or_text: ModuleOp | str | bytes,
    kernel: str,
    grid: int | Sequence[int],
    *args: Any,
    schedule: Schedule | None = None,
    ctas: int | None = None,
    order: str = "grid",
) -> None:
    """Runs tile kernel `kernel` once per program id of `grid`, like a GPU launch.

    `args` follow the kernel's signature: NumPy arrays for memrefs (dtype
    bf16 ↔ `ml_dtypes.bfloat16`, f16 ↔ `np.float16`, f8E4M3FN ↔
    `ml_dtypes.float8_e4m3fn`, f32 ↔ `np.float32`; the memref's rank), which
    `tile.store` writes in place; Python ints for `index` / integer scalars,
    floats for float scalars.  Raises `ArgumentError` for arguments that do
    not match and `InterpreterError` for errors while running.

    Warp-specialized kernels (`aref.warp_specialize`) run their partitions as
    concurrent tasks interleaved by `schedule` (default: seeded random, seed
    0); deadlocks and aref protocol misuse raise `SimulationError`
    (docs/interpreter.md).

    Thread-level kernels (below `tawa-persistent`: they use `nvgpu` ops) run
    as CTAs of simulated threads (tawa.interpreters.cta); a persistent one
    on `ctas` CTAs (default 2) that share out the programs of `grid`, or
    with thread-block clusters (`#nvgpu.kernel<..., cluster = N>`) on `ctas`
    clusters of N CTAs, as `nvgpu.persistent_ctas` counts them.

    `order` is the order programs (CTAs, clusters) run in, one after
    another: `grid` (x fastest, then y, then z), `reversed`, or `shuffled`
    (seeded by the schedule's seed).  A GPU promises no order, so a kernel
    whose programs communicate (`tile.counter_arrive`) must compute the same
    in every one.
    """
    module = as_module(module_or_text)
    func_op = find_kernel(module, kernel)
    if func_op.function_type.outputs.data:
        raise InterpreterError(
            f"@{func_op.sym_name.data} returns values; a kernel writes its outputs "
            "through memref arguments",
            location_of(func_op) or "tawa.interpret",
        )
    grid3 = normalize_grid(grid)
    values = check_arguments(func_op, args)
    if is_thread_level(func_op):
        functions = [ArefFunctions(schedule), CtaFunctions(), NvgpuFunctions(), FragmentFunctions(), WgmmaFunctions()]
        run_grid(module, func_op, grid3, values, functions, schedule or Schedule(), ctas, order)
        return
    arefs = ArefFunctions(schedule)
    interp = make_interpreter(module, [arefs])
    for z, y, x in program_order(itertools.product(*(range(g) for g in reversed(grid3))), order, schedule):
        arefs.attach(interp)
        run_program(interp, func_op, Launch((x, y, z), grid3), values)
