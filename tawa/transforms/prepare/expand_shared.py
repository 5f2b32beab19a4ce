"""`tawa-expand-shared-accesses`: the shared-memory addresses of fragment loads and stores as IR.

`nvgpu.frag_load_shared %buf[%stage, %row]` and `nvgpu.frag_store_shared`
read and write a fragment in a tile stored as TMA and wgmma see it
(`tawa.interpreters.nvgpu.tile_addresses`): element (r, c) of stage s sits
at `base + s · stage bytes + (c / w) · rows · span + r · span + (c mod w) ·
bytes`, swizzled (`tawa.target.hopper.swizzled_address`), where w is the
chunk's columns (`SmemType.chunk_columns`) and span = w · bytes.  This pass
writes out each thread's addresses in `arith` on i32 and lowers the access
to `nvgpu.frag_load_shared_at` / `nvgpu.frag_store_shared_at`, whose
properties say, for each vector, which address and what immediate; the PTX
printer then prints one `ld.shared` / `st.shared` per vector.

Each thread's first element is at (row + r_t, c_t): the layout's thread
terms (`TiledLayout.thread_terms`) of `%tid.x`; its value i is
`value_offsets` further.  Where `unit_plan` holds (every swizzled tile the
pipeline makes), a thread forms one address per 16-byte column unit it
touches and reaches every vector with an immediate:

    tb = stage base + (row + r_t) · span + c_t · bytes
    x  = ((tb >> 7) & mask) << 4            the swizzle term of its rows
    own unit bits of tb moved into x        (only when c_t · bytes can reach 16)
    address of unit k = tb + (16 · k ^ x),  immediate = the row and chunk offset

Otherwise (unswizzled tiles, rows that are not whole swizzle periods) each
vector gets its own address, the storage formula above term by term.
`tests/transforms/test_expand_shared.py` checks every address of every
thread against the storage model.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.shared_access import access_values
from tawa.target.hopper import (
    SWIZZLE_ATOM_ROWS,
    SWIZZLE_ROW_BYTES,
    SWIZZLE_UNIT,
    THREADS_PER_GROUP,
    THREADS_PER_WARP,
    WARPS_PER_GROUP,
    swizzle_mask,
)
from tawa.transforms.prepare.rewrite_each import rewrite_each
from tawa.transforms.utils import fail

NAME = "tawa-expand-shared-accesses"


def _log2(n: int) -> int:
    return n.bit_length() - 1


def vector_offsets(t: nvgpu.FragmentType) -> list[tuple[int, int]]:
    """(row, col) of the first value of each access of fragment type `t`
    (its vectors, cut to 16 bytes: `access_values`), from the thread's
    first element."""
    shape, layout = t.get_shape(), t.tiled_layout
    dr, dc = layout.value_offsets(shape, 0), layout.value_offsets(shape, 1)
    return [(dr[i], dc[i]) for i in range(0, len(dr), access_values(t))]


def thread_columns(t: nvgpu.FragmentType) -> set[int]:
    """The column of the first element of each thread of a warp group."""
    terms = t.tiled_layout.thread_terms(t.get_shape(), 1)
    cols = set()
    for tid in range(THREADS_PER_GROUP):
        warp, lane = divmod(tid, THREADS_PER_WARP)
        cols.add(sum((((warp if term.source == "warp" else lane) // term.divisor) % term.size) * term.stride
                     for term in terms))
    return cols


def unit_plan(st: nvgpu.SmemType, offsets: list[tuple[int, int]], thread_cols: set[int],
              nbytes: int) -> list[tuple[int, int]] | None:
    """Per access of `nbytes` at (row, col) `offsets` from each thread's
    first element, whose columns are `thread_cols`: (k, imm) such that its
    address is `tb0 + ((16·k) ^ x) + imm`, where `tb0` is `tb` (see the
    module docstring) with its 16-byte-unit bits (4 up to the span)
    cleared and `x` is those bits XOR the swizzle term; None where the
    tile does not allow it.

    It applies when every offset's row is a multiple of 8 rows (a swizzle
    period, `SWIZZLE_ATOM_ROWS`, to which stages and column chunks of a
    multiple of 8 rows are aligned: the swizzle term is the same for all of
    a thread's rows), no access straddles a 16-byte unit whatever the thread
    (the threads' first columns, at most `low` bytes into their unit, plus
    the access's offset into its unit, `rest` — 0 for 16-bit vectors, 8 for
    every other fp8 one — plus its bytes fit in 16: the swizzle leaves the
    low 4 bits alone, so `rest` is an immediate), and the unit bits of the
    threads' first columns and of the offsets are disjoint (so adding them
    is XOR-ing them).  A thread then forms one address per distinct column
    unit (8 for a 128B span), not one per access; rows and column chunks
    are immediates."""
    swizzle = st.swizzle.data
    rows = st.get_shape()[-2]
    if not swizzle or rows % SWIZZLE_ATOM_ROWS:
        return None
    eb = nvgpu.element_bytes(st.element_type)
    w = st.chunk_columns()
    span = w * eb
    thread_units, lowest = 0, 0
    for col in thread_cols:
        unit, low = divmod(col * eb, SWIZZLE_UNIT)
        thread_units |= unit
        lowest = max(lowest, low)
    plan, units = [], 0
    for dr, dc in offsets:
        unit, rest = divmod((dc % w) * eb, SWIZZLE_UNIT)
        if dr % SWIZZLE_ATOM_ROWS or lowest + rest + nbytes > SWIZZLE_UNIT:
            return None
        units |= unit
        plan.append((unit, (dc // w) * rows * span + dr * span + rest))
    if thread_units & units or (thread_units | units) >= span // SWIZZLE_UNIT:
        return None
    return plan


class _Builder:
    """Collects i32 ops in order; each helper returns the new value."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation, name: str | None = None) -> SSAValue:
        self.ops.append(op)
        if name:
            op.results[0].name_hint = name
        return op.results[0]

    def const(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, i32)))

    def binary(self, cls: type[Operation], lhs: SSAValue, rhs: int | SSAValue, name: str | None = None) -> SSAValue:
        return self.add(cls(lhs, self.const(rhs) if isinstance(rhs, int) else rhs), name)  # type: ignore[call-arg]

    def mul_add(self, x: SSAValue, factor: int, addend: SSAValue, name: str | None = None) -> SSAValue:
        """addend + x · factor (no multiply by 1)."""
        if factor != 1:
            x = self.binary(arith.MuliOp, x, factor)
        return self.binary(arith.AddiOp, addend, x, name)

    def swizzle(self, address: SSAValue, swizzle: int, name: str | None = None) -> SSAValue:
        """The swizzle term of `address`: bits [7, 7 + b) moved to [4, 4 + b)."""
        row = self.binary(arith.ShRUIOp, address, _log2(SWIZZLE_ROW_BYTES))
        bits = self.binary(arith.AndIOp, row, swizzle_mask(swizzle))
        return self.binary(arith.ShLIOp, bits, _log2(SWIZZLE_UNIT), name)


def _thread_coordinate(b: _Builder, op: Operation, t: nvgpu.FragmentType, axis: int, tid: SSAValue,
                       scale: int = 1) -> SSAValue:
    """Σ ((source // divisor) % size) · stride · scale over the layout's
    thread terms of `axis`, from the thread's index in its warp group:
    warp = bits [5, 7) of it, lane = bits [0, 5)."""
    total: SSAValue | None = None
    for term in t.tiled_layout.thread_terms(t.get_shape(), axis):
        extent = WARPS_PER_GROUP if term.source == "warp" else THREADS_PER_WARP
        if term.divisor & (term.divisor - 1) or term.size & (term.size - 1) or term.divisor * term.size > extent:
            raise fail(op, f"{NAME}: the thread terms of {t} are not bit fields of the thread id")
        shift = _log2(term.divisor) + (_log2(THREADS_PER_WARP) if term.source == "warp" else 0)
        v = b.binary(arith.ShRUIOp, tid, shift) if shift else tid
        v = b.binary(arith.AndIOp, v, term.size - 1)
        if term.stride * scale != 1:
            v = b.binary(arith.MuliOp, v, term.stride * scale)
        total = v if total is None else b.binary(arith.AddiOp, total, v)
    return b.const(0) if total is None else total


def form_addresses(op: Operation, t: nvgpu.FragmentType, buf: SSAValue, stage: SSAValue,
                   row: SSAValue) -> tuple[list[Operation], list[SSAValue], list[int], list[int]]:
    """The ops that form a thread's addresses for accessing a fragment of
    type `t` in rows from `row` of stage `stage` of `buf`; the addresses;
    and per vector, the index of its address and its immediate."""
    st = buf.type
    assert isinstance(st, nvgpu.SmemType)
    rows = st.get_shape()[-2]
    eb = nvgpu.element_bytes(st.element_type)
    w, swizzle = st.chunk_columns(), st.swizzle.data
    span = w * eb
    b = _Builder()
    at = b.add(nvgpu.SmemAddressOp(buf))
    stage32 = b.add(arith.IndexCastOp(stage, i32))
    at = b.mul_add(stage32, st.num_bytes() // st.get_shape()[0], at, "stage_base")
    row32 = b.add(arith.IndexCastOp(row, i32))
    tid = b.add(arith.IndexCastOp(b.add(nvgpu.ThreadIdOp()), i32))
    # The thread's index in its warp group: the terms read only these bits,
    # but with the range explicit ptxas keeps fewer registers live.
    tid = b.binary(arith.AndIOp, tid, THREADS_PER_GROUP - 1)
    r_t = b.binary(arith.AddiOp, row32, _thread_coordinate(b, op, t, 0, tid), "thread_row")
    offsets = vector_offsets(t)
    columns = thread_columns(t)
    plan = unit_plan(st, offsets, columns, access_values(t) * eb)
    if plan is not None:
        col_bytes = _thread_coordinate(b, op, t, 1, tid, eb)
        tb = b.binary(arith.AddiOp, b.mul_add(r_t, span, at), col_bytes, "thread_base")
        x = b.swizzle(tb, swizzle, "swizzle")
        if any(col * eb >= SWIZZLE_UNIT for col in columns):
            # The thread's own unit bits join the XOR term (x), tb keeps the rest.
            own = b.binary(arith.AndIOp, tb, (span - 1) & ~(SWIZZLE_UNIT - 1))
            x = b.binary(arith.XOrIOp, x, own, "swizzle")
            tb = b.binary(arith.XOrIOp, tb, own, "thread_base")
        units = sorted({u for u, _ in plan})
        addresses = [
            b.binary(arith.AddiOp, tb, b.binary(arith.XOrIOp, x, SWIZZLE_UNIT * u) if u else x, f"unit{u}")
            for u in units
        ]
        return b.ops, addresses, [units.index(u) for u, _ in plan], [imm for _, imm in plan]
    c_t = _thread_coordinate(b, op, t, 1, tid)
    row_at: dict[int, SSAValue] = {}  # stage base + row · span, per row offset
    col_at: dict[int, SSAValue] = {}  # chunk and column bytes, per column offset
    addresses = []
    for dr, dc in offsets:
        if dr not in row_at:
            row_at[dr] = b.mul_add(b.binary(arith.AddiOp, r_t, dr) if dr else r_t, span, at)
        if dc not in col_at:
            c = b.binary(arith.AddiOp, c_t, dc) if dc else c_t
            chunk = None
            if st.get_shape()[-1] > w:  # column chunks: w is a power of two (the span of a swizzle)
                chunk = b.binary(arith.MuliOp, b.binary(arith.ShRUIOp, c, _log2(w)), rows * span)
                c = b.binary(arith.AndIOp, c, w - 1)
            col = b.binary(arith.MuliOp, c, eb) if eb != 1 else c
            col_at[dc] = b.binary(arith.AddiOp, col, chunk) if chunk is not None else col
        a = b.binary(arith.AddiOp, row_at[dr], col_at[dc], None if swizzle else "vector")
        if swizzle:
            a = b.binary(arith.XOrIOp, a, b.swizzle(a, swizzle), "vector")
        addresses.append(a)
    return b.ops, addresses, list(range(len(offsets))), [0] * len(offsets)


class ExpandLoadShared(RewritePattern):
    """`nvgpu.frag_load_shared` → address math and `nvgpu.frag_load_shared_at`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.FragmentLoadSharedOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        assert isinstance(t, nvgpu.FragmentType)
        ops, addresses, bases, offsets = form_addresses(op, t, op.source, op.stage, op.row)
        # Inserted apart: `replace` would give the loaded value's name to every address.
        rewriter.insert(ops, InsertPoint.before(op))
        rewriter.replace(op, nvgpu.FragmentLoadSharedAtOp(addresses, bases, offsets, t))


class ExpandStoreShared(RewritePattern):
    """`nvgpu.frag_store_shared` → address math and `nvgpu.frag_store_shared_at`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.FragmentStoreSharedOp, rewriter: PatternRewriter) -> None:
        t = op.fragment.type
        assert isinstance(t, nvgpu.FragmentType)
        ops, addresses, bases, offsets = form_addresses(op, t, op.dest, op.stage, op.row)
        rewriter.replace(op, [*ops, nvgpu.FragmentStoreSharedAtOp(op.fragment, addresses, bases, offsets)])


@dataclass(frozen=True)
class ExpandSharedAccessesPass(ModulePass):
    """Writes out the shared-memory addresses of fragment loads and stores (`nvgpu.frag_load_shared`,
    `nvgpu.frag_store_shared`) as i32 arithmetic, one address per column unit where the swizzle allows."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_each(op, {nvgpu.FragmentLoadSharedOp: ExpandLoadShared(),
                          nvgpu.FragmentStoreSharedOp: ExpandStoreShared()})
