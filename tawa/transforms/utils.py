"""Helpers that more than one of tawa's passes use.

Passes import from here, never from each other: a pass module holds its own
pass and the analyses and patterns only it needs.  What lives here:

* `fail`: the one-line located error every pass raises on unsupported input;
* `check_choice`: the one-line error of a string option outside its choices
  (one message for every pass that takes the option);
* `const`: an index (or typed) `arith.constant` at an insertion point;
* `grouped_ids`: program ids of a linear program index in grouped order
  (used by `tawa-persistent` for its program loop and by
  `tawa-materialize-partitions` for CTA ids);
* `longest_first_ids`: the same in longest-first order (descending axis 0);
* `pair_members`, `paired_ids`: the programs of a pair in `paired` order
  (`tawa-persistent`);
* `kernel_of`: the kernel function of an `aref.warp_specialize`, or an error;
* `guarded`: ops under an `scf.if` without results;
* `top_op`: the op of a block that is or holds a nested op;
* `async_dot`: a `tile.dot`'s `tile.dot_async`, its operands mapped
  (`tawa-overlap-dots`);
* `zeros_of`: a tile of zeros of any float type, made as the consumer makes
  its 16-bit tiles (f32 zeros, converted);
* `erase_unused`: erases the ops a predicate allows whose results nothing uses.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import Float32Type, IndexType, IntegerAttr, TensorType, UnknownLoc, i32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.diagnostics import TawaError, location_of
from tawa.dialects import aref, tile


def fail(op: Operation | None, message: str) -> TawaError:
    """A one-line error located at `op` (or its closest located ancestor)."""
    where = location_of(op) if op is not None else None
    return TawaError(message, where or "tawa-opt")


def remark(pass_name: str, at: Operation, message: str) -> None:
    """Writes `FILE:LINE:COL: remark: PASS: MESSAGE in @KERNEL` to stderr (a
    pass's `remarks` option: what it did to `at`, or why not)."""
    kernel = at.parent_op()
    while kernel is not None and not isinstance(kernel, func.FuncOp):
        kernel = kernel.parent_op()
    name = f" in @{kernel.sym_name.data}" if kernel is not None else ""
    sys.stderr.write(f"{location_of(at) or 'tawa'}: remark: {pass_name}: {message}{name}\n")


def check_choice(option: str, value: object, choices: tuple[str, ...], where: str) -> None:
    """Raises `where: error: option must be one of ..., got value` unless
    `value` is one of `choices`; `option` is the field's name, shown as text
    spells it (`store_group`: `store-group`)."""
    if value not in choices:
        raise TawaError(f"{option.replace('_', '-')} must be one of {', '.join(choices)}, got {value!r}", where)


def const(value: int, at: InsertPoint, type: Attribute | None = None) -> SSAValue:
    """Inserts `arith.constant value` (index unless `type` says otherwise) at `at`."""
    c = arith.ConstantOp(IntegerAttr(value, IndexType() if type is None else type))
    Rewriter.insert_op(c, at)
    return c.result


def guarded(cond: SSAValue, then_ops: list[Operation], else_ops: list[Operation] | None = None) -> scf.IfOp:
    """`scf.if %cond { then_ops } [else { else_ops }]`, without results (the
    yields appended)."""
    regions = [Region(Block([*then_ops, scf.YieldOp()]))]
    if else_ops is not None:
        regions.append(Region(Block([*else_ops, scf.YieldOp()])))
    return scf.IfOp(cond, [], *regions)


def group_tests(group: SSAValue, groups: int, at: InsertPoint) -> list[SSAValue]:
    """`group == k` for k < `groups` − 1, at `at`: which warp group of a
    consumer partition this is (`group`: its index in the partition, an
    index), for `per_group`."""
    tests = []
    for k in range(groups - 1):
        row = arith.ConstantOp.from_int_and_width(k, group.type)
        test = arith.CmpiOp(group, row.result, "eq")
        test.result.name_hint = "first_group" if k == 0 else f"group_{k}"
        Rewriter.insert_op([row, test], at)
        tests.append(test.result)
    return tests


def per_group(is_group: list[SSAValue], ops: list[list[Operation]]) -> scf.IfOp:
    """`scf.if %is_0 { ops[0] } else { scf.if %is_1 { ops[1] } else { ... ops[N-1] } }`:
    each warp group runs its own ops (`is_group` from `group_tests`; a
    branch uniform in each warp group)."""
    inner: list[Operation] = ops[-1]
    for k in range(len(ops) - 2, -1, -1):
        inner = [guarded(is_group[k], ops[k], inner)]
    (chain,) = inner
    assert isinstance(chain, scf.IfOp)
    return chain


def pair_members(pair: SSAValue, half: SSAValue, gx: SSAValue, at: InsertPoint) -> SSAValue:
    """How many programs pair `pair` holds (index): pair q is the programs
    with pid_0 = gx - 1 - p and p, p = q mod `half` (half = ⌈gx/2⌉), so 1
    when they are the same program (the middle of an odd gx), else 2."""
    ops: list[Operation] = []

    def emit(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    q, gx32, h = (emit(arith.IndexCastOp(v, i32)) for v in (pair, gx, half))
    p = emit(arith.RemUIOp(q, h))
    one = emit(arith.ConstantOp(IntegerAttr(1, i32)))
    alone = emit(arith.CmpiOp(emit(arith.SubiOp(emit(arith.SubiOp(gx32, one)), p)), p, "eq"))
    members = emit(arith.SelectOp(alone, emit(arith.ConstantOp(IntegerAttr(1, IndexType()))),
                                  emit(arith.ConstantOp(IntegerAttr(2, IndexType())))))
    Rewriter.insert_op(ops, at)
    members.name_hint = "members"
    return members


def paired_ids(
    pair: SSAValue, member: SSAValue, half: SSAValue, grid: list[SSAValue], at: InsertPoint,
    short_first: bool = False,
) -> dict[int, SSAValue]:
    """Program ids of member `member` (0 or 1) of pair `pair` of a gx × gy
    (× gz) `grid` in paired order: with p = pair mod half and r = pair / half
    (half = ⌈gx/2⌉), pid_0 = gx - 1 - p for member 0 and p for member 1
    (with `short_first`, p for member 0 and gx - 1 - p for member 1),
    pid_1 = r mod gy, pid_2 = r / gy.  Over pair < half · gy (· gz) and
    member < `pair_members`, a bijection of the grid whose pairs' pid_0 sum to
    gx - 1; the pairs of one (pid_1, pid_2) are consecutive.  32-bit
    arithmetic like `grouped_ids`."""
    ops: list[Operation] = []

    def emit(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    q, m, h, *dims = (emit(arith.IndexCastOp(v, i32)) for v in (pair, member, half, *grid))
    p, r = emit(arith.RemUIOp(q, h)), emit(arith.DivUIOp(q, h))
    heavy = emit(arith.SubiOp(emit(arith.SubiOp(dims[0], emit(arith.ConstantOp(IntegerAttr(1, i32))))), p))
    first = emit(arith.CmpiOp(m, emit(arith.ConstantOp(IntegerAttr(0, i32))), "eq"))
    ids = [emit(arith.SelectOp(first, p, heavy) if short_first else arith.SelectOp(first, heavy, p))]
    ids += _split_rest(emit, r, dims)
    ids = [emit(arith.IndexCastOp(v, IndexType())) for v in ids]
    Rewriter.insert_op(ops, at)
    for v, hint in zip(ids, ("pid_x", "pid_y", "pid_z")):
        v.name_hint = hint
    return dict(enumerate(ids))


def kernel_of(ws: aref.WarpSpecializeOp, pass_name: str) -> func.FuncOp:
    """The function whose body holds `ws`; the passes below the aref level
    place shared memory and branches at the top of the kernel."""
    kernel = ws.parent_op()
    if not isinstance(kernel, func.FuncOp):
        raise fail(ws, f"{pass_name}: aref.warp_specialize must be at the top of a kernel")
    return kernel


def grouped_ids(
    lin: SSAValue, nx: SSAValue, ny: SSAValue, group: int, at: InsertPoint
) -> dict[int, SSAValue]:
    """Program ids (pid_0, pid_1) of linear index `lin` of an nx × ny grid in
    grouped order: blocks of `group` consecutive axis-0 ids sweep axis 1
    before moving on, so programs that run together share operand tiles in
    L2.  A bijection of the grid.  Computed in 32 bits (grids have fewer than
    2^31 programs), where divisions are far cheaper than in 64."""
    ops: list[Operation] = []

    def emit(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    lin, nx, ny = (emit(arith.IndexCastOp(v, i32)) for v in (lin, nx, ny))
    g = emit(arith.ConstantOp(IntegerAttr(group, i32)))
    per_group = emit(arith.MuliOp(g, ny))
    first = emit(arith.MuliOp(emit(arith.DivUIOp(lin, per_group)), g))
    size = emit(arith.MinUIOp(emit(arith.SubiOp(nx, first)), g))
    within = emit(arith.RemUIOp(lin, per_group))
    pid0 = emit(arith.IndexCastOp(emit(arith.AddiOp(first, emit(arith.RemUIOp(within, size)))), IndexType()))
    pid1 = emit(arith.IndexCastOp(emit(arith.DivUIOp(within, size)), IndexType()))
    Rewriter.insert_op(ops, at)
    pid0.name_hint, pid1.name_hint = "pid_x", "pid_y"
    return {0: pid0, 1: pid1}


def _ids_in_i32(lin: SSAValue, grid: list[SSAValue], at: InsertPoint, compute) -> dict[int, SSAValue]:
    """Program ids from `compute(emit, lin, dims)`, which builds them in 32
    bits (grids have fewer than 2^31 programs, and 32-bit divisions are far
    cheaper than 64-bit ones) from `lin` and the grid cast to i32; they are
    cast back to index, inserted at `at` and named pid_x, pid_y, pid_z."""
    ops: list[Operation] = []

    def emit(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    lin32, *dims = (emit(arith.IndexCastOp(v, i32)) for v in (lin, *grid))
    ids = [emit(arith.IndexCastOp(v, IndexType())) for v in compute(emit, lin32, dims)]
    Rewriter.insert_op(ops, at)
    for v, hint in zip(ids, ("pid_x", "pid_y", "pid_z")):
        v.name_hint = hint
    return dict(enumerate(ids))


def _split_rest(emit, r: SSAValue, dims: list[SSAValue]) -> list[SSAValue]:
    """pid_1 (and pid_2) of `r`, the index of program id 0's line in the
    grid: r itself, or r mod gy and r / gy with a third axis."""
    return [r] if len(dims) == 2 else [emit(arith.RemUIOp(r, dims[1])), emit(arith.DivUIOp(r, dims[1]))]


def column_ids(lin: SSAValue, grid: list[SSAValue], at: InsertPoint) -> dict[int, SSAValue]:
    """Program ids of linear index `lin` of a gx × gy (× gz) `grid` in
    column order: pid_0 = lin mod gx varies fastest, then pid_1 = (lin / gx)
    mod gy (and pid_2 = lin / (gx · gy)), so consecutive programs share
    pid_1 (one attention head's query blocks).  A bijection of the grid;
    32-bit arithmetic like `grouped_ids`."""

    def compute(emit, lin, dims):
        rest = emit(arith.DivUIOp(lin, dims[0]))
        return [emit(arith.RemUIOp(lin, dims[0])), *_split_rest(emit, rest, dims)]

    return _ids_in_i32(lin, grid, at, compute)


def longest_first_ids(lin: SSAValue, grid: list[SSAValue], at: InsertPoint) -> dict[int, SSAValue]:
    """Program ids of linear index `lin` of a gx × gy (× gz) `grid` in
    longest-first order: pid_0 = gx - 1 - lin / (gy · gz) varies slowest and
    descends, the other axes come from r = lin mod (gy · gz) (pid_1 = r mod gy,
    pid_2 = r / gy).  When the work of a program grows with pid_0 (causal
    attention), CTAs that take lin = cta, cta + ctas, ... run their heaviest
    programs first and their lightest last, so the last wave is short (a
    static longest-processing-time-first schedule).  A bijection of the grid;
    32-bit arithmetic like `grouped_ids`."""

    def compute(emit, lin, dims):
        rest = dims[1] if len(dims) == 2 else emit(arith.MuliOp(dims[1], dims[2]))
        last = emit(arith.SubiOp(dims[0], emit(arith.ConstantOp(IntegerAttr(1, i32)))))
        within = emit(arith.RemUIOp(lin, rest))
        return [emit(arith.SubiOp(last, emit(arith.DivUIOp(lin, rest)))), *_split_rest(emit, within, dims)]

    return _ids_in_i32(lin, grid, at, compute)


def top_op(op: Operation, block: Block) -> Operation | None:
    """The op of `block` that is or contains `op` (None: `op` is not in it)."""
    node: Operation | None = op
    while node is not None and node.parent_block() is not block:
        node = node.parent_op()
    return node


def async_dot(dot: tile.DotOp, vmap: dict[SSAValue, SSAValue]) -> tile.DotAsyncOp:
    """`dot` as a `tile.dot_async` of its operands mapped by `vmap` (not inserted)."""
    new = tile.DotAsyncOp(vmap.get(dot.lhs, dot.lhs), vmap.get(dot.rhs, dot.rhs), vmap.get(dot.acc, dot.acc),
                          dot.rhs_transposed is not None, dot.lhs_transposed is not None)
    new.result.name_hint = dot.result.name_hint
    return new


def zeros_of(t: TensorType) -> tuple[list[Operation], SSAValue]:
    """Ops making a `t` tile of zeros (floats): f32 zeros, converted by
    `arith.truncf` where `t` is narrower, as the consumers make their 16-bit
    tiles from accumulators; and the tile."""
    zeros = tile.ZerosOp(TensorType(Float32Type(), t.get_shape()))
    if isinstance(t.get_element_type(), Float32Type):
        return [zeros], zeros.result
    trunc = arith.TruncFOp(zeros.result, t)
    return [zeros, trunc], trunc.result


def erase_unused(root: Operation | Region, removable: Callable[[Operation], bool]) -> None:
    """Erases the ops under `root` that `removable` allows and whose results
    nothing uses, until none is left (an op whose only users went goes too)."""
    changed = True
    while changed:
        changed = False
        for op in list(root.walk()):
            if op is not root and op.results and removable(op) and not any(r.uses for r in op.results):
                Rewriter.erase_op(op)
                changed = True


class InheritLocation(RewritePattern):
    """Runs `pattern`; every op a rewrite of op X inserts without a location
    of its own takes X's (so the barrier ops `tawa-lower-aref` makes of an
    `aref.get` are located, in errors, at the `aref.get`'s source line)."""

    def __init__(self, pattern: RewritePattern):
        self.pattern = pattern

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        def locate(new: Operation) -> None:
            for o in new.walk():
                if isinstance(o.location, UnknownLoc):
                    o.location = op.location

        rewriter.operation_insertion_handler.append(locate)
        try:
            self.pattern.match_and_rewrite(op, rewriter)
        finally:
            rewriter.operation_insertion_handler.remove(locate)
