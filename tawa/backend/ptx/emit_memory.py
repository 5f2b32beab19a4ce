"""PTX emitters of thread ids, shared memory, mbarriers, TMA, named
barriers, fences and `setmaxnreg`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Operation, SSAValue

from tawa.dialects import nvgpu
from tawa.target.hopper import MBARRIER_BYTES, THREADS_PER_GROUP, THREADS_PER_WARP

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter


def mbarrier_addr(p: KernelPrinter, bars: SSAValue, index: SSAValue) -> str:
    i = p.u32(index)
    a = p.regs.new("r")
    p.emit(f"shl.b32 {i}, {i}, {MBARRIER_BYTES.bit_length() - 1};")
    p.emit(f"add.u32 {a}, {p.reg(bars)}, {i};")
    return a


def stage_addr(p: KernelPrinter, buf: SSAValue, stage: SSAValue, extra: SSAValue | None = None,
               row_bytes: int = 0) -> str:
    t = buf.type
    assert isinstance(t, nvgpu.SmemType)
    stage_bytes = t.num_bytes() // t.get_shape()[0]
    s = p.u32(stage)
    a = p.regs.new("r")
    p.emit(f"mad.lo.u32 {a}, {s}, {stage_bytes}, {p.reg(buf)};")
    if extra is not None:
        e = p.u32(extra)
        p.emit(f"mad.lo.u32 {a}, {e}, {row_bytes}, {a};")
    return a


# --------------------------------------------------------------------------- ids

def _special(p: KernelPrinter, op: Operation, src: str, shift: int = 0) -> None:
    t = p.regs.new("r")
    p.emit(f"mov.u32 {t}, {src};")
    if shift:
        p.emit(f"shr.u32 {t}, {t}, {shift};")
    p.emit(f"cvt.u64.u32 {p.define(op.results[0])}, {t};")


def emit_thread_id(p: KernelPrinter, op: nvgpu.ThreadIdOp) -> None:
    _special(p, op, "%tid.x")


def emit_lane_id(p: KernelPrinter, op: nvgpu.LaneIdOp) -> None:
    _special(p, op, "%laneid")


def emit_warp_id(p: KernelPrinter, op: nvgpu.WarpIdOp) -> None:
    _special(p, op, "%tid.x", THREADS_PER_WARP.bit_length() - 1)


def emit_warp_group_id(p: KernelPrinter, op: nvgpu.WarpGroupIdOp) -> None:
    _special(p, op, "%tid.x", THREADS_PER_GROUP.bit_length() - 1)


def emit_cluster_rank(p: KernelPrinter, op: nvgpu.ClusterRankOp) -> None:
    _special(p, op, "%cluster_ctarank")


def emit_block_id(p: KernelPrinter, op: nvgpu.BlockIdOp) -> None:
    _special(p, op, "%ctaid." + "xyz"[op.axis.value.data])


def emit_grid_dim(p: KernelPrinter, op: nvgpu.GridDimOp) -> None:
    _special(p, op, "%nctaid." + "xyz"[op.axis.value.data])


def emit_launch_grid(p: KernelPrinter, op: nvgpu.LaunchGridOp) -> None:
    p.emit(f"ld.param.u64 {p.define(op.result)}, [grid{op.axis.value.data}];")


def emit_elect_one(p: KernelPrinter, op: nvgpu.ElectOneOp) -> None:
    p.emit(f"elect.sync _|{p.define(op.result)}, 0xffffffff;")


# --------------------------------------------------------------------------- shared memory, mbarriers

def emit_smem_alloc(p: KernelPrinter, op: nvgpu.SmemAllocOp) -> None:
    p.emit(f"add.u32 {p.define(op.result)}, {p.smem_base}, {op.offset.value.data};")


def emit_mbarrier_init(p: KernelPrinter, op: nvgpu.MBarrierInitOp) -> None:
    a = mbarrier_addr(p, op.barriers, op.index)
    p.emit(f"mbarrier.init.shared::cta.b64 [{a}], {op.count.value.data};")


def emit_mbarrier_arrive(p: KernelPrinter, op: nvgpu.MBarrierArriveOp) -> None:
    a = mbarrier_addr(p, op.barriers, op.index)
    if op.cta is None:
        p.emit(f"mbarrier.arrive.shared::cta.b64 _, [{a}];")
        return
    # The peer's barrier at the same offset, through the cluster window; the
    # default (release at CTA scope) semantics: `.release.cluster` would add a
    # GPU-wide membar to every arrive (hopper-verified.md, pitfall 1).
    remote = p.regs.new("r")
    p.emit(f"mapa.shared::cluster.u32 {remote}, {a}, {p.u32(op.cta)};")
    p.emit(f"mbarrier.arrive.shared::cluster.b64 _, [{remote}];")


def emit_mbarrier_arrive_expect_tx(p: KernelPrinter, op: nvgpu.MBarrierArriveExpectTxOp) -> None:
    a = mbarrier_addr(p, op.barriers, op.index)
    p.emit(f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [{a}], {op.bytes.value.data};")


def emit_mbarrier_try_wait_parity(p: KernelPrinter, op: nvgpu.MBarrierTryWaitParityOp) -> None:
    a = mbarrier_addr(p, op.barriers, op.index)
    par = p.u32(op.parity)
    p.emit(f"mbarrier.try_wait.parity.shared::cta.b64 {p.define(op.result)}, [{a}], {par};")


def emit_mbarrier_wait_parity(p: KernelPrinter, op: nvgpu.MBarrierWaitParityOp) -> None:
    """A fixed spin: try_wait already suspends the thread for a while, so
    the loop is one instruction and a branch, never worth a CFG of its own.
    A bounded wait (a `wait_id`) is written out by `tawa-expand-bounded-waits`."""
    if op.wait_id is not None:
        raise p.unsupported(op, "a bounded wait: run tawa-expand-bounded-waits first (tawa-hopper-pipeline does)")
    a = mbarrier_addr(p, op.barriers, op.index)
    par = p.u32(op.parity)
    ok = p.regs.new("p")
    again = p.label("wait")
    p.lines.append(f"{again}:")
    p.emit(f"mbarrier.try_wait.parity.shared::cta.b64 {ok}, [{a}], {par};")
    p.emit(f"@!{ok} bra {again};")


def emit_mbarrier_timed_wait_parity(p: KernelPrinter, op: nvgpu.MBarrierTimedWaitParityOp) -> None:
    """The bounded spin: a first try_wait, then (only once it failed) a
    spin that reads `%globaltimer` after each failed try; the result is
    whether `timeout_ns` passed first."""
    a = mbarrier_addr(p, op.barriers, op.index)
    par = p.reg(op.parity)
    late = p.define(op.result)
    ok, start, now = p.regs.new("p"), p.regs.new("rd"), p.regs.new("rd")
    done, again = p.label("wait_done"), p.label("wait")
    try_wait = f"mbarrier.try_wait.parity.shared::cta.b64 {ok}, [{a}], {par};"
    p.emit(f"mov.pred {late}, 0;")
    p.emit(try_wait)
    p.emit(f"@{ok} bra {done};")
    p.emit(f"mov.u64 {start}, %globaltimer;")
    p.lines.append(f"{again}:")
    p.emit(try_wait)
    p.emit(f"@{ok} bra {done};")
    p.emit(f"mov.u64 {now}, %globaltimer;")
    p.emit(f"sub.u64 {now}, {now}, {start};")
    p.emit(f"setp.ge.u64 {late}, {now}, {op.timeout_ns.value.data};")
    p.emit(f"@!{late} bra {again};")
    p.lines.append(f"{done}:")


# --------------------------------------------------------------------------- fences, barriers, registers

def emit_fence_mbarrier_init(p: KernelPrinter, op: nvgpu.FenceMBarrierInitOp) -> None:
    p.emit("fence.mbarrier_init.release.cluster;")


def emit_fence_cta(p: KernelPrinter, op: nvgpu.FenceCtaOp) -> None:
    p.emit("fence.acq_rel.cta;")


def emit_fence_proxy_async(p: KernelPrinter, op: nvgpu.FenceProxyAsyncOp) -> None:
    p.emit("fence.proxy.async.shared::cta;")


def emit_cluster_sync(p: KernelPrinter, op: nvgpu.ClusterSyncOp) -> None:
    p.emit("barrier.cluster.arrive;")
    p.emit("barrier.cluster.wait;")


def emit_named_barrier_sync(p: KernelPrinter, op: nvgpu.NamedBarrierSyncOp) -> None:
    p.emit(f"bar.sync {op.barrier_id.value.data}, {op.num_threads.value.data};")


def emit_counter_arrive(p: KernelPrinter, op: nvgpu.CounterArriveOp) -> None:
    """The sequence in `nvgpu.CounterArriveOp`'s docstring: the old value is
    0 in every thread but the leader, so only the leader's bit can be set."""
    bar, threads = op.barrier_id.value.data, op.num_threads.value.data
    old, top, mine, last = p.regs.new("r"), p.regs.new("r"), p.regs.new("p"), p.define(op.result)
    leader = p.reg(op.leader)
    p.emit(f"sub.u32 {top}, {p.u32(op.count)}, 1;")
    p.emit("fence.acq_rel.gpu;")
    p.emit(f"bar.sync {bar}, {threads};")
    p.emit(f"mov.u32 {old}, 0;")
    p.emit(f"@{leader} atom.acq_rel.gpu.global.inc.u32 {old}, [{p.reg(op.address)}], {top};")
    p.emit(f"setp.eq.and.u32 {mine}, {old}, {top}, {leader};")
    p.emit(f"bar.red.or.pred {last}, {bar}, {threads}, {mine};")
    p.emit("fence.acq_rel.gpu;")


def emit_load_global_scalar(p: KernelPrinter, op: nvgpu.LoadGlobalScalarOp) -> None:
    """0, then the element where `in_bounds` holds (an out-of-bounds address
    is never read)."""
    f32 = isinstance(op.result.type, Float32Type)
    kind = "f32" if f32 else "b32"
    r = p.define(op.result)
    p.emit(f"mov.{kind} {r}, {'0f00000000' if f32 else 0};")
    p.emit(f"@{p.reg(op.in_bounds)} ld.global.{kind} {r}, [{p.reg(op.address)}];")


def emit_named_barrier_arrive(p: KernelPrinter, op: nvgpu.NamedBarrierArriveOp) -> None:
    p.emit(f"bar.arrive {op.barrier_id.value.data}, {op.num_threads.value.data};")


def emit_setmaxnreg(p: KernelPrinter, op: nvgpu.SetMaxNRegOp) -> None:
    p.emit(f"setmaxnreg.{op.action.data.value}.sync.aligned.u32 {op.count.value.data};")


# --------------------------------------------------------------------------- TMA

def emit_tma_descriptor(p: KernelPrinter, op: nvgpu.TmaDescriptorOp) -> None:
    param = p.tmap_params[p.tmap_index]
    p.tmap_index += 1
    r = p.define(op.result)
    p.emit(f"mov.b64 {r}, {param.name};")
    p.emit(f"cvta.param.u64 {r}, {r};")


def _box(p: KernelPrinter, base: str, offset: int, coords: Sequence[SSAValue]) -> tuple[str, str]:
    """(shared address, coordinate list) of a TMA box at byte `offset` from
    `base` (its chunk's place in the stage, `tawa-split-tma-chunks`)."""
    addr = base
    if offset:
        addr = p.regs.new("r")
        p.emit(f"add.u32 {addr}, {base}, {offset};")
    inner = p.u32(coords[-1])
    outer = [p.u32(c) for c in reversed(coords[:-1])]
    return addr, "{" + ", ".join([inner, *outer]) + "}"  # innermost first


def emit_tma_load_box(p: KernelPrinter, op: nvgpu.TmaLoadBoxOp) -> None:
    dst = stage_addr(p, op.dest, op.stage)
    bar = mbarrier_addr(p, op.barriers, op.barrier_index)
    rank = len(op.coords)
    hint, policy, multicast, mask = "", "", "", ""
    if op.multicast is not None:  # the CTA mask, a 16-bit operand
        mask = p.regs.new("h")
        p.emit(f"mov.b16 {mask}, {op.multicast.value.data};")
        multicast, mask = ".multicast::cluster", f", {mask}"
    if op.l2 is not None:  # the op's eviction priority, as the policy operand the instruction takes
        policy = p.regs.new("rd")
        p.emit(f"createpolicy.fractional.L2::{op.l2.data}.b64 {policy}, 1.0;")
        hint, policy = ".L2::cache_hint", f", {policy}"
    addr, coords = _box(p, dst, op.offset.value.data, op.coords)
    p.emit(
        f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{multicast}{hint} "
        f"[{addr}], [{p.reg(op.desc)}, {coords}], [{bar}]{mask}{policy};"
    )


def emit_tma_store_box(p: KernelPrinter, op: nvgpu.TmaStoreBoxOp) -> None:
    src = stage_addr(p, op.source, op.stage)
    addr, coords = _box(p, src, op.offset.value.data, op.coords)
    copy = "cp.reduce.async.bulk.tensor" if op.add is not None else "cp.async.bulk.tensor"
    add = ".add" if op.add is not None else ""
    p.emit(
        f"{copy}.{len(op.coords)}d.global.shared::cta{add}.tile.bulk_group "
        f"[{p.reg(op.desc)}, {coords}], [{addr}];"
    )


def emit_tma_store_commit(p: KernelPrinter, op: nvgpu.TmaStoreCommitOp) -> None:
    p.emit("cp.async.bulk.commit_group;")


def emit_tma_store_wait(p: KernelPrinter, op: nvgpu.TmaStoreWaitOp) -> None:
    p.emit(f"cp.async.bulk.wait_group.read {op.pending.value.data};")


EMITTERS: dict[type[Operation], Callable] = {
    nvgpu.ThreadIdOp: emit_thread_id,
    nvgpu.LaneIdOp: emit_lane_id,
    nvgpu.WarpIdOp: emit_warp_id,
    nvgpu.WarpGroupIdOp: emit_warp_group_id,
    nvgpu.ClusterRankOp: emit_cluster_rank,
    nvgpu.BlockIdOp: emit_block_id,
    nvgpu.GridDimOp: emit_grid_dim,
    nvgpu.LaunchGridOp: emit_launch_grid,
    nvgpu.ElectOneOp: emit_elect_one,
    nvgpu.SmemAllocOp: emit_smem_alloc,
    nvgpu.MBarrierInitOp: emit_mbarrier_init,
    nvgpu.MBarrierArriveOp: emit_mbarrier_arrive,
    nvgpu.MBarrierArriveExpectTxOp: emit_mbarrier_arrive_expect_tx,
    nvgpu.MBarrierTryWaitParityOp: emit_mbarrier_try_wait_parity,
    nvgpu.MBarrierWaitParityOp: emit_mbarrier_wait_parity,
    nvgpu.MBarrierTimedWaitParityOp: emit_mbarrier_timed_wait_parity,
    nvgpu.FenceMBarrierInitOp: emit_fence_mbarrier_init,
    nvgpu.FenceCtaOp: emit_fence_cta,
    nvgpu.FenceProxyAsyncOp: emit_fence_proxy_async,
    nvgpu.ClusterSyncOp: emit_cluster_sync,
    nvgpu.NamedBarrierSyncOp: emit_named_barrier_sync,
    nvgpu.NamedBarrierArriveOp: emit_named_barrier_arrive,
    nvgpu.CounterArriveOp: emit_counter_arrive,
    nvgpu.LoadGlobalScalarOp: emit_load_global_scalar,
    nvgpu.SetMaxNRegOp: emit_setmaxnreg,
    nvgpu.TmaDescriptorOp: emit_tma_descriptor,
    nvgpu.TmaLoadBoxOp: emit_tma_load_box,
    nvgpu.TmaStoreBoxOp: emit_tma_store_box,
    nvgpu.TmaStoreCommitOp: emit_tma_store_commit,
    nvgpu.TmaStoreWaitOp: emit_tma_store_wait,
}
"""Emitter of each op this module prints."""
