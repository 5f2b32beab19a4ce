"""Block accesses placed by loaded values stay inside the memory of their tensor.

Offsets are non-negative and, where programs compute them from program ids
and sizes, the lowerings rely on it: the threads' loads and stores of a
consumer mask only a box's far edges, and only along the axes the tile
covers (a leading axis, a batch, is never checked); a TMA coordinate is a
32-bit integer.  An offset computed from a `tile.load_scalar` is whatever
the table holds: a negative entry, or one past the tensor's end in a leading
axis, would make a thread read or write outside the tensor, and one beyond
2^31 would wrap in a TMA coordinate onto rows inside it.

So every `tile.load`, `tile.store` (and other tile op that addresses a box
at `offsets`) with an offset computed from a loaded value gets a guard, at
the tile level where each partition can be read: `inside` = every such
offset is below its dimension (unsigned: a negative one is huge).  When it
does not hold, those offsets in leading axes become 0 and the offset of the
tile's first axis becomes that dimension: the box then lies past the end of
the tensor, which every lowering handles (the threads' masks drop it, TMA
clips it), so the access reads zeros or writes nothing, as the tile program
does for an offset past the end.  (A negative offset breaks the rule that
offsets are non-negative; guarded, it reads zeros and writes nothing.)  The
guard is a compare and a select per offset; offsets computed from program
ids only are left as they are, and so are the kernels without loaded values.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import tile


def guard_loaded_offsets(root: Operation, loaded: Callable[[SSAValue], bool]) -> None:
    """Guards the box accesses under `root` whose offsets `loaded` says are
    computed from a `tile.load_scalar` (module docstring)."""
    for op in [o for o in root.walk() if _box_access(o)]:
        offsets = list(op.offsets)  # type: ignore[attr-defined]
        from_load = [i for i, o in enumerate(offsets) if loaded(o)]
        if from_load:
            _guard(op, offsets, from_load)


def _box_access(op: Operation) -> bool:
    return (op.dialect_name() == "tile" and not isinstance(op, tile.LoadScalarOp)
            and hasattr(op, "offsets") and _memref(op) is not None and _tile_rank(op) is not None)


def _memref(op: Operation) -> SSAValue | None:
    return next((v for v in op.operands if isinstance(v.type, MemRefType)), None)


def _tile_rank(op: Operation) -> int | None:
    t = next((v.type for v in (*op.operands, *op.results) if isinstance(v.type, TensorType)), None)
    return None if t is None else t.get_num_dims()


def _hoisted(op: Operation, inputs: list[SSAValue]) -> Operation:
    """Where the guard of `op` goes: before the outermost loop around `op`
    that defines none of `inputs` (a K loop does not recompute the guard
    of a row offset read before it), else right before `op`."""
    at = op
    while isinstance(loop := at.parent_op(), scf.ForOp) and not any(_defined_in(v, loop) for v in inputs):
        at = loop
    return at


def _defined_in(v: SSAValue, loop: Operation) -> bool:
    owner = v.owner.parent_op() if isinstance(v, BlockArgument) else v.owner
    return isinstance(owner, Operation) and loop.is_ancestor(owner)


def _guard(op: Operation, offsets: list[SSAValue], from_load: list[int]) -> None:
    source = _memref(op)
    rank = _tile_rank(op)
    assert source is not None and rank is not None and isinstance(source.type, MemRefType)
    first = source.type.get_num_dims() - rank  # the memref axis of the tile's first axis
    new: list[Operation] = []

    def add(o: Operation) -> SSAValue:
        new.append(o)
        return o.results[0]

    dims: dict[int, SSAValue] = {}

    def dim(axis: int) -> SSAValue:
        if axis not in dims:
            dims[axis] = add(memref.DimOp(source, add(arith.ConstantOp(IntegerAttr(axis, IndexType())))))
        return dims[axis]

    inside: SSAValue | None = None
    for i in from_load:
        ok = add(arith.CmpiOp(offsets[i], dim(i), "ult"))
        inside = ok if inside is None else add(arith.AndIOp(inside, ok))
    assert inside is not None
    guarded = list(offsets)
    for i in from_load:
        if i < first:
            guarded[i] = add(arith.SelectOp(inside, offsets[i], add(arith.ConstantOp(IntegerAttr(0, IndexType())))))
    guarded[first] = add(arith.SelectOp(inside, offsets[first], dim(first)))
    for old, g in zip(offsets, guarded, strict=True):
        if g is not old and old.name_hint:
            g.name_hint = f"{old.name_hint}_guarded"
    for o in new:
        o.location = op.location  # errors about the guard name the access's line
    Rewriter.insert_op(new, InsertPoint.before(_hoisted(op, [source, *(offsets[i] for i in {*from_load, first})])))
    start = len(op.operands) - len(offsets)  # the offsets are the last operands of every box access
    assert list(op.operands[start:]) == offsets, op.name
    op.operands = (*op.operands[:start], *guarded)
