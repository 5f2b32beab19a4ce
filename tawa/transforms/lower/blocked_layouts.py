"""Register layouts of a consumer partition whose tiles never meet a wgmma.

An analysis for `tawa-lower-tile` (`ConsumerInfo.layouts`): in a kernel
without dots, one warp group holds every tile (`tawa-warp-specialize`,
`DOT_FREE_GROUPS`), and each tile value gets a layout of the algebra
(`tawa.dialects.nvgpu.layouts`), after Mosaic GPU's layout inference:

* **2-D tiles** of shape S: `blocked_layout(S, B)` — 16-byte vectors of one
  row, lanes along the columns, warps along the rows, registers for the
  rest — where B is the smallest element size among the float tiles of
  shape S in the partition.  One layout per shape, so every value that
  meets another elementwise has the same layout: a bf16 load keeps its
  layout when converted to f32 (its vectors of 8 become two f32 vectors of
  4 in registers), and a bf16 tile and an f32 tile of one shape agree;
* **1-D tiles** (one value per row or per column) take the layout of the
  2-D tile they come from or go to: a reduction's result the reduced
  layout of its input (`TiledLayout.reduced_layout`), a vector broadcast
  by `tile.broadcast(tile.expand_dims(v, axis))` the broadcast tile's layout
  reduced along `axis`, so that the broadcast moves no data; values that
  meet elementwise, through `arith.extf`/`truncf`, or through the
  iteration arguments, yields and results of `scf.for` / `scf.if`, share
  one layout (a loop-carried row vector of sums: the layout of the
  reduction it adds up).

Integer and boolean tiles (indices, masks) get no layout here: they are
expressions over the coordinates (`tawa.transforms.lower.masks`),
materialized in the layout of the tile they select.  A 1-D tile that two
different layouts reach (a row vector reduced from a 16x1024 tile and
broadcast against a 16x512 one: its values would have to move between
threads) is a located error at the op that brings the second one; a 1-D
tile that no 2-D tile gives a layout is reported by the lowering at the op
that needs one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, Region, SSAValue

from tawa.dialects import nvgpu, tile
from tawa.dialects.nvgpu.fragments import BLOCKED_FLOATS as FLOATS
from tawa.dialects.nvgpu.layouts import TiledLayout, blocked_layout
from tawa.transforms.utils import fail


def _floats(v: SSAValue, rank: int) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.get_num_dims() == rank and isinstance(t.get_element_type(), FLOATS)


def _values(region: Region) -> Iterator[tuple[SSAValue, Operation]]:
    """Every value the region defines (op results, loop iteration
    arguments), with the op that defines it (the loop for its arguments)."""
    for op in region.walk():
        for r in op.results:
            yield r, op
        for inner in op.regions:
            for block in inner.blocks:
                for a in block.args:
                    yield a, op


def _only_broadcast(v: SSAValue) -> bool:
    """An expanded vector that only broadcasts read: it never becomes a
    fragment of its own shape (`tile.broadcast(tile.expand_dims(v))`)."""
    return isinstance(v.owner, tile.ExpandDimsOp) and bool(v.uses) and all(
        isinstance(u.operation, tile.BroadcastOp) for u in v.uses)


class _Classes:
    """Union-find over 1-D values: the values of a class share one layout."""

    def __init__(self) -> None:
        self.parent: dict[SSAValue, SSAValue] = {}

    def find(self, v: SSAValue) -> SSAValue:
        self.parent.setdefault(v, v)
        while self.parent[v] is not v:
            self.parent[v] = self.parent[self.parent[v]]
            v = self.parent[v]
        return v

    def union(self, a: SSAValue, b: SSAValue) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[rb] = ra


def _links(op: Operation) -> Iterator[tuple[SSAValue, SSAValue]]:
    """Pairs of 1-D float values that `op` makes share a layout."""
    if isinstance(op, scf.ForOp):
        body = op.body.block
        yielded = body.last_op.operands if isinstance(body.last_op, scf.YieldOp) else ()
        for i, (init, res) in enumerate(zip(op.iter_args, op.results)):
            yield init, res
            yield init, body.args[i + 1]
            if i < len(yielded):
                yield init, yielded[i]
        return
    if isinstance(op, scf.IfOp):
        for region in (op.true_region, op.false_region):
            for block in region.blocks:
                if isinstance(block.last_op, scf.YieldOp):
                    yield from zip(op.results, block.last_op.operands)
        return
    if op.dialect_name() in ("arith", "math") or isinstance(op, tile.SelectOp):
        vectors = [v for v in (*op.operands, *op.results) if _floats(v, 1)]
        yield from zip(vectors, vectors[1:])


@dataclass(frozen=True)
class BlockedTile:
    """A tile value's fragment in a partition of blocked layouts: this warp
    group's share of it (`shape`), its `layout`, and whether its axis 0 runs
    along the tile's rows (a 2-D tile, a row vector), so that with several
    warp groups each holds the rows from its own first (a column vector:
    every warp group holds all of it)."""

    shape: tuple[int, ...]
    layout: TiledLayout
    along_rows: bool


def plan_blocked_layouts(region: Region, who: str, groups: int = 1) -> dict[SSAValue, BlockedTile]:
    """The fragment of every float tile value of the consumer partition
    `region` of `groups` warp groups (each holds an equal share of the
    rows of every 2-D tile, `blocked_group_rows`) that one can be derived
    for (see the module docstring); a located error where two layouts
    reach one 1-D value."""
    # 2-D tiles: one blocked layout per shape, for its smallest element.
    smallest: dict[tuple[int, ...], int] = {}
    tiles_2d: list[SSAValue] = []
    for v, op in _values(region):
        if _floats(v, 2) and not _only_broadcast(v):
            t = v.type
            assert isinstance(t, TensorType)
            rows, cols = t.get_shape()
            shape = (rows // groups, cols)
            size = nvgpu.element_bytes(t.get_element_type())
            smallest[shape] = min(size, smallest.get(shape, size))
            tiles_2d.append(v)
    tiles: dict[SSAValue, BlockedTile] = {}
    blocked = {shape: blocked_layout(shape, size) for shape, size in smallest.items()}  # type: ignore[arg-type]
    for v in tiles_2d:
        rows, cols = v.type.get_shape()  # type: ignore[union-attr]
        shape = (rows // groups, cols)
        tiles[v] = BlockedTile(shape, blocked[shape], True)
    # 1-D tiles: classes of values that meet, each given its layout by a reduction or a broadcast.
    classes = _Classes()
    for op in region.walk():
        for a, b in _links(op):
            if _floats(a, 1) and _floats(b, 1):
                classes.union(a, b)
    given: dict[SSAValue, tuple[BlockedTile, Operation]] = {}

    def give(v: SSAValue, of: BlockedTile, axis: int, by: Operation) -> None:
        """`v` is `of` reduced along `axis` (a row vector for axis 1)."""
        out = BlockedTile(of.shape[:axis] + of.shape[axis + 1:], of.layout.reduced_layout(of.shape, axis), axis == 1)
        root = classes.find(v)
        if root in given and given[root][0] != out:
            first, was = given[root][1], given[root][0]
            raise fail(by, f"{who}: this op gives a {v.type} tile the register layout {out.layout} of a "
                           f"{'x'.join(map(str, of.shape))} tile, but '{first.name}' gave it {was.layout}: its "
                           "values would have to move between threads; reduce and broadcast it against tiles "
                           "of one shape")
        given.setdefault(root, (out, by))

    for op in region.walk():
        if isinstance(op, tile.ReduceOp) and op.input in tiles and _floats(op.result, 1):
            give(op.result, tiles[op.input], op.axis.value.data, op)
        elif (isinstance(op, tile.BroadcastOp) and isinstance(expand := op.input.owner, tile.ExpandDimsOp)
              and op.result in tiles and _floats(expand.input, 1)):
            give(expand.input, tiles[op.result], expand.axis.value.data, op)
        elif isinstance(op, tile.ExpandDimsOp) and op.result in tiles and _floats(op.input, 1):
            # Used as it is: a broadcast to its own shape (w[None, :] against a 1-row tile).
            give(op.input, tiles[op.result], op.axis.value.data, op)
    for v, _ in _values(region):
        if _floats(v, 1) and (root := classes.find(v)) in given:
            tiles[v] = given[root][0]
    return tiles
