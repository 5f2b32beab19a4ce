"""`tawa-persistent`: one CTA per SM loops over the tile program's grid.

Runs after `tawa-pipeline`, before the lowering.  Each partition of an
`aref.warp_specialize` gets wrapped in a loop over the logical programs

    scf.for %t = %cta to %programs step %ctas { <partition body for program %t> }

(`%cta` = CTA id, `%ctas` = CTAs launched, `%programs` = gx · gy of the
logical grid, read from kernel parameters with `nvgpu.launch_grid`); program
ids become the grouped-order ids of `%t`.  Nothing is reset between programs:
the aref rings keep turning, so the producer fetches the next program's tiles
while the consumers still run the previous one's epilogue.  The kernel is
marked persistent (`#nvgpu.kernel<..., persistent>`), and the runtime launches min(programs, SMs) CTAs.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import aref, nvgpu, tile
from tawa.transforms.utils import fail, grouped_ids


@dataclass(frozen=True)
class PersistentPass(ModulePass):
    """Makes warp-specialized kernels persistent: CTAs loop over the programs."""

    name = "tawa-persistent"

    group_m: int = 8
    """Grouped program order (see tawa-materialize-partitions); 1 is plain row-major order."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.group_m < 1:
            raise fail(None, f"{self.name}: group-m must be at least 1, got {self.group_m}")
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel = ws.parent_op()
            if not isinstance(kernel, func.FuncOp):
                raise fail(ws, f"{self.name}: aref.warp_specialize must be at the top of a kernel")
            self._persist(ws, kernel)

    def _persist(self, ws: aref.WarpSpecializeOp, kernel: func.FuncOp) -> None:
        axes = {p.axis.value.data for p in ws.walk() if isinstance(p, tile.ProgramIdOp)}
        if not axes <= {0, 1}:
            raise fail(ws, f"{self.name}: only 1-D and 2-D grids are supported, the kernel uses axis 2")
        at = InsertPoint.before(ws)
        cta, ctas = nvgpu.BlockIdOp(0), nvgpu.GridDimOp(0)
        gx, gy = nvgpu.LaunchGridOp(0), nvgpu.LaunchGridOp(1)
        programs = arith.MuliOp(gx.result, gy.result)
        Rewriter.insert_op([cta, ctas, gx, gy, programs], at)
        programs.result.name_hint = "programs"
        for _, _, _, region in ws.partition_specs():
            self._loop_over_programs(region, cta.result, programs.result, ctas.result, gx, gy)
        for n in [o for o in ws.walk() if isinstance(o, tile.NumProgramsOp)]:
            n.result.replace_all_uses_with((gx if n.axis.value.data == 0 else gy).result)
            Rewriter.erase_op(n)
        nvgpu.record_kernel_info(kernel, persistent=True)

    def _loop_over_programs(self, region: Region, lb, ub, step, gx, gy) -> None:
        block = region.block
        body = Block(arg_types=[lb.type])
        body.args[0].name_hint = "program"
        for o in list(block.ops):
            o.detach()
            body.add_op(o)
        ids = grouped_ids(body.args[0], gx.result, gy.result, self.group_m, InsertPoint.at_start(body))
        for p in [o for o in body.walk() if isinstance(o, tile.ProgramIdOp)]:
            p.result.replace_all_uses_with(ids[p.axis.value.data])
            Rewriter.erase_op(p)
        body.add_op(scf.YieldOp())
        block.add_op(scf.ForOp(lb, ub, step, [], body))
