"""The `tile` dialect: tile programs, tawa's input language.

A kernel is a `func.func` over global tensors (`memref` with dynamic dimensions)
and scalars (`index`, `f32`, ...).  One instance of the kernel runs per program
id of a launch grid, as in Triton.  Tile values are builtin ranked tensors with
static shapes, so elementwise math is `arith` / `math` on tensors; this dialect
adds what those lack: program ids, block loads and stores, matrix products,
reductions, broadcasts and index tiles for masks.

Element offsets are `index` values.  Loads read a box of the tile's shape at the
given offsets; elements outside the tensor read as 0.  Stores write the box;
elements outside the tensor are dropped.  This is exactly what TMA does, so tile
programs need no masks for ragged edges.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    Float32Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
    UnitAttr,
    i1,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tawa.dialects.common import GridAxisOp, parse_count_and_values, print_count_and_values, verify_arrival_count
from tawa.target.hopper import WGMMA_OPERAND_TYPES, WgmmaOperandType

DOT_OPERAND_TYPES = "bf16, f16, f8E4M3FN, f8E5M2 or f32 (tf32)"
"""The operand element types tile.dot accepts: those of wgmma
(`tawa.target.hopper.WGMMA_OPERAND_TYPES`)."""


def dot_operand_type(t: Attribute) -> WgmmaOperandType | None:
    """How wgmma takes operands of element type `t` (None: it does not)."""
    return WGMMA_OPERAND_TYPES.get(getattr(t, "name", ""))


# Rows of one wgmma instruction (m64); columns come in multiples of 8 (n8..n256).
DOT_M_GRANULE = 64
DOT_N_GRANULE = 8


def tensor_shape(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _require_static(t: TensorType, what: str) -> None:
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"{what} must have a static shape, got {t}")
    if 0 in t.get_shape():  # a tile of no elements: no wgmma, TMA box or smem buffer has one
        raise VerifyException(f"{what} must have positive dims, got {t}")


# --------------------------------------------------------------------------- attributes


class ReduceKind(StrEnum):
    MAX = "max"
    SUM = "sum"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    """The combining function of `tile.reduce`."""

    name = "tile.reduce_kind"


class CmpIPredicate(StrEnum):
    EQ = "eq"
    NE = "ne"
    SLT = "slt"
    SLE = "sle"
    SGT = "sgt"
    SGE = "sge"
    ULT = "ult"
    ULE = "ule"
    UGT = "ugt"
    UGE = "uge"


@irdl_attr_definition
class CmpIPredicateAttr(EnumAttribute[CmpIPredicate], SpacedOpaqueSyntaxAttribute):
    """The comparison of `tile.cmpi`."""

    name = "tile.cmpi_predicate"


class CmpFPredicate(StrEnum):
    """The float comparisons of `tile.cmpf`: ordered (false where either
    side is NaN), and `une`, unordered not-equal (true where either is NaN:
    Python's `!=`)."""

    OEQ = "oeq"
    UNE = "une"
    OLT = "olt"
    OLE = "ole"
    OGT = "ogt"
    OGE = "oge"


@irdl_attr_definition
class CmpFPredicateAttr(EnumAttribute[CmpFPredicate], SpacedOpaqueSyntaxAttribute):
    """The comparison of `tile.cmpf`."""

    name = "tile.cmpf_predicate"


# --------------------------------------------------------------------------- ops


@irdl_op_definition
class ProgramIdOp(GridAxisOp):
    """The id of this kernel instance along launch-grid axis `axis` (0, 1 or 2).

    Example: `%pid = tile.program_id 0`
    """

    name = "tile.program_id"


@irdl_op_definition
class NumProgramsOp(GridAxisOp):
    """The size of the launch grid along axis `axis` (0, 1 or 2).

    Example: `%n = tile.num_programs 1`
    """

    name = "tile.num_programs"


def _verify_box(
    memref: Attribute, offsets: Sequence[SSAValue], tile_type: Attribute, what: str
) -> None:
    """Shared checks of `tile.load` / `tile.store`: a box of the tile's shape at
    `offsets` of `memref`.  A tile of lower rank than the tensor covers its
    trailing dimensions (the leading ones have extent 1)."""
    assert isinstance(memref, MemRefType) and isinstance(tile_type, TensorType)
    rank = memref.get_num_dims()
    if len(offsets) != rank:
        raise VerifyException(
            f"{what} expects {rank} offsets for a rank-{rank} memref, got {len(offsets)}"
        )
    _require_static(tile_type, f"{what} tile")
    if tile_type.get_num_dims() == 0 or tile_type.get_num_dims() > rank:
        raise VerifyException(
            f"{what} tile rank {tile_type.get_num_dims()} must be between 1 and the "
            f"memref rank {rank}"
        )
    if tile_type.get_element_type() != memref.get_element_type():
        raise VerifyException(
            f"{what} tile element type {tile_type.get_element_type()} differs from "
            f"the memref element type {memref.get_element_type()}"
        )


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Reads the box of the result's shape whose first element is at `offsets`.

    `offsets` are element offsets, one per memref dimension.  A result of lower
    rank than the memref covers its trailing dimensions.  Elements outside the
    memref read as 0.

    Example: `%a = tile.load %A[%m0, %k] : memref<?x?xbf16> -> tensor<128x64xbf16>`
    """

    name = "tile.load"
    source = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    result = result_def(TensorType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = (
        "$source `[` $offsets `]` attr-dict `:` type($source) `->` type($result)"
    )

    def verify_(self) -> None:
        _verify_box(self.source.type, self.offsets, self.result.type, "tile.load")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Writes `value` to the box of its shape whose first element is at `offsets`.

    Elements that fall outside the memref are dropped.

    Example: `tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>`
    """

    name = "tile.store"
    value = operand_def(TensorType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "$value `,` $dest `[` $offsets `]` attr-dict `:` type($value) `,` type($dest)"
    )

    def verify_(self) -> None:
        _verify_box(self.dest.type, self.offsets, self.value.type, "tile.store")


@irdl_op_definition
class AtomicAddOp(IRDLOperation):
    """Adds f32 tile `value` into the box of its shape whose first element is
    at `offsets` (`tile.store`'s box: a tile of lower rank covers the trailing
    dimensions; elements outside the memref are dropped).

    Each element's add is atomic on its own (relaxed, GPU scope): programs
    that add into the same elements may run in any order and at the same
    time, and every add lands once.  Nothing is ordered with anything else:
    a program that reads the sums must run after the kernel (a later
    launch).  Floating-point adds in another order round differently, so
    the sums are the same up to rounding, not bit for bit.  Front end:
    `tl.atomic_add(ref, offsets, value)`.  Lowered for 2-D tiles whose
    threads hold each element once (wgmma accumulators, blocked tiles).

    Example: `tile.atomic_add %dq, %dQ[%b, %h, %m0, %c0] : tensor<64x128xf32>, memref<?x?x?x?xf32>`
    """

    name = "tile.atomic_add"
    value = operand_def(TensorType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$value `,` $dest `[` $offsets `]` attr-dict `:` type($value) `,` type($dest)"
    )

    def verify_(self) -> None:
        _verify_box(self.dest.type, self.offsets, self.value.type, "tile.atomic_add")
        t = self.value.type
        assert isinstance(t, TensorType)
        if not isinstance(t.get_element_type(), Float32Type):
            raise VerifyException(f"tile.atomic_add adds f32 tiles (red.global.add.f32), got {t}")


@irdl_op_definition
class LoadScalarOp(IRDLOperation):
    """Reads the one element at `offsets` (one per memref dimension) as a
    scalar: an i32 or f32, the memref's element type.  An element outside
    the memref reads as 0, as a `tile.load` reads one.

    Its result may place other loads and stores (a gather's row index, a
    block-table entry, the expert of a grouped GEMM's row tile).  Every
    warp group that needs it reads it itself (`tawa-warp-specialize`
    replicates it like index arithmetic), so the memref must not be
    written by the kernel.

    Example: `%e = tile.load_scalar %ExpertOf[%pid_m] : memref<?xi32> -> i32`
    """

    name = "tile.load_scalar"
    source = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    result = result_def()  # the memref's element type: the verifier says which it may be
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$source `[` $offsets `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, offsets: Sequence[SSAValue]):
        t = source.type
        assert isinstance(t, MemRefType)
        super().__init__(operands=[source, offsets], result_types=[t.get_element_type()])

    def verify_(self) -> None:
        t = self.source.type
        assert isinstance(t, MemRefType)
        if len(self.offsets) != t.get_num_dims():
            raise VerifyException(
                f"tile.load_scalar expects {t.get_num_dims()} offsets for a rank-{t.get_num_dims()} memref, "
                f"got {len(self.offsets)}"
            )
        element = t.get_element_type()
        if element not in (IntegerType(32), Float32Type()):
            raise VerifyException(f"tile.load_scalar reads i32 or f32 elements, got a {t}")
        if self.result.type != element:
            raise VerifyException(
                f"tile.load_scalar result type {self.result.type} differs from the memref element type {element}"
            )


class _DotLikeOp(IRDLOperation):
    """Operands, syntax and verifier shared by `tile.dot` and `tile.dot_async`."""

    ACC: ClassVar = VarConstraint("ACC", base(TensorType))
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    acc = operand_def(ACC)
    result = result_def(ACC)
    rhs_transposed = opt_prop_def(UnitAttr)
    lhs_transposed = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$lhs `,` $rhs `,` $acc attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, acc: SSAValue, rhs_transposed: bool = False,
        lhs_transposed: bool = False,
    ):
        props = {name: UnitAttr() for name, on in (("rhs_transposed", rhs_transposed),
                                                    ("lhs_transposed", lhs_transposed)) if on}
        super().__init__(
            operands=[lhs, rhs, acc], result_types=[acc.type], properties=props
        )

    def verify_(self) -> None:
        lt, rt, at = self.lhs.type, self.rhs.type, self.acc.type
        assert isinstance(lt, TensorType) and isinstance(rt, TensorType)
        assert isinstance(at, TensorType)
        for t, what in ((lt, "lhs"), (rt, "rhs"), (at, "accumulator")):
            _require_static(t, f"{self.name} {what}")
            if t.get_num_dims() != 2:
                raise VerifyException(f"{self.name} {what} must be 2-D, got {t}")
        et, rt_et = lt.get_element_type(), rt.get_element_type()
        a, b = dot_operand_type(et), dot_operand_type(rt_et)
        for x, t in ((a, et), (b, rt_et)):
            if x is None:
                raise VerifyException(f"{self.name} operands must be {DOT_OPERAND_TYPES}, got {t}")
        assert a is not None and b is not None
        if a.family != b.family:
            raise VerifyException(
                f"{self.name} operand element types differ ({et} vs {rt_et}): wgmma mixes "
                "only the fp8 formats (f8E4M3FN with f8E5M2)"
            )
        if not isinstance(at.get_element_type(), Float32Type):
            raise VerifyException(
                f"{self.name} accumulates in f32, got accumulator {at.get_element_type()}"
            )
        transposed = self.rhs_transposed is not None
        m, k = tensor_shape(lt)[::-1] if self.lhs_transposed is not None else tensor_shape(lt)
        n, k2 = tensor_shape(rt) if transposed else tensor_shape(rt)[::-1]
        if k != k2:
            raise VerifyException(
                f"{self.name} contraction sizes differ: lhs has K={k}, rhs has K={k2}"
            )
        if tensor_shape(at) != (m, n):
            raise VerifyException(
                f"{self.name} accumulator must be {m}x{n}, got {at}"
            )
        granule = max(a.k, b.k)
        if m % DOT_M_GRANULE or n % DOT_N_GRANULE or k % granule:
            raise VerifyException(
                f"{self.name} shape {m}x{n}x{k} (MxNxK) is not supported by the hardware: "
                f"M must be a multiple of {DOT_M_GRANULE}, N of {DOT_N_GRANULE}, "
                f"K of {granule} for {et}"
            )
        if not transposed and not b.mn_major:
            raise VerifyException(
                f"{self.name} with {rt_et} operands needs a K-major rhs (rhs_transposed): "
                "wgmma reads MN-major (transposed) operands only for 16-bit types"
            )
        if self.lhs_transposed is not None and not a.mn_major:
            raise VerifyException(
                f"{self.name} with {et} operands needs a K-major lhs (no lhs_transposed): "
                "wgmma reads MN-major (transposed) operands only for 16-bit types"
            )


@irdl_op_definition
class DotOp(_DotLikeOp):
    """`result = lhs · rhs + acc`, accumulated in f32.

    `lhs` is M×K, or K×M when `lhs_transposed` is set (then the product is
    lhsᵀ · rhs: a weight gradient dYᵀ·X reads dY as stored, [K, M]).  `rhs`
    is K×N, or N×K when `rhs_transposed` is set (then the product is
    lhs · rhsᵀ, the layout of GEMM's B and of attention's keys).
    Operands are bf16, f16, f8E4M3FN, f8E5M2 or f32, of the same type except
    that the two fp8 formats mix (e4m3 × e5m2); the accumulator and the result
    are f32.  f32 operands are multiplied as tf32 (10-bit mantissa: the
    hardware drops the 13 low bits of each operand), products are exact and
    summed in f32.  Shapes follow the Hopper wgmma instruction: M a multiple of
    64, N a multiple of 8, K a multiple of 32 bytes of the operand type (k16
    for 16-bit types, k32 for fp8, k8 for f32).  fp8 and f32 operands must be
    K-major, i.e. `rhs_transposed` and no `lhs_transposed` (wgmma
    transposes only 16-bit operands).  A transposed lhs is read from shared
    memory (wgmma's MN-major A): a loaded tile as it is, or one computed in
    registers once `tawa-stage-operands` has written it to a buffer (a
    partition of one consumer warp group).

    Examples:
    `%d = tile.dot %a, %b, %c {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>`
    `%d = tile.dot %at, %b, %c {lhs_transposed} : tensor<64x128xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>`
    """

    name = "tile.dot"
    traits = traits_def(Pure())


@irdl_op_definition
class DotAsyncOp(_DotLikeOp):
    """Starts `lhs · rhs + acc` (as `tile.dot`) without waiting for it.

    The product is in flight until a `tile.dot_wait` of this partition
    completes it; until then its operands (typically slots borrowed from an
    aref) must stay valid, and its result may only be the accumulator of a later
    `tile.dot_async`, be carried by `scf.yield`, or be returned by the
    `tile.dot_wait` that completes it.  This is how a level-2 program states the
    Hopper discipline of keeping one wgmma group in flight.

    Example:
    `%d = tile.dot_async %a, %b, %acc {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>`
    """

    name = "tile.dot_async"
    traits = traits_def(MemoryWriteEffect())


@irdl_op_definition
class DotWaitOp(IRDLOperation):
    """Waits until at most `pending` `tile.dot_async` ops issued by this
    partition are still in flight, then returns `values` unchanged: results of
    dot_async ops that are now complete and may be used freely.

    Example: `%acc = tile.dot_wait 0 (%d) : tensor<128x256xf32>`  or  `tile.dot_wait 1`
    """

    name = "tile.dot_wait"
    pending = prop_def(IntegerAttr[I64])
    values = var_operand_def(TensorType)
    results_ = var_result_def(TensorType)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, pending: int, values: Sequence[SSAValue] = ()):
        super().__init__(
            properties={"pending": IntegerAttr(pending, 64)},
            operands=[values],
            result_types=[[v.type for v in values]],
        )

    @classmethod
    def parse(cls, parser: Parser) -> DotWaitOp:
        pending, values, attrs = parse_count_and_values(parser, "tile.dot_wait")
        op = cls(pending, values)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        print_count_and_values(printer, self.pending.value.data, self.values, self.attributes)

    def verify_(self) -> None:
        if self.pending.value.data < 0:
            raise VerifyException("tile.dot_wait pending must be non-negative")
        if [v.type for v in self.values] != [r.type for r in self.results_]:
            raise VerifyException("tile.dot_wait results must have the types of its values")


@irdl_op_definition
class ZerosOp(IRDLOperation):
    """A tile of zeros.

    Example: `%z = tile.zeros : tensor<128x256xf32>`
    """

    name = "tile.zeros"
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, type: TensorType):
        super().__init__(result_types=[type])

    def verify_(self) -> None:
        _require_static(self.result.type, "tile.zeros result")


@irdl_op_definition
class SplatOp(IRDLOperation):
    """A tile whose every element is the scalar `value`.

    Example: `%m = tile.splat %ninf : f32 -> tensor<128xf32>`
    """

    name = "tile.splat"
    value = operand_def(Attribute)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$value attr-dict `:` type($value) `->` type($result)"

    def verify_(self) -> None:
        rt = self.result.type
        assert isinstance(rt, TensorType)
        _require_static(rt, "tile.splat result")
        if rt.get_element_type() != self.value.type:
            raise VerifyException(
                f"tile.splat value type {self.value.type} differs from the result "
                f"element type {rt.get_element_type()}"
            )


@irdl_op_definition
class IotaOp(IRDLOperation):
    """The 1-D integer tile [0, 1, ..., n-1], for index arithmetic and masks.

    Example: `%i = tile.iota : tensor<128xi32>`
    """

    name = "tile.iota"
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def verify_(self) -> None:
        rt = self.result.type
        assert isinstance(rt, TensorType)
        _require_static(rt, "tile.iota result")
        if rt.get_num_dims() != 1 or not isinstance(rt.get_element_type(), IntegerType):
            raise VerifyException(f"tile.iota result must be a 1-D integer tile, got {rt}")


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Reduces `input` along `axis` with `kind` (max or sum); the axis is removed.

    Sums of f32 tiles are f32.  The maximum of an empty set does not occur
    (shapes are static and positive).

    Example: `%m = tile.reduce max %s, 1 : tensor<128x128xf32> -> tensor<128xf32>`
    """

    name = "tile.reduce"
    kind = prop_def(ReduceKindAttr)
    input = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$kind $input `,` $axis attr-dict `:` type($input) `->` type($result)"
    )

    def verify_(self) -> None:
        it, rt = self.input.type, self.result.type
        assert isinstance(it, TensorType) and isinstance(rt, TensorType)
        shape = tensor_shape(it)
        axis = self.axis.value.data
        if not 0 <= axis < len(shape):
            raise VerifyException(
                f"tile.reduce axis {axis} out of range for a rank-{len(shape)} tile"
            )
        expected = shape[:axis] + shape[axis + 1 :]
        if tensor_shape(rt) != expected:
            raise VerifyException(
                f"tile.reduce result shape must be {list(expected)}, got {list(tensor_shape(rt))}"
            )
        if rt.get_element_type() != it.get_element_type():
            raise VerifyException("tile.reduce result element type differs from the input's")


@irdl_op_definition
class ExpandDimsOp(IRDLOperation):
    """Inserts a dimension of extent 1 at position `axis`.

    Example: `%c = tile.expand_dims %m, 1 : tensor<128xf32> -> tensor<128x1xf32>`
    """

    name = "tile.expand_dims"
    input = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $axis attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        it, rt = self.input.type, self.result.type
        assert isinstance(it, TensorType) and isinstance(rt, TensorType)
        shape = tensor_shape(it)
        axis = self.axis.value.data
        if not 0 <= axis <= len(shape):
            raise VerifyException(
                f"tile.expand_dims axis {axis} out of range for a rank-{len(shape)} tile"
            )
        expected = shape[:axis] + (1,) + shape[axis:]
        if tensor_shape(rt) != expected or rt.get_element_type() != it.get_element_type():
            raise VerifyException(
                f"tile.expand_dims result must be {TensorType(it.get_element_type(), expected)}, got {rt}"
            )


@irdl_op_definition
class BroadcastOp(IRDLOperation):
    """Repeats `input` along its extent-1 dimensions to the result's shape.

    Both have the same rank; every input dimension is 1 or equals the result's.

    Example: `%b = tile.broadcast %c : tensor<128x1xf32> -> tensor<128x128xf32>`
    """

    name = "tile.broadcast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        it, rt = self.input.type, self.result.type
        assert isinstance(it, TensorType) and isinstance(rt, TensorType)
        _require_static(rt, "tile.broadcast result")
        src, dst = tensor_shape(it), tensor_shape(rt)
        if rt.get_element_type() != it.get_element_type():
            raise VerifyException("tile.broadcast result element type differs from the input's")
        if len(src) != len(dst) or any(s not in (1, d) for s, d in zip(src, dst)):
            raise VerifyException(
                f"tile.broadcast cannot broadcast shape {list(src)} to {list(dst)}"
            )


@irdl_op_definition
class TransOp(IRDLOperation):
    """Transposes a 2-D tile.

    Example: `%t = tile.trans %x : tensor<64x128xbf16> -> tensor<128x64xbf16>`
    """

    name = "tile.trans"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        it, rt = self.input.type, self.result.type
        assert isinstance(it, TensorType) and isinstance(rt, TensorType)
        if it.get_num_dims() != 2:
            raise VerifyException(f"tile.trans input must be 2-D, got {it}")
        if tensor_shape(rt) != tensor_shape(it)[::-1] or (
            rt.get_element_type() != it.get_element_type()
        ):
            raise VerifyException(
                f"tile.trans result must be {TensorType(it.get_element_type(), tensor_shape(it)[::-1])}, got {rt}"
            )


class CompareOp(IRDLOperation):
    """Elementwise comparison of two tiles, giving an i1 mask tile: the
    syntax, construction and result of `tile.cmpi` and `tile.cmpf`, whose
    `PREDICATES` and `ELEMENTS` say what they compare.

    (`arith.cmpi` / `arith.cmpf` in xdsl 0.74 type their result i1 even on
    tensors, hence these ops.)"""

    PREDICATES: ClassVar[type[StrEnum]]
    PREDICATE_ATTR: ClassVar[type[EnumAttribute]]  # type: ignore[type-arg]
    ELEMENTS: ClassVar[tuple[type, ...]]
    T: ClassVar = VarConstraint("T", base(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, predicate: StrEnum, lhs: SSAValue, rhs: SSAValue):
        t = lhs.type
        assert isinstance(t, TensorType)
        super().__init__(operands=[lhs, rhs], properties={"predicate": self.PREDICATE_ATTR(predicate)},
                         result_types=[TensorType(i1, t.get_shape())])

    @classmethod
    def parse(cls, parser: Parser) -> CompareOp:
        pos = parser.pos
        pred = parser.parse_identifier()
        if pred not in cls.PREDICATES.__members__.values():
            parser.raise_error(f"unknown {cls.name} predicate '{pred}' (known: "
                               f"{', '.join(p.value for p in cls.PREDICATES)})", pos)
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        lhs_v, rhs_v = parser.resolve_operands([lhs, rhs], [t, t], parser.pos)
        op = cls(cls.PREDICATES(pred), lhs_v, rhs_v)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate.data.value}, ")  # type: ignore[attr-defined]
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)

    def verify_(self) -> None:
        t, rt = self.lhs.type, self.result.type
        assert isinstance(t, TensorType) and isinstance(rt, TensorType)
        if not isinstance(t.get_element_type(), self.ELEMENTS):
            kind = "float" if Float32Type in self.ELEMENTS else "integer"
            raise VerifyException(f"{self.name} compares {kind} tiles, got {t}")
        if rt != TensorType(i1, t.get_shape()):
            raise VerifyException(f"{self.name} result must be {TensorType(i1, t.get_shape())}, got {rt}")


@irdl_op_definition
class CmpIOp(CompareOp):
    """Elementwise integer comparison of two tiles, giving an i1 mask tile.

    Example: `%m = tile.cmpi sle, %cols, %rows : tensor<128x128xi32>`
    """

    name = "tile.cmpi"
    PREDICATES: ClassVar = CmpIPredicate
    PREDICATE_ATTR: ClassVar = CmpIPredicateAttr
    ELEMENTS: ClassVar = (IntegerType, IndexType)
    predicate = prop_def(CmpIPredicateAttr)


@irdl_op_definition
class CmpFOp(CompareOp):
    """Elementwise float comparison of two tiles, giving an i1 mask tile
    (`CmpFPredicate`: ordered comparisons, and `une`).  A mask of data, not
    of indices: `tile.select` on it chooses per element, with no all-true
    fast path.

    Example: `%m = tile.cmpf ogt, %x, %zero : tensor<128x128xf32>`
    """

    name = "tile.cmpf"
    PREDICATES: ClassVar = CmpFPredicate
    PREDICATE_ATTR: ClassVar = CmpFPredicateAttr
    ELEMENTS: ClassVar = typing.get_args(AnyFloat)
    predicate = prop_def(CmpFPredicateAttr)


@irdl_op_definition
class SelectOp(IRDLOperation):
    """Elementwise choice: `mask ? true_value : false_value`.

    (`arith.select` in xdsl 0.74 takes only a scalar condition, hence this op.)

    Example: `%s = tile.select %mask, %x, %ninf : tensor<128x128xi1>, tensor<128x128xf32>`
    """

    name = "tile.select"
    T: ClassVar = VarConstraint("T", base(TensorType))
    mask = operand_def(TensorType)
    true_value = operand_def(T)
    false_value = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = (
        "$mask `,` $true_value `,` $false_value attr-dict `:` type($mask) `,` type($result)"
    )

    def verify_(self) -> None:
        mt, vt = self.mask.type, self.result.type
        assert isinstance(mt, TensorType) and isinstance(vt, TensorType)
        if mt != TensorType(i1, vt.get_shape()):
            raise VerifyException(
                f"tile.select mask must be {TensorType(i1, vt.get_shape())}, got {mt}"
            )


@irdl_op_definition
class CounterArriveOp(IRDLOperation):
    """This program's arrival at the counter `counters[index]`, one of `count`
    programs that arrive there; true in the program whose arrival is the
    last (the `count`-th), false in the others.  No program waits.  `count`
    is a value: every program arriving at one counter must compute the same
    (the programs that share a tile, where that number varies by tile).

    Memory order: release and acquire at GPU scope.  Every global store the
    program made before the op is visible, to whichever program arrives
    last, before its increment; the program that arrives last sees, after
    the op, every store the others released.  The increment is atomic and
    wraps: the last arrival sets the counter back to 0, so a counter zeroed
    once serves every later launch (a replayed CUDA graph) without a reset.
    So "the last arriver combines what the others wrote" needs no wait and
    cannot deadlock, whatever order programs run in.

    Example: `%last = tile.counter_arrive %Counters[%tile] count %four : memref<?xi32>`
    """

    name = "tile.counter_arrive"
    counters = operand_def(MemRefType)
    index = operand_def(IndexType)
    count = operand_def(IndexType)
    result = result_def(i1)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$counters `[` $index `]` `count` $count attr-dict `:` type($counters)"

    def __init__(self, counters: SSAValue, index: SSAValue, count: SSAValue):
        super().__init__(operands=[counters, index, count], result_types=[i1])

    def verify_(self) -> None:
        t = self.counters.type
        assert isinstance(t, MemRefType)
        if t.get_num_dims() != 1 or t.get_element_type() != IntegerType(32):
            raise VerifyException(f"tile.counter_arrive counters must be a memref<?xi32>, got {t}")
        verify_arrival_count(self.name, self.count)


Tile = Dialect(
    "tile",
    [
        ProgramIdOp,
        NumProgramsOp,
        LoadOp,
        StoreOp,
        AtomicAddOp,
        LoadScalarOp,
        DotOp,
        DotAsyncOp,
        DotWaitOp,
        ZerosOp,
        SplatOp,
        IotaOp,
        ReduceOp,
        ExpandDimsOp,
        BroadcastOp,
        TransOp,
        CmpIOp,
        CmpFOp,
        SelectOp,
        CounterArriveOp,
    ],
    [ReduceKindAttr, CmpIPredicateAttr, CmpFPredicateAttr],
)
