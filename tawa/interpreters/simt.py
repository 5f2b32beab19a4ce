"""Thread-level IR on the CPU: the threads of a CTA as lanes of one task.

Below `tawa-lower-aref` a kernel is written for threads: `nvgpu.thread_id`
differs between them, an `scf.if` on it runs a branch on some threads only,
and warp groups that branch apart wait on each other through mbarriers.
The simulator runs such code SIMT-style, without a Python thread per GPU
thread:

* A **task** runs a region for a set of **active lanes** (CTA thread ids,
  a boolean mask over the CTA).  A value is either *uniform* (an ordinary
  interpreter value, the same in every active lane) or a `PerThread` array
  holding one value per thread.  The id ops make `PerThread` values; scalar
  `arith` / `math` ops on them run once per active lane
  (`SimtInterpreter`), and a result that is equal in every active lane
  becomes uniform again.
* `scf.if` on a `PerThread` condition **diverges**: if at most one branch
  can block (mbarrier waits, named barriers, aref put/get), the task runs
  the branch that cannot block first and then the other, each for its own
  lanes, in the same interpreter; if both can block, they run as two
  concurrent tasks (`Scheduler.spawn`) that the scheduler interleaves, and
  the parent waits for both.  Either way the results merge per lane.
* `scf.for` needs bounds that are uniform over the active lanes (the only
  loops tawa emits); its carried values may be `PerThread`.
* Every other op gets uniform operands: a `PerThread` operand that is equal
  in every active lane is passed as that value, one that is not is an
  error — except for the ops whose implementations declare that they take
  `PerThread` operands (`LANE_AWARE`: stores with per-thread addresses,
  fragment ops, barriers that count the arriving lanes, ...).

Worked example: `%t = nvgpu.thread_id` in a task of 384 lanes is
`PerThread([0..383])`; `%r = arith.remui %t, %c128` is computed per lane;
`%e = arith.cmpi eq, %r, %c0` is true in lanes 0, 128, 256; and
`scf.if %e { nvgpu.mbarrier_arrive %b[%s] }` runs the arrive once, for 3
active lanes: 3 arrivals, as on the GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.interpreter import Interpreter, OpImplResult, PythonValues
from xdsl.ir import Operation, Region
from xdsl.utils.exceptions import InterpretationError

from tawa.dialects import aref


class PerThread:
    """One value per thread of the CTA (an object array indexed by thread
    id); only the entries of the active lanes are meaningful."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray):
        self.values = values

    def __repr__(self) -> str:
        return f"PerThread({self.values!r})"


def lane_value(x: Any, lane: int) -> Any:
    return x.values[lane] if isinstance(x, PerThread) else x


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - incomparable values are different
        return False


def pack(values: Sequence[Any], lanes: np.ndarray, threads: int) -> Any:
    """The value of `values[i]` in lane `lanes[i]`: uniform when they are
    all the same, else a `PerThread`."""
    first = values[0]
    if all(_same(v, first) for v in values[1:]):
        return first
    out = np.empty(threads, dtype=object)
    for lane, v in zip(lanes, values):
        out[lane] = v
    return PerThread(out)


@dataclass(eq=False)
class Lanes:
    """The lanes a task runs: a boolean mask over the CTA's threads."""

    mask: np.ndarray

    @property
    def threads(self) -> int:
        return len(self.mask)

    def indices(self) -> np.ndarray:
        return np.flatnonzero(self.mask)

    def count(self) -> int:
        return int(self.mask.sum())

    def uniform(self, x: Any, what: Callable[[], str]) -> Any:
        """`x` as one value, which it must be in every active lane."""
        if not isinstance(x, PerThread):
            return x
        idx = self.indices()
        if not len(idx):
            raise InterpretationError(f"{what()}: no active thread")
        vals = x.values[idx]
        if all(_same(v, vals[0]) for v in vals[1:]):
            return vals[0]
        raise InterpretationError(
            f"{what()} differs between threads (thread {idx[0]}: {vals[0]}; "
            f"thread {idx[next(i for i, v in enumerate(vals) if not _same(v, vals[0]))]}: "
            f"{next(v for v in vals if not _same(v, vals[0]))}): the simulator needs it to be "
            "the same in every active thread here"
        )

    def where(self, cond: PerThread | bool) -> tuple[np.ndarray, np.ndarray]:
        """(lanes where `cond` holds, lanes where it does not), among the active."""
        if not isinstance(cond, PerThread):
            c = np.full(self.threads, bool(cond))
        else:
            c = np.zeros(self.threads, dtype=bool)
            idx = self.indices()
            c[idx] = [bool(v) for v in cond.values[idx]]
        return self.mask & c, self.mask & ~c


LANE_AWARE: set[type[Operation]] = {scf.IfOp, scf.ForOp, scf.YieldOp}
"""Ops whose implementations take `PerThread` operands themselves
(extended by the modules that implement them)."""

PER_LANE_DIALECTS = ("arith", "math")
"""Scalar ops of these dialects run once per active lane on `PerThread`
operands."""

PER_LANE_OPS: set[type[Operation]] = set()
"""Other pure scalar ops that run once per active lane (address and
descriptor arithmetic of the nvgpu dialect)."""

BLOCKING: set[type[Operation]] = {aref.PutOp, aref.GetOp, aref.WarpSpecializeOp}
"""Ops that can wait for another task (extended by the nvgpu semantics)."""


def can_block(region: Region) -> bool:
    return any(type(op) in BLOCKING for op in region.walk())


class SimtInterpreter(Interpreter):
    """An xdsl `Interpreter` whose tasks run for a set of lanes
    (`lanes_of`), with the rules of the module docstring."""

    lanes: Lanes | None = None

    def _run_op(self, op: Operation, inputs: PythonValues) -> OpImplResult:
        lanes = self.lanes
        if lanes is None or not any(isinstance(x, PerThread) for x in inputs):
            return super()._run_op(op, inputs)
        if type(op) in LANE_AWARE:
            return super()._run_op(op, inputs)
        if (op.dialect_name() in PER_LANE_DIALECTS and not op.regions) or type(op) in PER_LANE_OPS:
            return self._per_lane(op, inputs, lanes)
        inputs = tuple(
            lanes.uniform(x, lambda i=i: f"{op.name}: operand #{i}") for i, x in enumerate(inputs)
        )
        return super()._run_op(op, inputs)

    def _per_lane(self, op: Operation, inputs: PythonValues, lanes: Lanes) -> OpImplResult:
        idx = lanes.indices()
        for listener in self.listeners:
            listener.will_interpret_op(op, inputs)
        fast = _vectorized(op, inputs, idx, lanes.threads)
        if fast is not None:
            results: tuple[Any, ...] = (fast,)
        else:
            # Once per distinct operand tuple: lanes often share values (a
            # descriptor per warp group, an address per warp).
            seen: dict[tuple[Any, ...], PythonValues] = {}
            per_lane = []
            for i in idx:
                key = tuple(lane_value(x, i) for x in inputs)
                try:
                    out = seen.get(key)
                except TypeError:  # unhashable operands: no reuse
                    out = None
                if out is None:
                    out = self._impls.run(self, op, key).values
                    try:
                        seen[key] = out
                    except TypeError:
                        pass
                per_lane.append(out)
            results = tuple(
                pack([r[k] for r in per_lane], idx, lanes.threads) for k in range(len(op.results))
            )
        for listener in self.listeners:
            listener.did_interpret_op(op, results)
        return OpImplResult(results, None)


_INT_FAST: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddiOp: np.add, arith.SubiOp: np.subtract, arith.MuliOp: np.multiply,
    arith.AndIOp: np.bitwise_and, arith.OrIOp: np.bitwise_or, arith.XOrIOp: np.bitwise_xor,
    arith.DivUIOp: np.floor_divide, arith.RemUIOp: np.remainder, arith.MinUIOp: np.minimum,
    arith.MaxUIOp: np.maximum, arith.DivSIOp: np.floor_divide, arith.RemSIOp: np.remainder,
}
_CMP_FAST = {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "ult": np.less, "sle": np.less_equal,
             "ule": np.less_equal, "sgt": np.greater, "ugt": np.greater, "sge": np.greater_equal,
             "uge": np.greater_equal}


def _vectorized(op: Operation, inputs: PythonValues, idx: np.ndarray, threads: int) -> Any:
    """The result of a per-lane integer op computed on NumPy int64 arrays,
    when every operand and result is a non-negative value below the sign
    bit of its type (where signed and unsigned ops of any width agree with
    int64 arithmetic, and nothing wraps); None to fall back to running the
    op per lane."""
    fn = _INT_FAST.get(type(op))
    is_cast = isinstance(op, arith.IndexCastOp)
    is_cmp = isinstance(op, arith.CmpiOp)
    if fn is None and not is_cast and not is_cmp:
        return None
    try:
        args = [
            x.values[idx].astype(np.int64) if isinstance(x, PerThread) else np.int64(x)
            for x in inputs
        ]
    except (TypeError, ValueError, OverflowError):
        return None
    types = [v.type for v in (*op.operands, *(() if is_cmp else op.results))]
    if not all(isinstance(t, IntegerType | IndexType) for t in types):
        return None
    limit = 1 << (min(64 if isinstance(t, IndexType) else t.width.data for t in types) - 1)
    if limit < 2 or any(np.any((a < 0) | (a >= limit)) for a in args):
        return None
    if isinstance(op, arith.MuliOp) and int(np.max(args[0])) * int(np.max(args[1])) >= limit:
        return None
    if is_cast:
        out = args[0]
    elif is_cmp:
        out = _CMP_FAST[arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]](*args)
    else:
        if fn in (np.floor_divide, np.remainder) and np.any(args[1] == 0):
            return None
        out = fn(*args)
        if np.any((out < 0) | (out >= limit)):
            return None
    values = [bool(v) for v in out] if is_cmp else [int(v) for v in out]
    return pack(values, idx, threads)


def merge(cond_lanes: np.ndarray, then: PythonValues, other: PythonValues, lanes: Lanes) -> tuple[Any, ...]:
    """Results of a diverged `scf.if`, per lane."""
    idx = lanes.indices()
    out = []
    for a, b in zip(then, other):
        if hasattr(a, "select_lanes"):  # a fragment: registers per thread
            out.append(a.select_lanes(cond_lanes, b))
            continue
        vals = [lane_value(a, i) if cond_lanes[i] else lane_value(b, i) for i in idx]
        out.append(pack(vals, idx, lanes.threads))
    return tuple(out)
