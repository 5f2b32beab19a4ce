"""`tawa-hopper-pipeline`: the whole way from tile programs to Hopper ops.

    tawa-warp-specialize{...} , tawa-pipeline{stages} , [tawa-persistent{group-m}] ,
    tawa-lower-aref , tawa-lower-tile{group-m}

`tawa-opt f.mlir -p tawa-hopper-pipeline -t ptx` is the main job.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tawa.transforms.lower_aref import LowerArefPass
from tawa.transforms.lower_tile import LowerTilePass
from tawa.transforms.persistent import PersistentPass
from tawa.transforms.pipeline import PipelinePass
from tawa.transforms.warp_specialize import WarpSpecializePass


@dataclass(frozen=True)
class HopperPipelinePass(ModulePass):
    """Warp-specializes, pipelines and lowers tile kernels to Hopper (nvgpu) ops."""

    name = "tawa-hopper-pipeline"

    stages: int = 4
    producer_regs: int = 40
    consumer_regs: int = 232
    group_m: int = 8
    persistent: bool = True
    """One CTA per SM looping over the programs (tawa-persistent)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        passes: tuple[ModulePass, ...] = (
            WarpSpecializePass(
                producer_regs=self.producer_regs, consumer_regs=self.consumer_regs, strict=True
            ),
            PipelinePass(stages=self.stages),
            *((PersistentPass(group_m=self.group_m),) if self.persistent else ()),
            LowerArefPass(),
            LowerTilePass(group_m=self.group_m),
        )
        for p in passes:
            p.apply(ctx, op)
