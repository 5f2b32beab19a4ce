"""`tawa-lower-tile`: tile computations of the partitions become Hopper ops.

Runs after `tawa-lower-aref`, on the consumer partitions only.  In a consumer partition of G warp groups, a
128-row (64·G) f32 accumulator tile becomes one `wgmma` fragment per warp
group: warp group c owns rows [64c, 64c + 64).

* `tile.zeros` of the accumulator → `nvgpu.frag_zeros`; loop-carried
  accumulators become fragments;
* `tile.dot` / `tile.dot_async` on tiles read from aref slots
  (`nvgpu.smem_tile`) → wgmma descriptors of the slots (the A descriptor
  starts at this warp group's 64 rows), `wgmma.fence`, one whole-tile
  `nvgpu.wgmma`, `commit_group`; a synchronous dot also waits (`wait_group 0`);
* `tile.dot_wait N` → `wgmma.wait_group N`;
* elementwise `arith` float math and `math.exp2` on accumulators (the other
  operand an accumulator or a `tile.splat` of an f32 scalar) →
  `nvgpu.frag_binary` / `nvgpu.frag_unary`: fused epilogues;
* row reductions of accumulators (`tile.reduce`, axis 1) → `nvgpu.frag_reduce`
  into `wgmma_row` fragments (one value per row), and
  `tile.broadcast(tile.expand_dims(row, 1))` → `nvgpu.frag_broadcast`: softmax;
* `tile.store` of an `arith.truncf` of an accumulator → `nvgpu.frag_store`
  (conversion, bounds masks and stores of this warp group's rows).

The partitions stay `aref.warp_specialize` regions; `tawa-materialize-
partitions` turns them into warp-group branches afterwards.  Anything this
lowering does not support yet is reported, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import Float32Type, IntegerAttr, ModuleOp, TensorType, UnitAttr, i1, i32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from tawa.dialects import aref, nvgpu, tile
from tawa.dialects.aref import PartitionRole
from tawa.target.hopper import WARPS_PER_GROUP
from tawa.transforms.masks import Materializer, all_true_condition, symbolic
from tawa.transforms.utils import const, fail, kernel_of

NAME = "tawa-lower-tile"
WG_ROWS = nvgpu.WGMMA_M


_FRAG_BINARY = {
    arith.AddfOp: nvgpu.FragBinaryKind.ADDF,
    arith.SubfOp: nvgpu.FragBinaryKind.SUBF,
    arith.MulfOp: nvgpu.FragBinaryKind.MULF,
    arith.DivfOp: nvgpu.FragBinaryKind.DIVF,
    arith.MaximumfOp: nvgpu.FragBinaryKind.MAXIMUMF,
    arith.MinimumfOp: nvgpu.FragBinaryKind.MINIMUMF,
}
_FRAG_UNARY = {math.Exp2Op: nvgpu.FragUnaryKind.EXP2, arith.NegfOp: nvgpu.FragUnaryKind.NEGF}


def _frag_type(t: TensorType, groups: int, op: Operation) -> nvgpu.FragmentType:
    shape = tuple(t.get_shape())
    if len(shape) == 1 and shape[0] == WG_ROWS * groups and isinstance(t.get_element_type(), Float32Type):
        return nvgpu.FragmentType([WG_ROWS], t.get_element_type(), nvgpu.WGMMA_ROW)
    if len(shape) != 2 or shape[0] != WG_ROWS * groups or not isinstance(t.get_element_type(), Float32Type):
        raise fail(
            op,
            f"tawa-lower-tile: a consumer of {groups} warp groups needs {WG_ROWS * groups}xN f32 "
            f"accumulators, got {t}",
        )
    return nvgpu.FragmentType([WG_ROWS, shape[1]], t.get_element_type(), nvgpu.WGMMA)


@dataclass
class ConsumerLowering:
    region: Region
    first_group: int
    groups: int

    def run(self) -> None:
        block = self.region.block
        at = InsertPoint.at_start(block)
        wg = nvgpu.WarpGroupIdOp()
        Rewriter.insert_op(wg, at)
        local = arith.SubiOp(wg.result, const(self.first_group, at))
        row0 = arith.MuliOp(local.result, const(WG_ROWS, at))
        Rewriter.insert_op([local, row0], at)
        row0.result.name_hint = "wg_row0"
        self.row0 = row0.result
        row0_i32 = arith.IndexCastOp(row0.result, i32)
        Rewriter.insert_op(row0_i32, at)
        self.row0_i32 = row0_i32.result
        self.zero = const(0, at)
        for op in [o for o in self.region.walk() if isinstance(o, tile.ZerosOp)]:
            t = op.result.type
            assert isinstance(t, TensorType)
            if isinstance(t.get_element_type(), Float32Type):
                new = nvgpu.FragmentZerosOp.build(result_types=[_frag_type(t, self.groups, op)])
                Rewriter.replace_op(op, new)
        # Splats that start loop-carried values (a running max) become fragments.
        for op in [o for o in self.region.walk() if isinstance(o, tile.SplatOp)]:
            if any(isinstance(u.operation, scf.ForOp) for u in op.result.uses):
                t = op.result.type
                assert isinstance(t, TensorType)
                new = nvgpu.FragmentSplatOp.build(
                    operands=[op.value], result_types=[_frag_type(t, self.groups, op)]
                )
                new.result.name_hint = op.result.name_hint
                Rewriter.replace_op(op, new)
        self._retype_loops()
        # One walk in program order: each op sees its operands already lowered.
        for op in list(self.region.walk()):
            if op.parent is None:
                continue  # erased as part of an earlier rewrite
            if isinstance(op, tile.DotOp | tile.DotAsyncOp):
                self._dot(op)
            elif isinstance(op, tile.DotWaitOp):
                wait = nvgpu.WgmmaWaitGroupOp(op.pending.value.data, list(op.values))
                for old, new in zip(op.results_, wait.results_):
                    new.name_hint = old.name_hint
                Rewriter.replace_op(op, wait)
            elif type(op) in _FRAG_BINARY or type(op) in _FRAG_UNARY:
                self._elementwise(op)
            elif isinstance(op, tile.ReduceOp):
                self._reduce(op)
            elif isinstance(op, tile.BroadcastOp):
                self._broadcast(op)
            elif isinstance(op, tile.SelectOp):
                self._select(op)
            elif isinstance(op, tile.StoreOp):
                self._store(op)
        _erase_dead_tile_math(self.region)
        for op in [o for o in self.region.walk() if isinstance(o, tile.SplatOp)]:
            if not op.result.uses:
                Rewriter.erase_op(op)
        for op in [o for o in self.region.walk() if isinstance(o, nvgpu.SmemTileOp)]:
            if not op.result.uses:
                Rewriter.erase_op(op)

    def _retype_loops(self) -> None:
        changed = True
        while changed:
            changed = False
            for loop in [o for o in self.region.walk() if isinstance(o, scf.ForOp)]:
                for i, init in enumerate(loop.iter_args):
                    arg = loop.body.block.args[i + 1]
                    if isinstance(init.type, nvgpu.FragmentType) and arg.type != init.type:
                        Rewriter.replace_value_with_new_type(arg, init.type)
                        Rewriter.replace_value_with_new_type(loop.results[i], init.type)
                        changed = True

    def _dot(self, op: tile.DotOp | tile.DotAsyncOp) -> None:
        """A dot on an aref slot (rhs) becomes one whole-tile wgmma.  Its lhs
        is another slot (this warp group's 64 rows of it), or `arith.truncf`
        of an accumulator, which then stays in registers as the wgmma's A
        operand (`nvgpu.frag_convert`, no trip through shared memory)."""
        lhs, rhs = op.lhs.owner, op.rhs.owner
        if not isinstance(rhs, nvgpu.SmemTileOp):
            raise fail(op, f"tawa-lower-tile: {op.name} rhs must come from an aref slot (shared memory) for now")
        if not isinstance(op.acc.type, nvgpu.FragmentType):
            raise fail(op, f"tawa-lower-tile: {op.name} accumulator must be a zeros-initialised (loop-carried) accumulator")
        ops: list[Operation] = []
        if isinstance(lhs, arith.TruncFOp) and isinstance(src := lhs.input.type, nvgpu.FragmentType):
            lt = lhs.result.type
            assert isinstance(lt, TensorType)
            a_t = src.with_element_type(lt.get_element_type())
            a = nvgpu.FragmentConvertOp.build(operands=[lhs.input], result_types=[a_t])
        elif isinstance(lhs, nvgpu.SmemTileOp):
            st = lhs.source.type
            assert isinstance(st, nvgpu.SmemType)
            a_t = nvgpu.WgmmaDescriptorType([WG_ROWS, st.get_shape()[2]], st.element_type, st.swizzle.data)
            a = nvgpu.WgmmaDescriptorOp.build(operands=[lhs.source, lhs.stage, self.row0], result_types=[a_t])
        else:
            raise fail(
                op,
                f"tawa-lower-tile: {op.name} lhs must come from an aref slot or be a converted accumulator, for now",
            )
        rt = rhs.source.type
        assert isinstance(rt, nvgpu.SmemType)
        b = nvgpu.WgmmaDescriptorOp.build(
            operands=[rhs.source, rhs.stage, self.zero],
            result_types=[nvgpu.WgmmaDescriptorType(rt.get_shape()[1:], rt.element_type, rt.swizzle.data)],
        )
        true = arith.ConstantOp(IntegerAttr(1, i1))
        mma = nvgpu.WgmmaOp.build(
            operands=[a.results[0], b.result, op.acc, true.result],
            result_types=[op.acc.type],
            properties={"rhs_transposed": UnitAttr()} if op.rhs_transposed is not None else {},
        )
        ops += [a, b, true, nvgpu.WgmmaFenceOp(), mma, nvgpu.WgmmaCommitGroupOp()]
        result = mma.result
        if isinstance(op, tile.DotOp):
            wait = nvgpu.WgmmaWaitGroupOp(0, [mma.result])
            ops.append(wait)
            result = wait.results_[0]
        Rewriter.insert_op(ops, InsertPoint.before(op))
        result.name_hint = op.result.name_hint
        op.result.replace_all_uses_with(result)
        Rewriter.erase_op(op)
        if isinstance(lhs, arith.TruncFOp) and not lhs.result.uses:
            Rewriter.erase_op(lhs)

    def _elementwise(self, op: Operation) -> None:
        """Elementwise math on accumulator fragments (operands: fragments, or
        splats of an f32 scalar) becomes per-register math."""
        frags = [v for v in op.operands if isinstance(v.type, nvgpu.FragmentType)]
        if not frags:
            return  # not on an accumulator: reported later if it stays on tensors
        if type(op) in _FRAG_UNARY:
            new: Operation = nvgpu.FragmentUnaryOp.build(
                operands=[op.operands[0]],
                properties={"kind": nvgpu.FragUnaryKindAttr(_FRAG_UNARY[type(op)])},
                result_types=[op.operands[0].type],
            )
        else:
            lhs, rhs = op.operands
            kind = _FRAG_BINARY[type(op)]
            if not isinstance(lhs.type, nvgpu.FragmentType):
                if kind in (nvgpu.FragBinaryKind.SUBF, nvgpu.FragBinaryKind.DIVF):
                    raise fail(op, f"tawa-lower-tile: '{op.name}' with a splat on the left is not supported yet")
                lhs, rhs = rhs, lhs
            rhs = self._scalar_or_frag(rhs, op)
            new = nvgpu.FragmentBinaryOp(kind, lhs, rhs)
        new.results[0].name_hint = op.results[0].name_hint
        Rewriter.replace_op(op, new)

    def _reduce(self, op: tile.ReduceOp) -> None:
        t = op.input.type
        if not isinstance(t, nvgpu.FragmentType) or op.axis.value.data != 1:
            return  # not a row reduction of an accumulator: reported later
        new = nvgpu.FragmentReduceOp.build(
            operands=[op.input],
            properties={"kind": op.kind},
            result_types=[nvgpu.FragmentType([WG_ROWS], t.element_type, t.tiled_layout.reduce(t.get_shape(), 1).layout)],
        )
        new.result.name_hint = op.result.name_hint
        Rewriter.replace_op(op, new)

    def _broadcast(self, op: tile.BroadcastOp) -> None:
        """`broadcast(expand_dims(row, 1))` of a row fragment: per-column copies."""
        expand = op.input.owner
        if not isinstance(expand, tile.ExpandDimsOp) or expand.axis.value.data != 1:
            return
        row = expand.input
        rt = op.result.type
        if not isinstance(row.type, nvgpu.FragmentType) or not isinstance(rt, TensorType):
            return
        new = nvgpu.FragmentBroadcastOp.build(
            operands=[row], result_types=[_frag_type(rt, self.groups, op)]
        )
        new.result.name_hint = op.result.name_hint
        Rewriter.replace_op(op, new)
        if not expand.result.uses:
            Rewriter.erase_op(expand)

    def _select(self, op: tile.SelectOp) -> None:
        """`select(mask, acc, other)`: the mask, built from index tiles, is
        computed per register (see tawa.transforms.masks)."""
        on_true = op.true_value
        t = on_true.type
        if not isinstance(t, nvgpu.FragmentType):
            return  # not on an accumulator: reported later
        expr = symbolic(op.mask)
        if expr is None:
            raise fail(op, "tawa-lower-tile: masks must be built from tile.iota, splats, integer math and tile.cmpi")
        at = InsertPoint.before(op)
        on_false = self._scalar_or_frag(op.false_value, op)

        def emit_at(point: InsertPoint) -> Callable[[Operation], SSAValue]:
            def emit(new: Operation) -> SSAValue:
                Rewriter.insert_op(new, point)
                return new.results[0]

            return emit

        # Where the mask holds for the whole fragment (blocks inside the
        # sequence, below the causal diagonal) it is skipped at run time.
        row_last = arith.AddiOp(self.row0_i32, const(WG_ROWS - 1, at, i32))
        Rewriter.insert_op(row_last, at)
        cols = t.get_shape()[1]
        fast = all_true_condition(expr, (self.row0_i32, row_last.result), (0, cols - 1), emit_at(at))
        masked = Block()
        try:
            mask = Materializer(cols, self.row0_i32, emit_at(InsertPoint.at_end(masked)))(expr)
        except ValueError as err:
            raise fail(op, f"tawa-lower-tile: {err}") from None
        select = nvgpu.FragmentSelectOp.build(operands=[mask, on_true, on_false], result_types=[t])
        if fast is None:
            for o in list(masked.ops):
                o.detach()
                Rewriter.insert_op(o, at)
            select.result.name_hint = op.result.name_hint
            Rewriter.replace_op(op, select)
            return
        masked.add_ops([select, scf.YieldOp(select.result)])
        whole = Block([scf.YieldOp(on_true)])
        branch = scf.IfOp(fast, [t], Region(whole), Region(masked))
        branch.results[0].name_hint = op.result.name_hint
        Rewriter.replace_op(op, branch)

    def _scalar_or_frag(self, value: SSAValue, user: Operation) -> SSAValue:
        if isinstance(value.type, nvgpu.FragmentType):
            return value
        splat = value.owner
        if isinstance(splat, tile.SplatOp) and isinstance(splat.value.type, Float32Type):
            return splat.value
        raise fail(
            user,
            f"tawa-lower-tile: '{user.name}' on an accumulator needs another accumulator or a "
            "tile.splat of an f32 scalar",
        )

    def _store(self, op: tile.StoreOp) -> None:
        conv = op.value.owner
        if not isinstance(conv, arith.TruncFOp) or not isinstance(conv.input.type, nvgpu.FragmentType):
            raise fail(op, "tawa-lower-tile: only stores of a converted accumulator (arith.truncf) are supported for now")
        value_t = op.value.type
        assert isinstance(value_t, TensorType)
        if value_t.get_num_dims() != 2:
            raise fail(op, "tawa-lower-tile: only 2-D accumulator tiles can be stored for now")
        at = InsertPoint.before(op)
        offsets = list(op.offsets)
        row = arith.AddiOp(offsets[-2], self.row0)  # this warp group's rows
        Rewriter.insert_op(row, at)
        offsets[-2] = row.result
        Rewriter.insert_op(nvgpu.FragmentStoreOp.build(operands=[conv.input, op.dest, offsets]), at)
        Rewriter.erase_op(op)
        if not conv.result.uses:
            Rewriter.erase_op(conv)


def _erase_dead_tile_math(region: Region) -> None:
    """Drops index and mask tiles whose uses were all lowered."""
    changed = True
    while changed:
        changed = False
        for op in list(region.walk()):
            on_tiles = any(isinstance(r.type, TensorType) for r in op.results)
            if on_tiles and not any(r.uses for r in op.results) and is_side_effect_free(op):
                Rewriter.erase_op(op)
                changed = True


@dataclass(frozen=True)
class LowerTilePass(ModulePass):
    """Lowers the tile compute of consumer partitions to wgmma and register fragments."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel_of(ws, NAME)
            if any(isinstance(o, aref.GetOp | aref.PutOp) for o in ws.walk()):
                raise fail(ws, f"{NAME}: run tawa-lower-aref first")
            start = 0
            for role, warps, _, region in ws.partition_specs():
                if role == PartitionRole.CONSUMER:
                    ConsumerLowering(region, start, warps // WARPS_PER_GROUP).run()
                start += warps // WARPS_PER_GROUP
        # What materialize-partitions lowers (the partitions, program ids)
        # may remain; any other tile or aref op, or tensor, is not supported.
        left_for_later = (aref.WarpSpecializeOp, tile.ProgramIdOp, tile.NumProgramsOp)
        for o in op.walk():
            if isinstance(o, left_for_later):
                continue
            on_tiles = any(isinstance(v.type, TensorType) for v in (*o.operands, *o.results))
            if o.dialect_name() in ("tile", "aref") or on_tiles:
                raise fail(o, f"{NAME}: '{o.name}' is not supported by the Hopper lowering yet")
