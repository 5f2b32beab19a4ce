"""The errors of the CPU interpreters, in one module that every interpreter
module imports (and that imports none of them).

`InterpreterError` is a kernel that cannot be set up or run on the CPU
(`ArgumentError`: an argument that does not match the signature);
`SimulationError` is what the CTA simulator finds in a kernel that runs: a
deadlock or a misuse of the aref and barrier protocol, located at the op
where it shows (`simulation_error(op, message)`).
"""

from __future__ import annotations

from xdsl.ir import Operation

from tawa.diagnostics import TawaError, location_of


class InterpreterError(TawaError):
    """An error while setting up or running a kernel on the CPU."""


class ArgumentError(InterpreterError):
    """A kernel argument that does not match the kernel's signature."""


class SimulationError(TawaError):
    """A deadlock or a misuse of the aref protocol found by the simulator."""


def simulation_error(op: Operation, message: str) -> SimulationError:
    """A `SimulationError` located at `op` (or at `tawa.interpret` when it has no location)."""
    return SimulationError(message, location_of(op) or "tawa.interpret")


__all__ = ["ArgumentError", "InterpreterError", "SimulationError", "simulation_error"]
