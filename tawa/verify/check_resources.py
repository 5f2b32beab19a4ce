"""`tawa-check-resources`: what ptxas or the launch would reject or spill, found before them.

A check, not a rewrite: the IR is left unchanged, and the first problem of
each kind is one located error line that says what to change.  It runs on
lowered kernels (nvgpu level, after `tawa-expand-fragment-stores`, before
`tawa-prepare-ptx`) and checks, per kernel:

* **registers**: the per-thread register demand of each role — the block
  that starts with its `nvgpu.setmaxnreg` (a kernel without one: its body,
  against the registers it starts with, `#nvgpu.kernel<maxnreg>` as
  `tawa-occupancy` decided it, by default the launch cap of its threads) —
  against its budget.
  The demand is `RegisterDemand`'s estimate (tawa/analysis/register_demand.py:
  live fragments at the worst op plus a calibrated scalar overhead), which
  lies within `REGISTER_ESTIMATE_ERROR` = 8 of what ptxas needs: a role is
  rejected when its estimate exceeds the budget by more, where ptxas would
  spill to local memory whatever the error (two 64x256xf32 accumulators in
  one consumer: 1924 bytes).  Inside that margin the kernel is let through:
  a false rejection costs a kernel that fits (d64 attention with 192 query
  rows: estimated 162 against 160, ptxas fits it without spills); when
  ptxas does spill one, the runtime says so (`RegisterSpillWarning`,
  tawa/runtime/ptxas.py).  A role
  that holds no fragments (the producer: TMA issue and index math) is not
  checked: every example's producer assembles without spills at the minimum
  budget of 24.  Needs
  structured control flow: after `convert-scf-to-cf` (multi-block regions)
  these two checks are skipped.
* **registers at launch**: the budgets of all warp groups fit the pool the
  CTA holds at launch (`register_pool`: launch cap × threads; more hangs in
  `setmaxnreg.inc`), and every wgmma's registers — its accumulator, a
  register A operand and the scalar overhead — fit under the launch cap
  itself: ptxas allocates the operands of one instruction within the
  `.maxnreg` the kernel starts with, whatever `setmaxnreg` grants later
  (a register A operand counts with the 32 bytes of K one instruction reads)
  (ptxas C7602 "Insufficient registers (128) to compile instruction ...
  register target of 154": a 64x256xf32 accumulator with three consumer
  warp groups, 512 threads).
* **shared memory**: the extent of the `nvgpu.smem_alloc` buffers plus the
  alignment slack fits the block limit (the number `tawa-lower-aref` reports
  for the same rings), no two buffers overlap (two views of the same
  bytes, same offset, size, element type and swizzle, are one buffer),
  and `#nvgpu.kernel<smem>`
  asks for at least that much.
* **TMA**: a tensor map has at most 5 dimensions, and global strides known
  at compile time (static inner dims of the memref) are multiples of 16
  bytes (dynamic ones are the runtime's check).  The other TMA rules hold
  by construction or are op verifiers: box dims ≤ 256 and a 16-byte inner
  box (`nvgpu.tma_descriptor`); a swizzled box row spans at most the
  swizzle span because rows are a multiple of the span (`!nvgpu.tma_desc`)
  and are loaded as column chunks of one span each (`chunk_columns`, the
  boxes the ABI builds).  wgmma shapes and types are the wgmma ops'
  verifiers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, NoneAttr
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from tawa.analysis.register_demand import RegisterDemand, charged_registers
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.kernel_info import kernel_info
from tawa.dialects.nvgpu.layouts import VECTOR_BYTES
from tawa.dialects.nvgpu.types import element_bytes
from tawa.target.hopper import (
    MAX_REGS,
    MAX_SMEM_BYTES,
    MAX_TMA_RANK,
    REGISTER_ESTIMATE_ERROR,
    REGS_GRANULE,
    SCALAR_REGS_OVERHEAD,
    SMEM_ALIGN_SLACK,
    THREADS_PER_GROUP,
    THREADS_PER_WARP,
    TMA_STRIDE_ALIGN,
    WGMMA_K_BYTES,
    WGMMA_M,
    WGMMA_N_STEP,
    launch_register_cap,
    register_pool,
)
from tawa.transforms.utils import fail

NAME = "tawa-check-resources"


@dataclass(frozen=True)
class CheckResourcesPass(ModulePass):
    """Rejects kernels that would exceed a register budget or shared memory,
    or break a TMA rule, with one located line each (see the module docstring)."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if isinstance(kernel, func.FuncOp) and kernel.body.blocks:
                ops = KernelOps.of(kernel)
                check_shared_memory(kernel, ops)
                check_tma(kernel, ops)
                check_registers(kernel, ops)


@dataclass
class KernelOps:
    """The ops of a kernel that the checks read, gathered in one walk."""

    allocs: list[nvgpu.SmemAllocOp] = field(default_factory=list)
    descriptors: list[nvgpu.TmaDescriptorOp] = field(default_factory=list)
    wgmmas: list[nvgpu.WgmmaOp | nvgpu.WgmmaMmaAsyncOp] = field(default_factory=list)
    roles: list[nvgpu.SetMaxNRegOp] = field(default_factory=list)
    loading: set[Block] = field(default_factory=set)
    """The blocks that hold a TMA load, at any depth."""
    structured: bool = True
    """No region of the kernel has more than one block."""

    @staticmethod
    def of(kernel: func.FuncOp) -> KernelOps:
        ops = KernelOps()
        for op in kernel.walk():
            if isinstance(op, nvgpu.SmemAllocOp):
                ops.allocs.append(op)
            elif isinstance(op, nvgpu.TmaDescriptorOp):
                ops.descriptors.append(op)
            elif isinstance(op, nvgpu.WgmmaOp | nvgpu.WgmmaMmaAsyncOp):
                ops.wgmmas.append(op)
            elif isinstance(op, nvgpu.SetMaxNRegOp):
                ops.roles.append(op)
            elif isinstance(op, nvgpu.TmaLoadOp):
                inner: Operation | None = op
                while inner is not None and (block := inner.parent_block()) is not None:
                    ops.loading.add(block)
                    inner = block.parent_op()
            if ops.structured and any(len(r.blocks) > 1 for r in op.regions):
                ops.structured = False
        return ops


# --------------------------------------------------------------------------- registers


def check_registers(kernel: func.FuncOp, ops: KernelOps | None = None) -> None:
    """The budgets fit the launch pool, each wgmma fits the launch cap, and
    each role's estimated demand fits its `setmaxnreg` budget."""
    ops = ops or KernelOps.of(kernel)
    info = kernel_info(kernel)
    if info.threads and info.regs:
        check_register_pool(kernel, info.threads, info.regs)
    if info.threads:
        check_wgmma_registers(kernel, info.threads, ops)
    if not ops.structured:
        return  # unstructured control flow (after convert-scf-to-cf)
    roles = ops.roles
    pool = register_pool(info.threads) if info.threads else None
    for setmaxnreg in roles:
        block = setmaxnreg.parent_block()
        assert block is not None
        # The producer issues the TMA loads (its budget may be above the launch cap, a consumer's below).
        producer = block in ops.loading
        role = "producer warp group" if producer else "consumer warp group"
        option = "producer-regs" if producer else "consumer-regs"
        budget = setmaxnreg.count.value.data
        raise_it = f"raise {option} (at most {MAX_REGS})"
        if pool is not None and info.regs:
            # The most this role could get with the other warp groups' budgets unchanged.
            share = info.regs.count(budget)
            others = sum(info.regs) - budget * share
            most = min(MAX_REGS, (pool // THREADS_PER_GROUP - others) // share // REGS_GRANULE * REGS_GRANULE)
            raise_it = (
                f"raise {option} (up to {most} with the other budgets unchanged)" if most > budget else
                f"raise {option} while lowering the others (all warp groups share the {pool} registers a "
                f"CTA of {info.threads} threads holds), or use a smaller BLOCK_M (fewer consumer warp "
                "groups, more registers each)"
            )
        _check_role(block, role, budget, f"setmaxnreg gives {budget}", raise_it)
    if not roles and info.threads:
        # One role (no producer): the registers the CTA starts with, as tawa-occupancy decided them.
        cap = info.launch_regs
        most = launch_register_cap(info.threads)
        why = (f"it starts with {cap} so that {info.ctas_per_sm} CTAs share an SM" if cap < most
               else f"{info.threads} threads per CTA allow {cap}")
        # (one warp group is the fewest threads a kernel launches: no advice then)
        _check_role(kernel.body.block, "consumer warp group" if info.regs else "kernel", cap, why,
                    "launch fewer threads per CTA" if info.threads > THREADS_PER_GROUP else "")


def check_register_pool(kernel: func.FuncOp, threads: int, regs: tuple[int, ...]) -> None:
    """Σ warp groups × 128 × budget ≤ the registers the CTA holds at launch."""
    total, pool = sum(regs) * THREADS_PER_GROUP, register_pool(threads)
    if total > pool:
        raise fail(kernel, f"{NAME}: the warp groups' register budgets {list(regs)} need {total} registers, "
                           f"more than the {pool} a CTA of {threads} threads holds at launch "
                           f"({launch_register_cap(threads)} per thread; setmaxnreg.inc would wait for ever): "
                           "lower producer-regs or consumer-regs")


def check_wgmma_registers(kernel: func.FuncOp, threads: int, ops: KernelOps | None = None) -> None:
    """Each wgmma's operands plus the scalar overhead fit the launch cap."""
    cap = launch_register_cap(threads)
    for op in (ops or KernelOps.of(kernel)).wgmmas:
        acc = op.acc.type
        assert isinstance(acc, nvgpu.FragmentType)
        need = acc.registers() + _a_registers_per_instruction(op.lhs) + SCALAR_REGS_OVERHEAD
        if need > cap:
            shape = "x".join(map(str, acc.get_shape()))
            rows = acc.get_shape()[0]
            widest = (cap - SCALAR_REGS_OVERHEAD) * THREADS_PER_GROUP // rows // WGMMA_N_STEP * WGMMA_N_STEP
            fewer = ("more consumer warp groups, fewer rows each (leave consumer-warps out)" if rows > WGMMA_M
                     else "a smaller BLOCK_M (fewer consumer warp groups, more registers each)")
            raise fail(op, f"{NAME}: a wgmma with a {shape}x{acc.element_type} accumulator needs ~{need} "
                           f"registers at once ({acc.registers()} for the accumulator, plus ~{need - acc.registers()}) "
                           f"but a CTA of {threads} threads starts with {cap} per thread, and ptxas fits one "
                           f"instruction within that whatever setmaxnreg grants: use BLOCK_N ≤ {widest}, or {fewer}")


def _a_registers_per_instruction(lhs) -> int:
    """The registers of a register A operand that one wgmma instruction
    reads: its k-step of 32 bytes of K (a whole-tile `nvgpu.wgmma` is one
    instruction per k-step; measured: an RS wgmma with a 64x256xf32
    accumulator and a 64x64xbf16 A fragment assembles without spills under
    a launch cap of 168)."""
    t = lhs.type
    if not isinstance(t, nvgpu.FragmentType) or not charged_registers(lhs):
        return 0
    k = t.get_shape()[-1]
    step = WGMMA_K_BYTES // element_bytes(t.element_type)
    return t.registers() * min(step, k) // k


def _check_role(block, role: str, budget: int, why: str, raise_it: str) -> None:
    # The lower bound: ptxas rescales loop-carried accumulators in place when
    # it must (register_demand's module docstring).
    peak = RegisterDemand(iter_args_in_place=True).of_block(block)
    if peak.registers - REGISTER_ESTIMATE_ERROR <= budget or not peak.fragment_registers:
        return  # ptxas may fit it (the estimate's error); a role without fragments fits the minimum budget
    biggest = max(peak.live, key=lambda v: v.type.registers(), default=None)
    if biggest is None or biggest.type.registers() < 64:
        shrink = "keep fewer fragments live"
    elif any(isinstance(o, (nvgpu.WgmmaOp, nvgpu.WgmmaMmaAsyncOp)) for o in block.walk()):
        shrink = ("use BLOCK_N=128 (a 64x256xf32 accumulator takes 128 registers, 64x128 half that) "
                  "or fewer live accumulators")
    else:  # a kernel without dots: its tiles are blocked layouts, their size the program's choice
        shrink = _blocked_tile_advice(biggest.type)
    raise fail(
        peak.op,
        f"{NAME}: {role} needs ~{peak.registers} registers per thread ({peak.describe()}, plus "
        f"~{peak.registers - peak.fragment_registers} for addresses and indices) but {why} (short by more "
        f"than the estimate's error of {REGISTER_ESTIMATE_ERROR}): "
        f"{shrink}" + (f", or {raise_it}" if raise_it else ""),
    )


def _blocked_tile_advice(t: nvgpu.FragmentType) -> str:
    """What to change about the largest live blocked tile `t` of a kernel
    without dots: its size, or, where its blocked layout leaves threads
    holding copies (rows and columns with few factors of two split over
    few lanes: `blocked_layout`), its shape."""
    shape = "x".join(map(str, t.get_shape()))
    copies = t.tiled_layout.copies()
    if copies > 1 and len(t.get_shape()) == 2:
        cols = t.get_shape()[1]
        vector = min(VECTOR_BYTES // element_bytes(t.element_type), cols)
        return (f"the largest live value, a {shape}x{t.element_type} tile, spreads over only "
                f"{THREADS_PER_GROUP // copies} of a warp group's {THREADS_PER_GROUP} threads (lanes and warps "
                f"take the powers of two that divide its rows and {vector}-value vectors of its columns), each "
                f"holding {t.registers()} registers of it: take BLOCK_N a multiple of "
                f"{vector * THREADS_PER_WARP} or a power of two, and BLOCK_M a power of two "
                "(mask the columns past the row)")
    return (f"use a smaller tile (the largest live value, a {shape}x{t.element_type} tile, takes "
            f"{t.registers()} registers a thread: fewer rows, BLOCK_M, or columns, BLOCK_N)")


# --------------------------------------------------------------------------- shared memory


def shared_memory_extent(kernel: func.FuncOp, ops: KernelOps | None = None) -> int:
    """Bytes from the base to the end of the last `nvgpu.smem_alloc` buffer."""
    return max((a.offset.value.data + a.num_bytes() for a in (ops or KernelOps.of(kernel)).allocs), default=0)


def _same_buffer(a: nvgpu.SmemAllocOp, b: nvgpu.SmemAllocOp) -> bool:
    """Whether `a` and `b` name the same bytes laid out the same way: one
    offset and size, one element type and swizzle (shapes may differ)."""
    ta, tb = a.result.type, b.result.type
    return (isinstance(ta, nvgpu.SmemType) and isinstance(tb, nvgpu.SmemType)
            and a.offset.value.data == b.offset.value.data and a.num_bytes() == b.num_bytes()
            and ta.element_type == tb.element_type and ta.swizzle == tb.swizzle)


def check_shared_memory(kernel: func.FuncOp, ops: KernelOps | None = None) -> None:
    """The buffers fit, do not overlap, and the kernel asks for them."""
    ops = ops or KernelOps.of(kernel)
    allocs = sorted(ops.allocs, key=lambda a: a.offset.value.data)
    if not allocs:
        return
    for prev, nxt in zip(allocs, allocs[1:]):
        end = prev.offset.value.data + prev.num_bytes()
        if _same_buffer(prev, nxt):
            continue  # another view of the same bytes (tawa-cluster's bands of a ring buffer)
        if nxt.offset.value.data < end:
            raise fail(nxt, f"{NAME}: this buffer at offset {nxt.offset.value.data} overlaps the "
                            f"{prev.result.type} buffer at [{prev.offset.value.data}, {end}): place it at {end} or later")
    extent = shared_memory_extent(kernel, ops)
    total = extent + SMEM_ALIGN_SLACK
    if total > MAX_SMEM_BYTES:
        last = next(a for a in allocs if a.offset.value.data + a.num_bytes() + SMEM_ALIGN_SLACK > MAX_SMEM_BYTES)
        raise fail(last, f"{NAME}: the shared-memory buffers need {total} bytes (alignment slack of "
                         f"{SMEM_ALIGN_SLACK} included), more than the {MAX_SMEM_BYTES} a block may use; "
                         f"use fewer stages or smaller tiles")
    asked = kernel_info(kernel).smem
    if asked is not None and asked < total:
        raise fail(kernel, f"{NAME}: #nvgpu.kernel<smem = {asked}> asks for less than the {total} bytes "
                           f"the buffers need (alignment slack of {SMEM_ALIGN_SLACK} included): record {total}")


# --------------------------------------------------------------------------- TMA


def check_tma(kernel: func.FuncOp, ops: KernelOps | None = None) -> None:
    """Rank and static global strides of every tensor map."""
    for d in (ops or KernelOps.of(kernel)).descriptors:
        desc, mem = d.result.type, d.source.type
        assert isinstance(desc, nvgpu.TmaDescriptorType) and isinstance(mem, MemRefType)
        box, ebytes = desc.get_shape(), element_bytes(desc.element_type)
        if len(box) > MAX_TMA_RANK:
            raise fail(d, f"{NAME}: a TMA tensor map has at most {MAX_TMA_RANK} dimensions, got "
                          f"{len(box)}: merge contiguous dimensions of {mem}")
        if not isinstance(mem.layout, NoneAttr):
            continue  # strided layouts: checked by the runtime
        shape, stride = mem.get_shape(), ebytes
        for axis in range(len(shape) - 1, 0, -1):
            if shape[axis] < 0:
                break  # a dynamic dim: the runtime checks the strides
            stride *= shape[axis]
            if stride % TMA_STRIDE_ALIGN:
                raise fail(d, f"{NAME}: TMA needs global strides of a multiple of {TMA_STRIDE_ALIGN} bytes, "
                              f"but dimension {axis - 1} of {mem} steps {stride} bytes: pad its rows to a multiple "
                              f"of {TMA_STRIDE_ALIGN} bytes")
