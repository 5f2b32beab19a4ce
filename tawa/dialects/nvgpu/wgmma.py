"""nvgpu wgmma ops: descriptors, the asynchronous matrix product, fence / commit / wait."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I32,
    BFloat16Type,
    Float8E4M3FNType,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    UnitAttr,
    i1,
)
from xdsl.ir import (
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

from tawa.dialects.nvgpu.types import *  # noqa: F403


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

    `lhs` is a 64xK descriptor (or a bf16/f16 `wgmma` register fragment); `rhs` is an
    NxK descriptor when `rhs_transposed` (K-major, PTX imm-trans-b = 0) and a
    KxN one otherwise (MN-major, imm-trans-b = 1).  The printer emits K/16
    (K/32 for f8) m64nNk16 instructions.  `accumulate` is wgmma's scale-d
    predicate: false makes the first instruction overwrite the accumulator.

    Example:
    `%d = nvgpu.wgmma %da, %db, %acc, %true {rhs_transposed} : !nvgpu.wgmma_desc<64x64xbf16, swizzle = 128>, !nvgpu.wgmma_desc<256x64xbf16, swizzle = 128>, !nvgpu.frag<64x256xf32, wgmma>`
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
        if at.tiled_layout != WGMMA or not isinstance(at.element_type, Float32Type):
            raise VerifyException("nvgpu.wgmma accumulator must be an f32 fragment of the wgmma layout")
        if isinstance(lt, FragmentType) and lt.tiled_layout != WGMMA:
            raise VerifyException("nvgpu.wgmma register lhs must be a fragment of the wgmma layout")
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
