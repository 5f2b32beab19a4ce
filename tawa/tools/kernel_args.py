"""What a tile kernel's arguments are, read from how the kernel indexes them.

`tawa-run` makes random inputs for any kernel from its signature and a few
named sizes.  The signature gives ranks and element types; this module finds
the rest from the kernel's `tile.load` / `tile.store` ops:

* **Shapes.**  Every memref dimension and every tile axis is a variable;
  variables that must have the same extent are merged (union-find): a tile
  axis with the memref dimension it is loaded from or stored to, the M, N and
  K axes of `tile.dot` / `tile.dot_async` with their operands', elementwise
  operands with each other, `tile.reduce` / `expand_dims` / `broadcast` /
  `trans` axis by axis, loop-carried values with their yields, and a tile put
  into an aref with the tile got from it.  Tiles made from nothing (`zeros`,
  `splat`, `iota`, constants) merge nothing: one splat may feed tiles of
  unrelated shapes.  Each resulting class of dimensions gets its extent from,
  in this order:

  1. `--arg X=d0,d1,...` (or the kernel's `tawa.shapes` attribute);
  2. a loop bound: a dimension indexed by the induction variable of an
     `scf.for` whose upper bound is a size argument (possibly through
     `arith.min*`) has that size (GEMM's K, attention's key count);
  3. constant offsets only: the dimension is what the tiles cover (the 256
     columns of `examples/gemm_softmax.mlir`, the head dim of attention);
  4. a dimension indexed by `tile.program_id g` alone (a batch dimension,
     one program per entry) has extent `grid[g]` when the grid is given;
  5. the size arguments no loop bounds, in signature order, go to the other
     open classes in the order they first appear in the memref arguments
     (GEMM's `M, N` to the rows of A and of B): the examples' convention;
  6. a memref with the same type as one whose same dimension is known has
     that extent (self-attention: Q's rows are K's);
  7. otherwise a one-line error naming the dimension and the `--arg` to add.

* **The grid.**  A dimension indexed by `program_id(g) * T` needs
  ⌈extent / T⌉ programs along axis g (`program_id(g)` alone: extent).
* **Roles.**  A memref that a `tile.store` writes is an output; one that is
  also read by a `tile.load` (C of C = αAB + βC) is read-write.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import count

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from tawa.diagnostics import TawaError, location_of
from tawa.dialects import tile

_FRESH = count()
_SOURCES = frozenset({"tile.zeros", "tile.splat", "tile.iota", "arith.constant"})
"""Ops whose result tiles merge nothing (a fresh variable per use)."""
_STRUCTURAL = frozenset(
    {"tile.load", "tile.store", "tile.dot", "tile.dot_async", "tile.dot_wait", "tile.reduce",
     "tile.expand_dims", "tile.broadcast", "tile.trans", "scf.for", "scf.if", "scf.yield",
     "scf.while", "scf.condition", "aref.put", "aref.get"}
)


def param_name(kernel: func.FuncOp, i: int) -> str:
    """The name of parameter i (its `%name`, else `argI`)."""
    arg = kernel.body.blocks.first.args[i]  # type: ignore[union-attr]
    return arg.name_hint or f"arg{i}"


@dataclass(frozen=True)
class Access:
    """A tile op's offset into dimension `dim` of memref parameter `param`."""

    param: int
    dim: int
    kind: str
    """'const' (value: the offset), 'pid' (value: the axis, step: T of
    program_id·T), 'loop' (sizes: the size arguments bounding the loop) or 'other'."""
    value: int = 0
    step: int = 1
    extent: int = 1
    """What the tile covers along the dimension (1 for leading dimensions)."""
    sizes: tuple[str, ...] = ()

    @property
    def batch(self) -> bool:
        """Indexed by `tile.program_id g` alone with a tile of extent 1."""
        return self.kind == "pid" and self.step == 1 and self.extent == 1


@dataclass
class Analysis:
    """The classes of memref dimensions of one kernel and how they are indexed."""

    kernel: func.FuncOp
    memrefs: list[int]
    """Parameter indices of the memref arguments."""
    classes: dict[tuple[int, int], int]
    """(param, dim) → class id."""
    accesses: list[Access]
    reads: set[int] = field(default_factory=set)
    writes: set[int] = field(default_factory=set)
    axes: set[int] = field(default_factory=set)
    """Grid axes the kernel reads with tile.program_id."""

    def members(self, cls: int) -> list[tuple[int, int]]:
        return [key for key, c in self.classes.items() if c == cls]

    def class_accesses(self, cls: int) -> list[Access]:
        return [a for a in self.accesses if self.classes[(a.param, a.dim)] == cls]


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[object, object] = {}

    def find(self, x: object) -> object:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: object, b: object) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _rank(value: SSAValue) -> int:
    t = value.type
    return t.get_num_dims() if isinstance(t, TensorType) else -1


def _shape(value: SSAValue) -> tuple[int, ...] | None:
    t = value.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


class _Merger:
    """Builds the union-find of one kernel's axis variables."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.params = list(kernel.body.blocks.first.args)  # type: ignore[union-attr]
        self.uf = _UnionFind()
        self.accesses: list[Access] = []
        self.reads: set[int] = set()
        self.writes: set[int] = set()
        self.axes: set[int] = set()

    def axis(self, value: SSAValue, j: int) -> object:
        owner = value.owner
        if isinstance(owner, Operation) and owner.name in _SOURCES:
            return ("fresh", next(_FRESH))
        return (value, j)

    def same(self, a: SSAValue, b: SSAValue) -> None:
        """Merges two tiles of equal rank axis by axis."""
        if _rank(a) >= 0 and _rank(a) == _rank(b):
            for j in range(_rank(a)):
                self.uf.union(self.axis(a, j), self.axis(b, j))

    def param_of(self, memref: SSAValue) -> int | None:
        if isinstance(memref, BlockArgument) and memref.owner is self.kernel.body.blocks.first:
            return memref.index
        return None

    def box(self, memref: SSAValue, offsets: tuple[SSAValue, ...], value: SSAValue) -> int | None:
        param = self.param_of(memref)
        if param is None:
            return None
        rank, r = len(offsets), _rank(value)
        shape = _shape(value) or ()
        for d, offset in enumerate(offsets):
            j = d - (rank - r)
            extent = shape[j] if j >= 0 else 1
            if j >= 0:
                self.uf.union(("param", param, d), self.axis(value, j))
            access = _access(param, d, offset, extent)
            if access.batch:  # one program per entry: the same entry of every array
                self.uf.union(("param", param, d), ("batch", access.value))
            self.accesses.append(access)
        return param

    def visit(self, op: Operation) -> None:
        if isinstance(op, tile.ProgramIdOp):
            self.axes.add(op.axis.value.data)
        elif isinstance(op, tile.LoadOp):
            if (p := self.box(op.source, tuple(op.offsets), op.result)) is not None:
                self.reads.add(p)
        elif isinstance(op, tile.StoreOp):
            if (p := self.box(op.dest, tuple(op.offsets), op.value)) is not None:
                self.writes.add(p)
        elif isinstance(op, tile.DotOp | tile.DotAsyncOp):
            lhs, rhs, acc, res = op.lhs, op.rhs, op.acc, op.result
            n_axis, k_axis = (0, 1) if op.rhs_transposed is not None else (1, 0)
            m_axis, lhs_k = (1, 0) if op.lhs_transposed is not None else (0, 1)
            self.same(acc, res)
            self.uf.union(self.axis(lhs, m_axis), self.axis(res, 0))
            self.uf.union(self.axis(lhs, lhs_k), self.axis(rhs, k_axis))
            self.uf.union(self.axis(rhs, n_axis), self.axis(res, 1))
        elif isinstance(op, tile.DotWaitOp):
            for v, r in zip(op.values, op.results_):
                self.same(v, r)
        elif isinstance(op, tile.ReduceOp):
            axis = op.axis.value.data
            for j in range(_rank(op.result)):
                self.uf.union(self.axis(op.input, j + (j >= axis)), self.axis(op.result, j))
        elif isinstance(op, tile.ExpandDimsOp):
            axis = op.axis.value.data
            for j in range(_rank(op.input)):
                self.uf.union(self.axis(op.input, j), self.axis(op.result, j + (j >= axis)))
        elif isinstance(op, tile.BroadcastOp):
            for j, (a, b) in enumerate(zip(_shape(op.input) or (), _shape(op.result) or ())):
                if a == b:
                    self.uf.union(self.axis(op.input, j), self.axis(op.result, j))
        elif isinstance(op, tile.TransOp):
            self.uf.union(self.axis(op.input, 0), self.axis(op.result, 1))
            self.uf.union(self.axis(op.input, 1), self.axis(op.result, 0))
        elif isinstance(op, scf.ForOp):
            body = op.body.block
            yielded = body.last_op.operands if body.last_op is not None else ()
            for init, arg, out, res in zip(op.iter_args, body.args[1:], yielded, op.results):
                for v in (init, out, res):
                    self.same(arg, v)
        elif isinstance(op, scf.IfOp):
            for region in op.regions:
                for block in region.blocks:
                    if block.last_op is not None:
                        for out, res in zip(block.last_op.operands, op.results):
                            self.same(out, res)
        elif op.name in ("aref.put", "aref.get"):
            ref = op.operands[0]
            tiles = op.operands[1:] if op.name == "aref.put" else op.results
            for i, t in enumerate(v for v in tiles if isinstance(v.type, TensorType)):
                for j in range(_rank(t)):
                    self.uf.union(("aref", ref, i, j), self.axis(t, j))
        elif op.name not in _STRUCTURAL:  # elementwise: every tile of one shape
            tiles = [v for v in (*op.operands, *op.results) if isinstance(v.type, TensorType)]
            if tiles and all(_shape(v) == _shape(tiles[0]) for v in tiles):
                for v in tiles[1:]:
                    self.same(tiles[0], v)


def _constant(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _loop_of(value: SSAValue) -> scf.ForOp | None:
    if isinstance(value, BlockArgument) and value.index == 0 and isinstance(value.owner, Block):
        parent = value.owner.parent_op()
        if isinstance(parent, scf.ForOp):
            return parent
    return None


def _bounding_sizes(value: SSAValue, depth: int = 0) -> tuple[str, ...]:
    """Size arguments that bound `value` from above (through min, casts)."""
    if depth > 8:
        return ()
    if isinstance(value, BlockArgument):
        block = value.owner
        if isinstance(block, Block) and isinstance(block.parent_op(), func.FuncOp):
            if isinstance(value.type, IndexType) and value.name_hint:
                return (value.name_hint,)
        return ()
    op = value.owner
    if isinstance(op, arith.MinUIOp | arith.MinSIOp):
        return tuple(s for v in op.operands for s in _bounding_sizes(v, depth + 1))
    if isinstance(op, arith.IndexCastOp):
        return _bounding_sizes(op.input, depth + 1)
    return ()


def _access(param: int, dim: int, offset: SSAValue, extent: int) -> Access:
    if (c := _constant(offset)) is not None:
        return Access(param, dim, "const", value=c, extent=extent)
    op = offset.owner
    if isinstance(op, tile.ProgramIdOp):
        return Access(param, dim, "pid", value=op.axis.value.data, extent=extent)
    if isinstance(op, arith.MuliOp):
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if isinstance(a.owner, tile.ProgramIdOp) and (step := _constant(b)) is not None:
                return Access(param, dim, "pid", value=a.owner.axis.value.data, step=step, extent=extent)
    if (loop := _loop_of(offset)) is not None:
        return Access(param, dim, "loop", extent=extent, sizes=_bounding_sizes(loop.ub))
    return Access(param, dim, "other", extent=extent)


def analyze(kernel: func.FuncOp) -> Analysis:
    """The dimension classes, accesses and roles of `kernel`'s memrefs."""
    merger = _Merger(kernel)
    for op in kernel.walk():
        merger.visit(op)
    memrefs = [i for i, p in enumerate(merger.params) if isinstance(p.type, MemRefType)]
    roots: dict[object, int] = {}
    classes: dict[tuple[int, int], int] = {}
    for i in memrefs:
        for d in range(merger.params[i].type.get_num_dims()):  # type: ignore[union-attr]
            root = merger.uf.find(("param", i, d))
            classes[(i, d)] = roots.setdefault(root, len(roots))
    return Analysis(kernel, memrefs, classes, merger.accesses, merger.reads, merger.writes, merger.axes)


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class Extent:
    """A resolved dimension: its value and how it was found (a size name,
    'tile', 'grid', 'peer', 'given')."""

    value: int
    source: str
    name: str | None = None
    """The size or --shape name it is, if any (for messages)."""


def resolve_shapes(
    a: Analysis,
    sizes: Mapping[str, int],
    given: Mapping[int, list[int | str | None]],
    grid: tuple[int, ...] | None,
) -> dict[int, tuple[int, ...]]:
    """The shape of every memref parameter.  `sizes`: the size arguments
    (by name) and other `--shape` names; `given`: per memref parameter the
    dimensions the user gave (an extent, a name in `sizes`, or None: infer); `grid`: the launch grid if given."""
    kernel = a.kernel
    types = {i: kernel.body.blocks.first.args[i].type for i in a.memrefs}  # type: ignore[union-attr]
    extent: dict[int, Extent] = {}

    def fix(cls: int, value: Extent, what: str) -> None:
        old = extent.get(cls)
        if old is not None and old.value != value.value:
            dims = _describe_class(a, cls)
            raise TawaError(
                f"@{kernel.sym_name.data}: {dims} would be both {old.value} ({old.source}) and "
                f"{value.value} ({what})",
                location_of(kernel) or "tawa-run",
            )
        extent.setdefault(cls, value)

    bound: set[str] = set()
    for i, dims in given.items():
        for d, v in enumerate(dims):
            if v is not None:
                what = f"--arg {param_name(kernel, i)}"
                name = v if isinstance(v, str) else None
                fix(a.classes[(i, d)], Extent(sizes[v] if name else v, what, name), what)  # type: ignore[index,arg-type]
                if name:
                    bound.add(name)
    for cls in sorted(set(a.classes.values())):
        accesses = a.class_accesses(cls)
        loop_sizes = [s for acc in accesses if acc.kind == "loop" for s in acc.sizes if s in sizes]
        if loop_sizes:
            bound.add(loop_sizes[0])
            if cls not in extent:
                extent[cls] = Extent(sizes[loop_sizes[0]], loop_sizes[0], loop_sizes[0])
        elif accesses and all(acc.kind == "const" for acc in accesses) and cls not in extent:
            extent[cls] = Extent(max(acc.value + acc.extent for acc in accesses), "tile")
    for cls in sorted(set(a.classes.values())):
        batch = [acc for acc in a.class_accesses(cls) if acc.batch]
        if batch and cls not in extent and grid is not None and batch[0].value < len(grid):
            extent[cls] = Extent(grid[batch[0].value], f"grid axis {batch[0].value}")
    # The examples' convention: unbound size arguments name the open dimensions in order.
    params = kernel.body.blocks.first.args  # type: ignore[union-attr]
    given_names = {n for n in sizes if n in {p.name_hint for p in params}}
    unused = [
        p.name_hint for p in params
        if isinstance(p.type, IndexType) and p.name_hint in given_names and p.name_hint not in bound
    ]
    for i in a.memrefs:
        for d in range(types[i].get_num_dims()):  # type: ignore[union-attr]
            cls = a.classes[(i, d)]
            enumerated = any(acc.batch for acc in a.class_accesses(cls))
            if cls not in extent and not enumerated and unused:
                name = unused.pop(0)
                extent[cls] = Extent(sizes[name], name, name)
    # Arrays of one type share the dimensions the kernel leaves open.
    for i in a.memrefs:
        for d in range(types[i].get_num_dims()):  # type: ignore[union-attr]
            cls = a.classes[(i, d)]
            if cls in extent:
                continue
            for j in a.memrefs:
                other = a.classes[(j, d)] if types[j] == types[i] else None
                if other is not None and other in extent:
                    extent[cls] = Extent(extent[other].value, f"as {param_name(kernel, j)}", extent[other].name)
                    break
    shapes: dict[int, tuple[int, ...]] = {}
    for i in a.memrefs:
        rank = types[i].get_num_dims()  # type: ignore[union-attr]
        missing = [d for d in range(rank) if a.classes[(i, d)] not in extent]
        if missing:
            raise TawaError(_missing_message(a, i, missing, extent), location_of(kernel) or "tawa-run")
        shapes[i] = tuple(extent[a.classes[(i, d)]].value for d in range(rank))
        static = tuple(types[i].get_shape())  # type: ignore[union-attr]
        for d, (want, got) in enumerate(zip(static, shapes[i])):
            if want >= 0 and want != got:
                raise TawaError(
                    f"@{kernel.sym_name.data}: dimension {d} of {param_name(kernel, i)} is {got}, "
                    f"but its type {types[i]} says {want}",
                    location_of(kernel) or "tawa-run",
                )
    return shapes


def _describe_class(a: Analysis, cls: int) -> str:
    members = a.members(cls)
    names = ", ".join(f"{param_name(a.kernel, i)}[{d}]" for i, d in members)
    return f"dimension {names}" if len(members) == 1 else f"dimensions {names} (one extent)"


def _missing_message(a: Analysis, i: int, missing: list[int], extent: dict[int, Extent]) -> str:
    kernel = a.kernel
    name = param_name(kernel, i)
    rank = len([k for k in a.classes if k[0] == i])
    dims = []
    for d in range(rank):
        e = extent.get(a.classes[(i, d)])
        dims.append("?" if e is None else e.name or str(e.value))
    why = []
    for d in missing:
        pid = [acc for acc in a.class_accesses(a.classes[(i, d)]) if acc.kind == "pid"]
        others = [param_name(kernel, j) for j, _ in a.members(a.classes[(i, d)]) if j != i]
        note = f"indexed by tile.program_id {pid[0].value}" if pid else "no size or tile gives it"
        if others:
            note += f"; shared with {', '.join(dict.fromkeys(others))}"
        why.append(f"{d} of {name} ({note})")
    return (
        f"@{kernel.sym_name.data}: cannot determine dimension {', '.join(why)}: "
        f"give its shape with --arg {name}={','.join(dims)} (each ? an integer or a --shape name)"
    )


def derive_grid(a: Analysis, shapes: Mapping[int, tuple[int, ...]]) -> tuple[int, ...]:
    """The launch grid that covers every memref dimension indexed by a program id."""
    kernel = a.kernel
    if not a.axes:
        return (1,)
    grid = [1] * (max(a.axes) + 1)
    for g in sorted(a.axes):
        needs = [
            math.ceil(shapes[acc.param][acc.dim] / acc.step)
            for acc in a.accesses
            if acc.kind == "pid" and acc.value == g and acc.step > 0
        ]
        if not needs:
            raise TawaError(
                f"@{kernel.sym_name.data}: cannot derive grid axis {g} (no memref is indexed by "
                f"tile.program_id {g} times a constant); give --grid",
                location_of(kernel) or "tawa-run",
            )
        grid[g] = max(needs)
    return tuple(grid)


def iter_params(kernel: func.FuncOp) -> Iterator[tuple[int, str, object]]:
    """(index, name, type) of every parameter."""
    for i, p in enumerate(kernel.body.blocks.first.args):  # type: ignore[union-attr]
        yield i, param_name(kernel, i), p.type
