"""`tawa-cluster`: CTAs that read the same tiles run side by side in a cluster and fetch them once.

A thread-block cluster is a group of CTAs on neighbouring SMs that can write
into each other's shared memory and arrive on each other's mbarriers.  A GEMM
program with pid_0 = 2c and the one with pid_0 = 2c + 1 read the same B tile
at every K step; in a cluster of two, each CTA loads half of that tile and
multicasts it to both (`nvgpu.tma_load ... multicast`), so the B tiles cross
from L2 to the SMs once instead of twice.  This pass is the decision at the
aref level; `tawa-persistent` and `tawa-lower-aref` build it:

* **which tiles** (`shared_loads`): a producer `tile.load` whose tile feeds an
  `aref.put` and whose offsets do not depend on program id 0
  (`program_order.independent_of_pid0`), so the CTAs of a cluster, which
  differ only in program id 0, load the same box.  Its rows must split into
  `size` parts that each start on the slot's swizzle pattern, and its rows
  must be one swizzle span wide (one TMA box per row band).  Such loads are
  marked `{tawa.multicast}`;
* **that the CTAs stay in step**: every loop and `scf.if` around an aref op
  of a ring that carries a marked tile (in the producer and the consumers)
  must not depend on program id 0, so both CTAs of a cluster put, get and
  release that ring's slots the same number of times (each one's producer
  waits for the other's consumers).  A GEMM's K loop qualifies; causal
  attention's key loop, which stops at the diagonal, does not;
* the kernel records `cluster = size` (`#nvgpu.kernel<..., cluster = 2>`).

What the others build from it: `tawa-persistent` runs one cluster program
per cluster, CTA rank r taking pid_0 = min(size · p + r, gx - 1) (past the
grid's edge, the last program again: its stores write the same values
again, and its loads still feed the peer); `tawa-lower-aref` loads rank r's
band of each marked tile, multicast to all ranks, has every consumer warp
group release a slot of such a ring on every CTA of the cluster (the empty
barrier counts them all), and syncs the cluster after the barriers are
initialised and before exit.

With `size=1` (the default) the pass does nothing.  A kernel with nothing to
share, or whose ring loops depend on program id 0, is an error.  Needs a
persistent kernel (`tawa-persistent` after it).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tawa.analysis.program_order import TrendAnalysis, independent_of_pid0
from tawa.analysis.smem_plan import row_bands_fit
from tawa.dialects import aref, nvgpu, tile
from tawa.dialects.aref import PartitionRole
from tawa.dialects.nvgpu.types import element_bytes
from tawa.transforms.utils import fail, kernel_of

NAME = "tawa-cluster"
MULTICAST = "tawa.multicast"
"""The attribute on a producer `tile.load` whose box the CTAs of a cluster share."""


def band_fits(t: TensorType, size: int) -> bool:
    """Whether a slot tile of type `t` splits into `size` row bands, each a
    TMA box of its own starting on the slot's swizzle pattern: rows one
    swizzle span wide (one box per band) and bands of whole patterns."""
    shape = t.get_shape()
    return row_bands_fit(shape[-2], shape[-1] * element_bytes(t.element_type), size)


def shared_loads(ws: aref.WarpSpecializeOp, size: int) -> list[tile.LoadOp]:
    """The producer loads the CTAs of a cluster of `size` share (module docstring)."""
    trends = TrendAnalysis()
    loads = []
    for role, _, _, region in ws.partition_specs():
        if role != PartitionRole.PRODUCER:
            continue
        for put in region.walk():
            if not isinstance(put, aref.PutOp):
                continue
            for v in put.values:
                load = v.owner
                if (isinstance(load, tile.LoadOp) and independent_of_pid0(list(load.offsets), trends)
                        and isinstance(load.result.type, TensorType) and band_fits(load.result.type, size)):
                    loads.append(load)
    return loads


def _step_breaker(op: Operation, region_root: Operation, trends: TrendAnalysis) -> Operation | None:
    """The first op around `op` (below `region_root`) whose trip count or
    branch may differ between the CTAs of a cluster, if any."""
    parent = op.parent_op()
    while parent is not None and parent is not region_root:
        if isinstance(parent, scf.ForOp):
            bounds = [parent.lb, parent.ub, parent.step]
        elif isinstance(parent, scf.IfOp):
            bounds = [parent.cond]
        else:
            bounds = list(parent.operands)
        if not independent_of_pid0(bounds, trends):
            return parent
        parent = parent.parent_op()
    return None


MAX_SIZE = 2
"""The largest cluster this pass makes.  The hardware takes clusters of up
to `tawa.target.hopper.MAX_CLUSTER_SIZE` CTAs, but `tawa-verify-protocol` models every CTA of a
cluster with its own roles, and the states of a GEMM in a cluster of 4 run
past its `max-states` bound after minutes of search: a size it cannot prove
is refused here, before anything compiles, not at the end of the proof."""


def size_problem(size: int) -> str | None:
    """What is wrong with `size` CTAs per cluster, or None: a power of two
    (a cluster's CTAs split a shared tile into equal bands of whole swizzle
    patterns) from 1 to `MAX_SIZE`."""
    if 1 <= size <= MAX_SIZE and not size & (size - 1):
        return None
    return (f"must be 1 or {MAX_SIZE}, got {size} (larger clusters are not proved: the protocol proof "
            "models each CTA of a cluster)")


@dataclass(frozen=True)
class ClusterPass(ModulePass):
    """Runs `size` CTAs per cluster that multicast the tiles they share."""

    name = NAME

    size: int = 1
    """CTAs per cluster along program id 0 (1: no clusters)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        problem = size_problem(self.size)
        if problem:
            raise fail(None, f"{NAME}: size {problem}")
        if self.size == 1:
            return
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            self._cluster(ws, kernel_of(ws, NAME))

    def _cluster(self, ws: aref.WarpSpecializeOp, kernel: func.FuncOp) -> None:
        if any(isinstance(o, nvgpu.LaunchGridOp) for o in kernel.walk()):
            raise fail(kernel, f"{NAME}: @{kernel.sym_name.data} is already persistent; run {NAME} before "
                               "tawa-persistent")
        loads = shared_loads(ws, self.size)
        if not loads:
            raise fail(kernel, f"{NAME}: @{kernel.sym_name.data} loads no tile that the CTAs of a cluster "
                               f"share (a producer load into an aref whose offsets do not depend on program "
                               f"id 0, with rows that split into {self.size} bands of whole swizzle patterns)")
        rings = {put.aref for put in ws.walk() if isinstance(put, aref.PutOp)
                 and any(v.owner in loads for v in put.values)}
        trends = TrendAnalysis()
        for o in ws.walk():
            if isinstance(o, aref.PutOp | aref.GetOp | aref.ConsumedOp) and o.aref in rings:
                breaker = _step_breaker(o, ws, trends)
                if breaker is not None:
                    raise fail(breaker, f"{NAME}: this {breaker.name} around the {o.name} of a ring the "
                                        f"cluster shares depends on program id 0, so the CTAs of a cluster "
                                        f"would not take its slots in step")
        for load in loads:
            load.attributes[MULTICAST] = UnitAttr()
        nvgpu.record_kernel_info(kernel, cluster=self.size)


def multicast_loads(values: list[SSAValue]) -> bool:
    """Whether some value is a load marked `{tawa.multicast}`."""
    return any(isinstance(v.owner, tile.LoadOp) and MULTICAST in v.owner.attributes for v in values)
