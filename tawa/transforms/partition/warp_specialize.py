"""`tawa-warp-specialize`: split a tile kernel into producer and consumer warp groups.

Task-aware partitioning after Tawa (arXiv 2510.14719) and Triton's NVWS:

* every `tile.load` from which a `tile.dot` operand is computed alone (the
  tile itself, or the tile cast or scaled by scalars on the way, possibly
  carried through loops) is a *producer* op (it will become a TMA load
  issued by one producer thread); a tile that is combined with other tiles
  before it reaches a dot (an attention bias) stays with the consumers;
* in a kernel without dots (an elementwise, normalization or reduction
  kernel) the tiles a loop streams are producer loads too (`streams`): a
  2-D tile loaded in an `scf.for` (a row's chunks), from memory the kernel
  does not write, of rows that are TMA boxes of whole 16-byte units (an
  unswizzled slot: only threads read it), travels
  from a TMA producer through an aref ring into the consumers' registers
  (`nvgpu.frag_load_shared`), so the loads of the next chunks are in
  flight while the consumers reduce this one, as many as the ring holds
  (`stream_loads`; off, the consumers load them: the twin a launch takes
  where a tensor map cannot describe an operand, `tawa.Kernel.fallback`);
* every other op that touches tiles or memory (dots, elementwise math,
  reductions, stores, remaining loads) is a *consumer* op — in a kernel
  without dots its remaining loads (a single-shot tile, a weight vector)
  become per-thread global loads of the consumers, and the
  `aref.warp_specialize` carries `tawa.blocked_layouts`: its tiles take
  blocked layouts, held by one consumer warp group per 64 rows where that
  splits them evenly, else one (`dot_free_warp_groups`);
* a kernel whose producer would have nothing to load (no producer loads:
  a kernel without dots or loops over chunks) gets no producer partition: the
  `aref.warp_specialize` holds its consumer partition alone, whose budget
  is the launch cap of its threads (or `consumer-regs`), so no warp group
  is launched only to idle and no `setmaxnreg` moves registers between
  roles (how many CTAs share an SM is decided after lowering,
  `tawa-occupancy`);
* scalar, side-effect-free ops (index arithmetic, constants, program ids) and
  the `scf.for` skeletons are replicated into every partition that needs them:
  a loop goes where its body's ops go, and an op goes wherever its results are
  needed (demand flows backwards through operands, loop bounds, iter_args and
  yields); so is a scalar load (`tile.load_scalar`: a gather's row index, a
  table entry), each partition reading the value itself, which is sound only
  where the kernel does not write what it reads (else the pass declines) and
  which may place loads and stores but not a loop's bounds (the protocol
  proof derives every trip count from sizes and program ids); the accesses
  it places are guarded against entries outside the tensor
  (`tawa.transforms.partition.loaded_offsets`);
* each group of producer loads that feeds the same consumer op travels
  through one aref: `aref.put` in the producer after the loads, `aref.get` in
  the consumer right before the first op that uses the values,
  `aref.consumed` after the last one (for a `tile.dot_async`, after the
  `tile.dot_wait` that completes it: the product reads the slot until then);
* loads carried through a loop by hand (software prefetch: the first tiles
  loaded before the loop, each iteration loading the next ones and yielding
  them) travel through one aref per loop: the producer puts the first tiles
  before the loop and the next ones in each iteration, the consumers get them
  where the iteration uses them and, after the loop, where the last ones are
  used (or get and release them at once where nothing uses them), so every
  put has its get.  Neither partition carries the tiles: the aref ring is
  the prefetch.

Arefs are created with depth 1; `tawa-pipeline` deepens them.  Where the pass
cannot apply it leaves the kernel unchanged and prints one `remark:` line on
stderr saying why, naming the op and its location (with `strict=true` it
fails instead).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import IsTerminator, MemoryWriteEffect, is_side_effect_free

from tawa.analysis.smem_plan import thread_slot_swizzle
from tawa.diagnostics import TawaError, location_of
from tawa.dialects import aref, nvgpu, tile
from tawa.dialects.aref import PartitionRole
from tawa.dialects.nvgpu.fragments import LOADABLE
from tawa.target.hopper import (
    WARPS_PER_GROUP,
)
from tawa.transforms.partition.loaded_offsets import guard_loaded_offsets
from tawa.transforms.partition.warp_groups import (
    BLOCKED_LAYOUTS,
    DOTS,
    blocked_group_rows,
    consumer_warp_groups,
    group_rows_of_tile,
    has_dots,
    lone_budget,
    register_budgets,
    tile_rows,
)
from tawa.transforms.utils import fail

PRODUCER, CONSUMER = PartitionRole.PRODUCER, PartitionRole.CONSUMER
_FOR_BOUNDS = 3
"""`scf.for` operands before its iter_args: lb, ub, step."""


class Declined(Exception):
    """The kernel cannot be specialized; the message says why (and names the op
    at fault with its location)."""


def _is_tensor(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType)


_INTEGER_DIVISIONS = (arith.DivUIOp, arith.DivSIOp, arith.RemUIOp, arith.RemSIOp,
                      arith.CeilDivUIOp, arith.CeilDivSIOp, arith.FloorDivSIOp)
"""Integer divisions and remainders, pure although xDSL does not mark them
all so (`arith.remui` declares no memory effects, hence unknown ones): a
division by zero is undefined behaviour wherever the op runs, so
recomputing one in the producer (a folded program id split into batch and
tile) adds no hazard the kernel did not have."""


def _replicable(op: Operation) -> bool:
    """Scalar side-effect-free ops: cheap to recompute in every partition.
    A scalar load (`tile.load_scalar`: a row index, a block-table entry)
    counts as one: it reads memory the kernel does not write
    (`Partitioning._check_scalar_loads`), so every partition that reads it
    sees the same value, and a warp group's own load of a few bytes costs
    less than a crossing through an aref slot and its barriers would."""
    return (
        not op.regions
        and (isinstance(op, (*_INTEGER_DIVISIONS, tile.LoadScalarOp)) or is_side_effect_free(op))
        and not any(_is_tensor(v) for v in (*op.operands, *op.results))
    )


def _loaded_scalar(*values: SSAValue) -> tile.LoadScalarOp | None:
    """A `tile.load_scalar` that one of `values` is computed from (through
    scalar ops, the loops that carry them and the region ops that yield
    them), if any."""
    seen: set[SSAValue] = set()
    work = list(values)
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            loop = v.block.parent_op()
            if isinstance(loop, scf.ForOp):
                if v.index == 0:
                    work += [loop.lb, loop.ub, loop.step]
                else:
                    work += [loop.iter_args[v.index - 1], loop.body.block.last_op.operands[v.index - 1]]  # type: ignore[union-attr]
            continue
        op = v.owner
        if isinstance(op, tile.LoadScalarOp):
            return op
        if isinstance(op, scf.ForOp):
            work += [op.iter_args[v.index], op.body.block.last_op.operands[v.index]]  # type: ignore[union-attr, attr-defined]
        elif isinstance(op, Operation):
            work += list(op.operands)
            for region in op.regions:  # an scf.if: what its branches yield
                for block in region.blocks:
                    end = block.last_op
                    if end is not None and end.has_trait(IsTerminator) and v.index < len(end.operands):
                        work.append(end.operands[v.index])
    return None


def _ancestor_in(block: Block, op: Operation) -> Operation:
    anc = block.find_ancestor_op_in_block(op)
    assert anc is not None
    return anc


def _flows_to(user: Operation, index: int) -> list[SSAValue]:
    """The values that operand `index` of `user` flows into: a loop's
    initial value into its iteration argument and result, a yielded value
    into the loop's (or the `scf.if`'s) result and the next iteration's
    argument, an op's operand into its results."""
    if isinstance(user, scf.YieldOp):
        parent = user.parent_op()
        if isinstance(parent, scf.ForOp):
            return [parent.results[index], parent.body.block.args[index + 1]]
        if isinstance(parent, scf.IfOp):
            return [parent.results[index]]
        return []
    if isinstance(user, scf.ForOp):
        if index < _FOR_BOUNDS:
            return []
        i = index - _FOR_BOUNDS
        return [user.body.block.args[i + 1], user.results[i]]
    return list(user.results)


def _feeds_dot_operand(value: SSAValue, seen: set[SSAValue] | None = None) -> bool:
    """Whether a dot operand is computed from the tile `value` alone: it
    flows into operand 0 or 1 of a dot through loop-carried values, `scf.if`
    results and ops whose other tile operands are splats of scalars (a cast,
    a scale: an A operand transformed in registers).  A tile combined with
    other tiles on the way (a bias added to attention scores, which reach
    P·V only through the softmax) does not feed a dot operand: the consumers
    read it themselves."""
    seen = set() if seen is None else seen
    if value in seen:
        return False
    seen.add(value)
    for use in value.uses:
        user = use.operation
        if isinstance(user, DOTS):
            if use.index < 2:
                return True
            continue
        if not isinstance(user, scf.YieldOp | scf.ForOp) and not _alone(user, use.index):
            continue
        if any(_feeds_dot_operand(n, seen) for n in _flows_to(user, use.index)):
            return True
    return False


def _alone(user: Operation, index: int) -> bool:
    """Whether `user` computes from its operand `index` alone among tiles
    (its other tile operands are splats of scalars), elementwise."""
    if isinstance(user, tile.ReduceOp) or user.regions:
        return False
    return all(
        i == index or not _is_tensor(v) or isinstance(v.owner, tile.SplatOp)
        for i, v in enumerate(user.operands)
    )


def streams(kernel: func.FuncOp) -> set[tile.LoadOp]:
    """The loads of a kernel without dots that a producer streams (module
    docstring): 2-D tiles loaded inside `scf.for` loops (and nothing but
    loops), from memrefs no op of the kernel writes (a store, an atomic
    add: the TMA copy would not see the consumers' writes; add + RMSNorm's
    second loop reads back the S its first stored, and loads it itself), whose
    rows are TMA boxes of whole 16-byte units (an unswizzled slot,
    `thread_slot_swizzle`), of the element types the consumers read from a
    slot (`LOADABLE`: an fp8 tile they load from global memory themselves)."""
    if has_dots(kernel):
        return set()
    written = {v for op in kernel.walk() if op.has_trait(MemoryWriteEffect)
               for v in op.operands if isinstance(v.type, MemRefType)}
    out = set()
    for op in kernel.walk():
        if not isinstance(op, tile.LoadOp) or op.source in written or not op.result.uses:
            continue  # (an unused tile is nobody's to take from a ring)
        t = op.result.type
        assert isinstance(t, TensorType)
        if (t.get_num_dims() != 2 or not isinstance(t.get_element_type(), LOADABLE)
                or thread_slot_swizzle(t.get_shape()[1], nvgpu.element_bytes(t.get_element_type())) is None):
            continue
        loops = []
        node = op.parent_op()
        while node is not None and node is not kernel:
            loops.append(node)
            node = node.parent_op()
        if loops and all(isinstance(n, scf.ForOp) for n in loops):
            out.add(op)
    return out


@dataclass
class Acquire:
    """Where the consumers take one put of an aref: `aref.get` right before
    `before`, its values standing for `values`; `aref.consumed` after
    `release_after`, or right after the get when nothing uses the values."""

    values: list[SSAValue]
    before: Operation
    release_after: Operation | None


@dataclass
class ArefGroup:
    """Tiles that travel from the producer to the consumers through one aref.

    The producer puts the tiles of each list in `puts` after the last of its
    loads; the consumers take them at `gets`, in the same order (one get per
    put).  Plain loads have one put and one get; loads carried through a loop
    have two of each (before the loop / in each iteration, and in each
    iteration / after the loop)."""

    puts: list[list[tile.LoadOp]]
    gets: list[Acquire]
    aref: SSAValue | None = None

    @property
    def loads(self) -> list[tile.LoadOp]:
        """The loads of one put: their types are the aref's payload."""
        return self.puts[-1]


@dataclass
class Partitioning:
    """Which partitions every op of a kernel belongs to."""

    kernel: func.FuncOp
    parts: dict[Operation, set[str]] = field(default_factory=dict)
    iter_parts: dict[tuple[Operation, int], set[str]] = field(default_factory=dict)
    producer_loads: set[Operation] = field(default_factory=set)
    carried: dict[scf.ForOp, list[int]] = field(default_factory=dict)
    """Loops with loads carried by hand (the prefetch form): which iter_args."""
    groups: list[ArefGroup] = field(default_factory=list)

    # ------------------------------------------------------------------ analysis

    def analyze(self, stream_loads: bool = True) -> None:
        body = self._check_kernel_shape()
        streamed = streams(self.kernel) if stream_loads else set()
        self.producer_loads = {
            op for op in body.walk()
            if isinstance(op, tile.LoadOp) and (op in streamed or _feeds_dot_operand(op.result))
        }
        for load in sorted(self.producer_loads, key=_program_order):
            for anc in self._ancestors(load):
                if not isinstance(anc, scf.ForOp):
                    raise Declined(
                        f"a tile.load feeding a dot is nested in '{anc.name}' "
                        f"(only scf.for loops are supported): the tile.load{_at(load)} is "
                        f"inside the {anc.name}{_at(anc)}; the producer puts every tile it "
                        "loads, so it cannot load on some paths only: load unconditionally "
                        "(rows and columns out of bounds read as 0)"
                    )
        self._check_scalar_loads(body)
        self._find_carried(body)
        self._check_crossings()
        self._seed(body)
        self._group_crossings()
        self._group_carried()

    def _check_kernel_shape(self) -> Block:
        if self.kernel.body.blocks.first is None or len(self.kernel.body.blocks) != 1:
            raise Declined("the kernel body must be a single block")
        if self.kernel.function_type.outputs.data:
            raise Declined("the kernel returns values (kernels write their outputs)")
        body = self.kernel.body.block
        if any(isinstance(op, aref.WarpSpecializeOp) for op in body.walk()):
            raise Declined("the kernel is already warp-specialized")
        return body

    def _check_scalar_loads(self, body: Block) -> None:
        """Scalar loads are replicated, each partition reading the value
        itself: sound only where nothing the kernel runs writes the memory
        they read, so every read sees the same value."""
        for load in body.walk():
            if not isinstance(load, tile.LoadScalarOp):
                continue
            writer = next((u.operation for u in load.source.uses
                           if not isinstance(u.operation, tile.LoadOp | tile.LoadScalarOp)), None)
            if writer is not None:
                name = load.source.name_hint or "its memref"
                raise Declined(
                    f"the tile.load_scalar{_at(load)} reads {name}, which '{writer.name}'{_at(writer)} "
                    "writes: each warp group that needs a loaded scalar reads it itself, so the kernel "
                    "may not write the memory it reads (pass the values in a tensor the kernel only reads)"
                )
        for loop in body.walk():
            if not isinstance(loop, scf.ForOp):
                continue
            load = _loaded_scalar(loop.lb, loop.ub, loop.step)
            if load is not None:
                raise Declined(
                    f"the bounds of the scf.for{_at(loop)} depend on the tile.load_scalar{_at(load)}: a trip "
                    "count read from memory (a variable-length loop) is not supported yet; the protocol proof "
                    "derives every loop's trip count from the kernel's sizes and program ids"
                )

    def _ancestors(self, op: Operation) -> list[Operation]:
        out: list[Operation] = []
        node = op.parent_op()
        while node is not None and node is not self.kernel:
            out.append(node)
            node = node.parent_op()
        return out

    def _producer_load(self, value: SSAValue) -> tile.LoadOp | None:
        owner = value.owner
        return owner if isinstance(owner, tile.LoadOp) and owner in self.producer_loads else None

    def _find_carried(self, body: Block) -> None:
        """The iter_args that carry producer loads in the prefetch form:
        initialised with a load just before the loop (used by nothing else)
        and yielding a load of the loop body (likewise)."""
        for loop in self._walk_partitionable(body):
            if not isinstance(loop, scf.ForOp):
                continue
            yield_op = loop.body.block.last_op
            assert isinstance(yield_op, scf.YieldOp)
            for i, (init, nxt) in enumerate(zip(loop.iter_args, yield_op.operands, strict=True)):
                first, then = self._producer_load(init), self._producer_load(nxt)
                if first is None and then is None:
                    continue
                if (
                    first is None or then is None
                    or first.parent_block() is not loop.parent_block()
                    or then.parent_block() is not loop.body.block
                    or not init.has_one_use() or not nxt.has_one_use()
                ):
                    raise Declined(
                        f"scf.for{_at(loop)} carries a tile from the producer in iter_arg "
                        f"#{i}: a loaded tile may be carried only in the prefetch form (a "
                        "tile.load just before the loop as the initial value, a tile.load of "
                        "the loop body as the yielded value, each used by nothing else); a "
                        "tile that does not change can be used in the loop directly"
                    )
                self.carried.setdefault(loop, []).append(i)

    def _check_crossings(self) -> None:
        """Tiles from the producer (its loads, and the iteration arguments and
        results of carried loads) reach the consumers through arefs, which
        lend a slot for a while: beyond the prefetch form, a loop cannot carry
        them and an `scf.if` cannot yield them."""
        allowed: set[tuple[Operation, int]] = set()
        values = [ld.result for ld in self.producer_loads]
        for loop, indices in self.carried.items():
            yield_op = loop.body.block.last_op
            assert yield_op is not None
            for i in indices:
                allowed |= {(loop, _FOR_BOUNDS + i), (yield_op, i)}
                values += [loop.body.block.args[i + 1], loop.results[i]]
        for v in values:
            for use in v.uses:
                user = use.operation
                if (user, use.index) in allowed:
                    continue
                if isinstance(user, scf.ForOp | scf.YieldOp | scf.ConditionOp) or user.regions:
                    raise Declined(
                        f"a tile from the producer is carried by '{user.name}'{_at(user)} "
                        f"(operand #{use.index}): loaded tiles reach the consumers through "
                        "an aref slot, which a loop may carry only in the prefetch form and "
                        "a region op not at all (see docs/passes.md, Control flow)"
                    )

    def _seed(self, body: Block) -> None:
        self._work: list[Operation] = []
        for op in self._walk_partitionable(body):
            if op in self.producer_loads:
                self._add(op, {PRODUCER})
            elif isinstance(op, scf.ForOp | scf.YieldOp) or _replicable(op):
                continue
            elif not isinstance(op, func.ReturnOp):
                self._add(op, {CONSUMER})
        for loop in self.carried:  # the consumers take one put per iteration
            self._add(loop, {CONSUMER})
        while self._work:
            self._propagate(self._work.pop())

    def _walk_partitionable(self, block: Block):
        """Ops of the block, descending only into scf.for bodies (other region
        ops are partitioned as a whole)."""
        for op in block.ops:
            yield op
            if isinstance(op, scf.ForOp):
                yield from self._walk_partitionable(op.body.block)

    def _add(self, op: Operation, parts: set[str]) -> None:
        current = self.parts.setdefault(op, set())
        if parts <= current:
            return
        if (
            PRODUCER in parts
            and op not in self.producer_loads
            and not isinstance(op, scf.ForOp)
            and not _replicable(op)
        ):
            raise Declined(
                f"the producer would need the result of '{op.name}'{_at(op)}, "
                "which must stay in the consumer"
            )
        current |= parts
        self._work.append(op)
        parent = op.parent_op()
        if isinstance(parent, scf.ForOp):
            self._add(parent, parts)

    def _add_iter(self, loop: scf.ForOp, i: int, parts: set[str]) -> None:
        current = self.iter_parts.setdefault((loop, i), set())
        if parts <= current:
            return
        current |= parts
        self._add(loop, parts)
        self._demand(loop.iter_args[i], parts)
        yield_op = loop.body.block.last_op
        assert isinstance(yield_op, scf.YieldOp)
        self._demand(yield_op.operands[i], parts)

    def _demand(self, value: SSAValue, parts: set[str]) -> None:
        """Partitions `parts` need `value`."""
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            if isinstance(owner, scf.ForOp):
                self._add(owner, parts)
                if value.index > 0 and value.index - 1 not in self.carried.get(owner, ()):
                    self._add_iter(owner, value.index - 1, parts)
            return
        op = value.owner
        assert isinstance(op, Operation)
        if op in self.producer_loads:
            return  # a consumer needing a load's value is an aref crossing
        if isinstance(op, scf.ForOp):
            if value.index not in self.carried.get(op, ()):  # else an aref crossing
                self._add_iter(op, value.index, parts)
        else:
            self._add(op, parts)

    def _propagate(self, op: Operation) -> None:
        parts = self.parts[op]
        if isinstance(op, scf.ForOp):
            for v in (op.lb, op.ub, op.step):
                self._demand(v, parts)
            return
        for operand in op.operands:
            self._demand(operand, parts)
        for region in op.regions:  # an op partitioned as a whole
            for inner in region.walk():
                for operand in inner.operands:
                    if not op.is_ancestor(_owner_op(operand)):
                        self._demand(operand, parts)

    def _acquire(self, values: list[SSAValue], block: Block, otherwise: Operation) -> Acquire:
        """A get of `values` in `block`: before the first op that uses one,
        released after the last; with no user, got and released before
        `otherwise` (every put needs its get)."""
        users = [_ancestor_in(block, u.operation) for v in values for u in v.uses]
        if not users:
            return Acquire(values, otherwise, None)
        first = min(users, key=block.get_operation_index)
        last = max((_retired_at(u) for u in users), key=block.get_operation_index)
        return Acquire(values, first, last)

    def _carried_loads(self) -> set[Operation]:
        out: set[Operation] = set()
        for loop, indices in self.carried.items():
            yield_op = loop.body.block.last_op
            assert yield_op is not None
            for i in indices:
                out |= {_owner_op(loop.iter_args[i]), _owner_op(yield_op.operands[i])}
        return out

    def _group_crossings(self) -> None:
        carried = self._carried_loads()
        by_key: dict[tuple[Block, Operation], list[tile.LoadOp]] = {}
        for load in sorted(self.producer_loads - carried, key=_program_order):
            assert isinstance(load, tile.LoadOp)
            block = load.parent_block()
            assert block is not None
            users = [_ancestor_in(block, u.operation) for u in load.result.uses]
            first = min(users, key=block.get_operation_index)
            by_key.setdefault((block, first), []).append(load)
        for (block, first), loads in by_key.items():
            get = self._acquire([ld.result for ld in loads], block, first)
            self.groups.append(ArefGroup([loads], [get]))

    def _group_carried(self) -> None:
        """One aref per loop and first user in the body of its carried tiles."""
        for loop, indices in self.carried.items():
            body, outer = loop.body.block, loop.parent_block()
            assert outer is not None and loop.next_op is not None
            by_first: dict[Operation | None, list[int]] = {}
            for i in indices:
                users = [_ancestor_in(body, u.operation) for u in body.args[i + 1].uses]
                first = min(users, key=body.get_operation_index) if users else None
                by_first.setdefault(first, []).append(i)
            yield_op = body.last_op
            assert yield_op is not None
            for idx in by_first.values():
                inits = [_load(loop.iter_args[i]) for i in idx]
                nexts = [_load(yield_op.operands[i]) for i in idx]
                in_loop = self._acquire([body.args[i + 1] for i in idx], body, yield_op)
                after = self._acquire([loop.results[i] for i in idx], outer, loop.next_op)
                self.groups.append(ArefGroup([inits, nexts], [in_loop, after]))

    def in_partition(self, op: Operation, part: str) -> bool:
        return part in self.parts.get(op, set())


def _owner_op(value: SSAValue) -> Operation:
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op()
        assert owner is not None
        return owner
    assert isinstance(value.owner, Operation)
    return value.owner


def _load(value: SSAValue) -> tile.LoadOp:
    assert isinstance(value.owner, tile.LoadOp)
    return value.owner


def _program_order(op: Operation) -> tuple[int, ...]:
    path: list[int] = []
    node: Operation | None = op
    while node is not None and (block := node.parent_block()) is not None:
        path.append(block.get_operation_index(node))
        node = block.parent_op()
    return tuple(reversed(path))


def _retired_at(user: Operation) -> Operation:
    """Where a use of a slot ends: at the op itself, or for a `tile.dot_async`
    at the `tile.dot_wait` of its block that completes it (the product reads
    the slot until then)."""
    if isinstance(user, tile.DotAsyncOp):
        op = user.next_op
        while op is not None:
            if isinstance(op, tile.DotWaitOp) and user.results[0] in op.values:
                return op
            op = op.next_op
    return user


def _at(op: Operation) -> str:
    loc = location_of(op)
    return f" (at {loc})" if loc else ""


class PartitionBuilder:
    """Clones the kernel body into one partition's region."""

    def __init__(self, plan: Partitioning, part: str):
        self.plan = plan
        self.part = part
        self.gets_before: dict[Operation, list[tuple[ArefGroup, Acquire]]] = {}
        self.release_after: dict[Operation, list[ArefGroup]] = {}
        self.put_after: dict[Operation, list[tuple[ArefGroup, list[tile.LoadOp]]]] = {}
        for g in plan.groups:
            for get in g.gets:
                self.gets_before.setdefault(get.before, []).append((g, get))
                if get.release_after is not None:
                    self.release_after.setdefault(get.release_after, []).append(g)
            for loads in g.puts:
                last = max(loads, key=_program_order)
                self.put_after.setdefault(last, []).append((g, loads))

    def build(self, src: Block, vmap: dict[SSAValue, SSAValue]) -> Block:
        dst = Block()
        self._clone_ops(src, dst, vmap)
        return dst

    def _clone_ops(self, src: Block, dst: Block, vmap: dict[SSAValue, SSAValue]) -> None:
        for op in src.ops:
            if self.part == CONSUMER:
                for group, acquire in self.gets_before.get(op, ()):
                    self._get(group, acquire, dst, vmap)
                    dst.last_op.location = op.location  # type: ignore[union-attr]
            if isinstance(op, func.ReturnOp | scf.YieldOp):
                continue
            if not self.plan.in_partition(op, self.part):
                continue
            if isinstance(op, scf.ForOp):
                self._clone_for(op, dst, vmap)
            else:
                dst.add_op(op.clone(value_mapper=vmap))
            if self.part == PRODUCER:
                for group, loads in self.put_after.get(op, ()):
                    assert group.aref is not None
                    # Located at the group's last load, the get at its first use and the
                    # release at its last: protocol errors then name the program's lines.
                    dst.add_op(aref.PutOp(group.aref, [vmap[ld.result] for ld in loads]))
                    dst.last_op.location = loads[-1].location  # type: ignore[union-attr]
            if self.part == CONSUMER:
                for group in self.release_after.get(op, ()):
                    assert group.aref is not None
                    dst.add_op(aref.ConsumedOp(group.aref))
                    dst.last_op.location = op.location  # type: ignore[union-attr]

    def _get(self, group: ArefGroup, acquire: Acquire, dst: Block, vmap: dict[SSAValue, SSAValue]) -> None:
        assert group.aref is not None
        get = aref.GetOp(group.aref)
        dst.add_op(get)
        for old, v in zip(acquire.values, get.values, strict=True):
            vmap[old] = v
            v.name_hint = old.name_hint
        if acquire.release_after is None:  # nothing uses them: a put still needs its get
            dst.add_op(aref.ConsumedOp(group.aref))

    def _clone_for(self, loop: scf.ForOp, dst: Block, vmap: dict[SSAValue, SSAValue]) -> None:
        keep = [
            i for i in range(len(loop.iter_args))
            if self.part in self.plan.iter_parts.get((loop, i), set())
        ]
        old_body = loop.body.block
        body = Block(arg_types=[old_body.args[0].type, *(old_body.args[i + 1].type for i in keep)])
        vmap[old_body.args[0]] = body.args[0]
        body.args[0].name_hint = old_body.args[0].name_hint
        for new_arg, i in zip(body.args[1:], keep):
            vmap[old_body.args[i + 1]] = new_arg
            new_arg.name_hint = old_body.args[i + 1].name_hint
        self._clone_ops(old_body, body, vmap)
        old_yield = old_body.last_op
        assert isinstance(old_yield, scf.YieldOp)
        body.add_op(scf.YieldOp(*(vmap[old_yield.operands[i]] for i in keep)))
        new = scf.ForOp(vmap[loop.lb], vmap[loop.ub], vmap[loop.step],
                        [vmap[loop.iter_args[i]] for i in keep], body)
        dst.add_op(new)
        for new_res, i in zip(new.results, keep):
            vmap[loop.results[i]] = new_res
            new_res.name_hint = loop.results[i].name_hint


@dataclass(frozen=True)
class WarpSpecializePass(ModulePass):
    """Partitions tile kernels into a producer and consumer warp groups joined by arefs.

    The consumer partition has one warp group per 64 rows of the kernel's
    accumulators (`consumer_warp_groups`) unless `consumer_warps` is given
    (fewer warp groups then own more rows each: `group_rows_of_tile`);
    register budgets left out are derived (`register_budgets`)."""

    name = "tawa-warp-specialize"

    producer_warps: int = 4
    producer_regs: int | None = None
    """The producer's `setmaxnreg` budget; derived when left out."""
    consumer_warps: int | None = None
    """Warps of the consumer partition; 4 per 64 accumulator rows when left
    out.  Fewer split the rows evenly: 4 warps for a 128-row tile give one
    warp group that owns all 128 (`group_rows_of_tile`)."""
    consumer_regs: int | None = None
    """Each consumer warp group's budget; derived when left out."""
    strict: bool = False
    """Fail instead of leaving a kernel unchanged with a remark."""
    stream_loads: bool = True
    """In a kernel without dots, the tiles its loops load come from a TMA
    producer (`streams`); false: the consumers load them (no tensor map
    over them: `tawa-hopper-pipeline{epilogue=threads}`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if kernel.is_declaration:
                continue
            try:
                self._specialize(kernel)
            except Declined as why:
                msg = f"{self.name} left @{kernel.sym_name.data} unchanged: {why}"
                where = location_of(kernel) or "tawa"
                if self.strict:  # located like the remark (tawa-hopper-pipeline is strict)
                    raise TawaError(msg, where) from None
                sys.stderr.write(f"{where}: remark: {msg}\n")

    def partition_shape(self, kernel: func.FuncOp, producer: bool = True) -> tuple[int, int, int]:
        """(consumer warps, producer regs, consumer regs) for `kernel`; with
        no `producer` partition, the consumers' budget is the launch cap of
        their threads unless `consumer_regs` is given (producer regs: 0)."""
        warps = self.consumer_warps
        if warps is None:
            warps = consumer_warp_groups(kernel) * WARPS_PER_GROUP
        elif warps <= 0 or warps % WARPS_PER_GROUP:
            raise fail(kernel, f"{self.name}: consumer-warps={warps} is not a positive multiple of "
                               f"{WARPS_PER_GROUP} (whole warp groups)")
        elif (rows := tile_rows(kernel)) is not None:
            group_rows_of_tile(rows, warps // WARPS_PER_GROUP, kernel, self.name)
        else:
            blocked_group_rows(kernel, warps // WARPS_PER_GROUP, kernel, self.name)
        if not producer:
            return warps, 0, lone_budget(kernel, warps, self.consumer_regs)
        p, c = register_budgets(kernel, self.producer_warps, warps, self.producer_regs, self.consumer_regs)
        return warps, p, c

    def _specialize(self, kernel: func.FuncOp) -> None:
        plan = Partitioning(kernel)
        plan.analyze(self.stream_loads)
        # Nothing to stream: no producer warp group (it would only idle).
        producer = bool(plan.groups)
        consumer_warps, producer_regs, consumer_regs = self.partition_shape(kernel, producer)
        body = kernel.body.block
        ret = body.last_op
        assert isinstance(ret, func.ReturnOp)
        old_ops = [o for o in body.ops if o is not ret]

        creates = []
        for group in plan.groups:
            create = aref.CreateOp(aref.ArefType([ld.result.type for ld in group.loads], 1))
            group.aref = create.result
            names = [ld.result.name_hint for ld in group.loads]
            if all(names):
                create.result.name_hint = "ref_" + "_".join(n for n in names if n)
            creates.append(create)
        parts = (PRODUCER, CONSUMER) if producer else (CONSUMER,)
        regions = []
        for part in parts:
            vmap: dict[SSAValue, SSAValue] = {a: a for a in body.args}
            regions.append(Region(PartitionBuilder(plan, part).build(body, vmap)))
        ws = aref.WarpSpecializeOp(
            parts,
            [self.producer_warps, consumer_warps][-len(parts):],
            [producer_regs, consumer_regs][-len(parts):],
            regions,
        )
        if not has_dots(kernel):
            ws.attributes[BLOCKED_LAYOUTS] = UnitAttr()
        guard_loaded_offsets(ws, lambda v: _loaded_scalar(v) is not None)
        for new in (*creates, ws):
            body.insert_op_before(new, ret)
        for old in reversed(old_ops):
            Rewriter.erase_op(old, safe_erase=False)
