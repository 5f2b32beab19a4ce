"""nvgpu ops for registers, synchronization and ids: setmaxnreg, named barriers, fences, thread / warp / CTA ids."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    I32,
    IndexType,
    IntegerAttr,
    i1,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException

from tawa.dialects.common import GridAxisOp, verify_arrival_count
from tawa.dialects.nvgpu.types import RegAction, RegActionAttr

# --------------------------------------------------------------------------- registers, sync, ids


@irdl_op_definition
class SetMaxNRegOp(IRDLOperation):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 count`: sets the per-thread
    register budget of the executing warp group to `count` (a multiple of 8 in
    [24, 256]).  All threads of the warp group execute it together.

    Example: `nvgpu.setmaxnreg inc 232`
    """

    name = "nvgpu.setmaxnreg"
    action = prop_def(RegActionAttr)
    count = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$action $count attr-dict"

    def __init__(self, action: RegAction, count: int):
        super().__init__(
            properties={"action": RegActionAttr(action), "count": IntegerAttr(count, 32)}
        )

    def verify_(self) -> None:
        c = self.count.value.data
        if not 24 <= c <= 256 or c % 8:
            raise VerifyException(
                f"nvgpu.setmaxnreg count must be a multiple of 8 in [24, 256], got {c}"
            )


class _NamedBarrierOp(IRDLOperation):
    barrier_id = prop_def(IntegerAttr[I32])
    num_threads = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$barrier_id `,` $num_threads attr-dict"

    def __init__(self, barrier_id: int, num_threads: int):
        super().__init__(properties={"barrier_id": IntegerAttr(barrier_id, 32),
                                     "num_threads": IntegerAttr(num_threads, 32)})

    def verify_(self) -> None:
        bid, n = self.barrier_id.value.data, self.num_threads.value.data
        if not 0 <= bid <= 15:
            raise VerifyException(f"{self.name} barrier id must be in [0, 15], got {bid}")
        if n <= 0 or n % 32 or n > 1024:
            raise VerifyException(
                f"{self.name} thread count must be a multiple of 32 in [32, 1024], got {n}"
            )


@irdl_op_definition
class NamedBarrierSyncOp(_NamedBarrierOp):
    """`bar.sync id, threads`: waits until `threads` threads (whole warps) have
    arrived at named barrier `id`.  Barrier 0 with every thread is the CTA-wide
    barrier.

    Example: `nvgpu.named_barrier_sync 0, 384`
    """

    name = "nvgpu.named_barrier_sync"


@irdl_op_definition
class NamedBarrierArriveOp(_NamedBarrierOp):
    """`bar.arrive id, threads`: arrives at named barrier `id` without waiting.

    Example: `nvgpu.named_barrier_arrive 1, 256`
    """

    name = "nvgpu.named_barrier_arrive"


@irdl_op_definition
class CounterArriveOp(IRDLOperation):
    """A CTA's arrival at a global i32 counter of `count` arrivals, executed
    by the `num_threads` threads of named barrier `barrier_id` together
    (`tile.counter_arrive` of their partition): true in all of them when
    theirs was the `count`-th arrival.  In PTX:

        fence.acq_rel.gpu;                          every thread: its stores before, at GPU scope
        bar.sync barrier_id, num_threads;           ... all of them before the leader's atomic
        top = count - 1                             (a u32 register: count is a value)
        @leader atom.acq_rel.gpu.global.inc.u32 old, [address], top;
        bar.red.or.pred last, barrier_id, num_threads, leader && old == top;
        fence.acq_rel.gpu;                          every thread's later loads after the acquire

    `address` is the counter's byte address, `leader` true in exactly one
    of the threads.  `atom.inc` wraps (old ≥ count − 1 gives 0), so the last
    arrival leaves the counter at 0.  The fences are part of the op, so no
    lowering can leave them out.

    Example: `%last = nvgpu.counter_arrive %addr, %leader count %four barrier 1 threads 256`
    """

    name = "nvgpu.counter_arrive"
    address = operand_def(IndexType)
    leader = operand_def(i1)
    count = operand_def(IndexType)
    barrier_id = prop_def(IntegerAttr[I32])
    num_threads = prop_def(IntegerAttr[I32])
    result = result_def(i1)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = ("$address `,` $leader `count` $count `barrier` $barrier_id `threads` $num_threads "
                       "attr-dict")

    def __init__(self, address: SSAValue, leader: SSAValue, count: SSAValue, barrier_id: int, num_threads: int):
        super().__init__(operands=[address, leader, count], result_types=[i1], properties={
            "barrier_id": IntegerAttr(barrier_id, 32), "num_threads": IntegerAttr(num_threads, 32)})

    def verify_(self) -> None:
        verify_arrival_count(self.name, self.count)
        _NamedBarrierOp.verify_(self)  # type: ignore[arg-type]


@irdl_op_definition
class FenceProxyAsyncOp(IRDLOperation):
    """`fence.proxy.async.shared::cta`: orders this thread's generic-proxy
    shared-memory accesses with later async-proxy ones (TMA, wgmma).

    Example: `nvgpu.fence_proxy_async`
    """

    name = "nvgpu.fence_proxy_async"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


@irdl_op_definition
class FenceCtaOp(IRDLOperation):
    """`fence.acq_rel.cta`: orders this thread's memory accesses before it
    with those after it, at CTA scope.  ptxas moves no instruction across
    it, which is what tawa uses it for: it keeps a `wgmma.wait_group` after
    the register math the program placed before it
    (`tawa.transforms.lower.pin_waits`).

    Example: `nvgpu.fence_cta`
    """

    name = "nvgpu.fence_cta"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


@irdl_op_definition
class FenceMBarrierInitOp(IRDLOperation):
    """`fence.mbarrier_init.release.cluster`: makes this thread's mbarrier
    initialisations visible to other threads and to the async proxy.

    Example: `nvgpu.fence_mbarrier_init`
    """

    name = "nvgpu.fence_mbarrier_init"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


class _IdOp(IRDLOperation):
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class ThreadIdOp(_IdOp):
    """The thread's index in the CTA (`%tid.x`; CTAs are 1-D).

    Example: `%t = nvgpu.thread_id`
    """

    name = "nvgpu.thread_id"


@irdl_op_definition
class LaneIdOp(_IdOp):
    """The thread's lane in its warp (`%laneid`, 0..31).

    Example: `%l = nvgpu.lane_id`
    """

    name = "nvgpu.lane_id"


@irdl_op_definition
class WarpIdOp(_IdOp):
    """The warp's index in the CTA (thread id / 32).

    Example: `%w = nvgpu.warp_id`
    """

    name = "nvgpu.warp_id"


@irdl_op_definition
class WarpGroupIdOp(_IdOp):
    """The warp group's index in the CTA (thread id / 128).

    Example: `%g = nvgpu.warp_group_id`
    """

    name = "nvgpu.warp_group_id"


@irdl_op_definition
class ClusterRankOp(_IdOp):
    """The CTA's rank in its thread-block cluster (`%cluster_ctarank`,
    0..cluster size - 1; a kernel without clusters is a cluster of one).

    Example: `%r = nvgpu.cluster_rank`
    """

    name = "nvgpu.cluster_rank"


@irdl_op_definition
class ClusterSyncOp(IRDLOperation):
    """Every thread of every CTA of the cluster arrives, then waits until all
    have (`barrier.cluster.arrive` + `barrier.cluster.wait`, release and
    acquire at cluster scope).  A cluster kernel syncs once after its
    barriers are initialised, before any CTA arrives on or multicasts into
    a peer's, and once before exit, so that no CTA leaves while a peer may
    still arrive on its barriers.  Executed by all threads of the CTA.

    Example: `nvgpu.cluster_sync`
    """

    name = "nvgpu.cluster_sync"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


@irdl_op_definition
class BlockIdOp(GridAxisOp):
    """The CTA's index along grid axis `axis` (`%ctaid.x/y/z`).

    Example: `%b = nvgpu.block_id 0`
    """

    name = "nvgpu.block_id"


@irdl_op_definition
class GridDimOp(GridAxisOp):
    """The number of CTAs along grid axis `axis` (`%nctaid.x/y/z`).

    Example: `%n = nvgpu.grid_dim 1`
    """

    name = "nvgpu.grid_dim"


@irdl_op_definition
class LaunchGridOp(GridAxisOp):
    """The size of the tile program's logical grid along `axis`: a kernel
    parameter the runtime fills from `grid=`.  Persistent kernels launch fewer
    CTAs than programs and loop over the logical grid.

    Example: `%gx = nvgpu.launch_grid 0`
    """

    name = "nvgpu.launch_grid"


@irdl_op_definition
class ElectOneOp(IRDLOperation):
    """`elect.sync`: true in exactly one active thread of the executing warp.

    Example: `%leader = nvgpu.elect_one`
    """

    name = "nvgpu.elect_one"
    result = result_def(i1)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "attr-dict"
