"""NumPy semantics of tawa's IR: the CPU reference every pass is checked against.

- `interpret(module_or_text, kernel, grid, *args)` runs a tile kernel over its
  launch grid on NumPy arrays (also `tawa.interpret`).
- `call(...)` runs one instance of a function and returns its results.
- `make_interpreter(module)`, `Launch` / `set_launch` / `get_launch`,
  `check_arguments` and `run_program` are the parts, for drivers that run
  kernel instances differently (e.g. warp groups as concurrent tasks).

docs/interpreter.md describes the semantics and the error bounds.
"""

from __future__ import annotations

from tawa.interpreters.driver import call, check_arguments, find_kernel, interpret
from tawa.interpreters.errors import ArgumentError, InterpreterError, SimulationError
from tawa.interpreters.machine import default_functions, make_interpreter, run_program
from tawa.interpreters.tile import Launch, get_launch, set_launch

__all__ = [
    "ArgumentError",
    "InterpreterError",
    "Launch",
    "SimulationError",
    "call",
    "check_arguments",
    "default_functions",
    "find_kernel",
    "get_launch",
    "interpret",
    "make_interpreter",
    "run_program",
    "set_launch",
]
