"""`tawa-persistent`: one CTA per SM loops over the tile program's grid.

Runs after `tawa-pipeline`, before the lowering.  Each partition of an
`aref.warp_specialize` gets wrapped in a loop over the logical programs

    scf.for %t = %cta to %programs step %ctas { <partition body for program %t> }

(`%cta` = CTA id, `%ctas` = CTAs launched, `%programs` = gx · gy [· gz] of
the logical grid, read from kernel parameters with `nvgpu.launch_grid`);
program ids become the ids of `%t` in the kernel's program order (option
`order`, decided per kernel by `tawa.analysis.program_order`):

* `grouped`: the grouped-order ids of `%t` — with a third axis (the batch of
  a batched GEMM), z = t / (gx · gy) and the grouped ids of t mod (gx · gy)
  within that plane;
* `column`: pid_0 = t mod gx fastest, then pid_1 and pid_2 (the query
  blocks of one attention head run together and share its K and V in L2);
* `longest-first`: pid_0 = gx - 1 - t / (gy · gz), the other axes from
  t mod (gy · gz), so each CTA runs its heaviest programs first when the work
  grows with program id 0 (causal attention);
* `paired` and `paired-short-first`: the loop runs over pairs instead, two
  programs per pair, one after the other (the long one first, or the short
  one):

      scf.for %q = %cta to %pairs step %ctas {      // pairs = ⌈gx/2⌉ · gy [· gz]
        p = q mod ⌈gx/2⌉, r = q / ⌈gx/2⌉             // r: pid_1 = r mod gy [, pid_2 = r / gy]
        scf.for %m = 0 to (gx - 1 - p == p ? 1 : 2) {
          <partition body with pid_0 = (m == 0 ? gx - 1 - p : p)>     // short first: (m == 0 ? p : gx - 1 - p)
        }
      }

  When the work grows linearly with program id 0 (causal attention), every
  pair costs the same, so the CTAs' static shares are even.

Nothing is reset between programs:
the aref rings keep turning, so the producer fetches the next program's tiles
while the consumers still run the previous one's epilogue.  The kernel is
marked persistent (`#nvgpu.kernel<..., persistent>`), and the runtime launches min(programs, SMs) CTAs.

A kernel of one partition (no producer: every kernel without dots whose
loads the consumers make themselves) is left as it is, one CTA per
program.  With no ring there is nothing to run ahead into the next
program, and such a kernel holds several CTAs an SM (`tawa-occupancy`):
the hardware's block scheduler starts a new program in whichever slot
frees first, where a CTA looping over a static share of the programs
starts its next one only when its own is done (measured: docs/perf.md
"Memory-bound kernels").

A kernel that `tawa-cluster` marked `cluster = N` loops over *cluster
programs* instead: with rank = `nvgpu.cluster_rank`, cluster = CTA id / N and
clusters = CTAs / N, the loop is

    scf.for %t = %cluster to ceil(gx / N) · gy [· gz] step %clusters { ... }

the program ids are the order's ids of t in the grid ceil(gx / N) × gy [× gz]
(grouped with group-m / N, so a group covers the same rows of tiles), and
pid_0 becomes min(N · pid_0 + rank, gx - 1): the N CTAs of a cluster run
neighbouring programs that share everything but program id 0, and past the
grid's edge a CTA runs the last program again (same stores, and its loads
still feed its peers).  The paired orders are refused: their two members differ in length.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, UnitAttr
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.analysis.program_order import PAIRED_ORDERS, ProgramOrder, record_order, resolve_order
from tawa.dialects import aref, nvgpu, tile
from tawa.transforms.utils import column_ids, const, fail, grouped_ids, longest_first_ids, pair_members, paired_ids

PROGRAM_LOOP = "tawa.program_loop"
"""A unit attribute on the loops this pass makes (over programs, pairs and
a pair's members): what a partition runs once per program is in no other
loop (`tawa-stage-stores` tells a store run every iteration of a
program's loop from one run once per program by it)."""


def program_loop(loop: scf.ForOp) -> scf.ForOp:
    """`loop`, marked as a loop over programs (`PROGRAM_LOOP`)."""
    loop.attributes[PROGRAM_LOOP] = UnitAttr()
    return loop


@dataclass(frozen=True)
class PersistentPass(ModulePass):
    """Makes warp-specialized kernels persistent: CTAs loop over the programs
    (kernels of one partition keep one CTA per program)."""

    name = "tawa-persistent"

    group_m: int = 8
    """Grouped program order (see tawa-materialize-partitions); 1 is plain row-major order."""
    order: ProgramOrder = "auto"
    """Program order: `grouped`, `column`, `longest-first`, `paired`,
    `paired-short-first`, or `auto` (a paired order when the work grows with
    program id 0, column when the streamed tiles do not depend on it;
    tawa.analysis.program_order)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.group_m < 1:
            raise fail(None, f"{self.name}: group-m must be at least 1, got {self.group_m}")
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel = ws.parent_op()
            if not isinstance(kernel, func.FuncOp):
                raise fail(ws, f"{self.name}: aref.warp_specialize must be at the top of a kernel")
            if len(ws.partitions) > 1:  # one partition: one CTA per program (module docstring)
                self._persist(ws, kernel)

    def _persist(self, ws: aref.WarpSpecializeOp, kernel: func.FuncOp) -> None:
        order = resolve_order(kernel, self.order, persistent=True)
        cluster = nvgpu.kernel_info(kernel).cluster
        if cluster > 1 and order in PAIRED_ORDERS:
            raise fail(kernel, f"{self.name}: order '{order}' runs programs of different lengths, which the "
                               "CTAs of a cluster cannot share; clustered kernels take grouped, column or "
                               "longest-first")
        axes = {p.axis.value.data for p in ws.walk() if isinstance(p, tile.ProgramIdOp | tile.NumProgramsOp)}
        at = InsertPoint.before(ws)
        cta, ctas = nvgpu.BlockIdOp(0), nvgpu.GridDimOp(0)
        grid = [nvgpu.LaunchGridOp(a) for a in range(3 if 2 in axes else 2)]
        Rewriter.insert_op([cta, ctas, *grid], at)
        first, step = cta.result, ctas.result
        ordered = [g.result for g in grid]
        rank = None
        if cluster > 1:
            first, step, ordered[0], rank = self._cluster_grid(cluster, first, step, ordered[0], at)
        plane = arith.MuliOp(ordered[0], ordered[1])
        ops = [plane]
        programs = plane
        if len(grid) == 3:
            programs = arith.MuliOp(plane.result, ordered[2])
            ops.append(programs)
        Rewriter.insert_op(ops, at)
        programs.result.name_hint = "programs"
        if order in PAIRED_ORDERS:
            half, pairs = self._pair_count(grid, at)
        for _, _, _, region in ws.partition_specs():
            if order in PAIRED_ORDERS:
                self._loop_over_pairs(region, cta.result, pairs, ctas.result, [g.result for g in grid], half,
                                      short_first=order == "paired-short-first")
            else:
                self._loop_over_programs(region, first, programs.result, step, ordered, plane.result, order,
                                         None if rank is None else (cluster, rank, grid[0].result))
        for n in [o for o in ws.walk() if isinstance(o, tile.NumProgramsOp)]:
            n.result.replace_all_uses_with(grid[n.axis.value.data].result)
            Rewriter.erase_op(n)
        nvgpu.record_kernel_info(kernel, persistent=True)
        record_order(kernel, order)

    @staticmethod
    def _cluster_grid(cluster: int, cta, ctas, gx, at: InsertPoint):
        """(this CTA's cluster, the clusters launched, the cluster programs
        along axis 0, the CTA's rank): a cluster of `cluster` CTAs runs one
        cluster program, ceil(gx / cluster) of them along axis 0."""
        n = const(cluster, at)
        rank = nvgpu.ClusterRankOp()
        ops = [rank, first := arith.DivUIOp(cta, n), step := arith.DivUIOp(ctas, n),
               wide := arith.AddiOp(gx, const(cluster - 1, at)), gxc := arith.DivUIOp(wide.result, n)]
        Rewriter.insert_op(ops, at)
        rank.result.name_hint, first.result.name_hint, step.result.name_hint = "rank", "cluster", "clusters"
        gxc.result.name_hint = "cluster_gx"
        return first.result, step.result, gxc.result, rank.result

    def _loop_over_programs(self, region: Region, lb, ub, step, grid: list[SSAValue], plane: SSAValue,
                            order: str, cluster: tuple[int, SSAValue, SSAValue] | None = None) -> None:
        """Wraps `region`'s body in the loop over programs (module docstring);
        with `cluster` = (size, rank, gx) the loop runs over cluster programs
        and the CTA of rank r takes pid_0 = min(size · p + r, gx - 1)."""
        block = region.block
        body = Block(arg_types=[lb.type])
        body.args[0].name_hint = "program"
        for o in list(block.ops):
            o.detach()
            body.add_op(o)
        group = self.group_m if cluster is None else max(1, self.group_m // cluster[0])
        ids = self._program_ids(body.args[0], grid, plane, order, group, InsertPoint.at_start(body))
        if cluster is not None:
            ids[0] = self._member(ids[0], *cluster)
        for p in [o for o in body.walk() if isinstance(o, tile.ProgramIdOp)]:
            p.result.replace_all_uses_with(ids[p.axis.value.data])
            Rewriter.erase_op(p)
        body.add_op(scf.YieldOp())
        block.add_op(program_loop(scf.ForOp(lb, ub, step, [], body)))

    @staticmethod
    def _pair_count(grid, at: InsertPoint) -> tuple[SSAValue, SSAValue]:
        """(⌈gx/2⌉, the number of pairs ⌈gx/2⌉ · gy [· gz]) before `at`."""
        one, two = const(1, at), const(2, at)
        ops = [odd := arith.AddiOp(grid[0].result, one), half := arith.DivUIOp(odd.result, two)]
        pairs = half
        for g in grid[1:]:
            ops.append(pairs := arith.MuliOp(pairs.result, g.result))
        Rewriter.insert_op(ops, at)
        half.result.name_hint, pairs.result.name_hint = "half", "pairs"
        return half.result, pairs.result

    def _loop_over_pairs(self, region: Region, lb, ub, step, grid: list[SSAValue], half: SSAValue,
                         short_first: bool) -> None:
        """The paired loop of the module docstring around `region`'s body."""
        block = region.block
        program = Block(arg_types=[lb.type])
        program.args[0].name_hint = "member"
        for o in list(block.ops):
            o.detach()
            program.add_op(o)
        pair = Block(arg_types=[lb.type])
        pair.args[0].name_hint = "pair"
        members = pair_members(pair.args[0], half, grid[0], InsertPoint.at_end(pair))
        pair.add_ops([program_loop(scf.ForOp(const(0, InsertPoint.at_end(pair)), members,
                                             const(1, InsertPoint.at_end(pair)), [], program)), scf.YieldOp()])
        ids = paired_ids(pair.args[0], program.args[0], half, grid, InsertPoint.at_start(program), short_first)
        for o in [o for o in program.walk() if isinstance(o, tile.ProgramIdOp)]:
            o.result.replace_all_uses_with(ids[o.axis.value.data])
            Rewriter.erase_op(o)
        program.add_op(scf.YieldOp())
        block.add_op(program_loop(scf.ForOp(lb, ub, step, [], pair)))

    @staticmethod
    def _member(pid: SSAValue, size: int, rank: SSAValue, gx: SSAValue) -> SSAValue:
        """min(size · pid + rank, gx - 1), right after `pid` is computed."""
        at = InsertPoint.after(pid.owner)
        one, n = arith.ConstantOp(IntegerAttr(1, IndexType())), arith.ConstantOp(IntegerAttr(size, IndexType()))
        ops = [one, n, scaled := arith.MuliOp(pid, n.result), member := arith.AddiOp(scaled.result, rank),
               last := arith.SubiOp(gx, one.result), clamped := arith.MinUIOp(member.result, last.result)]
        Rewriter.insert_op(ops, at)
        clamped.result.name_hint = "pid_x"
        pid.name_hint = "cluster_x"
        return clamped.result

    @staticmethod
    def _program_ids(t, grid: list[SSAValue], plane: SSAValue, order: str, group: int,
                     at: InsertPoint) -> dict[int, SSAValue]:
        """The program ids of program `t` of `grid` in `order` (grouped:
        blocks of `group` along axis 0)."""
        if order == "longest-first":
            return longest_first_ids(t, grid, at)
        if order == "column":
            return column_ids(t, grid, at)
        if len(grid) == 2:
            return grouped_ids(t, grid[0], grid[1], group, at)
        # The plane of program t, then its grouped place in the plane.
        z = arith.DivUIOp(t, plane)
        within = arith.RemUIOp(t, plane)
        Rewriter.insert_op([z, within], at)
        z.result.name_hint = "pid_z"
        ids = grouped_ids(within.result, grid[0], grid[1], group, InsertPoint.after(within))
        ids[2] = z.result
        return ids
