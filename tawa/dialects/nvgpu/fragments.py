"""nvgpu ops on register fragments: elementwise math, row reductions, masks, conversion, the epilogue store."""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    Float32Type,
    IndexType,
    IntegerType,
    MemRefType,
    i1,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tawa.dialects.common import (
    parse_kind_and_operand_pair,
    print_kind_and_operand_pair,
)
from tawa.dialects.tile import CmpIPredicate, CmpIPredicateAttr, ReduceKindAttr

from tawa.dialects.nvgpu.types import *  # noqa: F403


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

    Example: `%s = nvgpu.frag_binary mulf %acc, %alpha : !nvgpu.frag<64x256xf32, wgmma_acc>, f32`
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


@irdl_attr_definition
class FragUnaryKindAttr(EnumAttribute[FragUnaryKind], SpacedOpaqueSyntaxAttribute):
    """The elementwise function of `nvgpu.frag_unary` (`math.exp2`, `arith.negf`)."""

    name = "nvgpu.frag_unary_kind"


@irdl_op_definition
class FragmentUnaryOp(IRDLOperation):
    """Elementwise f32 function of a fragment (exp2 is the hardware's
    approximate `ex2`, as in every fast softmax).

    Example: `%p = nvgpu.frag_unary exp2 %s : !nvgpu.frag<64x128xf32, wgmma_acc>`
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
    """Reduces each row of a wgmma_acc fragment (max or sum over its N
    columns) to a wgmma_row fragment: each thread combines its own values of
    a row, then the 4 threads of a quad exchange theirs (butterfly shuffles).

    Example: `%m = nvgpu.frag_reduce max %s : !nvgpu.frag<64x128xf32, wgmma_acc> -> !nvgpu.frag<64xf32, wgmma_row>`
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
        if it.layout.data != FragmentLayout.WGMMA_ACC or rt.layout.data != FragmentLayout.WGMMA_ROW:
            raise VerifyException("nvgpu.frag_reduce reduces a wgmma_acc fragment to a wgmma_row one")


@irdl_op_definition
class FragmentBroadcastOp(IRDLOperation):
    """Repeats each row value of a wgmma_row fragment over the N columns of a
    wgmma_acc fragment (no data moves: each thread holds its rows' values).

    Example: `%mb = nvgpu.frag_broadcast %m : !nvgpu.frag<64xf32, wgmma_row> -> !nvgpu.frag<64x128xf32, wgmma_acc>`
    """

    name = "nvgpu.frag_broadcast"
    input = operand_def(FragmentType)
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        it, rt = self.input.type, self.result.type
        assert isinstance(it, FragmentType) and isinstance(rt, FragmentType)
        if it.layout.data != FragmentLayout.WGMMA_ROW or rt.layout.data != FragmentLayout.WGMMA_ACC:
            raise VerifyException("nvgpu.frag_broadcast repeats a wgmma_row fragment over a wgmma_acc one")


@irdl_op_definition
class FragmentConvertOp(IRDLOperation):
    """Converts a wgmma_acc fragment (f32) to a wgmma_a fragment of bf16 or
    f16 (round to nearest even), ready to be a wgmma's A operand in
    registers: the k16 block j of the A operand is accumulator registers
    8j..8j+7, packed in pairs — no data moves between threads.

    Example: `%pa = nvgpu.frag_convert %p : !nvgpu.frag<64x128xf32, wgmma_acc> -> !nvgpu.frag<64x128xbf16, wgmma_a>`
    """

    name = "nvgpu.frag_convert"
    input = operand_def(FragmentType)
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        it, rt = self.input.type, self.result.type
        assert isinstance(it, FragmentType) and isinstance(rt, FragmentType)
        if (
            it.layout.data != FragmentLayout.WGMMA_ACC
            or rt.layout.data != FragmentLayout.WGMMA_A
            or it.get_shape() != rt.get_shape()
        ):
            raise VerifyException(
                "nvgpu.frag_convert turns a wgmma_acc fragment into a wgmma_a fragment of the same shape"
            )


class FragIndexAxis(StrEnum):
    ROW = "row"
    COL = "col"


@irdl_attr_definition
class FragIndexAxisAttr(EnumAttribute[FragIndexAxis], SpacedOpaqueSyntaxAttribute):
    """Which coordinate `nvgpu.frag_index` gives."""

    name = "nvgpu.frag_index_axis"


@irdl_op_definition
class FragmentIndexOp(IRDLOperation):
    """The row (0..63, within the warp group's 64 rows) or column (0..N-1)
    of every element of a wgmma_acc fragment, as i32: the coordinates from
    which masks are computed.

    Example: `%cols = nvgpu.frag_index col : !nvgpu.frag<64x128xi32, wgmma_acc>`
    """

    name = "nvgpu.frag_index"
    axis = prop_def(FragIndexAxisAttr)
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$axis attr-dict `:` type($result)"

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, FragmentType)
        if t.layout.data != FragmentLayout.WGMMA_ACC or t.element_type != IntegerType(32):
            raise VerifyException(f"nvgpu.frag_index gives an i32 wgmma_acc fragment, got {t}")


@irdl_op_definition
class FragmentCmpIOp(IRDLOperation):
    """Elementwise integer comparison of an i32 fragment with another one or
    an i32 scalar, giving an i1 fragment (a mask).

    Example: `%in = nvgpu.frag_cmpi slt, %cols, %n : !nvgpu.frag<64x128xi32, wgmma_acc>, i32`
    """

    name = "nvgpu.frag_cmpi"
    predicate = prop_def(CmpIPredicateAttr)
    lhs = operand_def(FragmentType)
    rhs = operand_def(base(FragmentType) | base(IntegerType))
    result = result_def(FragmentType)
    traits = traits_def(Pure())

    def __init__(self, predicate: CmpIPredicate, lhs: SSAValue, rhs: SSAValue):
        lt = lhs.type
        assert isinstance(lt, FragmentType)
        super().__init__(
            operands=[lhs, rhs],
            properties={"predicate": CmpIPredicateAttr(predicate)},
            result_types=[FragmentType(lt.get_shape(), i1, lt.layout.data)],
        )

    @classmethod
    def parse(cls, parser: Parser) -> FragmentCmpIOp:
        pos = parser.pos
        pred, lhs, rhs, attrs = parse_kind_and_operand_pair(parser, CmpIPredicate, "nvgpu.frag_cmpi predicate", True)
        if not isinstance(lhs.type, FragmentType):
            parser.raise_error(f"nvgpu.frag_cmpi compares fragments, got {lhs.type}", pos)
        op = cls(CmpIPredicate(pred), lhs, rhs)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        print_kind_and_operand_pair(printer, self.predicate.data.value, self.lhs, self.rhs, self.attributes, True)

    def verify_(self) -> None:
        lt = self.lhs.type
        assert isinstance(lt, FragmentType)
        if lt.element_type != IntegerType(32):
            raise VerifyException(f"nvgpu.frag_cmpi compares i32 fragments, got {lt}")
        if self.rhs.type not in (lt, IntegerType(32)):
            raise VerifyException(
                f"nvgpu.frag_cmpi rhs must be {lt} or an i32 scalar, got {self.rhs.type}"
            )
        if self.result.type != FragmentType(lt.get_shape(), i1, lt.layout.data):
            raise VerifyException("nvgpu.frag_cmpi result must be the i1 fragment of its operands' shape")


@irdl_op_definition
class FragmentSelectOp(IRDLOperation):
    """Elementwise choice: `mask[i] ? true_value[i] : false_value[i]`, where
    `false_value` may be an f32 scalar used for every element.

    Example: `%s = nvgpu.frag_select %mask, %x, %ninf : !nvgpu.frag<64x128xi1, wgmma_acc>, !nvgpu.frag<64x128xf32, wgmma_acc>, f32`
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
        if mt != FragmentType(tt.get_shape(), i1, tt.layout.data):
            raise VerifyException(f"nvgpu.frag_select mask must be the i1 fragment of {tt}, got {mt}")
        if self.false_value.type not in (tt, tt.element_type):
            raise VerifyException(
                f"nvgpu.frag_select false value must be {tt} or a scalar {tt.element_type}, "
                f"got {self.false_value.type}"
            )


@irdl_op_definition
class FragmentZerosOp(IRDLOperation):
    """A fragment whose every element is zero.

    Example: `%z = nvgpu.frag_zeros : !nvgpu.frag<64x256xf32, wgmma_acc>`
    """

    name = "nvgpu.frag_zeros"
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"


@irdl_op_definition
class FragmentStoreOp(IRDLOperation):
    """Epilogue store: converts each element of `fragment` (round to nearest
    even) to the memref's element type and writes the 64xN tile at element
    offsets `offsets`; elements outside the memref are dropped.

    Example: `nvgpu.frag_store %d, %C[%m0, %n0] : !nvgpu.frag<64x256xf32, wgmma_acc>, memref<?x?xbf16>`
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
