"""Rewrite patterns: the tile compute of a consumer partition → wgmma and fragments.

One `RewritePattern` per op family, applied by `tawa-lower-tile` with xDSL's
`PatternRewriteWalker` (to a fixpoint) on each consumer partition:

| pattern | from | to |
|---|---|---|
| `LowerAccumulatorInit` | f32 `tile.zeros`; `tile.splat` that starts a loop-carried value or is yielded | `frag_zeros`, `frag_splat` |
| `RetypeLoopCarried` | `scf.for` whose init became a fragment | the iter_arg and result retyped (the type converter of loop-carried values) |
| `RetypeIfResults` | `scf.if` whose branches both yield a fragment of one type | the result retyped |
| `LowerDot` | `tile.dot` / `tile.dot_async` on aref slots | descriptors, fence, whole-tile `wgmma`, commit (a sync dot also waits); an lhs or rhs of `nvgpu.staged_operand` first written to its buffer |
| `LowerDotWait` | `tile.dot_wait N` | `wgmma_wait_group N` |
| `LowerElementwise` | f32 `arith` / `math` (exp2, tanh, log, log2, sqrt, rsqrt, absf) on fragments | `frag_binary` / `frag_unary` (log: log2 · ln 2; 1.0 / x: `rcp`) |
| `LowerRowReduce` | `tile.reduce` along the columns | `frag_reduce` into the row layout |
| `LowerConsumerLoad` | `tile.load` left to the consumers (it feeds no dot) | `frag_load` of this warp group's share, in the layout its use gives |
| `LowerSlotRead` | an aref slot used by anything but a dot (math on a delivered tile) | `frag_load_shared` of this warp group's rows |
| `LowerBroadcast` | `tile.broadcast(tile.expand_dims(vector, axis))` | `frag_broadcast` |
| `FoldSplatMath` | f32 `arith` math whose tile operands are all `tile.splat`s (`tl.full(...) * s`) | the scalar math, splat |
| `LowerCmpF` | `tile.cmpf` of a fragment with a fragment or a splat | `frag_cmpf`, a mask of data |
| `LowerMaskedSelect` | `tile.select(mask, acc, other)` | per-register masks (`masks.py`), skipped where they hold everywhere; on a mask of data one `frag_select` |
| `LowerAtomicAdd` | `tile.atomic_add(acc)` of a 2-D f32 fragment | `frag_atomic_add` of this warp group's rows, as `LowerStore` stores them; copies of an element (a replicated layout) refused |
| `LowerCounterArrive` | `tile.counter_arrive` | `nvgpu.counter_arrive` by the partition's threads together, its first thread the leader, at the counter's byte address |
| `LowerStore` | `tile.store(acc)`, `tile.store(arith.truncf(acc))`; the same as `nvgpu.staged_store`; `tile.store(tile.trans(arith.truncf(acc)))` | `frag_store` of this warp group's rows; for a staged store the TMA-store epilogue; a transposed 16-bit tile `frag_transpose` (movmatrix) then `frag_store` at this warp group's columns |

A pattern fires only once the values it needs are fragments, so lowering
follows the data whatever order the walker visits ops in; an op that never
becomes ready stays, and `diagnose` reports it with its location after the
walk.  Fragment types come from the layout algebra's named layouts
(`nvgpu.WGMMA` for a warp group's 64xN accumulator, `nvgpu.WGMMA_ROW` for one
value per row, `nvgpu.WGMMA_COL` for one value per column).  The facts of the partition the patterns need (its number of
warp groups, this warp group's first row) are one `ConsumerInfo`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    TensorType,
    UnitAttr,
    i1,
    i32,
)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.diagnostics import TawaError
from tawa.dialects import nvgpu, tile
from tawa.dialects.nvgpu.atomics import replicated
from tawa.dialects.nvgpu.fragments import BLOCKED_FLOATS, LOADABLE
from tawa.target.hopper import THREADS_PER_GROUP, WGMMA_M
from tawa.transforms.lower.blocked_layouts import BlockedTile
from tawa.transforms.lower.masks import Materializer, all_true_condition, symbolic
from tawa.transforms.lower.operand_staging import emit_operand_store, emit_rhs_store, transposed_lhs
from tawa.transforms.lower.partitions import emit_group_index
from tawa.transforms.lower.tma_epilogue import EPILOGUE_BARRIER, emit_tma_store
from tawa.transforms.utils import const, fail

NAME = "tawa-lower-tile"

_FRAG_BINARY = {
    arith.AddfOp: nvgpu.FragBinaryKind.ADDF,
    arith.SubfOp: nvgpu.FragBinaryKind.SUBF,
    arith.MulfOp: nvgpu.FragBinaryKind.MULF,
    arith.DivfOp: nvgpu.FragBinaryKind.DIVF,
    arith.MaximumfOp: nvgpu.FragBinaryKind.MAXIMUMF,
    arith.MinimumfOp: nvgpu.FragBinaryKind.MINIMUMF,
}
_FRAG_UNARY = {
    math.Exp2Op: nvgpu.FragUnaryKind.EXP2,
    arith.NegfOp: nvgpu.FragUnaryKind.NEGF,
    math.TanhOp: nvgpu.FragUnaryKind.TANH,
    math.Log2Op: nvgpu.FragUnaryKind.LOG2,
    math.SqrtOp: nvgpu.FragUnaryKind.SQRT,
    math.RsqrtOp: nvgpu.FragUnaryKind.RSQRT,
    math.AbsFOp: nvgpu.FragUnaryKind.ABSF,
}
LN2 = 0.6931471805599453
"""ln 2: math.log(x) is lowered as log2(x) · ln 2 (the GPU's logarithm is base 2)."""


def _is_frag(v: SSAValue) -> bool:
    return isinstance(v.type, nvgpu.FragmentType)


def _check_f32_math(op: Operation) -> None:
    """Refuses, at `op`, math or a reduction on a fragment of 16-bit or
    8-bit values: registers compute tile math in f32 (`nvgpu.frag_unary`,
    `frag_binary`, `frag_reduce`), so the program converts first."""
    for v in op.operands:
        if _is_frag(v) and not isinstance(et := v.type.element_type, Float32Type):
            raise fail(op, f"{NAME}: '{op.name}' on a {et} tile is not supported: tile math runs in f32 "
                           "(convert the tile first: arith.extf, .to(tl.f32) in Python, and back to store it)")


@dataclass(frozen=True)
class ConsumerInfo:
    """What the patterns know about the consumer partition they lower."""

    groups: int
    """Warp groups of the partition: a tile of `rows`·groups rows."""
    row0: SSAValue
    """Index of this warp group's first row in the tile (index and i32)."""
    row0_i32: SSAValue
    zero: SSAValue
    first_group: int = 0
    """The CTA's warp group that is the partition's first."""
    group: SSAValue | None = None
    """This warp group's index in the partition."""
    rows: int = WGMMA_M
    """Rows of the tile each warp group owns, a multiple of 64: its
    fragments are `rows`xN (one wgmma per 64-row block of them)."""
    tiles: Mapping[SSAValue, BlockedTile] | None = None
    """A partition whose tiles never meet a wgmma (a kernel without dots):
    each tile value's fragment, in a blocked layout
    (`tawa.transforms.lower.blocked_layouts`).  None: the `wgmma` family."""
    scratch: SSAValue | None = None
    """The shared buffer of reductions whose warps split the reduced axis
    (`nvgpu.frag_reduce_warps`), when the partition has any."""
    barrier: int = 0
    """The named barrier of those reductions."""

    def group_index(self) -> SSAValue:
        assert self.group is not None
        return self.group

    @staticmethod
    def at_start_of(region: Region, first_group: int, groups: int, rows: int = WGMMA_M) -> ConsumerInfo:
        """Emits this warp group's index in the partition, g = warp group id
        − first group of the partition (`tawa.transforms.lower.partitions`),
        and its first row, `rows` · g, at the top of the partition."""
        at = InsertPoint.at_start(region.block)
        local = emit_group_index(first_group, at)
        row0 = arith.MuliOp(local, const(rows, at))
        row0.result.name_hint = "wg_row0"
        row0_i32 = arith.IndexCastOp(row0.result, i32)
        Rewriter.insert_op([row0, row0_i32], at)
        return ConsumerInfo(groups, row0.result, row0_i32.result, const(0, at), first_group, group=local, rows=rows)

    @staticmethod
    def blocked_at_start_of(region: Region, first_group: int, tiles: Mapping[SSAValue, BlockedTile],
                            scratch: SSAValue | None, barrier: int) -> ConsumerInfo:
        """A partition of one warp group whose tiles take blocked layouts:
        it holds every row of its tiles (row 0 first)."""
        at = InsertPoint.at_start(region.block)
        zero = const(0, at)
        return ConsumerInfo(1, zero, const(0, at, i32), zero, first_group, tiles=tiles, scratch=scratch,
                            barrier=barrier)

    def frag_type(self, t: TensorType, op: Operation, axis: int = 1, value: SSAValue | None = None) -> nvgpu.FragmentType:
        """This warp group's share of a `rows`·groups-row f32 tile: a
        `rows`xN accumulator, or a vector that is broadcast along `axis` of
        one — one value per row (axis 1) or per column (axis 0).  In a
        partition of blocked layouts: this warp group's share of `value`,
        in its planned layout."""
        shape, et = tuple(t.get_shape()), t.get_element_type()
        if self.tiles is not None:
            planned = self.tiles.get(value) if value is not None else None
            if planned is None and len(shape) > 2:
                raise fail(op, f"{NAME}: a {t} tile has no register layout: the tiles of a kernel without dots "
                               "are 2-D (rows and columns), with 1-D vectors reduced from them or broadcast "
                               "against them; index the leading dimensions with program ids or a loop instead")
            if planned is None:
                raise fail(op, f"{NAME}: a {t} tile has no register layout: a 1-D tile of a kernel without dots "
                               "must be reduced from a 2-D tile or broadcast against one (tile.expand_dims + "
                               "tile.broadcast), directly or through elementwise math and loops")
            return nvgpu.FragmentType(planned.shape, et, planned.layout)
        rows = self.rows * self.groups
        if len(shape) == 1 and axis == 0 and isinstance(et, Float32Type):
            return nvgpu.FragmentType(shape, et, nvgpu.WGMMA.reduced_layout((self.rows, shape[0]), 0))
        if len(shape) == 1 and shape[0] == rows and isinstance(et, Float32Type):
            return nvgpu.FragmentType([self.rows], et, nvgpu.WGMMA_ROW)
        if len(shape) != 2 or shape[0] != rows or not isinstance(et, Float32Type):
            raise fail(
                op,
                f"{NAME}: a consumer of {self.groups} warp groups of {self.rows} rows needs {rows}xN f32 "
                f"accumulators, got {t}",
            )
        return nvgpu.FragmentType([self.rows, shape[1]], et, nvgpu.WGMMA)


@dataclass
class LowerAccumulatorInit(RewritePattern):
    """f32 zeros, and splats that start loop-carried values (a running max),
    are yielded (the initial values of a guarded loop) or start a product's
    accumulator (`tawa-fold-dot-addend`), become fragments."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.ZerosOp | tile.SplatOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        assert isinstance(t, TensorType)
        carried = any(isinstance(u.operation, scf.ForOp | scf.YieldOp) for u in op.result.uses)
        if isinstance(op, tile.ZerosOp):
            if not isinstance(t.get_element_type(), Float32Type):
                return
            frag_t = self.info.frag_type(t, op, value=op.result)
            if self.info.tiles is not None and not carried:
                # A splat of 0.0, which elementwise math reads as a constant (no registers held).
                zero = arith.ConstantOp(FloatAttr(0.0, Float32Type()))
                rewriter.insert(zero, InsertPoint.before(op))
                rewriter.replace(op, nvgpu.FragmentSplatOp.build(operands=[zero.result], result_types=[frag_t]))
            else:
                rewriter.replace(op, nvgpu.FragmentZerosOp.build(result_types=[frag_t]))
            return
        if carried or any(isinstance(u.operation, tile.DotOp | tile.DotAsyncOp) and u.operation.acc is op.result
                          for u in op.result.uses):
            new = nvgpu.FragmentSplatOp.build(operands=[op.value],
                                              result_types=[self.info.frag_type(t, op, value=op.result)])
            new.result.name_hint = op.result.name_hint
            rewriter.replace(op, new)


class RetypeIfResults(RewritePattern):
    """An `scf.if` result that both branches yield as fragments of one type
    is that fragment (a loop guarded by its trip count, `tawa-overlap-dots`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.IfOp, rewriter: PatternRewriter) -> None:
        if not op.false_region.blocks:
            return
        yields = (op.true_region.block.last_op, op.false_region.block.last_op)
        if not all(isinstance(y, scf.YieldOp) for y in yields):
            return
        for r, a, b in zip(op.results, yields[0].operands, yields[1].operands):
            if _is_frag(a) and a.type == b.type and r.type != a.type:
                rewriter.replace_value_with_new_type(r, a.type)


class RetypeLoopCarried(RewritePattern):
    """A loop-carried value whose initial value became a fragment is a
    fragment in the body and after the loop (the yielded value follows when
    its op is lowered)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, loop: scf.ForOp, rewriter: PatternRewriter) -> None:
        for i, init in enumerate(loop.iter_args):
            arg = loop.body.block.args[i + 1]
            if _is_frag(init) and arg.type != init.type:
                rewriter.replace_value_with_new_type(arg, init.type)
                rewriter.replace_value_with_new_type(loop.results[i], init.type)


@dataclass
class LowerDot(RewritePattern):
    """A dot on an aref slot (rhs) becomes one whole-tile wgmma.  Its lhs is
    another slot (this warp group's rows of it), or `arith.truncf` of an
    accumulator, which then stays in registers as the wgmma's A operand
    (`nvgpu.frag_convert`, no trip through shared memory), or such a
    conversion carried by a loop (a 16-bit fragment).  An 8-bit lhs computed
    in registers goes through the warp group's shared buffer instead: the
    `nvgpu.staged_operand` that `tawa-stage-operands` made of it names the
    buffer (`tawa.transforms.lower.operand_staging`); so does an rhs
    computed in registers, the whole K×N tile, each warp group its rows."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.DotOp | tile.DotAsyncOp, rewriter: PatternRewriter) -> None:
        src, rhs = op.lhs, op.rhs.owner
        # tile.trans of a staged tile: a transposed A that wgmma reads from the buffer.
        trans = src.owner if isinstance(src.owner, tile.TransOp) else None
        if trans is not None and isinstance(trans.input.owner, nvgpu.StagedOperandOp):
            src = trans.input
        staged = src.owner if isinstance(src.owner, nvgpu.StagedOperandOp) else None
        if staged is not None:
            src = staged.value
        lhs = src.owner
        staged_b = rhs if isinstance(rhs, nvgpu.StagedOperandOp) else None
        if staged_b is None and not isinstance(rhs, nvgpu.SmemTileOp):
            raise fail(op, f"{NAME}: {op.name} rhs must be a loaded tile as it is, or a converted accumulator: "
                       "wgmma reads its B operand only from shared memory, so B cannot be transformed in registers "
                       "(transform the A operand, e.g. compute Cᵀ = Bᵀ·Aᵀ, or transform B before the kernel)")
        b_value = staged_b.value if staged_b else None
        if isinstance(b_value, SSAValue) and isinstance(b_value.owner, arith.TruncFOp):
            b_value = b_value.owner.input
        if b_value is not None and not _is_frag(b_value):
            return  # not ready: the B tile's math is lowered first
        # A tile carried by a loop or an if becomes a fragment when its producers do.
        carried = isinstance(src.type, TensorType) and (not isinstance(lhs, Operation) or isinstance(lhs, scf.ForOp | scf.IfOp))
        if not isinstance(lhs, nvgpu.SmemTileOp | arith.TruncFOp) and not _is_frag(src) and not carried:
            raise fail(op, f"{NAME}: {op.name} lhs must come from an aref slot or be a converted accumulator, for now")
        if not _is_frag(op.acc) or carried or (isinstance(lhs, arith.TruncFOp) and not _is_frag(lhs.input)):
            return  # not ready: `diagnose` reports it if it never becomes so
        a, a_value = self._lhs(op, src, staged)
        if staged_b is not None:
            assert b_value is not None
            b = emit_rhs_store(op, b_value, staged_b.buffer, self.info.row0, self.info.groups,
                               InsertPoint.before(op))
        else:
            assert isinstance(rhs, nvgpu.SmemTileOp)
            rt = rhs.source.type
            assert isinstance(rt, nvgpu.SmemType)
            b = nvgpu.WgmmaDescriptorOp.build(
                operands=[rhs.source, rhs.stage, self.info.zero],
                result_types=[nvgpu.WgmmaDescriptorType(rt.get_shape()[1:], rt.element_type, rt.swizzle.data)],
            )
        # A product from zeros overwrites an unwritten accumulator (scale-d false) instead of adding to
        # zeroed registers.
        zeros = op.acc.owner if isinstance(op.acc.owner, nvgpu.FragmentZerosOp) else None
        acc = nvgpu.FragmentUndefOp.build(result_types=[op.acc.type]) if zeros else None
        accumulate = arith.ConstantOp(IntegerAttr(0 if zeros else 1, i1))
        if acc:
            acc.result.name_hint, accumulate.result.name_hint = "unwritten", "overwrite"
        mma = nvgpu.WgmmaOp.build(
            operands=[a_value, b.result, acc.result if acc else op.acc, accumulate.result],
            result_types=[op.acc.type],
            properties={name: UnitAttr() for name in ("rhs_transposed", "lhs_transposed")
                        if op.properties.get(name) is not None},
        )
        mma.location = op.location  # errors about the wgmma point at the dot
        if staged is not None and transposed_lhs(op):  # the buffer's K×M tile, read MN-major
            mma.properties["lhs_transposed"] = UnitAttr()
        ops: list[Operation] = [*([a] if a else []), *([] if staged_b else [b]), *([acc] if acc else []),
                                accumulate, nvgpu.WgmmaFenceOp(),
                                mma, nvgpu.WgmmaCommitGroupOp()]
        result = mma.result
        if isinstance(op, tile.DotOp):
            wait = nvgpu.WgmmaWaitGroupOp(0, [mma.result])
            ops.append(wait)
            result = wait.results_[0]
        result.name_hint = op.result.name_hint
        # Inserted apart from the replacement: `replace` would give every
        # unnamed result of the new ops the dot's name.
        rewriter.insert(ops, InsertPoint.before(op))
        rewriter.replace(op, [], [result])
        if trans is not None and not trans.result.uses:
            rewriter.erase(trans)
        if staged is not None and not staged.result.uses:
            rewriter.erase(staged)
        if staged_b is not None and not staged_b.result.uses:
            b_input = staged_b.value.owner
            rewriter.erase(staged_b)
            if isinstance(b_input, arith.TruncFOp) and not b_input.result.uses:
                rewriter.erase(b_input)
        if isinstance(lhs, arith.TruncFOp) and not lhs.result.uses:
            rewriter.erase(lhs)
        if zeros and not zeros.result.uses:
            rewriter.erase(zeros)

    def _lhs(self, op: tile.DotOp | tile.DotAsyncOp, src: SSAValue,
             staged: nvgpu.StagedOperandOp | None) -> tuple[Operation | None, SSAValue]:
        """The wgmma's A operand, and the op that makes it (None: inserted
        already, or the lhs itself): the staged buffer's descriptor, a
        register fragment, or this warp group's rows of a slot.  `src` is
        the dot's lhs, or with `staged` the value staged."""
        lhs = src.owner
        if staged is not None:  # an 8-bit or transposed A operand: through shared memory
            value = lhs.input if isinstance(lhs, arith.TruncFOp) else src
            desc = emit_operand_store(value, staged.buffer, self.info.group_index(), self.info.groups,
                                      InsertPoint.before(op), transposed=transposed_lhs(op))
            return None, desc.result
        if isinstance(lhs, nvgpu.SmemTileOp):
            st = lhs.source.type
            assert isinstance(st, nvgpu.SmemType)
            if op.lhs_transposed is not None:
                # A K×M tile read MN-major: this warp group's M columns of every K row.
                a_t = nvgpu.WgmmaDescriptorType([st.get_shape()[1], self.info.rows], st.element_type,
                                                st.swizzle.data)
                a = nvgpu.WgmmaDescriptorOp.build(operands=[lhs.source, lhs.stage, self.info.row0],
                                                  result_types=[a_t], properties={"columns": UnitAttr()})
                return a, a.results[0]
            a_t = nvgpu.WgmmaDescriptorType([self.info.rows, st.get_shape()[2]], st.element_type, st.swizzle.data)
            a = nvgpu.WgmmaDescriptorOp.build(operands=[lhs.source, lhs.stage, self.info.row0], result_types=[a_t])
            return a, a.results[0]
        if op.lhs_transposed is not None:
            raise fail(op, f"{NAME}: {op.name} with lhs_transposed reads its K×M lhs from shared memory (wgmma's "
                       "MN-major A), but this lhs is computed in registers, where wgmma's A is M×K: transpose "
                       "it before the dot or load it from memory")
        lt = src.type
        et = lt.element_type if isinstance(lt, nvgpu.FragmentType) else lt.get_element_type()
        if not isinstance(et, BFloat16Type | Float16Type):
            raise fail(op, f"{NAME}: {op.name} lhs in registers must be bf16 or f16, got {lt}: the wgmma "
                       "register A layout is that of 16-bit types (fp8 and tf32 A operands come from shared memory)")
        if self.info.rows != WGMMA_M:
            raise fail(op, f"{NAME}: {op.name} lhs in registers needs warp groups of {WGMMA_M} rows, but each "
                       f"owns {self.info.rows} here: a register A operand is one wgmma's {WGMMA_M} rows (give "
                       "the consumer one warp group per 64 rows: leave consumer-warps out)")
        if _is_frag(src):  # converted already (carried by a loop: tawa-overlap-dots)
            return None, src
        assert isinstance(lhs, arith.TruncFOp)
        src = lhs.input.type
        assert isinstance(src, nvgpu.FragmentType)
        conv = nvgpu.FragmentConvertOp.build(operands=[lhs.input], result_types=[src.with_element_type(et)])
        return conv, conv.results[0]


class LowerDotWait(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.DotWaitOp, rewriter: PatternRewriter) -> None:
        if not all(_is_frag(v) for v in op.values):
            return
        wait = nvgpu.WgmmaWaitGroupOp(op.pending.value.data, list(op.values))
        for old, new in zip(op.results_, wait.results_):
            new.name_hint = old.name_hint
        rewriter.replace(op, wait)


def _scalar_or_frag(value: SSAValue, user: Operation) -> SSAValue:
    """The other operand of math on an accumulator: a fragment, or the f32
    scalar of a splat."""
    if _is_frag(value):
        return value
    splat = value.owner
    if isinstance(splat, tile.SplatOp) and isinstance(splat.value.type, Float32Type):
        return splat.value
    if (root := _unlowered_math(value)) is not None:
        raise _unsupported_math(root)
    raise fail(
        user,
        f"{NAME}: '{user.name}' on an accumulator needs another accumulator or a tile.splat of an f32 scalar",
    )


def _unlowered_math(value: SSAValue) -> Operation | None:
    """The first op of the math that computes the tile `value` which no
    pattern lowered (values are defined before their uses, so by the time a
    user is lowered its operands' math was lowered if it could be)."""
    op = value.owner
    if isinstance(op, tile.TransOp):
        return op  # lowered only as a dot's lhs or a stored 16-bit tile: anywhere else it stays
    if not isinstance(op, Operation) or op.dialect_name() not in ("math", "arith"):
        return None
    if not isinstance(value.type, TensorType):
        return None
    for operand in op.operands:
        if (inner := _unlowered_math(operand)) is not None:
            return inner
    return op


def _unsupported_math(root: Operation) -> TawaError:
    """The located error for math no pattern lowers (`_unlowered_math`)."""
    if isinstance(root, tile.TransOp):
        return fail(root, f"{NAME}: tile.trans is lowered as a dot's lhs (a transposed A) or as the stored value "
                          "of a 16-bit accumulator tile (tile.store of tile.trans of arith.truncf of it), not here")
    hint = " (write math.exp2 of x·log2(e), or run tawa-exp-to-exp2 first)" if root.name == "math.exp" else ""
    return fail(root, f"{NAME}: '{root.name}' is not supported by the Hopper lowering yet{hint}")


def _is_one(value: SSAValue) -> bool:
    """Whether the tile `value` is a splat of the f32 constant 1.0."""
    splat = value.owner
    if not isinstance(splat, tile.SplatOp):
        return False
    const = splat.value.owner
    return (isinstance(const, arith.ConstantOp) and isinstance(const.value, FloatAttr)
            and isinstance(const.value.type, Float32Type) and const.value.value.data == 1.0)


def _pending(value: SSAValue) -> bool:
    """Whether the tile `value` may still become a fragment: a value that
    control flow carries (an `scf.for` iteration argument, an `scf.if` or
    `scf.for` result: retyped once what reaches it is), a dot's result, or
    math on one of those.  Math on it waits instead of failing."""
    if not isinstance(value.type, TensorType):
        return False
    if isinstance(value, BlockArgument):
        return isinstance(value.block.parent_op(), scf.ForOp)
    op = value.owner
    if isinstance(op, scf.IfOp | scf.ForOp | tile.DotOp | tile.DotAsyncOp | tile.DotWaitOp):
        return True
    return any(_pending(v) for v in op.operands)


_READ_THROUGH = (tile.StoreOp, nvgpu.StagedStoreOp, nvgpu.StagedOperandOp, tile.DotOp, tile.DotAsyncOp)
"""Ops that read an `arith.truncf` through (a store converts as it writes, a
dot's register operand is converted where the dot is lowered)."""


def _read_as_values(value: SSAValue) -> bool:
    """Whether the converted tile `value` must be a fragment of its own: a
    loop or an if carries it, or math reads it (a bf16 tile stored and read
    back as f32: `arith.extf` of it)."""
    return _carried(value) or any(not isinstance(u.operation, _READ_THROUGH) for u in value.uses)


def _carried(value: SSAValue) -> bool:
    """Whether a loop or an if carries `value` (an `scf.yield` or `scf.for`
    operand), so that it must be a fragment of its own rather than be read
    through by the op that uses it (a dot's register operand, a store)."""
    return any(isinstance(u.operation, scf.YieldOp | scf.ForOp) for u in value.uses)


class LowerElementwise(RewritePattern):
    """Elementwise math on fragments (the other operand a fragment or a splat
    of an f32 scalar) becomes per-register math; `arith.extf` of a 16-bit
    fragment becomes its f32 conversion, and so does an `arith.truncf` that a
    loop carries (`tawa-overlap-dots` carries P in bf16) or that math reads
    (a tile rounded to bf16, stored, and used again in f32)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        convert = isinstance(op, arith.ExtFOp) or (isinstance(op, arith.TruncFOp) and _read_as_values(op.result))
        if isinstance(op, math.LogOp) and _is_frag(op.operand):
            _check_f32_math(op)
            log2 = nvgpu.FragmentUnaryOp.build(operands=[op.operand], result_types=[op.operand.type],
                                               properties={"kind": nvgpu.FragUnaryKindAttr(nvgpu.FragUnaryKind.LOG2)})
            ln2 = arith.ConstantOp(FloatAttr(LN2, Float32Type()))
            rewriter.insert([log2, ln2], InsertPoint.before(op))
            new = nvgpu.FragmentBinaryOp(nvgpu.FragBinaryKind.MULF, log2.results[0], ln2.result)
            new.results[0].name_hint = op.result.name_hint
            rewriter.replace(op, new)
            return
        if type(op) not in _FRAG_BINARY and type(op) not in _FRAG_UNARY and not convert:
            return
        if not any(_is_frag(v) for v in op.operands):
            return  # not (yet) on an accumulator
        if not convert:
            _check_f32_math(op)
        if isinstance(op, arith.ExtFOp | arith.TruncFOp):
            src = op.input.type
            assert isinstance(src, nvgpu.FragmentType)
            et = Float32Type() if isinstance(op, arith.ExtFOp) else op.result.type.get_element_type()
            new = nvgpu.FragmentConvertOp.build(operands=[op.input], result_types=[src.with_element_type(et)])
        elif type(op) in _FRAG_UNARY:
            new: Operation = nvgpu.FragmentUnaryOp.build(
                operands=[op.operands[0]],
                properties={"kind": nvgpu.FragUnaryKindAttr(_FRAG_UNARY[type(op)])},
                result_types=[op.operands[0].type],
            )
        else:
            lhs, rhs = op.operands
            kind = _FRAG_BINARY[type(op)]
            if _pending(lhs) or _pending(rhs):
                return  # an operand may still become a fragment (carried in, or a dot not lowered yet)
            if kind == nvgpu.FragBinaryKind.DIVF and _is_frag(rhs) and _is_one(lhs):
                # 1 / x: the reciprocal rounded to nearest (`rcp.rn`, the bits of `div.rn`), not
                # the 2-ulp division every other f32 quotient takes (docs/passes.md, "tawa-divide-by-reciprocal").
                new = nvgpu.FragmentUnaryOp.build(operands=[rhs], result_types=[rhs.type],
                                                  properties={"kind": nvgpu.FragUnaryKindAttr(nvgpu.FragUnaryKind.RCP)})
                new.results[0].name_hint = op.results[0].name_hint
                rewriter.replace(op, new)
                return
            if not _is_frag(lhs) and kind in (nvgpu.FragBinaryKind.SUBF, nvgpu.FragBinaryKind.DIVF):
                # Not commutative: the splat becomes a fragment of the other's layout.
                splat = nvgpu.FragmentSplatOp.build(operands=[_scalar_or_frag(lhs, op)], result_types=[rhs.type])
                splat.result.name_hint = lhs.name_hint
                rewriter.insert(splat, InsertPoint.before(op))
                lhs = splat.result
            elif not _is_frag(lhs):
                lhs, rhs = rhs, lhs
            new = nvgpu.FragmentBinaryOp(kind, lhs, _scalar_or_frag(rhs, op))
        new.results[0].name_hint = op.results[0].name_hint
        rewriter.replace(op, new)


@dataclass
class LowerRowReduce(RewritePattern):
    """A reduction of a fragment along its columns: its layout's reduction
    (each thread folds its values of a row, then shuffles: the 4 lanes of a
    quad for `wgmma`, the lanes along the columns for a blocked layout).
    In a partition of blocked layouts a reduction along either axis whose
    warps split the axis combines the warps' partial results through the
    partition's scratch buffer (`nvgpu.frag_reduce_warps`)."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.ReduceOp, rewriter: PatternRewriter) -> None:
        t = op.input.type
        axis = op.axis.value.data
        _check_f32_math(op)
        if isinstance(t, nvgpu.FragmentType) and self.info.tiles is not None:
            shape = t.get_shape()
            if axis == 0 and self.info.groups > 1:
                raise fail(op, f"{NAME}: a reduction along the rows of a tile that {self.info.groups} warp groups "
                               "split is not supported (its partial sums would combine across warp groups): leave "
                               "consumer-warps out (column sums keep a tile in one warp group)")
            red = t.tiled_layout.reduce(shape, axis, across_warps=True)
            result_t = nvgpu.FragmentType(shape[:axis] + shape[axis + 1:], t.element_type, red.layout)
            if red.warps > 1:
                assert self.info.scratch is not None  # planned with the partition (lower_tile.plan_scratch)
                new: Operation = nvgpu.FragmentReduceWarpsOp(op.kind, op.input, axis, self.info.scratch,
                                                             self.info.barrier, result_t)
                new.location = op.location
            elif axis == len(shape) - 1:
                new = nvgpu.FragmentReduceOp.build(operands=[op.input], properties={"kind": op.kind},
                                                   result_types=[result_t])
            else:
                raise fail(op, f"{NAME}: a reduction along the rows of a {t.get_shape()[0]}-row tile whose rows "
                               "lie within warps is not supported yet (only a reduction along the columns, or "
                               "along rows that the layout spreads over warps): sum the rows of a taller tile")
            new.results[0].name_hint = op.result.name_hint
            rewriter.replace(op, new)
            return
        if not isinstance(t, nvgpu.FragmentType) or axis != 1:
            return  # not a row reduction of an accumulator: reported later
        new = nvgpu.FragmentReduceOp.build(
            operands=[op.input],
            properties={"kind": op.kind},
            result_types=[nvgpu.FragmentType([t.get_shape()[0]], t.element_type,
                                             t.tiled_layout.reduce(t.get_shape(), 1).layout)],
        )
        new.result.name_hint = op.result.name_hint
        rewriter.replace(op, new)


def _vector_axis(value: SSAValue, seen: set[SSAValue] | None = None) -> int | None:
    """The axis along which a 1-D tile is broadcast against accumulators:
    the `tile.expand_dims` axis its value (through elementwise math) reaches,
    or the axis of a vector fragment it is combined with.  None: neither."""
    seen = set() if seen is None else seen
    if value in seen:
        return None
    seen.add(value)
    for use in value.uses:
        user = use.operation
        if isinstance(user, tile.ExpandDimsOp):
            return user.axis.value.data
        others = [v for v in user.operands if v is not value and _is_frag(v)]
        for other in others:
            t = other.type
            assert isinstance(t, nvgpu.FragmentType)
            if len(t.get_shape()) == 1:
                return 1 if t.tiled_layout == nvgpu.WGMMA_ROW else 0
        if type(user) in (*_FRAG_BINARY, *_FRAG_UNARY, arith.ExtFOp):
            for r in user.results:
                if (axis := _vector_axis(r, seen)) is not None:
                    return axis
    return None


@dataclass
class LowerConsumerLoad(RewritePattern):
    """A `tile.load` that stayed in a consumer partition (its value feeds no
    dot, so no aref carries it) is read by the consumer threads themselves:
    each thread loads the elements it holds (`nvgpu.frag_load`, converted to
    f32, out of bounds 0) in the layout its use gives — a 2-D tile in the
    accumulator layout (this warp group's rows), a 1-D tile in the layout of
    the accumulator reduced along the axis it is broadcast on (one value per
    row, or per column).  Its element type is the memory's; math on it
    starts with `arith.extf` (`nvgpu.frag_convert`), so 16-bit tiles stay
    packed in registers until they are used."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.LoadOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        assert isinstance(t, TensorType)
        f32_t = TensorType(Float32Type(), t.get_shape())
        blocked = self.info.tiles is not None
        if not isinstance(t.get_element_type(), BLOCKED_FLOATS if blocked else LOADABLE):
            raise fail(op, f"{NAME}: the consumers load f32, bf16 or f16 tiles (fp8 too in a kernel without dots), "
                           f"got {t}")
        if self.info.tiles is not None:  # this warp group's share, in its planned layout
            frag_t = self.info.frag_type(f32_t, op, value=op.result)
            own_rows = self.info.groups > 1 and self.info.tiles[op.result].along_rows
        elif t.get_num_dims() == 1:
            axis = _vector_axis(op.result)
            if axis is None:
                raise fail(op, f"{NAME}: a 1-D tile loaded by the consumers must be broadcast against "
                           "an accumulator (tile.expand_dims + tile.broadcast) or combined with a row vector")
            frag_t = self.info.frag_type(f32_t, op, axis)
            own_rows = axis != 0
        else:
            frag_t = self.info.frag_type(f32_t, op)
            own_rows = True
        frag_t = frag_t.with_element_type(t.get_element_type())
        offsets = list(op.offsets)
        if own_rows:  # this warp group's rows
            row = arith.AddiOp(offsets[-t.get_num_dims()], self.info.row0)
            rewriter.insert(row, InsertPoint.before(op))
            offsets[-t.get_num_dims()] = row.result
        load = nvgpu.FragmentLoadOp.build(operands=[op.source, offsets], result_types=[frag_t])
        load.result.name_hint = op.result.name_hint
        rewriter.replace(op, load)


@dataclass
class LowerSlotRead(RewritePattern):
    """An aref slot (a tile the producer delivered to shared memory) that
    something other than a dot uses — elementwise math before a dot (an A
    operand scaled or cast in registers), a bias added to attention scores —
    is read into registers: this warp group's rows, in the accumulator
    layout (`nvgpu.frag_load_shared`); `tawa-lower-aref` made every consumer
    thread release such a slot, after a proxy fence.  Dots keep reading the
    slot through descriptors."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.SmemTileOp, rewriter: PatternRewriter) -> None:
        uses = [u for u in op.result.uses if not isinstance(u.operation, tile.DotOp | tile.DotAsyncOp)]
        if not uses:
            return
        t = op.result.type
        assert isinstance(t, TensorType)
        if t.get_num_dims() != 2 or not isinstance(t.get_element_type(), LOADABLE):
            raise fail(uses[0].operation, f"{NAME}: '{uses[0].operation.name}' of a delivered {t} tile: only "
                       "2-D f32, bf16 or f16 tiles can be read into registers")
        frag_t = self.info.frag_type(TensorType(Float32Type(), t.get_shape()), uses[0].operation, value=op.result)
        read = nvgpu.FragmentLoadSharedOp.build(
            operands=[op.source, op.stage, self.info.row0],
            result_types=[frag_t.with_element_type(t.get_element_type())],
        )
        read.result.name_hint = op.result.name_hint
        rewriter.insert(read, InsertPoint.after(op))
        for use in uses:
            use.operation.operands[use.index] = read.result


@dataclass
class LowerBroadcast(RewritePattern):
    """`broadcast(expand_dims(vector, axis))` of a vector fragment: per-value
    copies, in the threads that hold them.  In a partition of blocked
    layouts an expansion that something other than a broadcast reads is a
    broadcast to its own shape (`w[None, :]` against a 1-row tile)."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.BroadcastOp | tile.ExpandDimsOp, rewriter: PatternRewriter) -> None:
        if isinstance(op, tile.ExpandDimsOp):
            if self.info.tiles is None or op.result not in self.info.tiles or not op.result.uses or all(
                    isinstance(u.operation, tile.BroadcastOp) for u in op.result.uses):
                return
            expand = op
        else:
            expand = op.input.owner
        if not isinstance(expand, tile.ExpandDimsOp):
            return
        vector, rt = expand.input, op.result.type
        if not _is_frag(vector) or not isinstance(rt, TensorType):
            return
        result_t = self.info.frag_type(rt, op, value=op.result)
        axis = expand.axis.value.data
        expected = nvgpu.FragmentType(
            [n for a, n in enumerate(result_t.get_shape()) if a != axis],
            result_t.element_type, result_t.tiled_layout.reduced_layout(result_t.get_shape(), axis),
        )
        if vector.type != expected:
            raise fail(op, f"{NAME}: broadcasting along axis {axis} needs a {expected}, got {vector.type} "
                       "(a row vector repeats over columns, a column vector over rows)")
        new = nvgpu.FragmentBroadcastOp.build(operands=[vector], result_types=[result_t])
        new.result.name_hint = op.result.name_hint
        rewriter.replace(op, new)
        if expand is not op and not expand.result.uses:
            rewriter.erase(expand)


_SPLAT_FOLDABLE = (arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp, arith.MaximumfOp, arith.MinimumfOp,
                   arith.NegfOp)
"""The float math `FoldSplatMath` computes once on scalars (ops the PTX
printer emits on f32 scalars)."""


@dataclass
class FoldSplatMath(RewritePattern):
    """Math whose tile operands are all splats of f32 scalars (`tl.full`,
    `tl.zeros`, a scalar broadcast): every element is the same value, so
    the math runs once on the scalars and its result is splat; math on a
    fragment then takes it as its scalar operand.  (Division rounds to
    nearest here, `div.rn`, where a fragment's takes the 2-ulp
    `div.full`: one scalar, so the exact one.)"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, _SPLAT_FOLDABLE) or not isinstance(t := op.results[0].type, TensorType):
            return
        splats = [v.owner for v in op.operands]
        if not all(isinstance(s, tile.SplatOp) and isinstance(s.value.type, Float32Type) for s in splats):
            return
        scalar = type(op)(*[s.value for s in splats])  # type: ignore[arg-type]
        splat = tile.SplatOp.build(operands=[scalar.results[0]], result_types=[t])
        splat.result.name_hint = op.results[0].name_hint
        rewriter.replace(op, [scalar, splat], [splat.result])


_SWAPPED_CMPF = {"oeq": "oeq", "une": "une", "olt": "ogt", "ole": "oge", "ogt": "olt", "oge": "ole"}
"""The predicate of `tile.cmpf` with its operands swapped."""


@dataclass
class LowerCmpF(RewritePattern):
    """`tile.cmpf` of a fragment with a fragment or a splat: a mask of data,
    `nvgpu.frag_cmpf` per register (a splat on the left swaps the sides)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.CmpFOp, rewriter: PatternRewriter) -> None:
        lhs, rhs, pred = op.lhs, op.rhs, op.predicate.data.value
        if _pending(lhs) or _pending(rhs) or not (_is_frag(lhs) or _is_frag(rhs)):
            return  # not (yet) on an accumulator
        if not _is_frag(lhs):
            lhs, rhs, pred = rhs, lhs, _SWAPPED_CMPF[pred]
        _check_f32_math(op)
        new = nvgpu.FragmentCmpFOp(tile.CmpFPredicate(pred), lhs, _scalar_or_frag(rhs, op))
        new.result.name_hint = op.result.name_hint
        rewriter.replace(op, new)


def _data_select(op: tile.SelectOp, rewriter: PatternRewriter) -> Operation:
    """`select(mask, a, b)` on a mask of data (a lowered `tile.cmpf`, an i1
    fragment): one `nvgpu.frag_select` in the mask's layout, a splat `a`
    made a fragment of it and a splat `b` taken as its scalar
    (`tl.where(x > 0.0, 1.0, 0.0)` has no fragment but the mask)."""
    mask = op.mask.type
    assert isinstance(mask, nvgpu.FragmentType)
    t = mask.with_element_type(Float32Type())
    on_true = op.true_value
    if not _is_frag(on_true):
        splat = nvgpu.FragmentSplatOp.build(operands=[_scalar_or_frag(on_true, op)], result_types=[t])
        rewriter.insert(splat, InsertPoint.before(op))
        on_true = splat.result
    if on_true.type != t:
        raise fail(op, f"{NAME}: the values' register layout ({on_true.type}) is not their mask's ({mask})")
    return nvgpu.FragmentSelectOp.build(operands=[op.mask, on_true, _scalar_or_frag(op.false_value, op)],
                                        result_types=[t])


@dataclass
class LowerMaskedSelect(RewritePattern):
    """`select(mask, acc, other)`: the mask, built from index tiles, is
    computed per register (see tawa.transforms.lower.masks); where it holds for the
    whole fragment (blocks inside the sequence, below the causal diagonal)
    it is skipped at run time.  A mask of data (`tile.cmpf`, lowered by
    `LowerCmpF`) chooses per register (`_data_select`)."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.SelectOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.mask.owner, tile.CmpFOp):
            return  # a mask of data, not lowered yet (its operands may still become fragments)
        if _is_frag(op.mask):
            if not (_pending(op.true_value) or _pending(op.false_value)):
                new = _data_select(op, rewriter)
                new.results[0].name_hint = op.result.name_hint
                rewriter.replace(op, new)
            return
        on_true = op.true_value
        t = on_true.type
        if not isinstance(t, nvgpu.FragmentType):
            return  # not on an accumulator: reported later
        expr = symbolic(op.mask)
        if expr is None:
            raise fail(op, f"{NAME}: masks must be built from tile.iota, splats, integer math and tile.cmpi, "
                           "or be a tile.cmpf of data")
        at = InsertPoint.before(op)
        on_false = _scalar_or_frag(op.false_value, op)
        if isinstance(splat := on_false.owner, nvgpu.FragmentSplatOp):  # (a lowered tile.zeros)
            on_false = splat.value

        def emit_at(point: InsertPoint) -> Callable[[Operation], SSAValue]:
            def emit(new: Operation) -> SSAValue:
                Rewriter.insert_op(new, point)
                return new.results[0]

            return emit

        row0 = self.info.row0_i32
        rows, cols = t.get_shape()
        row_last = arith.AddiOp(row0, const(rows - 1, at, i32))
        Rewriter.insert_op(row_last, at)
        fast = all_true_condition(expr, (row0, row_last.result), (0, cols - 1), emit_at(at))
        masked = Block()
        try:
            mask = Materializer(t, row0, emit_at(InsertPoint.at_end(masked)))(expr)
        except ValueError as err:
            raise fail(op, f"{NAME}: {err}") from None
        select = nvgpu.FragmentSelectOp.build(operands=[mask, on_true, on_false], result_types=[t])
        if fast is None:
            for o in list(masked.ops):
                o.detach()
                Rewriter.insert_op(o, at)
            select.result.name_hint = op.result.name_hint
            rewriter.replace(op, select)
            return
        masked.add_ops([select, scf.YieldOp(select.result)])
        branch = scf.IfOp(fast, [t], Region(Block([scf.YieldOp(on_true)])), Region(masked))
        branch.results[0].name_hint = op.result.name_hint
        rewriter.replace(op, branch)


def _stored(value: SSAValue) -> tuple[SSAValue, arith.TruncFOp | None]:
    """What a store of `value` writes out: the f32 source of an
    `arith.truncf` (which the store's conversion replaces) and that op, or
    `value` itself and None (a truncf that is a fragment of its own once
    lowered, `LowerElementwise`, is stored as it is)."""
    conv = value.owner
    if isinstance(conv, arith.TruncFOp) and not _read_as_values(conv.result):
        return conv.input, conv
    return value, None


@dataclass
class LowerStore(RewritePattern):
    """The store of an accumulator, converted (`arith.truncf`) or f32: this
    warp group's rows, by the TMA-store epilogue where `tawa-stage-stores`
    staged the store (`nvgpu.staged_store`: its staging buffer and tensor
    map; `tawa.transforms.lower.tma_epilogue`), else by the threads
    (`nvgpu.frag_store`: conversion, bounds masks and stores).  A row
    vector of the accumulators (one value per row: a log-sum-exp) is stored
    by the threads too, each warp group its own rows; in a partition of
    blocked layouts any 1-D tile is (a row's sums, a column's)."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.StoreOp | nvgpu.StagedStoreOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.value.owner, tile.TransOp) and isinstance(op, tile.StoreOp) and self.info.tiles is None:
            self._store_transposed(op, op.value.owner, rewriter)
            return
        value, conv = _stored(op.value)
        if not _is_frag(value):
            return  # not ready: `diagnose` reports it if it never becomes so
        value_t = value.type
        assert isinstance(value_t, nvgpu.FragmentType)
        rank = len(value_t.get_shape())
        if rank == 1 and self.info.tiles is None and value_t.tiled_layout != nvgpu.WGMMA_ROW:
            # A column vector of an accumulator holds what this warp group's rows gave it:
            # the warp groups' values differ, and one store would have to combine them.
            raise fail(op, f"{NAME}: a 1-D tile stored by a kernel with dots must be a row vector of an "
                           f"accumulator (one value per row, as a row reduction gives), got {value_t}")
        if rank not in (1, 2):
            raise fail(op, f"{NAME}: only 1-D and 2-D tiles can be stored, got {value_t}")
        at = InsertPoint.before(op)
        offsets = list(op.offsets)
        if rank == 1:  # a row vector from this warp group's first row, a column vector whole
            planned = self.info.tiles.get(op.value) if self.info.tiles is not None else None
            # A row vector of the wgmma family (a log-sum-exp per query row) holds this warp
            # group's rows, as its accumulators do; a blocked one where the warp groups split them.
            if self.info.tiles is None or (self.info.groups > 1 and planned is not None and planned.along_rows):
                row = arith.AddiOp(offsets[-1], self.info.row0)
                offsets[-1] = row.result
                rewriter.insert(row, at)
            rewriter.replace(op, nvgpu.FragmentStoreOp.build(operands=[value, op.dest, offsets]), [])
        elif isinstance(op, nvgpu.StagedStoreOp):
            emit_tma_store(value, op.staging, op.tmap, offsets, self.info.row0, self.info.group_index(),
                           self.info.first_group, self.info.groups, at, add=op.add is not None)
            rewriter.erase(op)
        else:
            if self.info.tiles is None or self.info.groups > 1:  # this warp group's rows
                row = arith.AddiOp(offsets[-2], self.info.row0)
                offsets[-2] = row.result
                rewriter.insert(row, at)
            rewriter.replace(op, nvgpu.FragmentStoreOp.build(operands=[value, op.dest, offsets]), [])
        if conv is not None and not conv.result.uses:
            rewriter.erase(conv)

    def _store_transposed(self, op: tile.StoreOp, trans: tile.TransOp, rewriter: PatternRewriter) -> None:
        """`tile.store(tile.trans(x))`, x a 16-bit accumulator tile or one
        converted from f32 (`arith.truncf`): each warp group's 64xN
        fragment, converted to the memref's type, transposed in registers
        (`nvgpu.frag_transpose`: Nx64 in `WGMMA_T`) and stored by the
        threads at this warp group's columns of the transposed tile."""
        value, conv = _stored(trans.input)
        if not _is_frag(value):
            return  # not ready: `diagnose` reports it if it never becomes so
        value_t, mt = value.type, op.dest.type
        assert isinstance(value_t, nvgpu.FragmentType) and isinstance(mt, MemRefType)
        et = mt.get_element_type()
        if (self.info.tiles is not None or value_t.tiled_layout != nvgpu.WGMMA or self.info.rows != WGMMA_M
                or not isinstance(et, BFloat16Type | Float16Type)
                or not isinstance(value_t.element_type, Float32Type | type(et))):
            raise fail(op, f"{NAME}: a transposed tile (tile.trans) is stored from accumulators of warp groups of "
                           f"{WGMMA_M} rows into bf16 or f16 memory, got {value_t} into {mt}")
        at = InsertPoint.before(op)
        if value_t.element_type != et:
            convert = nvgpu.FragmentConvertOp.build(operands=[value], result_types=[value_t.with_element_type(et)])
            rewriter.insert(convert, at)
            value = convert.result
        shape = tuple(value_t.get_shape())
        transpose = nvgpu.FragmentTransposeOp.build(
            operands=[value], result_types=[nvgpu.FragmentType(shape[::-1], et, nvgpu.WGMMA_T)])
        column = arith.AddiOp(op.offsets[-1], self.info.row0)  # this warp group's columns
        rewriter.insert([transpose, column], at)
        offsets = [*op.offsets[:-1], column.result]
        rewriter.replace(op, nvgpu.FragmentStoreOp.build(operands=[transpose.result, op.dest, offsets]), [])
        if not trans.result.uses:
            rewriter.erase(trans)
        if conv is not None and not conv.result.uses:
            rewriter.erase(conv)


@dataclass
class LowerBlockedTranspose(RewritePattern):
    """`tile.trans` of a tile of a blocked layout (a kernel without dots) →
    `nvgpu.frag_transpose_shared` through the partition's scratch buffer,
    into the layout planned for the transposed tile.  The exchange moves
    f32: a 16-bit or fp8 tile is widened before it and narrowed after."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.TransOp, rewriter: PatternRewriter) -> None:
        if self.info.tiles is None or not _is_frag(op.input):
            return  # an accumulator's transpose is the store's or the dot's (LowerStore, LowerDot)
        it, rt = op.input.type, op.result.type
        assert isinstance(it, nvgpu.FragmentType) and isinstance(rt, TensorType)
        assert self.info.scratch is not None  # planned with the partition (lower_tile.plan_scratch)
        f32_t = self.info.frag_type(TensorType(Float32Type(), rt.get_shape()), op, value=op.result)
        ops: list[Operation] = []
        value = op.input
        if not isinstance(it.element_type, Float32Type):
            ops.append(nvgpu.FragmentConvertOp.build(operands=[value], result_types=[it.with_element_type(Float32Type())]))
            value = ops[-1].results[0]
        ops.append(nvgpu.FragmentTransposeSharedOp(value, self.info.scratch, self.info.barrier, f32_t))
        if not isinstance(it.element_type, Float32Type):
            ops.append(nvgpu.FragmentConvertOp.build(operands=[ops[-1].results[0]],
                                                     result_types=[f32_t.with_element_type(it.element_type)]))
        ops[-1].results[0].name_hint = op.result.name_hint
        rewriter.replace(op, ops, [ops[-1].results[0]])


@dataclass
class LowerAtomicAdd(RewritePattern):
    """`tile.atomic_add` of a 2-D f32 fragment → `nvgpu.frag_atomic_add` of
    this warp group's rows, as `LowerStore` stores them.  A consumer-side
    global side effect like a store: no aref slot, no barrier, nothing for
    the protocol proof.  A layout whose threads hold copies of an element
    is refused: each copy would be added."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.AtomicAddOp, rewriter: PatternRewriter) -> None:
        value = op.value
        if not _is_frag(value):
            return  # not ready: its producer is lowered first
        t = value.type
        assert isinstance(t, nvgpu.FragmentType)
        if len(t.get_shape()) != 2:
            raise fail(op, f"{NAME}: tile.atomic_add adds 2-D tiles for now, got {t}")
        if replicated(t.tiled_layout, tuple(t.get_shape())):
            raise fail(op, f"{NAME}: tile.atomic_add of {t}: its threads hold copies of an element, which "
                           "would be added once per copy")
        offsets = list(op.offsets)
        if self.info.tiles is None or self.info.groups > 1:  # this warp group's rows
            row = arith.AddiOp(offsets[-2], self.info.row0)
            offsets[-2] = row.result
            rewriter.insert(row, InsertPoint.before(op))
        rewriter.replace(op, nvgpu.FragmentAtomicAddOp.build(operands=[value, op.dest, offsets]), [])


@dataclass
class LowerCounterArrive(RewritePattern):
    """The partition's arrival at a counter: all its warp groups meet at
    the epilogue's named barrier (the TMA-store epilogue's, which the same
    threads reach in the same order), its first thread increments, and
    the barrier's reduction tells every thread the outcome, so an `scf.if`
    on it is uniform over the partition."""

    info: ConsumerInfo

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.CounterArriveOp, rewriter: PatternRewriter) -> None:
        at = InsertPoint.before(op)
        base = nvgpu.MemrefBaseOp(op.counters)
        offset = arith.MuliOp(op.index, const(4, at))  # i32 counters
        address = arith.AddiOp(base.result, offset.result)
        tid = nvgpu.ThreadIdOp()
        leader = arith.CmpiOp(tid.result, const(self.info.first_group * THREADS_PER_GROUP, at), "eq")
        rewriter.insert([base, offset, address, tid, leader], at)
        address.result.name_hint = "counter"
        arrive = nvgpu.CounterArriveOp(address.result, leader.result, op.count, EPILOGUE_BARRIER,
                                       self.info.groups * THREADS_PER_GROUP)
        rewriter.replace(op, arrive)


def consumer_patterns(info: ConsumerInfo) -> list[RewritePattern]:
    return [
        LowerAccumulatorInit(info),
        RetypeLoopCarried(),
        RetypeIfResults(),
        LowerDot(info),
        LowerDotWait(),
        LowerElementwise(),
        LowerRowReduce(info),
        LowerConsumerLoad(info),
        LowerSlotRead(info),
        LowerBroadcast(info),
        FoldSplatMath(),
        LowerCmpF(),
        LowerMaskedSelect(info),
        LowerStore(info),
        LowerBlockedTranspose(info),
        LowerAtomicAdd(info),
        LowerCounterArrive(info),
    ]


def diagnose(region: Region) -> None:
    """Explains ops that patterns were waiting on and that never became
    ready (their accumulator is not a fragment)."""
    for op in region.walk():
        if isinstance(op, tile.DotOp | tile.DotAsyncOp):
            if not _is_frag(op.acc):
                raise fail(op, f"{NAME}: {op.name} accumulator must be a zeros-initialised (loop-carried) accumulator")
            raise fail(op, f"{NAME}: {op.name} lhs must come from an aref slot or be a converted accumulator, for now")
        if isinstance(op, tile.StoreOp | nvgpu.StagedStoreOp):
            if (root := _unlowered_math(op.value)) is not None:  # the store waited on math no pattern knows
                raise _unsupported_math(root)
            raise fail(op, f"{NAME}: only stores of an accumulator (f32, or converted by arith.truncf) "
                       "are supported for now")
