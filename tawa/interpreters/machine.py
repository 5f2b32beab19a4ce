"""The interpreter machine every driver builds on: an xdsl `Interpreter`
with tawa's op implementations (`make_interpreter`), the listener that
knows which op runs and checks each result's type (`OpTracker`), and one
kernel instance run with its errors located at the failing op
(`run_program`).

The drivers build on it: `tawa.interpreters.driver` runs tile programs
over a grid, and the warp-specialized (`tawa.interpreters.aref`) and
thread-level (`tawa.interpreters.cta`) simulators make one interpreter per
task with it.  It imports no simulator, so they import it and not the
driver that imports them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException, InterpretationError

from tawa.diagnostics import TawaError, first_line, location_of
from tawa.interpreters.arith import TensorArithFunctions
from tawa.interpreters.dtypes import INDEX_BITS, describe_type_mismatch
from tawa.interpreters.errors import InterpreterError
from tawa.interpreters.math import TensorMathFunctions
from tawa.interpreters.scf import TileScfFunctions
from tawa.interpreters.simt import PerThread
from tawa.interpreters.tile import Launch, TileFunctions, set_launch


def default_functions() -> list[InterpreterFunctions]:
    """The implementations every tile program needs."""
    return [
        TensorArithFunctions(),
        TensorMathFunctions(),
        TileScfFunctions(),
        FuncFunctions(),
        TileFunctions(),
    ]


class OpTracker(Interpreter.Listener):
    """Knows which op is running (to locate errors) and checks that every
    result is a valid value of its IR type (shape and dtype of tensors, f32
    scalars being np.float32, ...), so that implementation slips surface at
    the op that made them."""

    def __init__(self, check_types: bool = True):
        self.check_types = check_types
        self.stack: list[Operation] = []

    def will_interpret_op(self, op: Operation, args: PythonValues) -> None:
        self.stack.append(op)

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        if self.check_types:
            for i, (value, result) in enumerate(zip(results, op.results)):
                if not _checkable(value):
                    continue
                if (problem := describe_type_mismatch(value, result.type)) is not None:
                    raise InterpretationError(f"{op.name}: internal error: result {i}: {problem}")
        self.stack.pop()


def _checkable(value: Any) -> bool:
    """Values of the thread-level simulator (per-thread values, fragments,
    shared-memory handles) check themselves."""
    return not isinstance(value, PerThread) and not hasattr(value, "simulated")


def make_interpreter(
    module: ModuleOp,
    functions: Iterable[InterpreterFunctions] = (),
    *,
    check_types: bool = True,
    interpreter_class: type[Interpreter] = Interpreter,
) -> Interpreter:
    """An xdsl `Interpreter` for `module` with tawa's implementations, plus
    `functions` (which may override them).  Call `set_launch` before running
    code that reads program ids."""
    interp = interpreter_class(module, index_bitwidth=INDEX_BITS, listeners=(OpTracker(check_types),))
    for f in default_functions():
        interp.register_implementations(f)
    for f in functions:
        interp.register_implementations(f, override=True)
    return interp


def tracker_of(interpreter: Interpreter) -> OpTracker | None:
    return next((x for x in interpreter.listeners if isinstance(x, OpTracker)), None)




_TOO_BIG = ("Maximum allowed dimension exceeded", "array is too big")
"""NumPy's errors for an array whose size overflows (a tile of 2^64 elements)."""


def run_program(
    interpreter: Interpreter,
    func_op: func.FuncOp,
    launch: Launch,
    args: PythonValues,
) -> PythonValues:
    """Runs one kernel instance (arguments already checked); returns the
    function's results.  Errors become `InterpreterError`s located at the op
    that failed."""
    set_launch(interpreter, launch)
    tracker = tracker_of(interpreter)
    if tracker is not None:
        tracker.stack.clear()
    try:
        with np.errstate(all="ignore"):  # IEEE results (inf, NaN) like the GPU, no warnings
            return interpreter.call_op(func_op, args)
    except TawaError:
        raise
    except Exception as err:
        op = tracker.stack[-1] if tracker is not None and tracker.stack else func_op
        where = location_of(op) or "tawa.interpret"
        message = first_line(err)
        no_impl = "Could not find interpretation function" in message
        if isinstance(err, InterpretationError) and no_impl:
            message = f"'{op.name}' has no CPU semantics (yet)"
        elif isinstance(err, MemoryError) or (isinstance(err, ValueError) and message.startswith(_TOO_BIG)):
            message = f"a value too large for the CPU interpreter's memory ({type(err).__name__}: {message})"
        elif not isinstance(err, DiagnosticException):
            message = f"internal error: {type(err).__name__}: {message}"
        if not message.startswith((op.name, f"'{op.name}'")):
            message = f"{op.name}: {message}"
        program = ", ".join(str(p) for p in launch.program_id)
        raise InterpreterError(f"{message} (program id ({program}))", where) from err


