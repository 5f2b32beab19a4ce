"""Types of the nvgpu dialect: shared-memory tiles, TMA and wgmma descriptors, mbarrier arrays, register fragments."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float8E4M3FNType,
    Float16Type,
    Float32Type,
    IntAttr,
    IntegerType,
    i1,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    TypeAttribute,
)
from xdsl.irdl import (
    irdl_attr_definition,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum




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
