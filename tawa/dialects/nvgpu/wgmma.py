"""nvgpu wgmma ops: descriptors, the asynchronous matrix product, fence / commit / wait."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I32,
    I64,
    Float32Type,
    IndexType,
    IntegerAttr,
    UnitAttr,
    i1,
)
from xdsl.ir import (
    Attribute,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
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

from tawa.dialects.common import (
    parse_count_and_values,
    print_count_and_values,
)
from tawa.dialects.nvgpu.layouts import WGMMA
from tawa.dialects.nvgpu.types import FragmentType, SmemType, WgmmaDescriptorType
from tawa.target.hopper import (
    WGMMA_DESCRIPTOR,
    WGMMA_M,
    WGMMA_MAX_N,
    WGMMA_N_STEP,
    WGMMA_OPERAND_TYPES,
    WgmmaOperandType,
)

DESCRIPTOR_UNIT = WGMMA_DESCRIPTOR.unit
DESCRIPTOR_OFFSET_BITS = WGMMA_DESCRIPTOR.field_bits


# --------------------------------------------------------------------------- wgmma


@irdl_op_definition
class WgmmaDescriptorOp(IRDLOperation):
    """The wgmma matrix descriptor of rows [row, row + R) of stage `stage` of
    `source`, where R is the result's row count (e.g. consumer c of a 128-row A
    tile takes rows [64c, 64c + 64)).

    With `columns` it is columns [row, row + C) of every row instead, C the
    result's column count: the M columns of an MN-major A (a K×M tile read
    with `lhs_transposed`) that a consumer owns.  `row` is then the first
    column, a multiple of the tile's swizzle span (the columns start a
    column chunk: consumers own multiples of 64 rows of M).

    Examples:
    `%da = nvgpu.wgmma_descriptor %sa[%s, %row] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>`
    `%da = nvgpu.wgmma_descriptor %sa[%s, %col] {columns} : !nvgpu.smem<4x64x128xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.wgmma_descriptor"
    source = operand_def(SmemType)
    stage = operand_def(IndexType)
    row = operand_def(IndexType)
    result = result_def(WgmmaDescriptorType)
    columns = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = (
        "$source `[` $stage `,` $row `]` attr-dict `:` type($source) `->` type($result)"
    )

    def verify_(self) -> None:
        src, desc = self.source.type, self.result.type
        assert isinstance(src, SmemType) and isinstance(desc, WgmmaDescriptorType)
        shape = src.get_shape()
        if len(shape) != 3:
            raise VerifyException(
                f"nvgpu.wgmma_descriptor source must be stages x rows x cols, got {src}"
            )
        rows, cols = desc.get_shape() if len(desc.get_shape()) == 2 else (0, 0)
        if self.columns is not None:
            if len(desc.get_shape()) != 2 or rows != shape[1] or cols > shape[2]:
                raise VerifyException(
                    f"nvgpu.wgmma_descriptor: {desc} is not a column range of the {shape[1]}x{shape[2]} "
                    f"tiles of {src}"
                )
        elif len(desc.get_shape()) != 2 or cols != shape[2] or rows > shape[1]:
            raise VerifyException(
                f"nvgpu.wgmma_descriptor: {desc} is not a row range of the {shape[1]}x{shape[2]} tiles of {src}"
            )
        if desc.element_type != src.element_type or desc.swizzle != src.swizzle:
            raise VerifyException(
                "nvgpu.wgmma_descriptor: element type and swizzle must match the source"
            )


WGMMA_TYPES = "bf16, f16, f8E4M3FN, f8E5M2 or f32 (tf32)"
REGISTER_LHS_BYTES = 2
"""A register lhs is a fragment of the `wgmma` layout, which is the A layout
of the 16-bit types only (fp8 and tf32 A fragments are laid out otherwise)."""


def operand_type(t: Attribute) -> WgmmaOperandType | None:
    """How wgmma takes operands of element type `t` (None: it does not)."""
    return WGMMA_OPERAND_TYPES.get(getattr(t, "name", ""))


class _WgmmaBase(IRDLOperation):
    """Operands, properties and checks shared by the whole-tile `nvgpu.wgmma`
    and the single-instruction `nvgpu.wgmma_mma_async`."""

    ACC: ClassVar = VarConstraint("ACC", base(FragmentType))
    lhs = operand_def(base(WgmmaDescriptorType) | base(FragmentType))
    rhs = operand_def(WgmmaDescriptorType)
    acc = operand_def(ACC)
    accumulate = operand_def(i1)
    result = result_def(ACC)
    rhs_transposed = opt_prop_def(UnitAttr)
    lhs_transposed = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(MemoryReadEffect())
    assembly_format = (
        "$lhs `,` $rhs `,` $acc `,` $accumulate attr-dict `:` type($lhs) `,` type($rhs) `,` type($result)"
    )

    def wgmma_types(self) -> tuple[WgmmaOperandType, WgmmaOperandType]:
        """How the instruction takes A and B (their PTX types); verified."""
        a, b = operand_type(self.lhs.type.element_type), operand_type(self.rhs.type.element_type)
        assert a is not None and b is not None
        return a, b

    def k_step(self) -> int:
        """K of one wgmma instruction for these operands (16; 32 for fp8; 8 for tf32)."""
        return self.wgmma_types()[0].k

    def m(self) -> int:
        """Rows of the product: the lhs descriptor's rows, or its columns
        when `lhs_transposed` (a KxM descriptor)."""
        lt = self.lhs.type
        assert isinstance(lt, WgmmaDescriptorType | FragmentType)
        return lt.get_shape()[1] if self.lhs_transposed is not None else lt.get_shape()[0]

    def lhs_k(self) -> int:
        """K of the lhs operand (its rows when `lhs_transposed`)."""
        lt = self.lhs.type
        assert isinstance(lt, WgmmaDescriptorType | FragmentType)
        return lt.get_shape()[0] if self.lhs_transposed is not None else lt.get_shape()[1]

    def n(self) -> int:
        rt = self.rhs.type
        assert isinstance(rt, WgmmaDescriptorType)
        return rt.get_shape()[0] if self.rhs_transposed is not None else rt.get_shape()[1]

    def verify_(self) -> None:
        lt, rt, at = self.lhs.type, self.rhs.type, self.acc.type
        assert isinstance(rt, WgmmaDescriptorType) and isinstance(at, FragmentType)
        if at.tiled_layout != WGMMA or not isinstance(at.element_type, Float32Type):
            raise VerifyException(f"{self.name} accumulator must be an f32 fragment of the wgmma layout")
        if isinstance(lt, FragmentType) and lt.tiled_layout != WGMMA:
            raise VerifyException(f"{self.name} register lhs must be a fragment of the wgmma layout")
        assert isinstance(lt, WgmmaDescriptorType | FragmentType)
        et, rt_et = lt.element_type, rt.element_type
        a, b = operand_type(et), operand_type(rt_et)
        if a is None or b is None or a.family != b.family:
            raise VerifyException(
                f"{self.name} operands must both be {WGMMA_TYPES} (fp8 formats may mix), got {et} and {rt_et}"
            )
        if isinstance(lt, FragmentType) and a.bytes != REGISTER_LHS_BYTES:
            raise VerifyException(
                f"{self.name} register lhs must be bf16 or f16 (the wgmma fragment layout is their A layout), got {et}"
            )
        if len(lt.get_shape()) != 2 or len(rt.get_shape()) != 2:
            raise VerifyException(f"{self.name} operands must be 2-D")
        if self.lhs_transposed is not None and isinstance(lt, FragmentType):
            raise VerifyException(
                f"{self.name} lhs_transposed reads an MN-major A from shared memory; a register lhs is "
                "M×K in the wgmma layout and has no transposed form"
            )
        if self.lhs_transposed is not None and not a.mn_major:
            raise VerifyException(
                f"{self.name} with {et} operands needs a K-major lhs: wgmma transposes only 16-bit operands"
            )
        m = self.m()
        n = self.n()
        if m % WGMMA_M or m <= 0 or (isinstance(lt, FragmentType) and m != WGMMA_M):
            raise VerifyException(
                f"{self.name} lhs must have {WGMMA_M} rows"
                + ("" if isinstance(lt, FragmentType) else f" or a multiple of {WGMMA_M}") + f", got {m}"
            )
        if n % WGMMA_N_STEP or not WGMMA_N_STEP <= n <= WGMMA_MAX_N:
            raise VerifyException(
                f"{self.name} N must be a multiple of {WGMMA_N_STEP} in [{WGMMA_N_STEP}, {WGMMA_MAX_N}], got {n}"
            )
        if at.get_shape() != (m, n):
            raise VerifyException(f"{self.name} accumulator must be {m}x{n}, got {at}")
        if not b.mn_major and self.rhs_transposed is None:
            raise VerifyException(
                f"{self.name} with {rt_et} operands needs a K-major rhs: wgmma transposes only 16-bit operands"
            )


@irdl_op_definition
class WgmmaOp(_WgmmaBase):
    """`wgmma.mma_async` over a whole tile: `result = lhs · rhs (+ acc if
    accumulate)`, issued by one warp group, asynchronous until a
    `nvgpu.wgmma_wait_group` returns the fragment.

    Operands are bf16, f16, fp8 (f8E4M3FN and f8E5M2, mixed as wanted) or
    f32, read as tf32 (`tawa.target.hopper.WGMMA_OPERAND_TYPES`).
    `lhs` is an MxK descriptor, M a multiple of 64 (a warp group that owns
    M rows: one instruction per 64-row block), or a bf16/f16 64xK `wgmma`
    register fragment; the accumulator is MxN; `rhs` is an
    NxK descriptor when `rhs_transposed` (K-major, PTX imm-trans-b = 0) and a
    KxN one otherwise (MN-major, imm-trans-b = 1; 16-bit types only).
    With `lhs_transposed` the lhs is a KxM descriptor read MN-major
    (imm-trans-a = 1; 16-bit types only, never a register lhs): the A of
    `Aᵀ·B` where A is stored K×M.
    `tawa-expand-wgmma` turns it into M/64 · K/16 (K/32 for fp8, K/8 for
    tf32) `nvgpu.wgmma_mma_async`.  `accumulate`
    is wgmma's scale-d predicate: false makes the first instruction
    overwrite the accumulator.

    Example:
    `%d = nvgpu.wgmma %da, %db, %acc, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>`
    """

    name = "nvgpu.wgmma"

    def verify_(self) -> None:
        super().verify_()
        lt, rt = self.lhs.type, self.rhs.type
        assert isinstance(lt, WgmmaDescriptorType | FragmentType) and isinstance(rt, WgmmaDescriptorType)
        k = self.lhs_k()
        k2 = rt.get_shape()[1] if self.rhs_transposed is not None else rt.get_shape()[0]
        if k != k2 or k % self.k_step():
            raise VerifyException(
                f"nvgpu.wgmma contraction sizes must agree and be a multiple of "
                f"{self.k_step()}: lhs K={k}, rhs K={k2}"
            )


@irdl_op_definition
class WgmmaMmaAsyncOp(_WgmmaBase):
    """One `wgmma.mma_async.sync.aligned.m64nNkK` instruction (K = 16; 32
    for fp8; 8 for tf32): the contraction over the K elements that its operands start
    at.  A descriptor operand is read from its start address with its
    layout's strides (`nvgpu.wgmma_desc_advance` moves it to a k-step, or
    to another 64-row block of A); a register lhs is a 64xK fragment
    (`nvgpu.wgmma_k_slice`).

    The accumulator holds 64·R rows (a warp group that owns R row blocks):
    the instruction reads and writes rows [64·`row_block`, 64·`row_block` +
    64) of it (in the `wgmma` layout, a contiguous run of each thread's
    values: `TiledLayout.slice_values` along the rows) and the result
    carries the other rows over unchanged.  `row_block` is 0 when absent.

    Example:
    `%d = nvgpu.wgmma_mma_async %da1, %db1, %acc, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>`
    `%e = nvgpu.wgmma_mma_async %da2, %db1, %acc2, %true {rhs_transposed, row_block = 1 : i64} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>, !nvgpu.frag<128x128xf32, wgmma>`
    """

    name = "nvgpu.wgmma_mma_async"
    row_block = opt_prop_def(IntegerAttr[I64])

    def block(self) -> int:
        """The accumulator's row block this instruction computes."""
        return 0 if self.row_block is None else self.row_block.value.data

    def row_blocks(self) -> int:
        """Row blocks of 64 rows in the accumulator."""
        at = self.acc.type
        assert isinstance(at, FragmentType)
        return max(1, at.get_shape()[0] // WGMMA_M)

    def block_values(self) -> tuple[int, ...]:
        """The accumulator's values (per thread) that this instruction
        reads and writes: those of its row block."""
        at = self.acc.type
        assert isinstance(at, FragmentType)
        return at.tiled_layout.slice_values(at.get_shape(), 0, WGMMA_M * self.block(), WGMMA_M)

    def verify_(self) -> None:
        at = self.acc.type
        assert isinstance(at, FragmentType)
        if at.get_shape() and at.get_shape()[0] % WGMMA_M:
            raise VerifyException(f"{self.name} accumulator rows must be a multiple of {WGMMA_M}, got {at}")
        if not 0 <= self.block() < self.row_blocks():
            raise VerifyException(
                f"{self.name} row_block {self.block()} is outside the {self.row_blocks()} row blocks of {at}"
            )
        super().verify_()
        lt = self.lhs.type
        if isinstance(lt, FragmentType) and lt.get_shape()[1] != self.k_step():
            raise VerifyException(
                f"nvgpu.wgmma_mma_async register lhs must be 64x{self.k_step()}, got {lt}"
            )


@irdl_op_definition
class WgmmaDescAdvanceOp(IRDLOperation):
    """The descriptor `offset` bytes further on in shared memory (a k-step of
    its tile): the same layout fields, start address + offset.

    Example: `%d1 = nvgpu.wgmma_desc_advance %d, 32 : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.wgmma_desc_advance"
    T: ClassVar = VarConstraint("T", base(WgmmaDescriptorType))
    source = operand_def(T)
    offset = prop_def(IntegerAttr[I64])
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$source `,` $offset attr-dict `:` type($result)"

    def __init__(self, source: SSAValue, offset: int):
        super().__init__(
            operands=[source], properties={"offset": IntegerAttr(offset, 64)}, result_types=[source.type]
        )

    def verify_(self) -> None:
        off = self.offset.value.data
        if off < 0 or off % DESCRIPTOR_UNIT:
            raise VerifyException(
                f"nvgpu.wgmma_desc_advance offset must be a non-negative multiple of {DESCRIPTOR_UNIT}, got {off}"
            )


@irdl_op_definition
class WgmmaDescEncodeOp(IRDLOperation):
    """The 64-bit wgmma matrix descriptor of the tile at shared address
    `address` (32-bit, shared::cta): the address and the layout fields of
    the PTX ISA's matrix-descriptor format, in bytes (leading and stride
    byte offsets) and swizzle bytes.

    Example: `%d = nvgpu.wgmma_desc_encode %a lbo(8192) sbo(1024) swizzle(128) : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.wgmma_desc_encode"
    address = operand_def(I32)
    leading_byte_offset = prop_def(IntegerAttr[I64])
    stride_byte_offset = prop_def(IntegerAttr[I64])
    swizzle = prop_def(IntegerAttr[I64])
    result = result_def(WgmmaDescriptorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$address `lbo` `(` $leading_byte_offset `)` `sbo` `(` $stride_byte_offset `)` "
        "`swizzle` `(` $swizzle `)` attr-dict `:` type($result)"
    )

    def __init__(self, address: SSAValue, lbo: int, sbo: int, swizzle: int, type: WgmmaDescriptorType):
        super().__init__(
            operands=[address],
            properties={
                "leading_byte_offset": IntegerAttr(lbo, 64),
                "stride_byte_offset": IntegerAttr(sbo, 64),
                "swizzle": IntegerAttr(swizzle, 64),
            },
            result_types=[type],
        )

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, WgmmaDescriptorType)
        if self.swizzle.value.data != t.swizzle.data:
            raise VerifyException(
                f"nvgpu.wgmma_desc_encode swizzle {self.swizzle.value.data} differs from the type's {t.swizzle.data}"
            )
        limit = DESCRIPTOR_UNIT << DESCRIPTOR_OFFSET_BITS
        for what, v in (("lbo", self.leading_byte_offset), ("sbo", self.stride_byte_offset)):
            b = v.value.data
            if b < 0 or b % DESCRIPTOR_UNIT or b >= limit:
                raise VerifyException(
                    f"nvgpu.wgmma_desc_encode {what} must be a multiple of {DESCRIPTOR_UNIT} below {limit}, got {b}"
                )


@irdl_op_definition
class WgmmaKSliceOp(IRDLOperation):
    """Column slice `index` of a fragment: columns [index·k, (index+1)·k)
    of `source`, k the result's column count, held by the same threads in
    the same layout (`TiledLayout.slice_values`; for `wgmma` and k16, packed
    registers 4·index .. 4·index+3).  No data moves: the result names the
    source's registers.  The K-step of a register lhs of wgmma, and a
    column chunk of the subtiled TMA-store epilogue.

    Example: `%a1 = nvgpu.wgmma_k_slice %a[1] : !nvgpu.frag<64x64xbf16, wgmma> -> !nvgpu.frag<64x16xbf16, wgmma>`
    """

    name = "nvgpu.wgmma_k_slice"
    source = operand_def(FragmentType)
    index = prop_def(IntegerAttr[I64])
    result = result_def(FragmentType)
    traits = traits_def(Pure())
    assembly_format = "$source `[` $index `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, index: int, type: FragmentType):
        super().__init__(operands=[source], properties={"index": IntegerAttr(index, 64)}, result_types=[type])

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        assert isinstance(src, FragmentType) and isinstance(res, FragmentType)
        if src.element_type != res.element_type or src.tiled_layout != res.tiled_layout:
            raise VerifyException("nvgpu.wgmma_k_slice must keep the element type and layout")
        if src.get_shape()[:-1] != res.get_shape()[:-1]:
            raise VerifyException(f"nvgpu.wgmma_k_slice keeps the rows: {res} is not a column slice of {src}")
        k, j = res.get_shape()[-1], self.index.value.data
        if not 0 <= j or (j + 1) * k > src.get_shape()[-1]:
            raise VerifyException(
                f"nvgpu.wgmma_k_slice {j} of {res} is outside {src}"
            )
        try:
            self.source_values()
        except ValueError as err:
            raise VerifyException(f"nvgpu.wgmma_k_slice: {err}") from None

    def source_values(self) -> tuple[int, ...]:
        """The source's values that the slice's values are, in order."""
        src, res = self.source.type, self.result.type
        assert isinstance(src, FragmentType) and isinstance(res, FragmentType)
        k = res.get_shape()[-1]
        axis = len(src.get_shape()) - 1
        return src.tiled_layout.slice_values(src.get_shape(), axis, self.index.value.data * k, k)


@irdl_op_definition
class WgmmaFenceOp(IRDLOperation):
    """`wgmma.fence`: orders register and shared-memory accesses before the
    following wgmma ops of this warp group.

    Example: `nvgpu.wgmma_fence`
    """

    name = "nvgpu.wgmma_fence"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


@irdl_op_definition
class WgmmaCommitGroupOp(IRDLOperation):
    """`wgmma.commit_group`: closes the group of wgmma ops issued since the last
    commit.

    Example: `nvgpu.wgmma_commit_group`
    """

    name = "nvgpu.wgmma_commit_group"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


@irdl_op_definition
class WgmmaWaitGroupOp(IRDLOperation):
    """`wgmma.wait_group pending`: waits until at most `pending` (0..7) committed
    groups are in flight.  Its results are its `fragments`, now complete: the
    SSA edge orders every later use of a wgmma result after the wait.

    Example: `%d1 = nvgpu.wgmma_wait_group 1 (%d) : !nvgpu.frag<64x256xf32, wgmma>`
    """

    name = "nvgpu.wgmma_wait_group"
    pending = prop_def(IntegerAttr[I32])
    fragments = var_operand_def(FragmentType)
    results_ = var_result_def(FragmentType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, pending: int, fragments: Sequence[SSAValue]):
        super().__init__(
            properties={"pending": IntegerAttr(pending, 32)},
            operands=[fragments],
            result_types=[[f.type for f in fragments]],
        )

    @classmethod
    def parse(cls, parser: Parser) -> WgmmaWaitGroupOp:
        pending, fragments, attrs = parse_count_and_values(parser, "nvgpu.wgmma_wait_group")
        op = cls(pending, fragments)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        print_count_and_values(printer, self.pending.value.data, self.fragments, self.attributes)

    def verify_(self) -> None:
        if not 0 <= self.pending.value.data <= 7:
            raise VerifyException(
                f"nvgpu.wgmma_wait_group pending must be in [0, 7], got {self.pending.value.data}"
            )
        if [f.type for f in self.fragments] != [r.type for r in self.results_]:
            raise VerifyException("nvgpu.wgmma_wait_group results must have the fragments' types")
