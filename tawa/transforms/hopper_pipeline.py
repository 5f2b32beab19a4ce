"""`tawa-hopper-pipeline`: the whole way from tile programs to Hopper ops.

    tawa-warp-specialize{...} , tawa-pipeline{stages} , [tawa-persistent{group-m}] ,
    tawa-lower-aref , tawa-lower-tile{group-m}

`tawa-opt f.mlir -p tawa-hopper-pipeline -t ptx` is the main job.  With
`stages=0` (the default) the ring depth is the deepest of 4, 3, 2, 1 whose
shared memory fits (GEMM's 48 KB stages: 4; attention's Q plus K and V rings:
2).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tawa.diagnostics import TawaError
from tawa.transforms.lower_aref import SMEM_TOO_BIG, LowerArefPass
from tawa.transforms.lower_tile import LowerTilePass
from tawa.transforms.persistent import PersistentPass
from tawa.transforms.pipeline import PipelinePass
from tawa.transforms.warp_specialize import WarpSpecializePass


@dataclass(frozen=True)
class HopperPipelinePass(ModulePass):
    """Warp-specializes, pipelines and lowers tile kernels to Hopper (nvgpu) ops."""

    name = "tawa-hopper-pipeline"

    stages: int = 0
    """Ring depth D; 0 picks the deepest of 4..1 that fits in shared memory."""
    producer_regs: int = 40
    consumer_regs: int = 232
    group_m: int = 8
    persistent: bool = True
    """One CTA per SM looping over the programs (tawa-persistent)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stages = self.stages or self._deepest_fitting(ctx, op)
        for p in self._passes(stages):
            p.apply(ctx, op)

    def _passes(self, stages: int) -> tuple[ModulePass, ...]:
        return (
            WarpSpecializePass(
                producer_regs=self.producer_regs, consumer_regs=self.consumer_regs, strict=True
            ),
            PipelinePass(stages=stages),
            *((PersistentPass(group_m=self.group_m),) if self.persistent else ()),
            LowerArefPass(),
            LowerTilePass(group_m=self.group_m),
        )

    def _deepest_fitting(self, ctx: Context, op: ModuleOp) -> int:
        """The deepest ring (4..1) whose shared memory fits, tried on copies
        up to the aref lowering, which checks the size."""
        for stages in (4, 3, 2):
            trial = op.clone()
            try:
                for p in self._passes(stages)[:-1]:
                    p.apply(ctx, trial)
            except TawaError as err:
                if SMEM_TOO_BIG not in str(err):
                    raise
                continue
            return stages
        return 1
