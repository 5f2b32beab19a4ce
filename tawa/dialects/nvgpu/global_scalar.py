"""nvgpu op reading one scalar from global memory: a gather's row index, a
block-table entry, a grouped GEMM's expert (`tile.load_scalar`)."""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, IndexType, IntegerType, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, base, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import MemoryReadEffect
from xdsl.utils.exceptions import VerifyException


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
