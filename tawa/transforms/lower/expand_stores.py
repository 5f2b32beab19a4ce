"""`tawa-expand-fragment-stores`: epilogue stores and consumer-side loads as IR (bounds, addresses, fast path).

`nvgpu.frag_store %acc, %C[%m, %n]` writes a fragment at element offsets of
a memref, dropping what falls outside it.  This pass writes out how, with
every decision visible to FileCheck and to later passes:

* the values are converted to the memref's element type (`nvgpu.frag_convert`,
  bf16/f16 pairs packed in one register) unless it is f32;
* each thread's first element — the thread part of the layout's element map
  (`TiledLayout.thread_terms`), computed from `nvgpu.lane_id` and
  `nvgpu.warp_id` with `arith` — gives its byte address in the memref
  (`nvgpu.memref_base` + the element offset × element bytes, the offset
  Σ coordinate·`nvgpu.memref_stride` over the outer dimensions plus the
  column: the memref may be a view with contiguous rows) and the row pitch
  (the rows' stride × element bytes);
* **fast path** (`scf.if`): when the thread's last row and column are inside
  the memref and its first element's address and the row pitch are
  multiples of a vector's bytes (so every vector is aligned, whatever the
  array's base, offsets and row length), `nvgpu.frag_store_global` stores
  one vector per register with no predicate — every tile but the ragged
  edges takes it;
* **edge path**: the in-bounds mask of every element (`nvgpu.frag_index` +
  `frag_cmpi` against the memref's dims) and a masked `frag_store_global`:
  by whole vectors (`vector_mask`: one predicated store a vector) where
  every vector is aligned and the thread's first column and the row length
  are multiples of the vector, so that the mask is the same over each
  16-byte vector (`_whole_vectors`: a row narrower than its tile, 768
  columns of a 1024-column tile, puts every thread here), else element by
  element; each of the two branches computes its own mask, so the one by
  whole vectors reads one bit a vector and leaves the rest dead.

The register-dependent part of each address (which row and column value i
sits at, relative to the thread's first) is the layout's `value_offsets`,
which the PTX printer reads to form `[address + offset]` operands.

`nvgpu.frag_atomic_add` (`tile.atomic_add` lowered) is written out as a
store is, with `nvgpu.frag_red_global` in both paths: one
`red.relaxed.gpu.global.add.f32` per element, no predicates on the fast
path, the in-bounds mask on the edge path.

`nvgpu.frag_load` (a tile the consumers read themselves: a bias vector, a
C tile) is written out the same way, for fragments of any layout and rank
1 or 2: the thread's first element and its address, a fast path of
unmasked vector loads (`nvgpu.frag_load_global`) when the thread's last
element is inside on every axis and its vectors are aligned, and an edge
path whose mask is `frag_index(axis) < dim − offset` on every axis, where
masked-off elements read 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import Float32Type, IndexType, IntegerAttr, MemRefType, ModuleOp, UnitAttr, i1, i32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.layouts import VECTOR_BYTES
from tawa.dialects.tile import CmpIPredicate
from tawa.target.hopper import THREADS_PER_WARP, WARPS_PER_GROUP
from tawa.transforms.lower.addressing import element_offset
from tawa.transforms.lower.masks import Binary, Compare, Coord, Materializer, Scalar
from tawa.transforms.utils import InheritLocation, fail

NAME = "tawa-expand-fragment-stores"
_VECTOR_MASK = {"vector_mask": UnitAttr()}


class _Builder:
    """Collects ops in order; each helper returns the new value."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def index(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, IndexType())))

    def i32(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, i32)))


def thread_coordinate(b: _Builder, layout: nvgpu.TiledLayout, shape: tuple[int, ...], axis: int,
                      warp: SSAValue, lane: SSAValue) -> SSAValue:
    """Σ ((source // divisor) % size) · stride over the layout's thread terms
    of `axis`: the coordinate of the thread's first element (index)."""
    total: SSAValue | None = None
    for t in layout.thread_terms(shape, axis):
        v = warp if t.source == "warp" else lane
        if t.divisor > 1:
            v = b.add(arith.DivUIOp(v, b.index(t.divisor)))
        # The remainder is a no-op when the term spans the whole warp index
        # (0..3) or lane index (0..31).
        if t.divisor * t.size != (WARPS_PER_GROUP if t.source == "warp" else THREADS_PER_WARP):
            v = b.add(arith.RemUIOp(v, b.index(t.size)))
        if t.stride > 1:
            v = b.add(arith.MuliOp(v, b.index(t.stride)))
        total = v if total is None else b.add(arith.AddiOp(total, v))
    return b.index(0) if total is None else total


def aligned(b: _Builder, address: SSAValue, pitch: SSAValue, vector_bytes: int) -> SSAValue:
    """Whether the thread's first element and the row pitch are multiples
    of the vector's bytes, so that every vector access is aligned (an array
    that starts mid-allocation, an odd offset or row length: not)."""
    both = b.add(arith.OrIOp(address, pitch))
    return b.add(arith.CmpiOp(b.add(arith.AndIOp(both, b.index(vector_bytes - 1))), b.index(0), "eq"))


def _vectors_in_rows(ft: nvgpu.FragmentType, nbytes: int) -> bool:
    """Whether each vector of `ft`'s layout (of `nbytes` elements) is one
    whole 16-byte access of consecutive columns of one row, from a column
    that is a multiple of its length: then, where the thread's first column
    and the row length are multiples of it too, every vector lies wholly
    inside the memref or wholly outside.  (Narrower vectors, a wgmma
    layout's pairs, save little over single elements and not the registers
    a second edge path costs a wide epilogue.)"""
    shape, layout, vec = tuple(ft.get_shape()), ft.tiled_layout, ft.vector_length()
    cols = layout.value_offsets(shape, len(shape) - 1)
    rows = layout.value_offsets(shape, 0) if len(shape) == 2 else (0,) * len(cols)
    return vec * nbytes >= VECTOR_BYTES and all(
        cols[v] % vec == 0 and all(rows[v + k] == rows[v] and cols[v + k] == cols[v] + k for k in range(vec))
        for v in range(0, len(cols), vec))


def _whole_vectors(b: _Builder, ft: nvgpu.FragmentType, address: SSAValue, pitch: SSAValue, column: SSAValue,
                   columns: SSAValue, nbytes: int) -> SSAValue | None:
    """Where the edge path may take whole vectors (`vector_mask`): every
    vector aligned, and the thread's first column and the row length
    (`columns`) multiples of the vector, so that the mask is the same over
    each vector; None where the layout's vectors are not rows of columns."""
    if not _vectors_in_rows(ft, nbytes):
        return None
    vec = ft.vector_length()
    whole = aligned(b, address, pitch, vec * nbytes)
    for value in (column, columns):
        rest = b.add(arith.RemUIOp(value, b.index(vec)))
        whole = b.add(arith.AndIOp(whole, b.add(arith.CmpiOp(rest, b.index(0), "eq"))))
    return whole


def _masked_access(edge: _Builder, whole: SSAValue | None, mask_of, make) -> SSAValue | None:
    """The edge path's access: `mask_of(builder)` emits the in-bounds mask,
    `make(vector_mask, mask)` builds the access (an op); where `whole`
    (`_whole_vectors`) may hold, an scf.if of the access by whole vectors and
    the one element by element, each branch with a mask of its own, so that
    the vector branch computes only the masks it reads (one a vector: the
    rest are dead to ptxas) and not every element's.  Its result, if any."""
    if whole is None:
        return edge.add(make(False, mask_of(edge)))
    branches = []
    for by_vector in (True, False):
        branch = _Builder()
        access = make(by_vector, mask_of(branch))
        branch.add(access)
        branches.append(Region(Block([*branch.ops, scf.YieldOp(*access.results)])))
    return edge.add(scf.IfOp(whole, [r.type for r in access.results], *branches))


class ExpandFragmentStore(RewritePattern):
    """`nvgpu.frag_store` → address math, a fast path and a masked edge path.

    A 1-D fragment (a row or column vector of a blocked layout) is stored
    along the memref's last dimension with the load's address math and
    paths (`ExpandFragmentLoad`); threads that hold copies of an element
    store the same value to the same address."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.FragmentStoreOp, rewriter: PatternRewriter) -> None:
        ft, mt = op.fragment.type, op.dest.type
        assert isinstance(ft, nvgpu.FragmentType) and isinstance(mt, MemRefType)
        shape, et = ft.get_shape(), mt.get_element_type()
        if len(shape) not in (1, 2):
            raise fail(op, f"{NAME}: only 1-D and 2-D fragments can be stored, got {ft}")
        if not isinstance(et, Float32Type) and not ft.with_element_type(et).packed():
            raise fail(op, f"{NAME}: stores of {et} are not supported (f32, bf16 and f16 are)" if len(shape) == 2
                       else f"{NAME}: stores of {et} vectors need vectors of 2 or more (f32 any)")
        b = _Builder()
        values = op.fragment
        if ft.element_type != et:  # (a fragment converted already is stored as it is)
            values = b.add(nvgpu.FragmentConvertOp.build(operands=[op.fragment], result_types=[ft.with_element_type(et)]))
        offsets = list(op.offsets)
        address, pitch, fast, mask_of, whole = (
            _vector_access(b, op.dest, offsets, ft) if len(shape) == 1
            else _fragment_access(b, op.dest, offsets, ft, nvgpu.element_bytes(et)))
        fast_block = Block([nvgpu.FragmentStoreGlobalOp.build(operands=[values, address, pitch, []]), scf.YieldOp()])
        edge = _Builder()
        _masked_access(edge, whole, mask_of, lambda by_vector, mask: nvgpu.FragmentStoreGlobalOp.build(
            operands=[values, address, pitch, [mask]], properties=_VECTOR_MASK if by_vector else {}))
        edge_block = Block(edge.ops)
        edge_block.add_op(scf.YieldOp())
        rewriter.insert(b.ops, InsertPoint.before(op))
        rewriter.replace(op, scf.IfOp(fast, [], Region(fast_block), Region(edge_block)))


class ExpandFragmentAtomicAdd(RewritePattern):
    """`nvgpu.frag_atomic_add` → address math, a fast path and a masked edge path."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.FragmentAtomicAddOp, rewriter: PatternRewriter) -> None:
        ft, mt = op.fragment.type, op.dest.type
        assert isinstance(ft, nvgpu.FragmentType) and isinstance(mt, MemRefType)
        shape = tuple(ft.get_shape())
        if len(shape) != 2:
            raise fail(op, f"{NAME}: only 2-D fragments can be added, got {ft}")
        b = _Builder()
        address, pitch, fast, mask_of, _ = _fragment_access(b, op.dest, list(op.offsets), ft, 4)
        fast_block = Block([nvgpu.FragmentRedGlobalOp.build(operands=[op.fragment, address, pitch, []]),
                            scf.YieldOp()])
        edge = _Builder()
        mask = mask_of(edge)
        edge.add(nvgpu.FragmentRedGlobalOp.build(operands=[op.fragment, address, pitch, [mask]]))
        edge_block = Block(edge.ops)
        edge_block.add_op(scf.YieldOp())
        rewriter.insert(b.ops, InsertPoint.before(op))
        rewriter.replace(op, scf.IfOp(fast, [], Region(fast_block), Region(edge_block)))


def _fragment_access(b: _Builder, memory: SSAValue, offsets: list[SSAValue], ft: nvgpu.FragmentType,
                     nbytes: int):
    """For a 2-D fragment at `offsets` of `memory` (elements of `nbytes`):
    the thread's first element's address, the row pitch, whether the
    thread's last element is inside and its rows are whole aligned vectors
    (the fast path), and a function emitting the in-bounds mask of its
    elements, (m + row < rows) & (n + col < cols), with the mask machinery
    of tawa-lower-tile (the edge path), and where the edge path may access
    whole vectors (`_whole_vectors`)."""
    mt = memory.type
    assert isinstance(mt, MemRefType)
    shape, layout = tuple(ft.get_shape()), ft.tiled_layout
    lane = b.add(nvgpu.LaneIdOp())
    warp = b.add(arith.RemUIOp(b.add(nvgpu.WarpIdOp()), b.index(WARPS_PER_GROUP)))
    row = b.add(arith.AddiOp(offsets[-2], thread_coordinate(b, layout, shape, 0, warp, lane)))
    col = b.add(arith.AddiOp(offsets[-1], thread_coordinate(b, layout, shape, 1, warp, lane)))
    dims = [b.add(memref.DimOp(memory, b.index(d))) for d in range(mt.get_num_dims())]
    linear, row_stride = element_offset(b.add, memory, [*offsets[:-2], row, col])
    assert row_stride is not None  # a 2-D fragment's memref has rows
    size = b.index(nbytes)
    address = b.add(arith.AddiOp(b.add(nvgpu.MemrefBaseOp(memory)), b.add(arith.MuliOp(linear, size))))
    pitch = b.add(arith.MuliOp(row_stride, size))
    last_row = b.add(arith.AddiOp(row, b.index(max(layout.value_offsets(shape, 0)))))
    last_col = b.add(arith.AddiOp(col, b.index(max(layout.value_offsets(shape, 1)))))
    # (i32 operands of the edge path's mask)
    m, n, rows, cols = (b.add(arith.IndexCastOp(v, i32)) for v in (offsets[-2], offsets[-1], *dims[-2:]))
    inside = b.add(arith.AndIOp(
        b.add(arith.CmpiOp(last_row, dims[-2], "ult")), b.add(arith.CmpiOp(last_col, dims[-1], "ult"))
    ))
    fast = b.add(arith.AndIOp(inside, aligned(b, address, pitch, ft.vector_length() * nbytes)))
    whole = _whole_vectors(b, ft, address, pitch, col, dims[-1], nbytes)

    def mask_of(edge: _Builder) -> SSAValue:
        in_bounds = Binary(
            nvgpu.FragBinaryKind.ANDI,
            Compare(CmpIPredicate.SLT, Coord(0), Scalar(rows)),
            Compare(CmpIPredicate.SLT, Binary(nvgpu.FragBinaryKind.ADDI, Coord(1), Scalar(n)), Scalar(cols)),
        )
        mask = Materializer(ft.with_element_type(i32), m, edge.add)(in_bounds)
        assert mask.type == ft.with_element_type(i1)
        return mask

    return address, pitch, fast, mask_of, whole


def _vector_access(b: _Builder, memory: SSAValue, offsets: list[SSAValue], ft: nvgpu.FragmentType):
    """For a 1-D fragment at `offsets` of `memory`: the thread's first
    element's address, the row pitch, whether its vectors are all inside
    and aligned (the fast path), a function emitting the in-bounds mask
    of its elements (the edge path), and where the edge path may access
    whole vectors (`_whole_vectors`)."""
    mt = memory.type
    assert isinstance(mt, MemRefType)
    lane = b.add(nvgpu.LaneIdOp())
    warp = b.add(arith.RemUIOp(b.add(nvgpu.WarpIdOp()), b.index(WARPS_PER_GROUP)))
    coords = list(offsets)
    coords[-1] = b.add(arith.AddiOp(offsets[-1], thread_coordinate(b, ft.tiled_layout, ft.get_shape(), 0, warp, lane)))
    dims = [b.add(memref.DimOp(memory, b.index(d))) for d in range(mt.get_num_dims())]
    linear, row_stride = element_offset(b.add, memory, coords)
    nbytes = nvgpu.element_bytes(mt.get_element_type())
    size = b.index(nbytes)
    address = b.add(arith.AddiOp(b.add(nvgpu.MemrefBaseOp(memory)), b.add(arith.MuliOp(linear, size))))
    # (a 1-D fragment's elements are one row: the pitch is never applied)
    pitch = b.add(arith.MuliOp(dims[-1] if row_stride is None else row_stride, size))
    both = b.add(arith.AndIOp(address, b.index(min(ft.vector_length() * nbytes, VECTOR_BYTES) - 1)))
    fast = b.add(arith.CmpiOp(both, b.index(0), "eq"))
    last = b.add(arith.AddiOp(coords[-1], b.index(max(ft.tiled_layout.value_offsets(ft.get_shape(), 0)))))
    fast = b.add(arith.AndIOp(fast, b.add(arith.CmpiOp(last, dims[-1], "ult"))))
    whole = _whole_vectors(b, ft, address, pitch, coords[-1], dims[-1], nbytes)

    def mask_of(edge: _Builder) -> SSAValue:
        room = edge.add(arith.IndexCastOp(edge.add(arith.SubiOp(dims[-1], offsets[-1])), i32))
        index = edge.add(nvgpu.FragmentIndexOp.build(
            properties={"axis": nvgpu.FragIndexAxisAttr(nvgpu.FragIndexAxis.ROW)}, result_types=[ft.with_element_type(i32)]))
        return edge.add(nvgpu.FragmentCmpIOp(CmpIPredicate.SLT, index, room))

    return address, pitch, fast, mask_of, whole


class ExpandFragmentLoad(RewritePattern):
    """`nvgpu.frag_load` → address math, a fast path and a masked edge path."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.FragmentLoadOp, rewriter: PatternRewriter) -> None:
        ft, mt = op.result.type, op.source.type
        assert isinstance(ft, nvgpu.FragmentType) and isinstance(mt, MemRefType)
        shape, layout, rank = ft.get_shape(), ft.tiled_layout, len(ft.get_shape())
        if rank not in (1, 2):
            raise fail(op, f"{NAME}: only 1-D and 2-D fragments can be loaded, got {ft}")
        et = mt.get_element_type()
        b = _Builder()
        lane = b.add(nvgpu.LaneIdOp())
        warp = b.add(arith.RemUIOp(b.add(nvgpu.WarpIdOp()), b.index(WARPS_PER_GROUP)))
        offsets = list(op.offsets)
        first_axis = len(offsets) - rank  # the memref dimension of fragment axis 0
        coords = list(offsets)
        for axis in range(rank):
            coords[first_axis + axis] = b.add(arith.AddiOp(
                offsets[first_axis + axis], thread_coordinate(b, layout, shape, axis, warp, lane)))
        dims = [b.add(memref.DimOp(op.source, b.index(d))) for d in range(mt.get_num_dims())]
        linear, row_stride = element_offset(b.add, op.source, coords)
        size = b.index(nvgpu.element_bytes(et))
        address = b.add(arith.AddiOp(b.add(nvgpu.MemrefBaseOp(op.source)), b.add(arith.MuliOp(linear, size))))
        # (the rows of a 1-D memref: one, whose pitch is never applied)
        pitch = b.add(arith.MuliOp(dims[-1] if row_stride is None else row_stride, size))
        # Fast path: the thread's last element is inside on every axis, and
        # its vectors are aligned (its first element and the row pitch).
        fast = aligned(b, address, pitch, ft.vector_length() * nvgpu.element_bytes(et))
        for axis in range(rank):
            d = first_axis + axis
            last = b.add(arith.AddiOp(coords[d], b.index(max(layout.value_offsets(shape, axis)))))
            fast = b.add(arith.AndIOp(fast, b.add(arith.CmpiOp(last, dims[d], "ult"))))
        fast_block = Block([
            loaded := nvgpu.FragmentLoadGlobalOp.build(
                operands=[address, pitch, []], result_types=[ft]),
            scf.YieldOp(loaded.result),
        ])
        # Edge path: element (i, j) is inside when its coordinate along each
        # axis is below dim − offset (i32: a negative bound masks everything).
        i32_frag = ft.with_element_type(i32)

        def mask_of(edge: _Builder) -> SSAValue:
            mask: SSAValue | None = None
            for axis in range(rank):
                d = first_axis + axis
                room = edge.add(arith.IndexCastOp(edge.add(arith.SubiOp(dims[d], offsets[d])), i32))
                index = edge.add(nvgpu.FragmentIndexOp.build(
                    properties={"axis": nvgpu.FragIndexAxisAttr(nvgpu.FragIndexAxis.ROW if axis == 0 else nvgpu.FragIndexAxis.COL)},
                    result_types=[i32_frag]))
                inside = edge.add(nvgpu.FragmentCmpIOp(CmpIPredicate.SLT, index, room))
                mask = inside if mask is None else edge.add(nvgpu.FragmentBinaryOp(nvgpu.FragBinaryKind.ANDI, mask, inside))
            assert mask is not None
            return mask

        whole = _whole_vectors(b, ft, address, pitch, coords[-1], dims[-1], nvgpu.element_bytes(et))
        edge = _Builder()
        masked = _masked_access(edge, whole, mask_of, lambda by_vector, mask: nvgpu.FragmentLoadGlobalOp.build(
            operands=[address, pitch, [mask]], result_types=[ft], properties=_VECTOR_MASK if by_vector else {}))
        edge_block = Block(edge.ops)
        edge_block.add_op(scf.YieldOp(masked))
        rewriter.insert(b.ops, InsertPoint.before(op))
        branch = scf.IfOp(fast, [ft], Region(fast_block), Region(edge_block))
        branch.results[0].name_hint = op.result.name_hint
        rewriter.replace(op, branch)


@dataclass(frozen=True)
class ExpandFragmentStoresPass(ModulePass):
    """Writes out epilogue stores (`nvgpu.frag_store`), atomic adds
    (`nvgpu.frag_atomic_add`) and
    consumer-side loads (`nvgpu.frag_load`) as address math, a fast path and
    a masked edge path."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([InheritLocation(p) for p in (ExpandFragmentStore(), ExpandFragmentLoad(),
                                                                      ExpandFragmentAtomicAdd())]),
            apply_recursively=False,
        ).rewrite_module(op)
