"""`tawa-occupancy`: how many CTAs of a kernel share an SM, and the registers each starts with.

A decision from the machine model (tawa.target.hopper: the register file,
threads, CTA slots and shared memory of an SM), recorded on the kernel's
`#nvgpu.kernel` as `maxnreg` (the PTX entry's `.maxnreg`) and `ctas_per_sm`
(`.minnctapersm`; a kernel of one role is launched one CTA per program,
`tawa-persistent` leaves it so, and the block scheduler keeps that many of
its CTAs on an SM):

* A kernel whose warp groups all run one role — no `nvgpu.setmaxnreg`: a
  kernel without a producer (`tawa-warp-specialize` launches none where
  nothing is loaded for a dot: every kernel without dots) — takes as many
  CTAs per SM as its register demand allows.  Its demand is
  `RegisterDemand`'s estimate for the kernel body (the one
  `tawa-check-resources` checks), plus `HEADROOM`, rounded up to the
  register granule: `need`.  One SM holds `resident_ctas(threads, need,
  smem)` CTAs of it; the kernel then starts with the most registers that
  still lets that many fit (`launch_register_cap(threads, ctas)`, at most
  its partition's budget), so ptxas gets every register the occupancy
  leaves free.  Where a tile takes a subroutine call per element
  (`sqrt.rn`, `rcp.rn`: `calls_subroutine`), ptxas saves registers around
  the calls that the estimate does not count, so the kernel is budgeted at
  the most registers its threads may start with instead.  `regs` (each warp group's budget) becomes that too.  A
  memory-bound kernel's speed comes from the bytes in flight per SM: more
  CTAs per SM overlap one CTA's loads with another's math and stores.
* A warp-specialized kernel (`setmaxnreg` moves registers between its
  roles) keeps one CTA per SM at the register file shared out over its
  threads (the defaults, nothing recorded): its budgets share out the
  registers of one CTA, and a `setmaxnreg.inc` would wait for registers
  that another resident CTA holds.

A kernel whose control flow is no longer structured (the estimate needs
`scf`) keeps the defaults.  Runs after `tawa-expand-fragment-stores` (the
fragments the estimate counts are final), before `tawa-check-resources`
(which checks the demand against the `maxnreg` decided here).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tawa.analysis.register_demand import RegisterDemand, calls_subroutine
from tawa.dialects import nvgpu
from tawa.target.hopper import (
    MAX_REGS_PER_THREAD,
    REGISTER_ESTIMATE_ERROR,
    REGS_GRANULE,
    THREADS_PER_GROUP,
    launch_register_cap,
    resident_ctas,
)

NAME = "tawa-occupancy"

HEADROOM = 2 * REGISTER_ESTIMATE_ERROR
"""Registers added to the estimate before counting CTAs: twice the error
the estimate keeps to on the warp-specialized examples, because on kernels
of blocked layouts ptxas may hold more than the estimate's streamed chains
say (add + RMSNorm's 16x1024 chunks: two loaded tiles meet in one sum, and
ptxas converts one of them to f32 whole; it needs about 30 registers above
the estimate, so 3 CTAs at 168 would spill where 2 do not).  Too little
headroom spills (slow local memory on every program); too much only costs
a CTA per SM where the next one would have fit.  tests/transforms/
test_occupancy.py assembles every norms kernel at the benchmark's tile
shapes with ptxas at the decided `.maxnreg` and checks it does not spill."""


@dataclass(frozen=True)
class Occupancy:
    """The decision for one kernel."""

    demand: int | None
    """The estimated registers per thread (`RegisterDemand`; None: not
    trusted, the kernel's tiles call subroutines)."""
    need: int
    """`demand` plus headroom, rounded up to the granule."""
    ctas_per_sm: int
    maxnreg: int


def decide(threads: int, smem: int, demand: int | None, budget: int | None = None) -> Occupancy:
    """CTAs per SM and registers per thread at launch for a kernel of one
    role with `threads` threads, `smem` bytes of dynamic shared memory and
    an estimated demand of `demand` registers per thread (None: as many as
    it may start with), starting with at most `budget` (None: no bound
    below the hardware's)."""
    top = min(budget or MAX_REGS_PER_THREAD, launch_register_cap(threads))
    need = top if demand is None else -(-(demand + HEADROOM) // REGS_GRANULE) * REGS_GRANULE
    ctas = resident_ctas(threads, min(need, top), smem)
    return Occupancy(demand, need, ctas, min(top, launch_register_cap(threads, ctas)))


def kernel_occupancy(kernel: func.FuncOp) -> Occupancy | None:
    """The decision for a lowered `kernel` of one role (None: a
    warp-specialized kernel, or one not lowered enough to estimate)."""
    info = nvgpu.kernel_info(kernel)
    if not info.threads or not kernel.body.blocks:
        return None
    structured, trusted = True, True
    for op in kernel.walk():
        if isinstance(op, nvgpu.SetMaxNRegOp):
            return None
        if any(len(r.blocks) > 1 for r in op.regions):
            structured = False
        if calls_subroutine(op) and len(op.results[0].type.get_shape()) > 1:
            trusted = False  # a call per element of a tile
    if not structured or len(kernel.body.blocks) > 1:
        return None
    demand = RegisterDemand().of_block(kernel.body.block).registers if trusted else None
    return decide(info.threads, info.smem or 0, demand, min(info.regs) if info.regs else None)


@dataclass(frozen=True)
class OccupancyPass(ModulePass):
    """Decides each kernel's CTAs per SM and its registers per thread at
    launch (see the module docstring)."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if not isinstance(kernel, func.FuncOp):
                continue
            decision = kernel_occupancy(kernel)
            if decision is None:
                continue
            groups = nvgpu.kernel_info(kernel).threads // THREADS_PER_GROUP  # type: ignore[operator]
            nvgpu.record_kernel_info(kernel, maxnreg=decision.maxnreg, ctas_per_sm=decision.ctas_per_sm,
                                     regs=(decision.maxnreg,) * groups)
