"""Types of the nvgpu dialect: shared-memory tiles, TMA and wgmma descriptors, mbarrier arrays, register fragments."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    IntAttr,
    IntegerType,
    TensorType,
    i1,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Data,
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

from tawa.dialects.nvgpu.layouts import NAMED_LAYOUTS, Replicated, TiledLayout, layout_name
from tawa.target.hopper import MAX_TMA_BOX_DIM, SWIZZLES


def element_bytes(t: Attribute) -> int:
    """Size in bytes of one element of a float or integer type."""
    if isinstance(t, Float8E4M3FNType | Float8E5M2Type):
        return 1
    if isinstance(t, BFloat16Type | Float16Type):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, IntegerType):
        return max(1, t.width.data // 8)
    raise VerifyException(f"unsupported element type {t}")


def tensor_bytes(t: Attribute) -> int:
    """Size in bytes of a tensor type's elements (0 for anything else)."""
    if not isinstance(t, TensorType):
        return 0
    return math.prod(t.get_shape()) * element_bytes(t.get_element_type())


def unswizzled_chunk_columns(cols: int) -> int:
    """The columns of an unswizzled tile's chunks (`chunk_columns`): all of
    them up to `MAX_TMA_BOX_DIM`, else the largest power of two up to that
    which divides them."""
    return cols if cols <= MAX_TMA_BOX_DIM else min(cols & -cols, MAX_TMA_BOX_DIM)


class _ShapedSwizzled(ParametrizedAttribute, TypeAttribute):
    """Shared syntax of the shared-memory tile types: `<AxBxT, swizzle = S>`.

    With a swizzle of S bytes, rows are a multiple of S bytes; rows wider
    than S are stored as column chunks of S bytes (`chunk_columns`), the
    layout TMA writes with one box per chunk and wgmma reads through the
    descriptor's leading byte offset.  Unswizzled rows wider than a TMA box
    are chunked the same way, at the box's width."""

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
        holds columns [c·w, (c+1)·w) of every row; chunks follow each other),
        an unswizzled one wider than `MAX_TMA_BOX_DIM` columns (the widest box
        a TMA copy moves) as chunks of the largest power of two up to that
        which divides its rows.  Example: a 4x1024 bf16 tile is 16 chunks of
        4x64 with a 128B swizzle, 4 chunks of 4x256 unswizzled."""
        cols = self.get_shape()[-1]
        if not self.swizzle.data:
            return unswizzled_chunk_columns(cols)
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


@irdl_attr_definition
class TiledLayoutAttr(Data[TiledLayout]):
    """A register layout (`tawa.dialects.nvgpu.layouts.TiledLayout`): the
    tiling of a fragment's shape and which tiled dimensions are spread over
    warps, lanes and the vector of one register.

    Syntax: `#nvgpu.tiled_layout<(64,8)(16,8)(8,8)(1,2), warps = [-8], lanes = [-4, -3], vector = -1>`
    (a replicated warp or lane dimension is written `*N`).  Inside a fragment
    type, the named layouts of `layouts.NAMED_LAYOUTS` are spelled by name.
    """

    name = "nvgpu.tiled_layout"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> TiledLayout:
        with parser.in_angle_brackets():
            pos = parser.pos
            tiling = []
            while parser.parse_optional_punctuation("(") is not None:
                tile = [parser.parse_integer(allow_boolean=False)]
                while parser.parse_optional_punctuation(",") is not None:
                    tile.append(parser.parse_integer(allow_boolean=False))
                parser.parse_punctuation(")")
                tiling.append(tuple(tile))
            dims = {}
            for key in ("warps", "lanes"):
                parser.parse_punctuation(",")
                parser.parse_keyword(key)
                parser.parse_punctuation("=")
                dims[key] = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: _parse_dim(parser)
                )
            parser.parse_punctuation(",")
            parser.parse_keyword("vector")
            parser.parse_punctuation("=")
            vector = parser.parse_integer(allow_boolean=False)
            try:
                return TiledLayout(tuple(tiling), tuple(dims["warps"]), tuple(dims["lanes"]), vector)
            except ValueError as err:
                parser.raise_error(f"invalid register layout: {err}", pos)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")


def _parse_dim(parser: AttrParser) -> int | Replicated:
    if parser.parse_optional_punctuation("*") is not None:
        return Replicated(parser.parse_integer(allow_boolean=False, allow_negative=False))
    return parser.parse_integer(allow_boolean=False)


FRAGMENT_ELEMENT_TYPES = "f32, bf16, f16, f8E4M3FN, f8E5M2, i32 or i1"


@irdl_attr_definition
class FragmentType(ParametrizedAttribute, TypeAttribute):
    """A tile held in the registers of one warp group, spread over its 128
    threads as its layout says (see `tawa.dialects.nvgpu.layouts`): each
    thread holds `values_per_thread()` elements, in 32-bit registers (one f32,
    i32 or i1 value each; 16-bit values packed in pairs along the layout's
    vector), or 16-bit ones (8-bit values packed in pairs: an fp8 operand on
    its way to shared memory).

    Syntax: `!nvgpu.frag<64x256xf32, wgmma>` (a named layout) or
    `!nvgpu.frag<64x256xf32, #nvgpu.tiled_layout<...>>`
    """

    name = "nvgpu.frag"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    layout: TiledLayoutAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, layout: TiledLayout):
        super().__init__(ArrayAttr(IntAttr(d) for d in shape), element_type, TiledLayoutAttr(layout))

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def tiled_layout(self) -> TiledLayout:
        return self.layout.data

    def with_element_type(self, element_type: Attribute) -> FragmentType:
        return FragmentType(self.get_shape(), element_type, self.tiled_layout)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dims, elt = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            pos = parser.pos
            name = parser.parse_optional_identifier()
            if name is None:
                layout = parser.parse_attribute()
                if not isinstance(layout, TiledLayoutAttr):
                    parser.raise_error(f"expected a register layout, got {layout}", pos)
            elif name in NAMED_LAYOUTS:
                layout = TiledLayoutAttr(NAMED_LAYOUTS[name])
            else:
                parser.raise_error(
                    f"unknown fragment layout '{name}' (named layouts: {', '.join(NAMED_LAYOUTS)})", pos
                )
        return (ArrayAttr(IntAttr(d) for d in dims), elt, layout)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("".join(f"{d}x" for d in self.get_shape()))
            printer.print_attribute(self.element_type)
            printer.print_string(", ")
            name = layout_name(self.tiled_layout)
            if name is None:
                printer.print_attribute(self.layout)
            else:
                printer.print_string(name)

    def values_per_thread(self) -> int:
        return self.tiled_layout.values_per_thread(self.get_shape())

    def vector_length(self) -> int:
        return self.tiled_layout.vector_length(self.get_shape())

    def packed(self) -> bool:
        """16-bit values travel in pairs — one 32-bit register per two values
        of a vector — when the layout's vectors have an even length (a
        vector of 1, as in `wgmma_row`, keeps one value per 16-bit register);
        8-bit values likewise, two in a 16-bit register (`register_bits`)."""
        small = BFloat16Type | Float16Type | Float8E4M3FNType | Float8E5M2Type
        return isinstance(self.element_type, small) and self.vector_length() % 2 == 0

    def register_bits(self) -> int:
        """Width of each of the thread's registers: 32, or 16 for unpacked
        16-bit values and packed 8-bit pairs (1 for i1's predicates)."""
        if self.element_type == i1:
            return 1
        bits = 8 * element_bytes(self.element_type) * (2 if self.packed() else 1)
        return max(bits, 16)

    def registers(self) -> int:
        """Registers per thread: 32-bit (16-bit for unpacked 16-bit values,
        predicate registers for i1)."""
        values = self.values_per_thread()
        return values // 2 if self.packed() else values

    def verify(self) -> None:
        shape, layout = self.get_shape(), self.tiled_layout
        try:
            layout.check_shape(shape)
            layout.check_warp_group(shape)
        except ValueError as err:
            raise VerifyException(f"nvgpu.frag: {err}") from None
        et = self.element_type
        floats = Float32Type | BFloat16Type | Float16Type | Float8E4M3FNType | Float8E5M2Type
        if not (isinstance(et, floats) or et in (IntegerType(32), i1)):
            raise VerifyException(f"nvgpu.frag elements must be {FRAGMENT_ELEMENT_TYPES}, got {et}")


class RegAction(StrEnum):
    INC = "inc"
    DEC = "dec"


@irdl_attr_definition
class RegActionAttr(EnumAttribute[RegAction], SpacedOpaqueSyntaxAttribute):
    """Whether `setmaxnreg` raises or lowers the register budget."""

    name = "nvgpu.reg_action"
