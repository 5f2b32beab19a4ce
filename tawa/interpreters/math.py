"""`math` on float scalars and tensors (NumPy arrays).

f32 stays f32; the narrower formats are computed in f32 and rounded once to
the result type (see `tawa.interpreters.arith`).  NumPy's f32 functions are
accurate to about an ulp; the GPU's approximate `ex2.approx.f32` differs from
them by a few ulps, far below the tolerances tile programs are checked with.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import math
from xdsl.interpreter import Interpreter, PythonValues, impl, register_impls
from xdsl.interpreters.math import MathFunctions

from tawa.interpreters.arith import float_unary


def _rsqrt(x):
    return x.dtype.type(1) / np.sqrt(x)


@register_impls
class TensorMathFunctions(MathFunctions):
    """`math` on scalars and tensors."""

    @impl(math.Exp2Op)
    def run_exp2(self, interpreter: Interpreter, op: math.Exp2Op, args: PythonValues):
        return (float_unary(op, args[0], np.exp2),)

    @impl(math.ExpOp)
    def run_exp(self, interpreter: Interpreter, op: math.ExpOp, args: PythonValues):
        return (float_unary(op, args[0], np.exp),)

    @impl(math.LogOp)
    def run_log(self, interpreter: Interpreter, op: math.LogOp, args: PythonValues):
        return (float_unary(op, args[0], np.log),)

    @impl(math.Log2Op)
    def run_log2(self, interpreter: Interpreter, op: math.Log2Op, args: PythonValues):
        return (float_unary(op, args[0], np.log2),)

    @impl(math.SqrtOp)
    def run_sqrt(self, interpreter: Interpreter, op: math.SqrtOp, args: PythonValues):
        return (float_unary(op, args[0], np.sqrt),)

    @impl(math.RsqrtOp)
    def run_rsqrt(self, interpreter: Interpreter, op: math.RsqrtOp, args: PythonValues):
        return (float_unary(op, args[0], _rsqrt),)

    @impl(math.AbsFOp)
    def run_absf(self, interpreter: Interpreter, op: math.AbsFOp, args: PythonValues):
        return (float_unary(op, args[0], np.abs),)

    @impl(math.TanhOp)
    def run_tanh(self, interpreter: Interpreter, op: math.TanhOp, args: PythonValues):
        return (float_unary(op, args[0], np.tanh),)
