"""`tawa-warp-specialize`: split a tile kernel into producer and consumer warp groups.

Task-aware partitioning after Tawa (arXiv 2510.14719) and Triton's NVWS:

* every `tile.load` whose value reaches a `tile.dot` is a *producer* op (it
  will become a TMA load issued by one producer thread);
* every other op that touches tiles or memory (dots, elementwise math,
  reductions, stores, remaining loads) is a *consumer* op;
* scalar, side-effect-free ops (index arithmetic, constants, program ids) and
  the `scf.for` skeletons are replicated into every partition that needs them:
  a loop goes where its body's ops go, and an op goes wherever its results are
  needed (demand flows backwards through operands, loop bounds, iter_args and
  yields);
* each group of producer loads that feeds the same consumer op travels
  through one aref: `aref.put` in the producer after the loads, `aref.get` in
  the consumer right before the first op that uses the values,
  `aref.consumed` after the last one.

Arefs are created with depth 1; `tawa-pipeline` deepens them.  Where the pass
cannot apply it leaves the kernel unchanged and prints one `remark:` line on
stderr saying why (with `strict=true` it fails instead).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import PassFailedException

from tawa.diagnostics import TawaError, location_of
from tawa.dialects import aref, tile
from tawa.dialects.aref import PartitionRole

PRODUCER, CONSUMER = PartitionRole.PRODUCER, PartitionRole.CONSUMER
_DOTS = (tile.DotOp, tile.DotAsyncOp)


class Declined(Exception):
    """The kernel cannot be specialized; the message says why."""


def _is_tensor(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType)


def _replicable(op: Operation) -> bool:
    """Scalar side-effect-free ops: cheap to recompute in every partition."""
    return (
        not op.regions
        and is_side_effect_free(op)
        and not any(_is_tensor(v) for v in (*op.operands, *op.results))
    )


def _ancestor_in(block: Block, op: Operation) -> Operation:
    anc = block.find_ancestor_op_in_block(op)
    assert anc is not None
    return anc


def _reaches_dot(value: SSAValue, seen: set[SSAValue] | None = None) -> bool:
    """Whether `value` flows (through ops and loop-carried values) into a dot."""
    seen = set() if seen is None else seen
    if value in seen:
        return False
    seen.add(value)
    for use in value.uses:
        user = use.operation
        if isinstance(user, _DOTS) and use.index < 2:
            return True
        if isinstance(user, scf.YieldOp) and isinstance(loop := user.parent_op(), scf.ForOp):
            nexts = [loop.results[use.index], loop.body.block.args[use.index + 1]]
        else:
            nexts = list(user.results)
        if any(_reaches_dot(n, seen) for n in nexts):
            return True
    return False


@dataclass
class ArefGroup:
    """Producer loads that travel together through one aref."""

    loads: list[tile.LoadOp]
    first_user: Operation
    """The first consumer op (in the loads' block) that uses the values."""
    release_after: Operation
    """The last consumer op (in the loads' block) that uses the values."""
    aref: SSAValue | None = None


@dataclass
class Partitioning:
    """Which partitions every op of a kernel belongs to."""

    kernel: func.FuncOp
    parts: dict[Operation, set[str]] = field(default_factory=dict)
    iter_parts: dict[tuple[Operation, int], set[str]] = field(default_factory=dict)
    producer_loads: set[Operation] = field(default_factory=set)
    groups: list[ArefGroup] = field(default_factory=list)

    # ------------------------------------------------------------------ analysis

    def analyze(self) -> None:
        body = self._check_kernel_shape()
        self.producer_loads = {
            op for op in body.walk() if isinstance(op, tile.LoadOp) and _reaches_dot(op.result)
        }
        if not self.producer_loads:
            raise Declined("no tile.load feeds a tile.dot")
        for load in self.producer_loads:
            for anc in self._ancestors(load):
                if not isinstance(anc, scf.ForOp):
                    raise Declined(
                        f"a tile.load feeding a dot is nested in '{anc.name}' "
                        "(only scf.for loops are supported)"
                    )
        self._seed(body)
        self._group_crossings()

    def _check_kernel_shape(self) -> Block:
        if self.kernel.body.blocks.first is None or len(self.kernel.body.blocks) != 1:
            raise Declined("the kernel body must be a single block")
        if self.kernel.function_type.outputs.data:
            raise Declined("the kernel returns values (kernels write their outputs)")
        body = self.kernel.body.block
        if any(isinstance(op, aref.WarpSpecializeOp) for op in body.walk()):
            raise Declined("the kernel is already warp-specialized")
        return body

    def _ancestors(self, op: Operation) -> list[Operation]:
        out: list[Operation] = []
        node = op.parent_op()
        while node is not None and node is not self.kernel:
            out.append(node)
            node = node.parent_op()
        return out

    def _seed(self, body: Block) -> None:
        self._work: list[Operation] = []
        for op in self._walk_partitionable(body):
            if op in self.producer_loads:
                self._add(op, {PRODUCER})
            elif isinstance(op, scf.ForOp | scf.YieldOp) or _replicable(op):
                continue
            elif not isinstance(op, func.ReturnOp):
                self._add(op, {CONSUMER})
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
                if value.index > 0:
                    self._add_iter(owner, value.index - 1, parts)
            return
        op = value.owner
        assert isinstance(op, Operation)
        if op in self.producer_loads:
            return  # a consumer needing a load's value is an aref crossing
        if isinstance(op, scf.ForOp):
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

    def _group_crossings(self) -> None:
        by_key: dict[tuple[Block, Operation], list[tile.LoadOp]] = {}
        for load in sorted(self.producer_loads, key=_program_order):
            assert isinstance(load, tile.LoadOp)
            block = load.parent_block()
            assert block is not None
            users = [_ancestor_in(block, u.operation) for u in load.result.uses]
            first = min(users, key=lambda o: block.get_operation_index(o))
            by_key.setdefault((block, first), []).append(load)
        for (block, first), loads in by_key.items():
            users = [
                _ancestor_in(block, u.operation) for ld in loads for u in ld.result.uses
            ]
            last = max(users, key=lambda o: block.get_operation_index(o))
            self.groups.append(ArefGroup(loads, first, last))

    def in_partition(self, op: Operation, part: str) -> bool:
        return part in self.parts.get(op, set())


def _owner_op(value: SSAValue) -> Operation:
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op()
        assert owner is not None
        return owner
    assert isinstance(value.owner, Operation)
    return value.owner


def _program_order(op: Operation) -> tuple[int, ...]:
    path: list[int] = []
    node: Operation | None = op
    while node is not None and (block := node.parent_block()) is not None:
        path.append(block.get_operation_index(node))
        node = block.parent_op()
    return tuple(reversed(path))


def _at(op: Operation) -> str:
    loc = location_of(op)
    return f" (at {loc})" if loc else ""


class PartitionBuilder:
    """Clones the kernel body into one partition's region."""

    def __init__(self, plan: Partitioning, part: str):
        self.plan = plan
        self.part = part
        self.acquire_before: dict[Operation, list[ArefGroup]] = {}
        for g in plan.groups:
            self.acquire_before.setdefault(g.first_user, []).append(g)
        self.last_load = {g.loads[-1]: g for g in plan.groups}
        self.release_after: dict[Operation, list[ArefGroup]] = {}
        for g in plan.groups:
            self.release_after.setdefault(g.release_after, []).append(g)

    def build(self, src: Block, vmap: dict[SSAValue, SSAValue]) -> Block:
        dst = Block()
        self._clone_ops(src, dst, vmap)
        return dst

    def _clone_ops(self, src: Block, dst: Block, vmap: dict[SSAValue, SSAValue]) -> None:
        for op in src.ops:
            if isinstance(op, func.ReturnOp | scf.YieldOp):
                continue
            for group in self.acquire_before.get(op, ()) if self.part == CONSUMER else ():
                assert group.aref is not None
                get = aref.GetOp(group.aref)
                dst.add_op(get)
                for ld, v in zip(group.loads, get.values, strict=True):
                    vmap[ld.result] = v
                    v.name_hint = ld.result.name_hint
            if not self.plan.in_partition(op, self.part):
                continue
            if isinstance(op, scf.ForOp):
                self._clone_for(op, dst, vmap)
            else:
                dst.add_op(op.clone(value_mapper=vmap))
            if self.part == PRODUCER and op in self.last_load:
                group = self.last_load[op]
                assert group.aref is not None
                dst.add_op(aref.PutOp(group.aref, [vmap[ld.result] for ld in group.loads]))
            if self.part == CONSUMER:
                for group in self.release_after.get(op, ()):
                    assert group.aref is not None
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
    """Partitions tile kernels into a producer and consumer warp groups joined by arefs."""

    name = "tawa-warp-specialize"

    producer_warps: int = 4
    producer_regs: int = 40
    consumer_warps: int = 8
    consumer_regs: int = 232
    strict: bool = False
    """Fail instead of leaving a kernel unchanged with a remark."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        budget = 32 * (self.producer_warps * self.producer_regs + self.consumer_warps * self.consumer_regs)
        if budget > aref.REGISTER_FILE_SIZE:
            raise PassFailedException(
                f"{self.name}: register budgets oversubscribe the register file: "
                f"{budget} > {aref.REGISTER_FILE_SIZE}"
            )
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

    def _specialize(self, kernel: func.FuncOp) -> None:
        plan = Partitioning(kernel)
        plan.analyze()
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
        regions = []
        for part in (PRODUCER, CONSUMER):
            vmap: dict[SSAValue, SSAValue] = {a: a for a in body.args}
            regions.append(Region(PartitionBuilder(plan, part).build(body, vmap)))
        ws = aref.WarpSpecializeOp(
            [PRODUCER, CONSUMER],
            [self.producer_warps, self.consumer_warps],
            [self.producer_regs, self.consumer_regs],
            regions,
        )
        for new in (*creates, ws):
            body.insert_op_before(new, ret)
        for old in reversed(old_ops):
            Rewriter.erase_op(old, safe_erase=False)
