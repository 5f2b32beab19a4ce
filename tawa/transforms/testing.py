"""`tawa-break-protocol{kind=...}`: TEST ONLY. Breaks a lowered kernel's barrier protocol on purpose.

Never part of a real pipeline: tests use it to build kernels that deadlock,
so that the watchdog (`tawa-bound-waits`, `tawa.compile(..., watchdog_ms=2000)`)
and the protocol checks have something to catch.  It works on nvgpu IR at
any stage after `tawa-lower-aref` (before or after `tawa-prepare-ptx`), and
tells the rings' barrier arrays apart by what signals them: an array that
some `nvgpu.tma_load` completes is a `full` array, any other array waited on
is an `empty` array.

kinds:
* `flip-empty-parity`: every wait on an `empty` array waits for the other
  parity (an `arith.xori 1` before it; a bounded wait that
  `tawa-expand-bounded-waits` wrote out, of the 32-bit parity its spin and
  its record share), so the producer's first wait asks for a phase of a
  free slot that never completes: the kernel hangs at once.
* `drop-release`: every plain `nvgpu.mbarrier_arrive` (the consumers'
  release of a slot) is erased, so the producer hangs when the ring wraps
  (after D loads; a kernel whose loops run at most D times still finishes).

`with_broken_protocol(passes, kind)` wraps `tawa.runtime.compiler`'s pass
registry so that `tawa.compile` runs the real `tawa-hopper-pipeline` and then
this pass (for GPU tests, in a subprocess: a hang or a trap ends its CUDA
context).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, i32
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import nvgpu
from tawa.transforms.utils import fail

NAME = "tawa-break-protocol"
KINDS = ("flip-empty-parity", "drop-release")


def full_arrays(module: ModuleOp) -> set[SSAValue]:
    """The mbarrier arrays that TMA loads complete (whole tiles, or their
    boxes after `tawa-prepare-ptx`)."""
    return {o.barriers for o in module.walk() if isinstance(o, nvgpu.TmaLoadOp | nvgpu.TmaLoadBoxOp)}


@dataclass(frozen=True)
class BreakProtocolPass(ModulePass):
    """TEST ONLY: makes a lowered kernel deadlock (see the module docstring for the kinds)."""

    name = NAME

    kind: str = "flip-empty-parity"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.kind not in KINDS:
            raise fail(None, f"{NAME}: unknown kind {self.kind!r} (expected {' or '.join(KINDS)})")
        full = full_arrays(op)
        if self.kind == "drop-release":
            arrives = [o for o in op.walk() if isinstance(o, nvgpu.MBarrierArriveOp) and o.barriers not in full]
            for o in arrives:
                Rewriter.erase_op(o)
            return
        for wait in [o for o in op.walk() if isinstance(o, nvgpu.MBarrierWaitParityOp)]:
            if wait.barriers in full:
                continue
            one = arith.ConstantOp(IntegerAttr(1, IndexType()))
            flipped = arith.XOrIOp(wait.parity, one.result)
            Rewriter.insert_op([one, flipped], InsertPoint.before(wait))
            wait.operands[2] = flipped.result
        for timed in [o for o in op.walk() if isinstance(o, nvgpu.MBarrierTimedWaitParityOp)]:
            if timed.barriers in full:
                continue
            # The record reports the parity the spin waited for: every use flips.
            parity = timed.parity
            one = arith.ConstantOp(IntegerAttr(1, i32))
            flipped = arith.XOrIOp(parity, one.result)
            Rewriter.insert_op([one, flipped], InsertPoint.before(timed))
            parity.replace_uses_with_if(flipped.result, lambda use, flipped=flipped: use.operation is not flipped)


def with_broken_protocol(
    passes: Callable[[], dict[str, Callable[[], type[ModulePass]]]], kind: str
) -> Callable[[], dict[str, Callable[[], type[ModulePass]]]]:
    """A pass registry like `passes` whose `tawa-hopper-pipeline` ends with
    `tawa-break-protocol{kind}` (substitute it for
    `tawa.runtime.compiler.available_passes`)."""

    def broken() -> dict[str, Callable[[], type[ModulePass]]]:
        registry = dict(passes())
        real = registry["tawa-hopper-pipeline"]()

        class BrokenHopperPipeline(real):  # type: ignore[valid-type, misc]
            def apply(self, ctx: Context, op: ModuleOp) -> None:
                super().apply(ctx, op)
                BreakProtocolPass(kind=kind).apply(ctx, op)

        BrokenHopperPipeline.__name__ = real.__name__
        registry["tawa-hopper-pipeline"] = lambda: BrokenHopperPipeline
        return registry

    return broken
