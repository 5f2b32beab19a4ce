"""The order in which a kernel's programs run: an analysis and its record.

`tawa-persistent` hands the programs t = 0, 1, ... of the logical grid out to
the CTAs (CTA c takes c, c + ctas, ...); `tawa-materialize-partitions` maps
launched CTAs to programs.  Which program is t is a decision (option `order`
of both passes and of `tawa-hopper-pipeline`):

* `grouped`: `group-m` row tiles of one column band run together, so they
  share operand tiles in L2 (GEMMs; `tawa.transforms.utils.grouped_ids`);
* `longest-first`: descending program id 0, the slowest-varying axis
  (`tawa.transforms.utils.longest_first_ids`): for kernels whose work grows
  with program id 0, such as causal attention stopping its key loop at the
  diagonal, every CTA runs its heaviest programs first and the last wave holds
  the lightest (a static longest-processing-time-first schedule, the idea of
  FlashAttention-3's persistent causal scheduler, arXiv:2407.08608);
* `auto` (the default): `grouped` for every kernel today.  Longest-first
  was measured against grouped on causal attention (H100, 2026-11-23,
  docs/perf.md): 1.04–1.13x at head dim 64 and S <= 4096, but 0.88–0.99x at
  head dims 128 and 256 — it runs one query block of many heads at a time,
  so the key/value tiles that grouped order shares in L2 between the query
  blocks of one head are read again.  `work_grows_with_pid0` finds the
  kernels for which longest-first is a candidate (the autotuner's or a
  better-measured rule's to choose).

A kernel that does not run in grouped order says so in the attribute
`tawa.program_order = "longest-first"` on its `func.func`, so that
`tawa-opt` users see the decision; grouped kernels carry none (their IR is
what it was before the option existed).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Block, BlockArgument, OpResult, SSAValue

from tawa.dialects import tile

ProgramOrder = Literal["auto", "grouped", "longest-first"]
"""The values of the `order` option."""

ORDER_ATTR = "tawa.program_order"
"""The attribute that records a kernel's order when it is not `grouped`."""


class Trend(Enum):
    """How a value changes as program id 0 grows (everything else fixed)."""

    FLAT = "does not depend on program id 0"
    UP = "non-decreasing in program id 0, and depends on it"
    OTHER = "depends on program id 0 in another way"


_CASTS = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp)
_MIN_MAX = (arith.MinSIOp, arith.MinUIOp, arith.MaxSIOp, arith.MaxUIOp)
_DIVISIONS = (arith.DivUIOp, arith.DivSIOp, arith.CeilDivUIOp, arith.CeilDivSIOp, arith.FloorDivSIOp)


def _positive_constant(v: SSAValue) -> bool:
    op = v.owner
    return isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr) and op.value.value.data > 0


def _join(*trends: Trend) -> Trend:
    """The trend of a non-decreasing function of values with these trends."""
    if Trend.OTHER in trends:
        return Trend.OTHER
    return Trend.UP if Trend.UP in trends else Trend.FLAT


class _TrendAnalysis:
    """Backward slices of index values to `tile.program_id`, memoized."""

    def __init__(self) -> None:
        self.memo: dict[SSAValue, Trend] = {}

    def of(self, v: SSAValue) -> Trend:
        if v not in self.memo:
            self.memo[v] = Trend.OTHER  # a cycle (loop-carried value) is not monotone
            self.memo[v] = self._compute(v)
        return self.memo[v]

    def _compute(self, v: SSAValue) -> Trend:
        if isinstance(v, BlockArgument):
            # Kernel parameters are fixed; a value carried by a region op
            # (loop counter, iter_arg) is fixed when everything its op reads is.
            assert isinstance(v.owner, Block)
            parent = v.owner.parent_op()
            if parent is None or isinstance(parent, func.FuncOp):
                return Trend.FLAT
            return Trend.FLAT if all(self.of(o) is Trend.FLAT for o in parent.operands) else Trend.OTHER
        assert isinstance(v, OpResult)
        op = v.op
        if isinstance(op, tile.ProgramIdOp):
            return Trend.UP if op.axis.value.data == 0 else Trend.FLAT
        ins = [self.of(o) for o in op.operands]
        if op.regions:
            return Trend.FLAT if all(t is Trend.FLAT for t in ins) and not _reads_pid0(op) else Trend.OTHER
        if all(t is Trend.FLAT for t in ins):
            return Trend.FLAT
        if isinstance(op, _CASTS):
            return ins[0]
        if isinstance(op, (arith.AddiOp, *_MIN_MAX)):
            return _join(*ins)
        if isinstance(op, arith.SubiOp):
            return ins[0] if ins[1] is Trend.FLAT else Trend.OTHER
        if isinstance(op, arith.MuliOp):
            for i in (0, 1):
                if ins[i] is Trend.UP and _positive_constant(op.operands[1 - i]):
                    return Trend.UP
            return Trend.OTHER
        if isinstance(op, _DIVISIONS):
            return ins[0] if _positive_constant(op.operands[1]) else Trend.OTHER
        return Trend.OTHER


def _reads_pid0(op) -> bool:
    return any(isinstance(o, tile.ProgramIdOp) and o.axis.value.data == 0 for o in op.walk())


def work_grows_with_pid0(kernel: func.FuncOp) -> scf.ForOp | None:
    """The first `scf.for` of `kernel` whose trip count grows with program id 0, if any.

    The rule: its lower bound and step do not depend on `tile.program_id 0`
    and its upper bound does, only through non-decreasing steps: `addi`,
    `subi` of a value that does not depend on it, `muli` by a positive
    constant, `minsi`/`minui`/`maxsi`/`maxui`, divisions (`divui`, `divsi`,
    `ceildivui`, `ceildivsi`, `floordivsi`) by a positive constant and integer
    casts (`index_cast`, `extsi`, ...).  Anything else on the way (a
    comparison, a `select`, a value carried by a loop) and the loop does not
    count.  Causal attention's key loop, `scf.for %n0 = %c0 to
    min(pid_0 · 128 + 128, seq_len)`, is such a loop; a GEMM's K loop is not.
    (Index overflow is ignored: the order is a performance decision, every
    order computes the same results.)"""
    trends = _TrendAnalysis()
    for loop in kernel.walk():
        if not isinstance(loop, scf.ForOp):
            continue
        if trends.of(loop.lb) is Trend.FLAT and trends.of(loop.step) is Trend.FLAT and trends.of(loop.ub) is Trend.UP:
            return loop
    return None


def resolve_order(kernel: func.FuncOp, order: ProgramOrder) -> Literal["grouped", "longest-first"]:
    """The order `kernel`'s programs run in under option `order` (see the module docstring)."""
    if order == "auto":
        return "grouped"  # measured best today; see the module docstring
    return order


def record_order(kernel: func.FuncOp, order: Literal["grouped", "longest-first"]) -> None:
    """Marks `kernel` with its order unless it is `grouped` (see the module docstring)."""
    if order == "grouped":
        kernel.attributes.pop(ORDER_ATTR, None)
    else:
        kernel.attributes[ORDER_ATTR] = StringAttr(order)
