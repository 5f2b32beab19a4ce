"""`tawa-bound-waits{timeout_ms=2000}`: the watchdog's bounded mbarrier waits.

A wrong phase, a missing arrival or an expect_tx count that the TMA boxes
never reach leaves some `nvgpu.mbarrier_wait_parity` spinning forever: on the
GPU, a silent hang.  This pass turns every such wait into its bounded form

    nvgpu.mbarrier_wait_parity %bars[%s], %ph watchdog(<id>, <timeout> ns) : !nvgpu.mbarrier<4>

and records, in the kernel's `#nvgpu.kernel<..., waits = [...]>`, entry `<id>`
of the wait table: the wait's source location, the role of the warp groups
that execute it (`producer` / `consumer` when the wait still sits in a
partition of `aref.warp_specialize`, as it does right after
`tawa-lower-aref`, where `tawa-hopper-pipeline{watchdog=true}` runs this
pass; "" otherwise) and the barrier array (its `nvgpu.smem_alloc`: size and
shared-memory offset).  A kernel with a wait table takes one more parameter,
the watchdog buffer (`tawa.backend.ptx.abi`).  The wait stays one op here,
as `tawa-verify-protocol` models it; `tawa-expand-bounded-waits`, in
`tawa-prepare-ptx`, writes it out as ops: a spin on `%globaltimer` that, past
the timeout, writes a record (CTA, thread, barrier index, parity, wait id) in
the buffer and traps.  The runtime turns that record into a
`KernelHangError` naming the wait (`tawa.runtime.watchdog`).

The bound is time, not a count of `try_wait` iterations: one try_wait
suspends the thread for a hardware-dependent while, so a count would mean a
different time on every GPU and clock, whereas `%globaltimer` is in
nanoseconds everywhere.  The timer is read only after a first try failed, so
a wait that is already satisfied costs what it did without the watchdog.

Waits that are already bounded keep their ids (the pass is idempotent).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tawa.diagnostics import location_of
from tawa.dialects import aref, nvgpu
from tawa.transforms.utils import fail

NAME = "tawa-bound-waits"
NS_PER_MS = 1_000_000


def role_of(op: Operation) -> str:
    """The role of the `aref.warp_specialize` partition holding `op`, or ""."""
    child, parent = op, op.parent_op()
    while parent is not None:
        if isinstance(parent, aref.WarpSpecializeOp):
            for role, _, _, region in parent.partition_specs():
                if child.parent_region() is region:
                    return str(role)
        child, parent = parent, parent.parent_op()
    return ""


def describe_barriers(bars: SSAValue) -> str:
    """How a message names an mbarrier array: its name if it has one, its
    size and its place in shared memory when an `nvgpu.smem_alloc` made it."""
    t = bars.type
    assert isinstance(t, nvgpu.MBarrierType)
    text = f"mbarrier<{t.count.data}>"
    owner = bars.owner
    if isinstance(owner, nvgpu.SmemAllocOp):
        text += f" at shared offset {owner.offset.value.data}"
    return f"%{bars.name_hint} ({text})" if bars.name_hint else text


@dataclass(frozen=True)
class BoundWaitsPass(ModulePass):
    """Bounds every mbarrier wait (watchdog): a wait past `timeout_ms` records itself and traps."""

    name = NAME

    timeout_ms: int = 2000
    """How long a wait may spin (after its first failed try) before it is
    reported as hung: milliseconds of `%globaltimer`."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.timeout_ms <= 0:
            raise fail(None, f"{NAME}: timeout_ms must be positive, got {self.timeout_ms}")
        timeout = IntegerAttr(self.timeout_ms * NS_PER_MS, i64)
        for kernel in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            waits = [o for o in kernel.walk() if isinstance(o, nvgpu.MBarrierWaitParityOp) and o.wait_id is None]
            if not waits:
                continue
            table = list(nvgpu.kernel_info(kernel).waits)
            for wait in waits:
                where = location_of(wait) or f"@{kernel.sym_name.data}"
                wait.wait_id = IntegerAttr(len(table), i32)
                wait.timeout_ns = timeout
                table.append((where, role_of(wait), describe_barriers(wait.barriers)))
            nvgpu.record_kernel_info(kernel, waits=tuple(table))
