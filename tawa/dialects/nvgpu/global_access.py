"""nvgpu ops of the global memory a kernel's threads address themselves: a
memref argument's base address and its strides (address math is `arith`
from them), and the read of one scalar (a gather's row index, a
block-table entry, a grouped GEMM's expert: `tile.load_scalar`)."""

from __future__ import annotations

from xdsl.dialects.builtin import I64, Float32Type, IndexType, IntegerAttr, IntegerType, MemRefType, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, base, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import MemoryReadEffect, Pure
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class MemrefBaseOp(IRDLOperation):
    """The global-memory address of element 0 of a kernel's memref argument,
    as an integer: the base of address math that passes write out as `arith`
    ops.  The array's rows are contiguous; its other dimensions are
    `nvgpu.memref_stride` elements apart.

    Example: `%p = nvgpu.memref_base %C : memref<?x?xbf16>`
    """

    name = "nvgpu.memref_base"
    source = operand_def(MemRefType)
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source)"

    def __init__(self, source: SSAValue):
        super().__init__(operands=[source], result_types=[IndexType()])


@irdl_op_definition
class MemrefStrideOp(IRDLOperation):
    """The stride, in elements, of dimension `dim` of a kernel's memref
    argument whose elements the kernel addresses itself: element
    (i0, ..., in) is at `memref_base + (i0·stride0 + ... + in)·bytes`.  The
    innermost dimension has none (its stride is 1: rows are contiguous), so
    an array addressed this way may be a strided view whose rows are
    contiguous (a column slice, a head of a [B, S, H, D] tensor), not only a
    dense one.  The kernel receives the strides as parameters
    (`tawa.backend.ptx.abi`).

    Example: `%s = nvgpu.memref_stride %C, 0 : memref<?x?xbf16>`
    """

    name = "nvgpu.memref_stride"
    source = operand_def(MemRefType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "$source `,` $dim attr-dict `:` type($source)"

    def __init__(self, source: SSAValue, dim: int):
        super().__init__(operands=[source], properties={"dim": IntegerAttr(dim, 64)}, result_types=[IndexType()])

    def verify_(self) -> None:
        t = self.source.type
        assert isinstance(t, MemRefType)
        d = self.dim.value.data
        if not 0 <= d < t.get_num_dims() - 1:
            which = "none but the innermost, whose stride is 1" if t.get_num_dims() == 1 else (
                f"dimensions 0 to {t.get_num_dims() - 2}; the innermost one's stride is 1")
            raise VerifyException(f"nvgpu.memref_stride: dimension {d} of {t} has no stride parameter ({which})")


@irdl_op_definition
class LoadGlobalScalarOp(IRDLOperation):
    """Every executing thread reads the 32-bit element at byte address
    `address` of global memory where `in_bounds` holds, and takes 0 where
    it does not (the address is then never touched): `tile.load_scalar`'s
    out-of-bounds rule.  The threads of a warp that read one address are
    served by one transaction.  In PTX:

        mov.b32 r, 0;
        @in_bounds ld.global.b32 r, [address];

    Example: `%e = nvgpu.load_global_scalar %addr, %inside : i32`
    """

    name = "nvgpu.load_global_scalar"
    address = operand_def(IndexType)
    in_bounds = operand_def(i1)
    result = result_def(base(IntegerType) | base(Float32Type))
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$address `,` $in_bounds attr-dict `:` type($result)"

    def __init__(self, address: SSAValue, in_bounds: SSAValue, result_type: Attribute):
        super().__init__(operands=[address, in_bounds], result_types=[result_type])

    def verify_(self) -> None:
        if self.result.type not in (IntegerType(32), Float32Type()):
            raise VerifyException(f"nvgpu.load_global_scalar reads an i32 or an f32, got {self.result.type}")
