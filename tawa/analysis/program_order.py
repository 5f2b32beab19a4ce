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
* `paired` (persistent kernels only, `tawa-persistent`): the two programs
  with program id 0 of gx - 1 - p and p (and the same other ids) run one
  after the other on one CTA (one alone when they are the same), so when the work
  grows linearly with program id 0 every pair costs the same and the static
  round-robin over pairs is balanced to within one pair per CTA; the pairs of
  one column (one attention head) are consecutive, so they run on adjacent
  CTAs at the same time and share their key/value tiles in L2;
* `paired-short-first`: the same pairs, the short member (p) first.  The
  short program re-reads the first key blocks of its head right after the
  long one read them all, instead of a whole long program later
  (`pair_reuse_bytes`);
* `column`: program id 0 varies fastest (pid_0 = t mod gx, then pid_1,
  then pid_2), so the programs of one column run together: for kernels
  whose streamed tiles do not depend on program id 0 (`streams_shared_along_pid0`:
  attention's K and V blocks belong to the head, pid_1), the CTAs running at
  once read one head's key/value tiles, which stay in L2 (with grouped
  order they were spread over the 8 query blocks of many heads: at
  1·16·16384, d128, 16 heads of 8 MB of K and V each);
* `auto` (the default): for persistent kernels whose work grows with
  program id 0 (`work_grows_with_pid0`: causal attention) `paired`, or
  `paired-short-first` where the bytes streamed between a block's two reads
  in `paired` order exceed half the L2 (`SHORT_FIRST_REUSE_BYTES`), `column`
  for kernels whose streamed tiles are shared along program id 0
  (non-causal attention; measured faster on the H100 over the long
  non-causal rows at head dims 64, 128 and 256: docs/perf.md, "Three warp
  groups at head dim 64"), `grouped` otherwise.  Measured on causal
  attention (H100, docs/perf.md, "Subtiled staging"): the persistent grouped
  order leaves SMs idle at the end (its CTAs' shares of 1..n-block programs
  differ; ncu showed the SMs idle for a large part of the kernel on short
  causal rows), and a non-persistent grid, which the hardware hands out as
  SMs free up, ran faster on the causal rows at head dims 128 and 256 but
  slower on the non-causal ones (it loses the persistent prologue/epilogue
  overlap).  Longest-first was faster at head dim 64 and S <= 4096, but
  slower at head dims 128 and 256 — it runs one query block of many heads
  at a time, so the key/value tiles that grouped order shares in L2 between
  the query blocks of one head are read again.

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

from tawa.dialects import nvgpu, tile
from tawa.dialects.nvgpu.types import tensor_bytes
from tawa.target.hopper import L2_BYTES, SM_COUNT
from tawa.transforms.utils import fail

ProgramOrder = Literal["auto", "grouped", "longest-first", "paired", "paired-short-first", "column"]
ResolvedOrder = Literal["grouped", "longest-first", "paired", "paired-short-first", "column"]
"""The values of the `order` option."""
PAIRED_ORDERS = ("paired", "paired-short-first")
"""The orders that run two programs per iteration (persistent kernels only)."""

SHORT_FIRST_REUSE_BYTES = L2_BYTES // 2
"""`auto` runs the short member of a pair first when `pair_reuse_bytes`
exceeds this.  Measured on the H100 (docs/perf.md, "One TMA store per warp
group" and "Short-first pairs and Q's early release at head dim 256"):
causal attention at head dim 256 (33 MiB between the two reads) read
clearly more from DRAM long-first than short-first on short rows
(short-first close to the compulsory bytes), and short-first ran faster on
the short rows and the same on the long ones; at head dim 128 (16.5 MiB)
both orders read the compulsory bytes and short-first ran no faster, on
some rows slower.  Half the L2 lies between the two; the threshold is not
measured more finely."""

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


class TrendAnalysis:
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


def independent_of_pid0(values: list[SSAValue], trends: TrendAnalysis | None = None) -> bool:
    """Whether none of `values` depends on `tile.program_id 0` (through
    anything: the backward slice of each reaches no such op, loops and ifs
    on the way included)."""
    trends = trends or TrendAnalysis()
    return all(trends.of(v) is Trend.FLAT for v in values)


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
    trends = TrendAnalysis()
    for loop in kernel.walk():
        if not isinstance(loop, scf.ForOp):
            continue
        if trends.of(loop.lb) is Trend.FLAT and trends.of(loop.step) is Trend.FLAT and trends.of(loop.ub) is Trend.UP:
            return loop
    return None


def streams_shared_along_pid0(kernel: func.FuncOp) -> bool:
    """Whether `kernel` streams tiles in a loop and none of them depends on
    program id 0: every `tile.load` inside an `scf.for` reads indices that
    do not (the loop's own bounds included), so programs that differ only
    in program id 0 read the same streamed tiles (attention's K and V: a
    query block's programs share its head's).  A GEMM's A tiles depend on
    it; so do causal attention's keys, whose loop stops at the diagonal."""
    trends = TrendAnalysis()
    indices = [_read_indices(op) for op in kernel.walk() if in_loop(op)]
    streamed = [i for i in indices if i is not None]
    return bool(streamed) and all(trends.of(v) is Trend.FLAT for i in streamed for v in i)


def _read_indices(op) -> list[SSAValue] | None:
    """The operands that place a read of global memory (None: `op` is
    none): a `tile.load`, or after the lowering (where
    `tawa-materialize-partitions` asks) a TMA load's coordinates and a
    consumer's fragment load from global memory."""
    if isinstance(op, tile.LoadOp):
        return list(op.operands)
    if isinstance(op, nvgpu.TmaLoadOp):
        return list(op.coords)
    if isinstance(op, nvgpu.FragmentLoadOp | nvgpu.FragmentLoadGlobalOp):
        return list(op.operands)
    return None


def in_loop(op) -> bool:
    """Whether `op` lies in an `scf.for` of its function."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.ForOp):
            return True
        parent = parent.parent_op()
    return False


def resolve_order(kernel: func.FuncOp, order: ProgramOrder, persistent: bool) -> ResolvedOrder:
    """The order `kernel`'s programs run in under option `order` (see the
    module docstring), as a persistent kernel or one CTA per program."""
    if order == "auto":
        growing = work_grows_with_pid0(kernel) if persistent else None
        if growing is not None:
            reuse = pair_reuse_bytes(growing)
            return "paired-short-first" if reuse is not None and reuse > SHORT_FIRST_REUSE_BYTES else "paired"
        return "column" if streams_shared_along_pid0(kernel) else "grouped"
    if order in PAIRED_ORDERS and not persistent:
        raise fail(kernel, f"order '{order}' needs a persistent kernel (one CTA runs both programs of a "
                           "pair); a grid of one CTA per program takes grouped or longest-first")
    return order


def pair_reuse_bytes(loop: scf.ForOp) -> int | None:
    """The bytes the CTAs stream, in `paired` order, between a long
    program's read of a tile of `loop` (whose trip count grows with program
    id 0) and the read of the same tile by the short program of its pair,
    which runs next: None where the loop's bounds do not evaluate
    (`_affine_value`: integer math on program ids, constants and kernel
    parameters) or its trip count does not grow.

    Each of the `SM_COUNT` CTAs runs a pair at a time and the ⌈gx/2⌉ pairs of
    one column (attention head) run on adjacent CTAs, so 2·SM_COUNT/gx
    columns are read at once, each a whole long program of gx·g iterations
    (g: the iterations one more program id 0 adds), b bytes each (the
    `tile.load`s of the loop's body): 2·SM_COUNT·g·b, whatever gx is.  E.g.
    causal attention at head dim 256, 128 query rows and 64-key blocks:
    g = 2, b = 64 KiB (K and V), 2·132·2·64 KiB = 33 MiB; at head dim 128
    with 128-key blocks, 16.5 MiB."""
    step = _affine_value(loop.step, 0)
    low, high = _affine_value(loop.ub, 1), _affine_value(loop.ub, 2)
    if step is None or low is None or high is None or step <= 0 or high <= low:
        return None
    loads = [o for o in loop.body.block.ops if isinstance(o, tile.LoadOp)]
    per_iteration = sum(tensor_bytes(o.result.type) for o in loads)
    return 2 * SM_COUNT * (high - low) * per_iteration // step


_PARAMETER = 1 << 40
"""The value `_affine_value` gives kernel parameters: larger than any bound
a program id makes, so `min(pid_0 · 128 + 128, seq_len)` takes the first."""
_EVALUATED = {arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b,
              arith.MuliOp: lambda a, b: a * b, arith.DivUIOp: lambda a, b: a // b,
              arith.DivSIOp: lambda a, b: a // b, arith.CeilDivUIOp: lambda a, b: -(-a // b),
              arith.CeilDivSIOp: lambda a, b: -(-a // b), arith.FloorDivSIOp: lambda a, b: a // b,
              arith.MinUIOp: min, arith.MinSIOp: min, arith.MaxUIOp: max, arith.MaxSIOp: max}


def _affine_value(v: SSAValue, pid0: int) -> int | None:
    """`v` with program id 0 = `pid0`, the other program ids 0 and kernel
    parameters `_PARAMETER`; None where `v` reads anything else."""
    if isinstance(v, BlockArgument):
        parent = v.owner.parent_op() if isinstance(v.owner, Block) else None
        return _PARAMETER if isinstance(parent, func.FuncOp) else None
    op = v.owner
    if isinstance(op, tile.ProgramIdOp):
        return pid0 if op.axis.value.data == 0 else 0
    if isinstance(op, arith.ConstantOp):
        return op.value.value.data if isinstance(op.value, IntegerAttr) else None
    if isinstance(op, _CASTS):
        return _affine_value(op.operands[0], pid0)
    if type(op) in _EVALUATED:
        a, b = (_affine_value(o, pid0) for o in op.operands)
        if a is None or b is None or (isinstance(op, _DIVISIONS) and b <= 0):
            return None
        return _EVALUATED[type(op)](a, b)
    return None


def record_order(kernel: func.FuncOp, order: ResolvedOrder) -> None:
    """Marks `kernel` with its order unless it is `grouped` (see the module docstring)."""
    if order == "grouped":
        kernel.attributes.pop(ORDER_ATTR, None)
    else:
        kernel.attributes[ORDER_ATTR] = StringAttr(order)
