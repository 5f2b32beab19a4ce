"""`tawa-stage-operands`: operands computed in registers that wgmma reads from shared memory get a buffer.

Runs after `tawa-lower-aref` and `tawa-stage-stores` (its buffers follow
the rings and the staging buffers) and before `tawa-lower-tile`.  wgmma reads
an 8-bit A operand from shared memory only; for each dot of a consumer
partition whose lhs is such a tile computed in registers (attention's P in
fp8), the pass allocates a buffer of one tile per warp group, records the
kernel's shared-memory size, and gives the dot its lhs through an
`nvgpu.staged_operand` that names the buffer:

    %o = tile.dot %p8, %v, %acc : ...
    →
    %operand = nvgpu.smem_alloc offset(...) : !nvgpu.smem<2x64x64xf8E4M3FN, swizzle = 64>
    ...
    %p8_staged = nvgpu.staged_operand %p8 via %operand : tensor<128x64xf8E4M3FN>, !nvgpu.smem<...>
    %o = tile.dot %p8_staged, %v, %acc : ...

A dot whose lhs is `tile.trans` of a 16-bit tile computed in registers
(attention backward's dSᵀ) is staged the same way, the buffer holding the
untransposed tile, which wgmma then reads as an MN-major A; one warp group
only.  A dot whose rhs is a 16-bit K×N tile computed in registers
(attention backward's dSᵀ in dQᵀ = Kᵀ·dSᵀ) gets one buffer of the whole
tile, which every warp group writes its rows of.  `tawa-lower-tile` writes
each warp group's rows there and lets the wgmma read them through a
descriptor.  Too much shared memory in all is a
located error.  The rules are those of `tawa.transforms.lower.operand_staging`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tawa.dialects import aref
from tawa.transforms.lower.operand_staging import stage_operands
from tawa.transforms.lower.partitions import check_arefs_lowered
from tawa.transforms.utils import kernel_of

NAME = "tawa-stage-operands"


@dataclass(frozen=True)
class StageOperandsPass(ModulePass):
    """Gives the operands that consumers compute in registers and wgmma reads from shared memory a buffer."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel = kernel_of(ws, NAME)
            check_arefs_lowered(ws, NAME)
            stage_operands(ws, kernel, NAME)
