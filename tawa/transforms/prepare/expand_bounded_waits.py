"""`tawa-expand-bounded-waits`: the watchdog's bounded waits as IR.

`tawa-bound-waits` gives every mbarrier wait of a kernel a wait id and a
timeout (`nvgpu.mbarrier_wait_parity ... watchdog(<id>, <timeout> ns)`) and
the kernel a wait table, right after `tawa-lower-aref`; the wait stays one
op through `tawa-verify-protocol`, which models one-op waits, not spins.
This pass, in `tawa-prepare-ptx`, writes each bounded wait out:

    %par  = arith.index_cast %parity : index to i32
    %late = nvgpu.mbarrier_timed_wait_parity %bars[%i], %par, <timeout> ns
    scf.if %late {
      %buf = nvgpu.watchdog_buffer
      %old = nvgpu.atomic_cas_sys %buf, 0, 1        claim the record (its `claim` word)
      scf.if (%old == 0) {
        nvgpu.store_sys <id>, %buf[wait_id]         then %ctaid.x/y/z, %tid.x, the index, %par
        nvgpu.fence_sc_sys
        nvgpu.store_sys VALID, %buf[valid] release
        nvgpu.fence_sc_sys
        nvgpu.trap
      } else {
        nvgpu.park                                  the trap of the winner ends the grid
      }
    }

The record is `tawa.backend.ptx.abi.WATCHDOG_FIELDS` (the runtime decodes
it, `tawa.runtime.watchdog`); `valid` is written last, after a system
fence, so that a host that sees it sees the rest.  The bound is time
(`%globaltimer`), read only once a first try failed: see `tawa-bound-waits`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tawa.backend.ptx.abi import WATCHDOG_VALID, watchdog_offset
from tawa.dialects import nvgpu
from tawa.transforms.prepare.rewrite_each import rewrite_each

NAME = "tawa-expand-bounded-waits"
PARK_NS = 1_000_000
"""A thread that lost the claim only waits for the winner's trap: a
millisecond per `nanosleep` keeps it off the issue slots meanwhile."""


class _Ops:
    """Collects ops in order; `add` returns the first result."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def i32(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, i32)))

    def u32(self, v: SSAValue) -> SSAValue:
        return self.add(arith.IndexCastOp(v, i32))


def _record(buf: SSAValue, wait: nvgpu.MBarrierWaitParityOp, parity: SSAValue) -> list[Operation]:
    """The winner's ops: the record's fields, `valid` last, then the trap."""
    assert wait.wait_id is not None
    b = _Ops()
    fields: list[tuple[str, Callable[[], SSAValue]]] = [
        ("wait_id", lambda: b.i32(wait.wait_id.value.data)),  # type: ignore[union-attr]
        *((f"cta_{'xyz'[axis]}", lambda axis=axis: b.u32(b.add(nvgpu.BlockIdOp(axis)))) for axis in range(3)),
        ("thread", lambda: b.u32(b.add(nvgpu.ThreadIdOp()))),
        ("index", lambda: b.u32(wait.index)),
        ("parity", lambda: parity),
    ]
    for field, value in fields:
        b.add(nvgpu.StoreSysOp(value(), buf, watchdog_offset(field)))
    b.add(nvgpu.FenceScSysOp())
    b.add(nvgpu.StoreSysOp(b.i32(WATCHDOG_VALID), buf, watchdog_offset("valid"), release=True))
    b.add(nvgpu.FenceScSysOp())
    b.add(nvgpu.TrapOp())
    return [*b.ops, scf.YieldOp()]


class ExpandBoundedWait(RewritePattern):
    """A bounded `nvgpu.mbarrier_wait_parity` → the timed spin and the report."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvgpu.MBarrierWaitParityOp, rewriter: PatternRewriter) -> None:
        if op.wait_id is None or op.timeout_ns is None:
            return
        b = _Ops()
        parity = b.u32(op.parity)
        parity.name_hint = "parity"
        late = b.add(nvgpu.MBarrierTimedWaitParityOp(op.barriers, op.index, parity, op.timeout_ns.value.data))
        late.name_hint = "late"
        report = _Ops()
        buf = report.add(nvgpu.WatchdogBufferOp())
        buf.name_hint = "watchdog"
        claim = buf
        if watchdog_offset("claim"):
            claim = report.add(arith.AddiOp(buf, report.add(arith.ConstantOp(IntegerAttr(watchdog_offset("claim"), i64)))))
        zero = report.i32(0)
        old = report.add(nvgpu.AtomicCasSysOp(claim, zero, report.i32(1)))
        won = report.add(arith.CmpiOp(old, zero, "eq"))
        report.add(scf.IfOp(won, [], Region(Block(_record(buf, op, parity))),
                            Region(Block([nvgpu.ParkOp(PARK_NS), scf.YieldOp()]))))
        report.ops.append(scf.YieldOp())
        b.add(scf.IfOp(late, [], Region(Block(report.ops))))
        rewriter.replace(op, b.ops, new_results=[])


@dataclass(frozen=True)
class ExpandBoundedWaitsPass(ModulePass):
    """Writes the watchdog's bounded waits out as a timed spin and, past the timeout, the record and the trap."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_each(op, {nvgpu.MBarrierWaitParityOp: ExpandBoundedWait()})
