"""`scf` for tile programs: `scf.for` with `iter_args`, `scf.if`, `scf.yield`.

Loop-carried values and `scf.if` results may be tensors; since no op writes
into a tensor, passing them along by reference keeps value semantics.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import scf
from xdsl.interpreter import Interpreter, PythonValues, impl, register_impls
from xdsl.interpreters.scf import ScfFunctions
from xdsl.utils.exceptions import InterpretationError


@register_impls
class TileScfFunctions(ScfFunctions):
    """xdsl's `scf` semantics, with checks for what a tile program can get wrong."""

    @impl(scf.ForOp)
    def run_for(self, interpreter: Interpreter, op: scf.ForOp, args: PythonValues) -> PythonValues:
        lb, ub, step, *carried = args
        if step <= 0:
            raise InterpretationError(f"scf.for: step must be positive, got {step}")
        values = tuple(carried)
        for i in range(lb, ub, step):
            values = interpreter.run_ssacfg_region(op.body, (i, *values), "scf.for")
        return values

    @impl(scf.IfOp)
    def run_if(self, interpreter: Interpreter, op: scf.IfOp, args: PythonValues) -> PythonValues:
        (cond,) = args
        if isinstance(cond, np.ndarray):
            raise InterpretationError("scf.if: the condition must be a scalar i1")
        region = op.true_region if cond else op.false_region
        return interpreter.run_ssacfg_region(region, (), "scf.if")
