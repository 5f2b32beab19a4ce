"""nvgpu ops on register fragments: elementwise math, reductions and broadcasts, masks, conversion, loads and stores of global memory."""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    UnitAttr,
    i1,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tawa.dialects.common import (
    parse_kind_and_operand_pair,
    print_kind_and_operand_pair,
)
from tawa.dialects.nvgpu.layouts import WGMMA, WGMMA_T, Reduction
from tawa.dialects.nvgpu.types import FragmentType, SmemType, element_bytes
from tawa.dialects.tile import CmpFPredicate, CmpFPredicateAttr, CmpIPredicate, CmpIPredicateAttr, ReduceKindAttr
from tawa.target.hopper import NAMED_BARRIERS, THREADS_PER_GROUP, WGMMA_M


class FragBinaryKind(StrEnum):
    ADDF = "addf"
    SUBF = "subf"
    MULF = "mulf"
    DIVF = "divf"
    MAXIMUMF = "maximumf"
    MINIMUMF = "minimumf"
    ADDI = "addi"
    SUBI = "subi"
    MULI = "muli"
    ANDI = "andi"
    ORI = "ori"


FLOAT_KINDS = {FragBinaryKind.ADDF, FragBinaryKind.SUBF, FragBinaryKind.MULF,
               FragBinaryKind.DIVF, FragBinaryKind.MAXIMUMF, FragBinaryKind.MINIMUMF}


@irdl_attr_definition
class FragBinaryKindAttr(EnumAttribute[FragBinaryKind], SpacedOpaqueSyntaxAttribute):
    """The elementwise function of `nvgpu.frag_binary` (as the arith op of that name)."""

    name = "nvgpu.frag_binary_kind"


@irdl_op_definition
class FragmentBinaryOp(IRDLOperation):
    """Elementwise math on a fragment: `result[i] = lhs[i] <kind> rhs[i]`,
    where `rhs` is a fragment of the same type or a scalar of its element type
    used for every element.  Float kinds work on f32, integer kinds on i32
    (index math for masks), `andi`/`ori` also on i1.  Each thread computes its
    own registers; no data moves.

    Example: `%s = nvgpu.frag_binary mulf %acc, %alpha : !nvgpu.frag<64x256xf32, wgmma>, f32`
    """

    name = "nvgpu.frag_binary"
    kind = prop_def(FragBinaryKindAttr)
    lhs = operand_def(FragmentType)
    rhs = operand_def(base(FragmentType) | base(Float32Type) | base(IntegerType))
    result = result_def(FragmentType)
    traits = traits_def(Pure())

    def __init__(self, kind: FragBinaryKind, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            operands=[lhs, rhs],
            properties={"kind": FragBinaryKindAttr(kind)},
            result_types=[lhs.type],
        )

    @classmethod
    def parse(cls, parser: Parser) -> FragmentBinaryOp:
        kind, lhs, rhs, attrs = parse_kind_and_operand_pair(parser, FragBinaryKind, "nvgpu.frag_binary kind", False)
        op = cls(FragBinaryKind(kind), lhs, rhs)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        print_kind_and_operand_pair(printer, self.kind.data.value, self.lhs, self.rhs, self.attributes, False)

    def verify_(self) -> None:
        lt = self.lhs.type
        assert isinstance(lt, FragmentType)
        et, kind = lt.element_type, self.kind.data
        if kind in FLOAT_KINDS and not isinstance(et, Float32Type):
            raise VerifyException(f"nvgpu.frag_binary works on f32 fragments, got {lt}")
        if kind not in FLOAT_KINDS and not (
            et == IntegerType(32) or (et == i1 and kind in (FragBinaryKind.ANDI, FragBinaryKind.ORI))
        ):
            raise VerifyException(f"nvgpu.frag_binary {kind.value} needs i32 (or i1) fragments, got {lt}")
        rt = self.rhs.type
        if rt != lt and rt != et:
            raise VerifyException(
                f"nvgpu.frag_binary operands must be fragments of one type (or a scalar of "
                f"its element type), got {lt} and {rt}"
            )
        if self.result.type != lt:
            raise VerifyException("nvgpu.frag_binary result must have the type of its lhs")


class FragUnaryKind(StrEnum):
    EXP2 = "exp2"
    NEGF = "negf"
    TANH = "tanh"
    LOG2 = "log2"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    ABSF = "absf"
    RCP = "rcp"


@irdl_attr_definition
class FragUnaryKindAttr(EnumAttribute[FragUnaryKind], SpacedOpaqueSyntaxAttribute):
    """The elementwise function of `nvgpu.frag_unary` (`math.exp2`, `arith.negf`, `math.tanh`,
    `math.log2`, `math.sqrt`, `math.rsqrt`, `math.absf`; `rcp`: `1.0 / x`)."""

    name = "nvgpu.frag_unary_kind"


@irdl_op_definition
class FragmentUnaryOp(IRDLOperation):
    """Elementwise f32 function of a fragment (exp2, tanh, log2 and rsqrt
    are the hardware's approximate `ex2`, `tanh`, `lg2` and `rsqrt`, as in
    every fast softmax, GELU and norm; sqrt and rcp, the reciprocal 1 / x,
    are rounded to nearest).

    Example: `%p = nvgpu.frag_unary exp2 %s : !nvgpu.frag<64x128xf32, wgmma>`
    """

    name = "nvgpu.frag_unary"
    T: ClassVar = VarConstraint("T", base(FragmentType))
    kind = prop_def(FragUnaryKindAttr)
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$kind $input attr-dict `:` type($input)"

    def verify_(self) -> None:
        t = self.input.type
        assert isinstance(t, FragmentType)
        if not isinstance(t.element_type, Float32Type):
            raise VerifyException(f"nvgpu.frag_unary works on f32 fragments, got {t}")


@irdl_op_definition
class FragmentSplatOp(IRDLOperation):
    """A fragment whose every element is the f32 scalar `value`.

    Example: `%m = nvgpu.frag_splat %ninf : f32 -> !nvgpu.frag<64xf32, wgmma_row>`
    """

    name = "nvgpu.frag_splat"
    value = operand_def(Float32Type)
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$value attr-dict `:` type($value) `->` type($result)"

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, FragmentType)
        if not isinstance(t.element_type, Float32Type):
            raise VerifyException(f"nvgpu.frag_splat makes f32 fragments, got {t}")


@irdl_op_definition
class FragmentReduceOp(IRDLOperation):
    """Reduces a fragment along its last axis (max or sum over the columns
    of each row) into the layout the algebra gives the result
    (`TiledLayout.reduce`): each thread combines its own values of a row,
    then the lanes that hold other columns of it exchange theirs (butterfly
    shuffles; for `wgmma` the 4 lanes of a quad, giving `wgmma_row`).

    Example: `%m = nvgpu.frag_reduce max %s : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64xf32, wgmma_row>`
    """

    name = "nvgpu.frag_reduce"
    kind = prop_def(ReduceKindAttr)
    input = operand_def(FragmentType)
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$kind $input attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        it, rt = self.input.type, self.result.type
        assert isinstance(it, FragmentType) and isinstance(rt, FragmentType)
        shape = it.get_shape()
        if len(shape) < 2:
            raise VerifyException(f"nvgpu.frag_reduce reduces the last axis of a 2-D fragment, got {it}")
        try:
            reduced = it.tiled_layout.reduce(shape, len(shape) - 1).layout
        except ValueError as err:
            raise VerifyException(f"nvgpu.frag_reduce: {err}") from None
        expected = FragmentType(shape[:-1], it.element_type, reduced)
        if rt != expected:
            raise VerifyException(f"nvgpu.frag_reduce of {it} gives {expected}, got {rt}")
        if not isinstance(it.element_type, Float32Type):
            raise VerifyException(f"nvgpu.frag_reduce works on f32 fragments, got {it}")


@irdl_op_definition
class FragmentReduceWarpsOp(IRDLOperation):
    """Reduces a fragment along `axis` where its layout's warps split that
    axis (a blocked tile of fewer rows than warps, such as one row of 4096
    columns; column sums of a tile whose rows lie over warps): each thread
    combines its own values, the lanes exchange theirs (butterfly shuffles),
    as `nvgpu.frag_reduce` does; then every thread writes its partial
    results to `scratch` (value j of thread t at f32 element
    `128·j + t`), the warp group's 128 threads wait at named barrier
    `barrier`, each thread folds the partials of the warps that hold the
    same result elements (`Reduction.partner_warps`, in the same order in
    every warp, so every copy of a result has the same bits), and the
    threads wait at the barrier again before anyone may write `scratch`
    anew.  The result's layout is the input's reduced along `axis`
    (`TiledLayout.reduced_layout`): the warps that split it hold copies.

    `scratch` is a buffer of the kernel's shared memory that only this warp
    group uses, f32, at least 128 x (result values per thread) elements;
    `barrier` (1..15) is a named barrier only this warp group's threads
    sync on.  Every thread of the warp group must execute the op together
    (not under a branch that divides it).

    Example: `%s = nvgpu.frag_reduce_warps sum %x, 1 via %scratch barrier 15 : !nvgpu.frag<1x4096xf32, #nvgpu.tiled_layout<...>>, !nvgpu.smem<1x128xf32> -> !nvgpu.frag<1xf32, #nvgpu.tiled_layout<...>>`
    """

    name = "nvgpu.frag_reduce_warps"
    kind = prop_def(ReduceKindAttr)
    axis = prop_def(IntegerAttr[I64])
    barrier = prop_def(IntegerAttr[I64])
    input = operand_def(FragmentType)
    scratch = operand_def(SmemType)
    result = result_def(FragmentType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$kind $input `,` $axis `via` $scratch `barrier` $barrier attr-dict "
        "`:` type($input) `,` type($scratch) `->` type($result)"
    )

    def __init__(self, kind: ReduceKindAttr, value: SSAValue, axis: int, scratch: SSAValue, barrier: int,
                 result_type: FragmentType):
        super().__init__(
            operands=[value, scratch],
            properties={"kind": kind, "axis": IntegerAttr(axis, 64), "barrier": IntegerAttr(barrier, 64)},
            result_types=[result_type],
        )

    def reduction(self) -> Reduction:
        it = self.input.type
        assert isinstance(it, FragmentType)
        return it.tiled_layout.reduce(it.get_shape(), self.axis.value.data, across_warps=True)

    def verify_(self) -> None:
        it, rt, st = self.input.type, self.result.type, self.scratch.type
        assert isinstance(it, FragmentType) and isinstance(rt, FragmentType) and isinstance(st, SmemType)
        shape, axis = it.get_shape(), self.axis.value.data
        if len(shape) != 2 or not 0 <= axis < 2 or not isinstance(it.element_type, Float32Type):
            raise VerifyException(f"nvgpu.frag_reduce_warps reduces axis 0 or 1 of a 2-D f32 fragment, got "
                                  f"axis {axis} of {it}")
        red = self.reduction()
        if red.warps == 1:
            raise VerifyException(f"nvgpu.frag_reduce_warps: the warps of {it} do not split axis {axis} (a "
                                  "reduction within warps is nvgpu.frag_reduce)")
        expected = FragmentType(shape[:axis] + shape[axis + 1:], it.element_type, red.layout)
        if rt != expected:
            raise VerifyException(f"nvgpu.frag_reduce_warps of {it} along axis {axis} gives {expected}, got {rt}")
        need = THREADS_PER_GROUP * rt.values_per_thread()
        if not isinstance(st.element_type, Float32Type) or st.swizzle.data or math.prod(st.get_shape()) < need:
            raise VerifyException(f"nvgpu.frag_reduce_warps needs an unswizzled f32 scratch of at least {need} "
                                  f"elements (128 threads x {rt.values_per_thread()} values), got {st}")
        if not 1 <= self.barrier.value.data < NAMED_BARRIERS:
            raise VerifyException(f"nvgpu.frag_reduce_warps barrier must be a named barrier 1..{NAMED_BARRIERS - 1} "
                                  f"(0 is the CTA's), got {self.barrier.value.data}")


@irdl_op_definition
class FragmentTransposeSharedOp(IRDLOperation):
    """The transpose of a warp group's R x C f32 fragment of any layout, as
    a C x R fragment of the result's layout, through shared memory: every
    thread writes each value it holds, element (i, j), to f32 element
    C·i + j of `scratch`, the warp group's 128 threads wait at named
    barrier `barrier`, each thread reads element (a, b) of the result (its
    layout's coordinates) from element C·b + a, and the threads wait at the
    barrier again before anyone may write `scratch` anew.  Data moves
    between any threads: the two layouts are independent (a blocked tile
    of rows by 16-byte vectors and its transpose, laid out alike).

    `scratch` is a buffer of the kernel's shared memory that only this warp
    group uses, f32, at least R·C elements; `barrier` (1..15) is a named
    barrier only this warp group's threads sync on.  Every thread of the
    warp group must execute the op together (not under a branch that
    divides it).

    Example: `%t = nvgpu.frag_transpose_shared %x via %scratch barrier 15 : !nvgpu.frag<64x128xf32, #nvgpu.tiled_layout<...>>, !nvgpu.smem<64x128xf32> -> !nvgpu.frag<128x64xf32, #nvgpu.tiled_layout<...>>`
    """

    name = "nvgpu.frag_transpose_shared"
    barrier = prop_def(IntegerAttr[I64])
    input = operand_def(FragmentType)
    scratch = operand_def(SmemType)
    result = result_def(FragmentType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$input `via` $scratch `barrier` $barrier attr-dict `:` type($input) `,` type($scratch) `->` type($result)"
    )

    def __init__(self, value: SSAValue, scratch: SSAValue, barrier: int, result_type: FragmentType):
        super().__init__(operands=[value, scratch], properties={"barrier": IntegerAttr(barrier, 64)},
                         result_types=[result_type])

    def verify_(self) -> None:
        it, rt, st = self.input.type, self.result.type, self.scratch.type
        assert isinstance(it, FragmentType) and isinstance(rt, FragmentType) and isinstance(st, SmemType)
        shape = it.get_shape()
        if (len(shape) != 2 or not isinstance(it.element_type, Float32Type) or rt.element_type != it.element_type
                or tuple(rt.get_shape()) != tuple(shape)[::-1]):
            raise VerifyException(f"nvgpu.frag_transpose_shared transposes a 2-D f32 fragment into one of the "
                                  f"transposed shape, got {it} -> {rt}")
        if not isinstance(st.element_type, Float32Type) or st.swizzle.data or math.prod(st.get_shape()) < math.prod(shape):
            raise VerifyException(f"nvgpu.frag_transpose_shared needs an unswizzled f32 scratch of at least "
                                  f"{math.prod(shape)} elements, got {st}")
        if not 1 <= self.barrier.value.data < NAMED_BARRIERS:
            raise VerifyException(f"nvgpu.frag_transpose_shared barrier must be a named barrier "
                                  f"1..{NAMED_BARRIERS - 1} (0 is the CTA's), got {self.barrier.value.data}")


@irdl_op_definition
class FragmentBroadcastOp(IRDLOperation):
    """Repeats a fragment along one axis of the result (the inverse of a
    reduction along that axis): the input's layout is the result layout
    reduced along the axis (`TiledLayout.reduced_layout`), so each thread
    already holds the values it copies and no data moves
    (`TiledLayout.broadcast_sources`).  The axis is the one whose reduction
    gives the input's type: a `wgmma_row` vector repeats over the columns
    (axis 1), a `wgmma_col` vector over the rows (axis 0).

    Example: `%mb = nvgpu.frag_broadcast %m : !nvgpu.frag<64xf32, wgmma_row> -> !nvgpu.frag<64x128xf32, wgmma>`
    """

    name = "nvgpu.frag_broadcast"
    input = operand_def(FragmentType)
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def axis(self) -> int | None:
        """The axis of the result the input repeats along (None: none fits)."""
        it, rt = self.input.type, self.result.type
        assert isinstance(it, FragmentType) and isinstance(rt, FragmentType)
        shape = rt.get_shape()
        for axis in reversed(range(len(shape))):
            try:
                reduced = rt.tiled_layout.reduced_layout(shape, axis)
            except ValueError:
                continue
            if it == FragmentType(shape[:axis] + shape[axis + 1:], rt.element_type, reduced):
                return axis
        return None

    def verify_(self) -> None:
        if self.axis() is None:
            rt = self.result.type
            assert isinstance(rt, FragmentType)
            raise VerifyException(
                f"nvgpu.frag_broadcast: {rt} repeats a fragment of its layout reduced along one "
                f"of its axes, got {self.input.type}"
            )


@irdl_op_definition
class FragmentConvertOp(IRDLOperation):
    """Converts an f32 fragment to bf16, f16 (round to nearest even) or
    fp8 (f8E4M3FN, f8E5M2: round to nearest even, saturating to the largest
    finite value), or a bf16/f16 fragment to f32 (exactly), in the same
    layout: no data moves between threads.  A `wgmma` fragment of bf16/f16
    is a wgmma A operand in registers (the k16 block j is packed registers
    4j..4j+3); one of fp8 goes to shared memory first.

    Example: `%pa = nvgpu.frag_convert %p : !nvgpu.frag<64x128xf32, wgmma> -> !nvgpu.frag<64x128xbf16, wgmma>`
    """

    name = "nvgpu.frag_convert"
    input = operand_def(FragmentType)
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        it, rt = self.input.type, self.result.type
        assert isinstance(it, FragmentType) and isinstance(rt, FragmentType)
        fp8 = Float8E4M3FNType | Float8E5M2Type
        narrow = BFloat16Type | Float16Type | fp8
        narrowing = isinstance(it.element_type, Float32Type) and isinstance(rt.element_type, narrow)
        widening = isinstance(it.element_type, narrow) and isinstance(rt.element_type, Float32Type)
        if not (narrowing or widening) or it.with_element_type(rt.element_type) != rt:
            raise VerifyException(
                "nvgpu.frag_convert turns an f32 fragment into a bf16, f16 or fp8 one, or one of those "
                f"into f32, of the same shape and layout, got {it} -> {rt}"
            )
        for t in (it, rt):
            if isinstance(t.element_type, fp8) and not t.packed():
                raise VerifyException(f"nvgpu.frag_convert of fp8 needs vectors of 2 (a packed pair), got {t}")


@irdl_op_definition
class FragmentTransposeOp(IRDLOperation):
    """The transpose of a warp group's 64xN fragment of 16-bit values
    (bf16, f16) in the `WGMMA` layout: the Nx64 tile, in the `WGMMA_T`
    layout.  Each packed register is one 8x8 block of the tile, transposed
    among the 32 lanes of its warp (`movmatrix.sync.aligned.m8n8.trans.b16`);
    register k of the result is the transpose of register k of the input
    (`tawa.dialects.nvgpu.layouts.WGMMA_T` says why that is the transposed
    tile).  A store of the result writes the tile's transpose by whole
    pairs of columns, as any fragment is stored.

    Example: `%t = nvgpu.frag_transpose %c : !nvgpu.frag<64x32xbf16, wgmma> -> !nvgpu.frag<32x64xbf16, wgmma_t>`
    """

    name = "nvgpu.frag_transpose"
    input = operand_def(FragmentType)
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        it, rt = self.input.type, self.result.type
        assert isinstance(it, FragmentType) and isinstance(rt, FragmentType)
        shape = tuple(it.get_shape())
        if (not isinstance(it.element_type, BFloat16Type | Float16Type) or it.tiled_layout != WGMMA
                or len(shape) != 2 or shape[0] != WGMMA_M):
            raise VerifyException(
                f"nvgpu.frag_transpose transposes a {WGMMA_M}xN bf16 or f16 fragment in the wgmma layout, got {it}")
        expected = FragmentType(shape[::-1], it.element_type, WGMMA_T)
        if rt != expected:
            raise VerifyException(f"nvgpu.frag_transpose of {it} gives {expected}, got {rt}")


class FragIndexAxis(StrEnum):
    ROW = "row"
    COL = "col"


@irdl_attr_definition
class FragIndexAxisAttr(EnumAttribute[FragIndexAxis], SpacedOpaqueSyntaxAttribute):
    """Which coordinate `nvgpu.frag_index` gives."""

    name = "nvgpu.frag_index_axis"


@irdl_op_definition
class FragmentIndexOp(IRDLOperation):
    """The row (axis 0) or column (axis 1) coordinate, within the
    fragment's own tile, of every element of a fragment, as i32 (the
    layout's element map): the coordinates from which masks are computed.
    A 1-D fragment has only axis 0 (`row`).

    Example: `%cols = nvgpu.frag_index col : !nvgpu.frag<64x128xi32, wgmma>`
    """

    name = "nvgpu.frag_index"
    axis = prop_def(FragIndexAxisAttr)
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$axis attr-dict `:` type($result)"

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, FragmentType)
        if len(t.get_shape()) not in (1, 2) or t.element_type != IntegerType(32):
            raise VerifyException(f"nvgpu.frag_index gives a 1-D or 2-D i32 fragment, got {t}")
        if len(t.get_shape()) <= self.axis_index():
            raise VerifyException(f"nvgpu.frag_index: a 1-D fragment has no axis 'col', got {t}")

    def axis_index(self) -> int:
        return 0 if self.axis.data == FragIndexAxis.ROW else 1


class FragmentCompareOp(IRDLOperation):
    """Elementwise comparison of a fragment with another one or a scalar,
    giving an i1 fragment (a mask): the syntax, construction and checks of
    `nvgpu.frag_cmpi` and `nvgpu.frag_cmpf`, whose `PREDICATES` and
    `ELEMENT` (the values compared) differ."""

    PREDICATES: ClassVar[type[StrEnum]]
    PREDICATE_ATTR: ClassVar[type[EnumAttribute]]  # type: ignore[type-arg]
    ELEMENT: ClassVar[Attribute]
    lhs = operand_def(FragmentType)
    rhs = operand_def(base(FragmentType) | base(IntegerType) | base(Float32Type))
    result = result_def(FragmentType)
    traits = traits_def(Pure())

    def __init__(self, predicate: StrEnum, lhs: SSAValue, rhs: SSAValue):
        lt = lhs.type
        assert isinstance(lt, FragmentType)
        super().__init__(operands=[lhs, rhs], properties={"predicate": self.PREDICATE_ATTR(predicate)},
                         result_types=[lt.with_element_type(i1)])

    @classmethod
    def parse(cls, parser: Parser) -> FragmentCompareOp:
        pos = parser.pos
        pred, lhs, rhs, attrs = parse_kind_and_operand_pair(parser, cls.PREDICATES, f"{cls.name} predicate", True)
        if not isinstance(lhs.type, FragmentType):
            parser.raise_error(f"{cls.name} compares fragments, got {lhs.type}", pos)
        op = cls(cls.PREDICATES(pred), lhs, rhs)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        print_kind_and_operand_pair(printer, self.predicate.data.value, self.lhs, self.rhs,  # type: ignore[attr-defined]
                                    self.attributes, True)

    def verify_(self) -> None:
        lt, et = self.lhs.type, self.ELEMENT
        assert isinstance(lt, FragmentType)
        if lt.element_type != et:
            raise VerifyException(f"{self.name} compares {et} fragments, got {lt}")
        if self.rhs.type not in (lt, et):
            raise VerifyException(f"{self.name} rhs must be {lt} or an {et} scalar, got {self.rhs.type}")
        if self.result.type != lt.with_element_type(i1):
            raise VerifyException(f"{self.name} result must be the i1 fragment of its operands' shape")


@irdl_op_definition
class FragmentCmpIOp(FragmentCompareOp):
    """Elementwise integer comparison of an i32 fragment with another one or
    an i32 scalar, giving an i1 fragment (a mask).

    Example: `%in = nvgpu.frag_cmpi slt, %cols, %n : !nvgpu.frag<64x128xi32, wgmma>, i32`
    """

    name = "nvgpu.frag_cmpi"
    PREDICATES: ClassVar = CmpIPredicate
    PREDICATE_ATTR: ClassVar = CmpIPredicateAttr
    ELEMENT: ClassVar = IntegerType(32)
    predicate = prop_def(CmpIPredicateAttr)


@irdl_op_definition
class FragmentCmpFOp(FragmentCompareOp):
    """Elementwise float comparison of an f32 fragment with another one or an
    f32 scalar, giving an i1 fragment (a mask of data: `tile.cmpf`'s
    predicates, ordered but for `une`).

    Example: `%pos = nvgpu.frag_cmpf ogt, %x, %zero : !nvgpu.frag<64x128xf32, wgmma>, f32`
    """

    name = "nvgpu.frag_cmpf"
    PREDICATES: ClassVar = CmpFPredicate
    PREDICATE_ATTR: ClassVar = CmpFPredicateAttr
    ELEMENT: ClassVar = Float32Type()
    predicate = prop_def(CmpFPredicateAttr)


@irdl_op_definition
class FragmentSelectOp(IRDLOperation):
    """Elementwise choice: `mask[i] ? true_value[i] : false_value[i]`, where
    `false_value` may be an f32 scalar used for every element.

    Example: `%s = nvgpu.frag_select %mask, %x, %ninf : !nvgpu.frag<64x128xi1, wgmma>, !nvgpu.frag<64x128xf32, wgmma>, f32`
    """

    name = "nvgpu.frag_select"
    T: ClassVar = VarConstraint("T", base(FragmentType))
    mask = operand_def(FragmentType)
    true_value = operand_def(T)
    false_value = operand_def(base(FragmentType) | base(Float32Type))
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = (
        "$mask `,` $true_value `,` $false_value attr-dict `:` type($mask) `,` type($true_value) `,` type($false_value)"
    )

    def verify_(self) -> None:
        mt, tt = self.mask.type, self.true_value.type
        assert isinstance(mt, FragmentType) and isinstance(tt, FragmentType)
        if mt != tt.with_element_type(i1):
            raise VerifyException(f"nvgpu.frag_select mask must be the i1 fragment of {tt}, got {mt}")
        if self.false_value.type not in (tt, tt.element_type):
            raise VerifyException(
                f"nvgpu.frag_select false value must be {tt} or a scalar {tt.element_type}, "
                f"got {self.false_value.type}"
            )


@irdl_op_definition
class FragmentZerosOp(IRDLOperation):
    """A fragment whose every element is zero.

    Example: `%z = nvgpu.frag_zeros : !nvgpu.frag<64x256xf32, wgmma>`
    """

    name = "nvgpu.frag_zeros"
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"


@irdl_op_definition
class FragmentUndefOp(IRDLOperation):
    """A fragment whose values are unspecified: its registers exist and
    nothing writes them.  It is the accumulator operand of a wgmma that does
    not accumulate (scale-d false: D = A·B), which ignores its values; a
    product that starts from zeros so needs no zeroed registers (64
    register writes per thread for a 64x128 f32 accumulator).  Its only uses
    are as the `acc` of `nvgpu.wgmma` / `nvgpu.wgmma_mma_async`.

    Example: `%u = nvgpu.frag_undef : !nvgpu.frag<64x128xf32, wgmma>`
    """

    name = "nvgpu.frag_undef"
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def verify_(self) -> None:
        for use in self.result.uses:
            if getattr(use.operation, "acc", None) is not self.result:
                raise VerifyException(f"nvgpu.frag_undef may only be a wgmma's accumulator, not an operand of "
                                      f"{use.operation.name}")


@irdl_op_definition
class FragmentStoreOp(IRDLOperation):
    """Epilogue store: converts each element of `fragment` (round to nearest
    even) to the memref's element type and writes the tile it spans (a
    64xN accumulator, a blocked tile, a 1-D vector along the memref's last
    dimension) at element offsets `offsets`; elements outside the memref
    are dropped.

    Example: `nvgpu.frag_store %d, %C[%m0, %n0] : !nvgpu.frag<64x256xf32, wgmma>, memref<?x?xbf16>`
    """

    name = "nvgpu.frag_store"
    fragment = operand_def(FragmentType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "$fragment `,` $dest `[` $offsets `]` attr-dict `:` type($fragment) `,` type($dest)"
    )

    def verify_(self) -> None:
        dest = self.dest.type
        assert isinstance(dest, MemRefType)
        if len(self.offsets) != dest.get_num_dims():
            raise VerifyException(
                f"nvgpu.frag_store expects {dest.get_num_dims()} offsets, got {len(self.offsets)}"
            )
        element_bytes(dest.get_element_type())


LOADABLE = (Float32Type, BFloat16Type, Float16Type)
"""Element types the consumers load from global memory in any layout."""
BLOCKED_FLOATS = (*LOADABLE, Float8E4M3FNType, Float8E5M2Type)
"""Element types of the tiles of blocked layouts (kernels without dots):
fp8 too, in packed pairs (a 16-byte vector is 16 values)."""


@irdl_op_definition
class FragmentLoadOp(IRDLOperation):
    """A consumer-side load: reads the tile that the result fragment spans,
    at element offsets `offsets` of `source` (a fragment of lower rank than
    the memref covers its trailing dimensions; same element type).
    Elements outside the memref read as 0.  Each thread reads the elements
    it holds in the fragment's layout (copies of a replicated element are
    read by every thread that holds one).

    Example: `%b = nvgpu.frag_load %Bias[%n0] : memref<?xbf16> -> !nvgpu.frag<256xbf16, wgmma_col>`
    """

    name = "nvgpu.frag_load"
    source = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    result = result_def(FragmentType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$source `[` $offsets `]` attr-dict `:` type($source) `->` type($result)"

    def verify_(self) -> None:
        st, rt = self.source.type, self.result.type
        assert isinstance(st, MemRefType) and isinstance(rt, FragmentType)
        if len(self.offsets) != st.get_num_dims():
            raise VerifyException(f"nvgpu.frag_load expects {st.get_num_dims()} offsets, got {len(self.offsets)}")
        if len(rt.get_shape()) > st.get_num_dims():
            raise VerifyException(f"nvgpu.frag_load: a {rt} has more dimensions than {st}")
        _check_global_access("nvgpu.frag_load", st.get_element_type(), rt)
        if rt.element_type != st.get_element_type():
            raise VerifyException(f"nvgpu.frag_load: a {rt} cannot hold the elements of {st}")


@irdl_op_definition
class FragmentLoadGlobalOp(IRDLOperation):
    """Reads every element a thread holds from global memory, the dual of
    `nvgpu.frag_store_global`: value i comes from byte address
    `address + row(i)·row_pitch + col(i)·bytes` (the layout's
    `value_offsets`; a 1-D fragment's one axis is a column).  Without a
    mask each vector of the layout is one load (the caller guarantees that
    every element is in bounds and every vector aligned); with an i1 `mask`
    fragment each element is loaded alone where its bit is set and is 0
    elsewhere; with the mask and `vector_mask`, the caller also guarantees
    that the mask is the same over each vector and every vector aligned, and
    each vector is loaded whole where its bits are set (one access, not one
    per element) and is 0 elsewhere.

    Example: `%c = nvgpu.frag_load_global %addr, %pitch : !nvgpu.frag<64x256xbf16, wgmma>`
    """

    name = "nvgpu.frag_load_global"
    address = operand_def(IndexType)
    row_pitch = operand_def(IndexType)
    mask = opt_operand_def(FragmentType)
    vector_mask = opt_prop_def(UnitAttr)
    result = result_def(FragmentType)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(MemoryReadEffect())
    assembly_format = (
        "$address `,` $row_pitch (`mask` $mask^)? attr-dict `:` type($result) (`,` type($mask)^)?"
    )

    def verify_(self) -> None:
        rt = self.result.type
        assert isinstance(rt, FragmentType)
        if len(rt.get_shape()) not in (1, 2):
            raise VerifyException(f"nvgpu.frag_load_global loads 1-D or 2-D fragments, got {rt}")
        _check_global_access("nvgpu.frag_load_global", rt.element_type, rt)
        if self.mask is not None and self.mask.type != rt.with_element_type(i1):
            raise VerifyException(
                f"nvgpu.frag_load_global mask must be {rt.with_element_type(i1)}, got {self.mask.type}"
            )
        if self.vector_mask is not None and self.mask is None:
            raise VerifyException("nvgpu.frag_load_global: vector_mask needs a mask")


def _check_global_access(name: str, element: Attribute, fragment: FragmentType) -> None:
    if isinstance(element, Float8E4M3FNType | Float8E5M2Type) and fragment.packed():
        return  # fp8 in packed pairs (a blocked layout's vectors)
    if not isinstance(element, LOADABLE):
        raise VerifyException(f"{name} reads f32, bf16 or f16 elements, or fp8 in packed pairs, got {element} "
                              f"in {fragment}")


@irdl_op_definition
class FragmentLoadSharedOp(IRDLOperation):
    """Reads rows [row, row + R) of stage `stage` of a shared-memory ring
    (a tile TMA wrote there, column chunks swizzled as `!nvgpu.smem` says)
    into registers: element (i, j) of the R x C fragment is element
    (row + i, j) of the stage's tile, and each thread reads the elements it
    holds in the fragment's layout.  The consumers' way to compute on a tile
    that a producer delivered (a wgmma A operand transformed in registers,
    an attention bias).

    Example: `%a = nvgpu.frag_load_shared %sa[%s, %row0] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> !nvgpu.frag<64x64xbf16, wgmma>`
    """

    name = "nvgpu.frag_load_shared"
    source = operand_def(SmemType)
    stage = operand_def(IndexType)
    row = operand_def(IndexType)
    result = result_def(FragmentType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$source `[` $stage `,` $row `]` attr-dict `:` type($source) `->` type($result)"

    def verify_(self) -> None:
        st, rt = self.source.type, self.result.type
        assert isinstance(st, SmemType) and isinstance(rt, FragmentType)
        rows, cols = st.get_shape()[-2:]
        shape = rt.get_shape()
        if len(shape) != 2 or shape[1] != cols or shape[0] > rows or rt.element_type != st.element_type:
            raise VerifyException(
                f"nvgpu.frag_load_shared reads whole rows of one stage of {st} into a fragment of its "
                f"element type, got {rt}"
            )
        _check_global_access("nvgpu.frag_load_shared", rt.element_type, rt)


@irdl_op_definition
class FragmentStoreSharedOp(IRDLOperation):
    """Writes a fragment into rows [row, row + R) of stage `stage` of a
    shared-memory buffer, the dual of `nvgpu.frag_load_shared`: element
    (i, j) of the R x C fragment goes to element (row + i, j) of the
    stage's tile, stored as `!nvgpu.smem` says (column chunks of one
    swizzle span, swizzled: the layout a TMA store reads).  Each thread
    writes the elements it holds in the fragment's layout, one
    `st.shared` per vector.  The TMA-store epilogue's staging write, and
    that of an 8-bit wgmma A operand (`tawa.transforms.lower.operand_staging`).

    Example: `nvgpu.frag_store_shared %c, %sc[%c0, %row0] : !nvgpu.frag<64x256xbf16, wgmma>, !nvgpu.smem<1x128x256xbf16, swizzle = 128>`
    """

    name = "nvgpu.frag_store_shared"
    fragment = operand_def(FragmentType)
    dest = operand_def(SmemType)
    stage = operand_def(IndexType)
    row = operand_def(IndexType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "$fragment `,` $dest `[` $stage `,` $row `]` attr-dict `:` type($fragment) `,` type($dest)"
    )

    def verify_(self) -> None:
        ft, st = self.fragment.type, self.dest.type
        assert isinstance(st, SmemType) and isinstance(ft, FragmentType)
        rows, cols = st.get_shape()[-2:]
        shape = ft.get_shape()
        if len(shape) != 2 or shape[1] != cols or shape[0] > rows or ft.element_type != st.element_type:
            raise VerifyException(
                f"nvgpu.frag_store_shared writes whole rows of one stage of {st} from a fragment of its "
                f"element type, got {ft}"
            )
        if not isinstance(ft.element_type, (*LOADABLE, Float8E4M3FNType, Float8E5M2Type)):
            raise VerifyException(
                f"nvgpu.frag_store_shared writes f32, bf16, f16 or fp8 elements, got {ft.element_type}"
            )
        if element_bytes(ft.element_type) == 1 and not ft.packed():
            raise VerifyException(f"nvgpu.frag_store_shared writes fp8 in packed pairs (vectors of 2), got {ft}")


@irdl_op_definition
class FragmentStoreGlobalOp(IRDLOperation):
    """Writes every element a thread holds to global memory: value i goes to
    byte address `address + row(i)·row_pitch + col(i)·bytes`, where
    (row(i), col(i)) is value i's offset from the thread's first element in
    the fragment's layout (`TiledLayout.value_offsets`; a 1-D fragment's
    one axis is a column) and `address` is the thread's own address of that
    first element.  Threads that hold copies of an element (a replicated
    layout) store the same value to the same address.  Without a mask each vector
    of the layout is one store (the caller guarantees that every element is
    in bounds and every vector aligned); with an i1 `mask` fragment each
    element is stored alone, and only where its mask bit is set; with the
    mask and `vector_mask` (the mask the same over each vector, every vector
    aligned: the caller's guarantee) each vector is one store where its bits
    are set.

    Example: `nvgpu.frag_store_global %v, %addr, %pitch : !nvgpu.frag<64x256xbf16, wgmma>`
    """

    name = "nvgpu.frag_store_global"
    values = operand_def(FragmentType)
    address = operand_def(IndexType)
    row_pitch = operand_def(IndexType)
    mask = opt_operand_def(FragmentType)
    vector_mask = opt_prop_def(UnitAttr)
    traits = traits_def(MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$values `,` $address `,` $row_pitch (`mask` $mask^)? attr-dict `:` type($values) (`,` type($mask)^)?"
    )

    def verify_(self) -> None:
        vt = self.values.type
        assert isinstance(vt, FragmentType)
        if len(vt.get_shape()) not in (1, 2):
            raise VerifyException(f"nvgpu.frag_store_global stores 1-D or 2-D fragments, got {vt}")
        if self.mask is not None and self.mask.type != vt.with_element_type(i1):
            raise VerifyException(
                f"nvgpu.frag_store_global mask must be {vt.with_element_type(i1)}, got {self.mask.type}"
            )
        if self.vector_mask is not None and self.mask is None:
            raise VerifyException("nvgpu.frag_store_global: vector_mask needs a mask")
