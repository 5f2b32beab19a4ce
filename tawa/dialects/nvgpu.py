"""The `nvgpu` dialect: Hopper (sm_90a) operations, one step above PTX.

This is tawa's own dialect (upstream MLIR's `nvgpu` has other ops).  Each op
prints to one PTX instruction or a short fixed sequence; registers, unrolled
wgmma sequences and fragment element loops are expanded by the PTX printer, so
an accumulator fragment is one SSA value and a whole-tile wgmma is one op.

Shared memory is laid out by the lowering: every `nvgpu.smem_alloc` names its
byte offset in the kernel's dynamic shared memory.  Buffers of TMA tiles have a
leading stage dimension (`!nvgpu.smem<4x128x64xbf16, swizzle = 128>` is four
128×64 bf16 tiles), barriers come in arrays (`!nvgpu.mbarrier<4>`).  Ops with
side effects declare them, so xdsl's DCE and CSE leave them alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I32,
    I64,
    ArrayAttr,
    BFloat16Type,
    Float8E4M3FNType,
    Float16Type,
    Float32Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
    UnitAttr,
    i1,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AnyOf,
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
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tawa.dialects.common import (
    GridAxisOp,
    parse_count_and_values,
    parse_kind_and_operand_pair,
    print_count_and_values,
    print_kind_and_operand_pair,
)
from tawa.dialects.tile import CmpIPredicate, CmpIPredicateAttr, ReduceKindAttr

SWIZZLES = (0, 32, 64, 128)
# A swizzled buffer must start at a multiple of the swizzle pattern's period
# (8 rows of the swizzle span); unswizzled TMA destinations need 128 bytes.
SMEM_ALIGNMENT = {0: 128, 32: 256, 64: 512, 128: 1024}
MBARRIER_BYTES = 8
MAX_MBARRIER_COUNT = (1 << 20) - 1  # arrival counts and tx-counts are 20-bit
MAX_TMA_BOX_DIM = 256
WGMMA_M = 64
WGMMA_MAX_N = 256


def element_bytes(t: Attribute) -> int:
    """Size in bytes of one element of a float or integer type."""
    if isinstance(t, Float8E4M3FNType):
        return 1
    if isinstance(t, BFloat16Type | Float16Type):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, IntegerType):
        return max(1, t.width.data // 8)
    raise VerifyException(f"unsupported element type {t}")


class _ShapedSwizzled(ParametrizedAttribute, TypeAttribute):
    """Shared syntax of the shared-memory tile types: `<AxBxT, swizzle = S>`.

    With a swizzle of S bytes, rows are a multiple of S bytes; rows wider
    than S are stored as column chunks of S bytes (`chunk_columns`), the
    layout TMA writes with one box per chunk and wgmma reads through the
    descriptor's leading byte offset."""

    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    swizzle: IntAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, swizzle: int = 0):
        super().__init__(
            ArrayAttr(IntAttr(d) for d in shape), element_type, IntAttr(swizzle)
        )

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    def num_bytes(self) -> int:
        n = element_bytes(self.element_type)
        for d in self.get_shape():
            n *= d
        return n

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dims, elt = parser.parse_ranked_shape()
            swizzle = 0
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("swizzle")
                parser.parse_punctuation("=")
                swizzle = parser.parse_integer(allow_boolean=False)
        return (ArrayAttr(IntAttr(d) for d in dims), elt, IntAttr(swizzle))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("".join(f"{d}x" for d in self.get_shape()))
            printer.print_attribute(self.element_type)
            if self.swizzle.data:
                printer.print_string(f", swizzle = {self.swizzle.data}")

    def verify(self) -> None:
        shape = self.get_shape()
        if not shape or any(d <= 0 for d in shape):
            raise VerifyException(f"{self.name} needs positive static dims, got {list(shape)}")
        if self.swizzle.data not in SWIZZLES:
            raise VerifyException(
                f"{self.name} swizzle must be one of {SWIZZLES} bytes, got {self.swizzle.data}"
            )
        row_bytes = shape[-1] * element_bytes(self.element_type)
        if self.swizzle.data and row_bytes % self.swizzle.data:
            raise VerifyException(
                f"{self.name}: a {self.swizzle.data}B-swizzled tile needs rows of a multiple of "
                f"{self.swizzle.data} bytes, got {row_bytes}"
            )

    def chunk_columns(self) -> int:
        """Columns per chunk: a swizzled tile whose rows are wider than the
        swizzle span is stored as column chunks of one span each (chunk c
        holds columns [c·w, (c+1)·w) of every row; chunks follow each other)."""
        cols = self.get_shape()[-1]
        if not self.swizzle.data:
            return cols
        return min(cols, self.swizzle.data // element_bytes(self.element_type))


@irdl_attr_definition
class SmemType(_ShapedSwizzled):
    """A buffer in shared memory: usually `stages x rows x cols` tiles, written
    by TMA with the given swizzle and read by wgmma.

    Syntax: `!nvgpu.smem<4x128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.smem"


@irdl_attr_definition
class TmaDescriptorType(_ShapedSwizzled):
    """A TMA tensor map over a global tensor, moving boxes of the given shape
    (outermost dimension first) with the given swizzle.  It is passed to the
    kernel as a 128-byte parameter, built by the runtime.

    Syntax: `!nvgpu.tma_desc<128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.tma_desc"


@irdl_attr_definition
class WgmmaDescriptorType(_ShapedSwizzled):
    """A wgmma shared-memory matrix descriptor: a `rows x cols` tile in shared
    memory with the given swizzle (the 64-bit value of the PTX ISA's
    matrix-descriptor format).

    Syntax: `!nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.wgmma_desc"


@irdl_attr_definition
class MBarrierType(ParametrizedAttribute, TypeAttribute):
    """An array of `count` mbarriers (64-bit objects) in shared memory.

    Syntax: `!nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier"
    count: IntAttr

    def __init__(self, count: int):
        super().__init__(IntAttr(count))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (IntAttr(parser.parse_integer(allow_boolean=False)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.count.data}>")

    def verify(self) -> None:
        if self.count.data < 1:
            raise VerifyException(f"nvgpu.mbarrier count must be positive, got {self.count.data}")


class FragmentLayout(StrEnum):
    WGMMA_ACC = "wgmma_acc"
    """The 64xN f32 wgmma accumulator of one warp group: thread t of the group
    holds N/2 values, value i at row 16*(t/32) + (t%32)/4 + 8*((i/2)%2) and
    column 8*(i/4) + 2*(t%4) + i%2."""
    WGMMA_A = "wgmma_a"
    """A 64xK 16-bit wgmma A operand in registers (same row/column map as the
    accumulator, two values per 32-bit register)."""
    WGMMA_ROW = "wgmma_row"
    """One f32 per row of a 64-row wgmma_acc fragment (a row reduction): thread
    t holds rows 16*(t/32) + (t%32)/4 and that + 8, the same in the 4 threads
    of a quad."""


@irdl_attr_definition
class FragmentLayoutAttr(EnumAttribute[FragmentLayout], SpacedOpaqueSyntaxAttribute):
    """How a fragment's elements are spread over a warp group's registers."""

    name = "nvgpu.fragment_layout"


@irdl_attr_definition
class FragmentType(ParametrizedAttribute, TypeAttribute):
    """A tile held in the registers of one warp group, in a given layout.

    Syntax: `!nvgpu.frag<64x256xf32, wgmma_acc>`
    """

    name = "nvgpu.frag"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    layout: FragmentLayoutAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, layout: FragmentLayout):
        super().__init__(
            ArrayAttr(IntAttr(d) for d in shape), element_type, FragmentLayoutAttr(layout)
        )

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dims, elt = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            pos = parser.pos
            name = parser.parse_identifier()
            if name not in FragmentLayout.__members__.values():
                parser.raise_error(f"unknown fragment layout '{name}'", pos)
        return (ArrayAttr(IntAttr(d) for d in dims), elt, FragmentLayoutAttr(FragmentLayout(name)))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("".join(f"{d}x" for d in self.get_shape()))
            printer.print_attribute(self.element_type)
            printer.print_string(f", {self.layout.data.value}")

    def registers(self) -> int:
        """32-bit registers per thread (one per f32 value; 16-bit values pair up)."""
        if self.layout.data == FragmentLayout.WGMMA_ROW:
            return 2
        rows, cols = self.get_shape()
        regs = rows * cols // 128
        return regs // 2 if self.layout.data == FragmentLayout.WGMMA_A else regs

    def verify(self) -> None:
        shape = self.get_shape()
        layout = self.layout.data
        if layout == FragmentLayout.WGMMA_ROW:
            if shape != (WGMMA_M,) or not isinstance(self.element_type, Float32Type):
                raise VerifyException(f"nvgpu.frag of layout wgmma_row must be 64xf32, got {list(shape)}")
            return
        if len(shape) != 2 or shape[0] != WGMMA_M or shape[1] % 8 or shape[1] <= 0:
            raise VerifyException(
                f"nvgpu.frag of layout {self.layout.data.value} must be 64xN with N a "
                f"positive multiple of 8, got {list(shape)}"
            )
        if layout == FragmentLayout.WGMMA_ACC and not (
            isinstance(self.element_type, Float32Type) or self.element_type in (IntegerType(32), i1)
        ):
            raise VerifyException("nvgpu.frag wgmma_acc fragments hold f32 (or i32 / i1 for masks)")
        if layout == FragmentLayout.WGMMA_A and not isinstance(
            self.element_type, BFloat16Type | Float16Type
        ):
            raise VerifyException("nvgpu.frag wgmma_a fragments hold bf16 or f16")


class RegAction(StrEnum):
    INC = "inc"
    DEC = "dec"


@irdl_attr_definition
class RegActionAttr(EnumAttribute[RegAction], SpacedOpaqueSyntaxAttribute):
    """Whether `setmaxnreg` raises or lowers the register budget."""

    name = "nvgpu.reg_action"


# --------------------------------------------------------------------------- helpers


def _positive_prop(value: int, limit: int, what: str) -> None:
    if not 0 < value <= limit:
        raise VerifyException(f"{what} must be in [1, {limit}], got {value}")


# --------------------------------------------------------------------------- memory


@irdl_op_definition
class SmemAllocOp(IRDLOperation):
    """Names the buffer at byte `offset` of the kernel's dynamic shared memory.

    The offset must respect the buffer's alignment: 1024 bytes for 128B
    swizzle (512 / 256 for 64B / 32B), 128 bytes for unswizzled tiles and 8
    bytes for mbarriers.

    Example: `%a = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.smem_alloc"
    offset = prop_def(IntegerAttr[I64])
    result = result_def(base(SmemType) | base(MBarrierType))
    traits = traits_def(Pure())
    assembly_format = "`offset` `(` $offset `)` attr-dict `:` type($result)"

    def __init__(self, offset: int, type: SmemType | MBarrierType):
        super().__init__(properties={"offset": IntegerAttr(offset, 64)}, result_types=[type])

    def alignment(self) -> int:
        t = self.result.type
        if isinstance(t, MBarrierType):
            return MBARRIER_BYTES
        assert isinstance(t, SmemType)
        return SMEM_ALIGNMENT[t.swizzle.data]

    def num_bytes(self) -> int:
        t = self.result.type
        if isinstance(t, MBarrierType):
            return MBARRIER_BYTES * t.count.data
        assert isinstance(t, SmemType)
        return t.num_bytes()

    def verify_(self) -> None:
        off = self.offset.value.data
        if off < 0 or off % self.alignment():
            raise VerifyException(
                f"nvgpu.smem_alloc offset {off} must be a non-negative multiple of "
                f"{self.alignment()} for {self.result.type}"
            )


# --------------------------------------------------------------------------- mbarriers


class _MBarrierOp(IRDLOperation):
    """Common fields: `barriers[index]` selects one mbarrier of an array."""

    barriers = operand_def(MBarrierType)
    index = operand_def(IndexType)


@irdl_op_definition
class MBarrierInitOp(_MBarrierOp):
    """`mbarrier.init`: phase 0, expecting `count` arrivals per phase.  Executed
    by one thread, before a fence and a CTA-wide barrier.

    Example: `nvgpu.mbarrier_init %full[%i], 1 : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_init"
    count = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$barriers `[` $index `]` `,` $count attr-dict `:` type($barriers)"

    def verify_(self) -> None:
        _positive_prop(self.count.value.data, MAX_MBARRIER_COUNT, "mbarrier_init count")


@irdl_op_definition
class MBarrierArriveOp(_MBarrierOp):
    """`mbarrier.arrive`: one arrival of the executing thread.

    Example: `nvgpu.mbarrier_arrive %empty[%s] : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_arrive"
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$barriers `[` $index `]` attr-dict `:` type($barriers)"


@irdl_op_definition
class MBarrierArriveExpectTxOp(_MBarrierOp):
    """`mbarrier.arrive.expect_tx`: one arrival, and `bytes` more bytes of
    asynchronous transactions (TMA) expected before the phase can complete.

    Example: `nvgpu.mbarrier_arrive_expect_tx %full[%s], 49152 : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_arrive_expect_tx"
    bytes = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$barriers `[` $index `]` `,` $bytes attr-dict `:` type($barriers)"

    def verify_(self) -> None:
        _positive_prop(self.bytes.value.data, MAX_MBARRIER_COUNT, "expect_tx bytes")


@irdl_op_definition
class MBarrierTryWaitParityOp(_MBarrierOp):
    """`mbarrier.try_wait.parity`: true once the phase with parity `parity`
    (0 or 1) of the barrier has completed.  It may also return false after a
    time limit, so callers loop.

    Example: `%done = nvgpu.mbarrier_try_wait_parity %full[%s], %ph : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_try_wait_parity"
    barriers = operand_def(MBarrierType)  # redeclared: keeps (barriers, index, parity) order
    index = operand_def(IndexType)
    parity = operand_def(IndexType)
    result = result_def(i1)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$barriers `[` $index `]` `,` $parity attr-dict `:` type($barriers)"
    )


@irdl_op_definition
class MBarrierWaitParityOp(_MBarrierOp):
    """Blocks until the phase with parity `parity` has completed: a loop on
    `mbarrier.try_wait.parity` (acquire semantics: TMA writes that completed
    the phase are visible afterwards).

    Example: `nvgpu.mbarrier_wait_parity %full[%s], %ph : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_wait_parity"
    barriers = operand_def(MBarrierType)  # redeclared: keeps (barriers, index, parity) order
    index = operand_def(IndexType)
    parity = operand_def(IndexType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$barriers `[` $index `]` `,` $parity attr-dict `:` type($barriers)"
    )


@irdl_op_definition
class SmemTileOp(IRDLOperation):
    """The tile held in stage `stage` of `source`, read in place (no copy).

    The bridge between `tawa-lower-aref` (which turns the values an
    `aref.get` returns into the slot they were written to) and
    `tawa-lower-tile` (which feeds such tiles to wgmma through descriptors);
    none survives lowering.

    Example: `%a = nvgpu.smem_tile %sa[%s] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> tensor<128x64xbf16>`
    """

    name = "nvgpu.smem_tile"
    source = operand_def(SmemType)
    stage = operand_def(IndexType)
    result = result_def(TensorType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$source `[` $stage `]` attr-dict `:` type($source) `->` type($result)"

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        assert isinstance(src, SmemType) and isinstance(res, TensorType)
        if tuple(res.get_shape()) != src.get_shape()[1:] or res.get_element_type() != src.element_type:
            raise VerifyException(
                f"nvgpu.smem_tile result must be one stage of {src}, got {res}"
            )


# --------------------------------------------------------------------------- TMA


def _box_matches_tile(box: Sequence[int], tile: Sequence[int]) -> bool:
    """A TMA box matches a tile when they agree after dropping the box's
    leading extent-1 dimensions (a 1x128x128 box fills a 128x128 tile)."""
    box = list(box)
    while len(box) > len(tile) and box[0] == 1:
        box.pop(0)
    return tuple(box) == tuple(tile)


@irdl_op_definition
class TmaDescriptorOp(IRDLOperation):
    """Declares that the kernel argument `source` is accessed through a TMA
    tensor map with the result's box and swizzle.  The runtime builds the map
    (`cuTensorMapEncodeTiled`) and passes it as a 128-byte kernel parameter.

    Example: `%ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.tma_descriptor"
    source = operand_def(MemRefType)
    result = result_def(TmaDescriptorType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def verify_(self) -> None:
        src, desc = self.source.type, self.result.type
        assert isinstance(src, MemRefType) and isinstance(desc, TmaDescriptorType)
        box = desc.get_shape()
        if len(box) != src.get_num_dims():
            raise VerifyException(
                f"nvgpu.tma_descriptor box rank {len(box)} differs from the memref rank "
                f"{src.get_num_dims()}"
            )
        if desc.element_type != src.get_element_type():
            raise VerifyException(
                f"nvgpu.tma_descriptor element type {desc.element_type} differs from the "
                f"memref's {src.get_element_type()}"
            )
        if any(d > MAX_TMA_BOX_DIM for d in box):
            raise VerifyException(
                f"nvgpu.tma_descriptor box dims must be at most {MAX_TMA_BOX_DIM}, got {list(box)}"
            )
        if (box[-1] * element_bytes(desc.element_type)) % 16:
            raise VerifyException(
                "nvgpu.tma_descriptor inner box dimension must span a multiple of 16 bytes"
            )


def _verify_tma_tile(desc: Attribute, coords: Sequence[SSAValue], smem: Attribute, what: str) -> None:
    assert isinstance(desc, TmaDescriptorType) and isinstance(smem, SmemType)
    box = desc.get_shape()
    if len(coords) != len(box):
        raise VerifyException(f"{what} expects {len(box)} coordinates, got {len(coords)}")
    if not _box_matches_tile(box, smem.get_shape()[1:]):
        raise VerifyException(
            f"{what}: box {list(box)} does not match the shared-memory tile "
            f"{list(smem.get_shape()[1:])}"
        )
    if desc.element_type != smem.element_type or desc.swizzle != smem.swizzle:
        raise VerifyException(
            f"{what}: element type and swizzle of {desc} and {smem} differ"
        )


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """`cp.async.bulk.tensor` global → shared: copies the box at element
    coordinates `coords` (outermost first; out-of-bounds elements read 0) into
    stage `stage` of `dest`, and completes the transaction bytes on
    `barriers[barrier_index]`.  Issued by one thread.

    Example:
    `nvgpu.tma_load %ta[%m0, %k], %sa[%s], %full[%s] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.tma_load"
    desc = operand_def(TmaDescriptorType)
    coords = var_operand_def(IndexType)
    dest = operand_def(SmemType)
    stage = operand_def(IndexType)
    barriers = operand_def(MBarrierType)
    barrier_index = operand_def(IndexType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$desc `[` $coords `]` `,` $dest `[` $stage `]` `,` $barriers `[` $barrier_index `]` "
        "attr-dict `:` type($desc) `,` type($dest) `,` type($barriers)"
    )

    def verify_(self) -> None:
        _verify_tma_tile(self.desc.type, self.coords, self.dest.type, "nvgpu.tma_load")


@irdl_op_definition
class TmaStoreOp(IRDLOperation):
    """`cp.async.bulk.tensor` shared → global, then `cp.async.bulk.commit_group`:
    writes stage `stage` of `source` to the box at `coords` (out-of-bounds
    elements are dropped).  Issued by one thread after a proxy fence.

    Example:
    `nvgpu.tma_store %sc[%c0], %tc[%m0, %n0] : !nvgpu.smem<1x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.tma_store"
    source = operand_def(SmemType)
    stage = operand_def(IndexType)
    desc = operand_def(TmaDescriptorType)
    coords = var_operand_def(IndexType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$source `[` $stage `]` `,` $desc `[` $coords `]` attr-dict `:` type($source) `,` type($desc)"
    )

    def verify_(self) -> None:
        _verify_tma_tile(self.desc.type, self.coords, self.source.type, "nvgpu.tma_store")


@irdl_op_definition
class TmaStoreWaitOp(IRDLOperation):
    """`cp.async.bulk.wait_group.read`: waits until at most `pending` TMA store
    groups still read shared memory.

    Example: `nvgpu.tma_store_wait 0`
    """

    name = "nvgpu.tma_store_wait"
    pending = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$pending attr-dict"

    def verify_(self) -> None:
        if not 0 <= self.pending.value.data <= 7:
            raise VerifyException(
                f"nvgpu.tma_store_wait pending must be in [0, 7], got {self.pending.value.data}"
            )


# --------------------------------------------------------------------------- wgmma


@irdl_op_definition
class WgmmaDescriptorOp(IRDLOperation):
    """The wgmma matrix descriptor of rows [row, row + R) of stage `stage` of
    `source`, where R is the result's row count (e.g. consumer c of a 128-row A
    tile takes rows [64c, 64c + 64)).

    Example:
    `%da = nvgpu.wgmma_descriptor %sa[%s, %row] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.wgmma_descriptor"
    source = operand_def(SmemType)
    stage = operand_def(IndexType)
    row = operand_def(IndexType)
    result = result_def(WgmmaDescriptorType)
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
        if len(desc.get_shape()) != 2 or cols != shape[2] or rows > shape[1]:
            raise VerifyException(
                f"nvgpu.wgmma_descriptor: {desc} is not a row range of the {shape[1]}x{shape[2]} tiles of {src}"
            )
        if desc.element_type != src.element_type or desc.swizzle != src.swizzle:
            raise VerifyException(
                "nvgpu.wgmma_descriptor: element type and swizzle must match the source"
            )


_WGMMA_K = {BFloat16Type: 16, Float16Type: 16, Float8E4M3FNType: 32}


@irdl_op_definition
class WgmmaOp(IRDLOperation):
    """`wgmma.mma_async` over a whole tile: `result = lhs · rhs (+ acc if
    accumulate)`, issued by one warp group, asynchronous until a
    `nvgpu.wgmma_wait_group` returns the fragment.

    `lhs` is a 64xK descriptor (or a `wgmma_a` register fragment); `rhs` is an
    NxK descriptor when `rhs_transposed` (K-major, PTX imm-trans-b = 0) and a
    KxN one otherwise (MN-major, imm-trans-b = 1).  The printer emits K/16
    (K/32 for f8) m64nNk16 instructions.  `accumulate` is wgmma's scale-d
    predicate: false makes the first instruction overwrite the accumulator.

    Example:
    `%d = nvgpu.wgmma %da, %db, %acc, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma_acc>`
    """

    name = "nvgpu.wgmma"
    ACC: ClassVar = VarConstraint("ACC", base(FragmentType))
    lhs = operand_def(base(WgmmaDescriptorType) | base(FragmentType))
    rhs = operand_def(WgmmaDescriptorType)
    acc = operand_def(ACC)
    accumulate = operand_def(i1)
    result = result_def(ACC)
    rhs_transposed = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(MemoryReadEffect())
    assembly_format = (
        "$lhs `,` $rhs `,` $acc `,` $accumulate attr-dict `:` type($lhs) `,` type($rhs) `,` type($result)"
    )

    def verify_(self) -> None:
        lt, rt, at = self.lhs.type, self.rhs.type, self.acc.type
        assert isinstance(rt, WgmmaDescriptorType) and isinstance(at, FragmentType)
        if at.layout.data != FragmentLayout.WGMMA_ACC:
            raise VerifyException("nvgpu.wgmma accumulator must be a wgmma_acc fragment")
        if isinstance(lt, FragmentType) and lt.layout.data != FragmentLayout.WGMMA_A:
            raise VerifyException("nvgpu.wgmma register lhs must be a wgmma_a fragment")
        assert isinstance(lt, WgmmaDescriptorType | FragmentType)
        et = lt.element_type
        if type(et) not in _WGMMA_K or rt.element_type != et:
            raise VerifyException(
                f"nvgpu.wgmma operands must both be bf16, f16 or f8E4M3FN, got {et} and {rt.element_type}"
            )
        lshape, rshape = lt.get_shape(), rt.get_shape()
        if len(lshape) != 2 or len(rshape) != 2:
            raise VerifyException("nvgpu.wgmma operands must be 2-D")
        m, k = lshape
        n, k2 = rshape if self.rhs_transposed is not None else rshape[::-1]
        if m != WGMMA_M:
            raise VerifyException(f"nvgpu.wgmma lhs must have {WGMMA_M} rows, got {m}")
        if k != k2 or k % _WGMMA_K[type(et)]:
            raise VerifyException(
                f"nvgpu.wgmma contraction sizes must agree and be a multiple of "
                f"{_WGMMA_K[type(et)]}: lhs K={k}, rhs K={k2}"
            )
        if n % 8 or not 8 <= n <= WGMMA_MAX_N:
            raise VerifyException(
                f"nvgpu.wgmma N must be a multiple of 8 in [8, {WGMMA_MAX_N}], got {n}"
            )
        if at.get_shape() != (m, n):
            raise VerifyException(f"nvgpu.wgmma accumulator must be {m}x{n}, got {at}")
        if isinstance(et, Float8E4M3FNType) and self.rhs_transposed is None:
            raise VerifyException("nvgpu.wgmma with f8E4M3FN operands needs a K-major rhs")


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

    Example: `%d1 = nvgpu.wgmma_wait_group 1 (%d) : !nvgpu.frag<64x256xf32, wgmma_acc>`
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


# --------------------------------------------------------------------------- registers, sync, ids


@irdl_op_definition
class SetMaxNRegOp(IRDLOperation):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 count`: sets the per-thread
    register budget of the executing warp group to `count` (a multiple of 8 in
    [24, 256]).  All threads of the warp group execute it together.

    Example: `nvgpu.setmaxnreg inc 232`
    """

    name = "nvgpu.setmaxnreg"
    action = prop_def(RegActionAttr)
    count = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$action $count attr-dict"

    def __init__(self, action: RegAction, count: int):
        super().__init__(
            properties={"action": RegActionAttr(action), "count": IntegerAttr(count, 32)}
        )

    def verify_(self) -> None:
        c = self.count.value.data
        if not 24 <= c <= 256 or c % 8:
            raise VerifyException(
                f"nvgpu.setmaxnreg count must be a multiple of 8 in [24, 256], got {c}"
            )


class _NamedBarrierOp(IRDLOperation):
    barrier_id = prop_def(IntegerAttr[I32])
    num_threads = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$barrier_id `,` $num_threads attr-dict"

    def verify_(self) -> None:
        bid, n = self.barrier_id.value.data, self.num_threads.value.data
        if not 0 <= bid <= 15:
            raise VerifyException(f"{self.name} barrier id must be in [0, 15], got {bid}")
        if n <= 0 or n % 32 or n > 1024:
            raise VerifyException(
                f"{self.name} thread count must be a multiple of 32 in [32, 1024], got {n}"
            )


@irdl_op_definition
class NamedBarrierSyncOp(_NamedBarrierOp):
    """`bar.sync id, threads`: waits until `threads` threads (whole warps) have
    arrived at named barrier `id`.  Barrier 0 with every thread is the CTA-wide
    barrier.

    Example: `nvgpu.named_barrier_sync 0, 384`
    """

    name = "nvgpu.named_barrier_sync"


@irdl_op_definition
class NamedBarrierArriveOp(_NamedBarrierOp):
    """`bar.arrive id, threads`: arrives at named barrier `id` without waiting.

    Example: `nvgpu.named_barrier_arrive 1, 256`
    """

    name = "nvgpu.named_barrier_arrive"


@irdl_op_definition
class FenceProxyAsyncOp(IRDLOperation):
    """`fence.proxy.async.shared::cta`: orders this thread's generic-proxy
    shared-memory accesses with later async-proxy ones (TMA, wgmma).

    Example: `nvgpu.fence_proxy_async`
    """

    name = "nvgpu.fence_proxy_async"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


@irdl_op_definition
class FenceMBarrierInitOp(IRDLOperation):
    """`fence.mbarrier_init.release.cluster`: makes this thread's mbarrier
    initialisations visible to other threads and to the async proxy.

    Example: `nvgpu.fence_mbarrier_init`
    """

    name = "nvgpu.fence_mbarrier_init"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


class _IdOp(IRDLOperation):
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class ThreadIdOp(_IdOp):
    """The thread's index in the CTA (`%tid.x`; CTAs are 1-D).

    Example: `%t = nvgpu.thread_id`
    """

    name = "nvgpu.thread_id"


@irdl_op_definition
class LaneIdOp(_IdOp):
    """The thread's lane in its warp (`%laneid`, 0..31).

    Example: `%l = nvgpu.lane_id`
    """

    name = "nvgpu.lane_id"


@irdl_op_definition
class WarpIdOp(_IdOp):
    """The warp's index in the CTA (thread id / 32).

    Example: `%w = nvgpu.warp_id`
    """

    name = "nvgpu.warp_id"


@irdl_op_definition
class WarpGroupIdOp(_IdOp):
    """The warp group's index in the CTA (thread id / 128).

    Example: `%g = nvgpu.warp_group_id`
    """

    name = "nvgpu.warp_group_id"


@irdl_op_definition
class BlockIdOp(GridAxisOp):
    """The CTA's index along grid axis `axis` (`%ctaid.x/y/z`).

    Example: `%b = nvgpu.block_id 0`
    """

    name = "nvgpu.block_id"


@irdl_op_definition
class GridDimOp(GridAxisOp):
    """The number of CTAs along grid axis `axis` (`%nctaid.x/y/z`).

    Example: `%n = nvgpu.grid_dim 1`
    """

    name = "nvgpu.grid_dim"


@irdl_op_definition
class LaunchGridOp(GridAxisOp):
    """The size of the tile program's logical grid along `axis`: a kernel
    parameter the runtime fills from `grid=`.  Persistent kernels launch fewer
    CTAs than programs and loop over the logical grid.

    Example: `%gx = nvgpu.launch_grid 0`
    """

    name = "nvgpu.launch_grid"


@irdl_op_definition
class ElectOneOp(IRDLOperation):
    """`elect.sync`: true in exactly one active thread of the executing warp.

    Example: `%leader = nvgpu.elect_one`
    """

    name = "nvgpu.elect_one"
    result = result_def(i1)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "attr-dict"


NVGPU = Dialect(
    "nvgpu",
    [
        SmemAllocOp,
        MBarrierInitOp,
        MBarrierArriveOp,
        MBarrierArriveExpectTxOp,
        MBarrierTryWaitParityOp,
        MBarrierWaitParityOp,
        TmaDescriptorOp,
        TmaLoadOp,
        TmaStoreOp,
        TmaStoreWaitOp,
        WgmmaDescriptorOp,
        WgmmaOp,
        WgmmaFenceOp,
        WgmmaCommitGroupOp,
        WgmmaWaitGroupOp,
        FragmentZerosOp,
        FragmentConvertOp,
        FragmentIndexOp,
        FragmentCmpIOp,
        FragmentSelectOp,
        FragmentSplatOp,
        FragmentReduceOp,
        FragmentBroadcastOp,
        FragmentBinaryOp,
        FragmentUnaryOp,
        FragmentStoreOp,
        SmemTileOp,
        SetMaxNRegOp,
        NamedBarrierSyncOp,
        NamedBarrierArriveOp,
        FenceProxyAsyncOp,
        FenceMBarrierInitOp,
        ThreadIdOp,
        LaneIdOp,
        WarpIdOp,
        WarpGroupIdOp,
        BlockIdOp,
        GridDimOp,
        LaunchGridOp,
        ElectOneOp,
    ],
    [
        SmemType,
        TmaDescriptorType,
        WgmmaDescriptorType,
        MBarrierType,
        FragmentLayoutAttr,
        FragmentType,
        FragBinaryKindAttr,
        FragUnaryKindAttr,
        FragIndexAxisAttr,
        RegActionAttr,
    ],
)
