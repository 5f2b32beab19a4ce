"""`tawa-materialize-partitions`: partitions become code on warp groups of one CTA.

Runs after `tawa-lower-tile`, which lowered the compute inside the
partitions.  What is left of the aref level is the `aref.warp_specialize`
op itself and the program ids; this pass removes both:

* the producer's body moves under `if (thread % 128 == 0)`: TMA loads and
  barrier arrivals are issued by one thread of its warp group;
* each partition starts with `setmaxnreg` when its budget differs from the
  launch cap (65536 / threads registers, `launch_register_cap`): down below
  it, up above it, so the producer's registers fund the consumers'; a
  partition launched alone (a kernel without a producer) sets none: its
  warp groups keep what the CTA starts with, which `tawa-occupancy`
  decides (at most its budget);
* the partitions become a chain of `scf.if` on the warp-group id: partition
  i runs on warp groups [start_i, start_i + warps_i / 4), in order; the
  kernel's `#nvgpu.kernel` gets `threads` and the per-warp-group `regs`;
* program ids become CTA ids, in the kernel's program order (option
  `order`, tawa.analysis.program_order) of the CTAs numbered in launch
  order L = x + y·nx (+ z·nx·ny): `grouped` (`group-m` row tiles of one
  column band on consecutive CTAs, so they share B tiles in L2) when the
  kernel uses axes 0 and 1, plain CTA ids otherwise; `column` (plain CTA
  ids: the launch order already runs program id 0 fastest); `longest-first`
  (descending program id 0); the paired orders are an error (they need a
  persistent kernel).  (`tawa-persistent` already turned them into ids of its program
  loop.)

Afterwards no `tile` or `aref` op and no tensor value may remain: anything
left is reported as not supported by the Hopper lowering, with its location.
All of this is global (it restructures the kernel), so the pass is plain IR
construction rather than patterns.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.analysis.program_order import ProgramOrder, record_order, resolve_order
from tawa.dialects import aref, nvgpu, tile
from tawa.dialects.aref import PartitionRole
from tawa.target.hopper import THREADS_PER_GROUP, THREADS_PER_WARP, WARPS_PER_GROUP, launch_register_cap
from tawa.transforms.utils import const, fail, grouped_ids, kernel_of, longest_first_ids

NAME = "tawa-materialize-partitions"


def _guard_single_thread(region: Region) -> None:
    """Moves the producer's body under `if (thread % 128 == 0)`."""
    block = region.block
    body = Block()
    for op in list(block.ops):
        op.detach()
        body.add_op(op)
    body.add_op(scf.YieldOp())
    at = InsertPoint.at_end(block)
    tid = nvgpu.ThreadIdOp()
    Rewriter.insert_op(tid, at)
    lane = arith.RemUIOp(tid.result, const(THREADS_PER_GROUP, at))
    first = arith.CmpiOp(lane.result, const(0, at), "eq")
    Rewriter.insert_op([lane, first, scf.IfOp(first.result, [], Region(body))], at)


def _branch_on_warp_group(ws: aref.WarpSpecializeOp, kernel: func.FuncOp) -> None:
    """`if (wg < end_0) { p0 } else if (wg < end_1) { p1 } ... else { p_last }`,
    each partition first setting its register budget."""
    specs = ws.partition_specs()
    threads = sum(w for _, w, _, _ in specs) * THREADS_PER_WARP
    cap = launch_register_cap(threads)
    # One register budget per warp group, in order.
    budgets = tuple(r for _, w, r, _ in specs for _ in range(w // WARPS_PER_GROUP))
    nvgpu.record_kernel_info(kernel, threads=threads, regs=budgets)
    at = InsertPoint.before(ws)
    wg = nvgpu.WarpGroupIdOp()
    Rewriter.insert_op(wg, at)
    branches: list[Region] = []
    for _, _, regs, region in specs:
        body = ws.detach_region(region)
        block = body.block
        if len(specs) > 1 and regs != cap:
            action = nvgpu.RegAction.INC if regs > cap else nvgpu.RegAction.DEC
            Rewriter.insert_op(nvgpu.SetMaxNRegOp(action, regs), InsertPoint.at_start(block))
        block.add_op(scf.YieldOp())
        branches.append(body)
    ends, end = [], 0
    for _, warps, _, _ in specs:
        end += warps // WARPS_PER_GROUP
        ends.append(end)
    chain = branches[-1]
    for body, end in zip(reversed(branches[:-1]), reversed(ends[:-1])):
        outer = Block()
        cond = arith.CmpiOp(wg.result, const(end, InsertPoint.at_end(outer)), "ult")
        outer.add_ops([cond, scf.IfOp(cond.result, [], body, chain), scf.YieldOp()])
        chain = Region(outer)
    for o in list(chain.block.ops):
        if isinstance(o, scf.YieldOp):
            continue
        o.detach()
        Rewriter.insert_op(o, at)
    Rewriter.erase_op(ws)


def grouped_program_ids(group: int, at: InsertPoint) -> dict[int, SSAValue]:
    """(pid_0, pid_1) of the CTA in grouped order, with the CTAs numbered in
    launch order L = x + y·nx (see `grouped_ids`)."""
    x, y = nvgpu.BlockIdOp(0), nvgpu.BlockIdOp(1)
    nx, ny = nvgpu.GridDimOp(0), nvgpu.GridDimOp(1)
    lin = arith.AddiOp(x.result, (yx := arith.MuliOp(y.result, nx.result)).result)
    Rewriter.insert_op([x, y, nx, ny, yx, lin], at)
    return grouped_ids(lin.result, nx.result, ny.result, group, at)


def longest_first_program_ids(axes: set[int], at: InsertPoint) -> dict[int, SSAValue]:
    """Program ids of the CTA in longest-first order, with the CTAs numbered
    in launch order L = x + y·nx (+ z·nx·ny when axis 2 is used; see
    `longest_first_ids`)."""
    dims = range(3 if 2 in axes else 2)
    bid, n = [nvgpu.BlockIdOp(a) for a in dims], [nvgpu.GridDimOp(a) for a in dims]
    yx = arith.MuliOp(bid[1].result, n[0].result)
    lin = arith.AddiOp(bid[0].result, yx.result)
    ops: list[Operation] = [*bid, *n, yx, lin]
    if len(dims) == 3:
        plane = arith.MuliOp(n[0].result, n[1].result)
        zxy = arith.MuliOp(bid[2].result, plane.result)
        lin = arith.AddiOp(lin.result, zxy.result)
        ops += [plane, zxy, lin]
    Rewriter.insert_op(ops, at)
    return longest_first_ids(lin.result, [d.result for d in n], at)


@dataclass(frozen=True)
class MaterializePartitionsPass(ModulePass):
    """Turns partitions into warp-group branches with setmaxnreg, and program ids into CTA ids."""

    name = NAME

    group_m: int = 8
    """Grouped launch order: consecutive CTAs take `group_m` row tiles of one
    column band (program ids along axis 0 within axis 1), so tiles that run
    together share their B tiles in L2.  0 keeps program id = CTA id."""
    order: ProgramOrder = "auto"
    """Program order: `grouped` (with `group_m`), `column`, `longest-first`,
    or `auto` (column when the streamed tiles do not depend on program id 0,
    else grouped: the hardware hands CTAs out as SMs free up; the paired orders
    are for persistent kernels, tawa.analysis.program_order)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel = kernel_of(ws, NAME)
            for role, _, _, region in ws.partition_specs():
                if role == PartitionRole.PRODUCER:
                    _guard_single_thread(region)
            _branch_on_warp_group(ws, kernel)
        for kernel in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            self._program_ids(kernel)
        for o in op.walk():
            on_tiles = any(isinstance(v.type, TensorType) for v in (*o.operands, *o.results))
            if o.dialect_name() in ("tile", "aref") or on_tiles:
                raise fail(o, f"{NAME}: '{o.name}' is not supported by the Hopper lowering yet")

    def _program_ids(self, kernel: func.FuncOp) -> None:
        """Program ids become CTA ids, in the kernel's program order."""
        pids = [o for o in kernel.walk() if isinstance(o, tile.ProgramIdOp)]
        if not pids:
            return
        if nvgpu.kernel_info(kernel).cluster > 1:
            raise fail(kernel, f"{NAME}: @{kernel.sym_name.data} runs in clusters (tawa-cluster) but is not "
                               "persistent: run tawa-persistent after tawa-cluster")
        axes = {p.axis.value.data for p in pids}
        at = InsertPoint.at_start(kernel.body.block)
        order = resolve_order(kernel, self.order, persistent=False)
        record_order(kernel, order)
        if order == "longest-first":
            ids = longest_first_program_ids(axes, at)
        elif order == "grouped" and self.group_m > 0 and axes == {0, 1}:
            ids = grouped_program_ids(self.group_m, at)
        else:
            ids = {}
            for axis in sorted(axes):
                bid = nvgpu.BlockIdOp(axis)
                Rewriter.insert_op(bid, at)
                ids[axis] = bid.result
        for p in pids:
            p.result.replace_all_uses_with(ids[p.axis.value.data])
            Rewriter.erase_op(p)
