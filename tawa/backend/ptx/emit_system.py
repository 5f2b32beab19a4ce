"""PTX emitters of the ops that reach past the GPU (`tawa.dialects.nvgpu.system`):
the watchdog buffer's parameter, system-scope atomics, stores and fences,
`trap` and `park`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue

from tawa.backend.ptx.abi import WATCHDOG_PARAM
from tawa.dialects import nvgpu

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter


def _operand(p: KernelPrinter, v: SSAValue) -> str:
    """A 32-bit operand: an immediate if it is a constant."""
    c = p.consts.get(v)
    return str(c) if c is not None and 0 <= c < 2**31 else p.reg(v)


def emit_watchdog_buffer(p: KernelPrinter, op: nvgpu.WatchdogBufferOp) -> None:
    r = p.define(op.result)
    p.emit(f"ld.param.u64 {r}, [{WATCHDOG_PARAM}];")
    p.emit(f"cvta.to.global.u64 {r}, {r};")


def emit_atomic_cas_sys(p: KernelPrinter, op: nvgpu.AtomicCasSysOp) -> None:
    p.emit(f"atom.relaxed.sys.global.cas.b32 {p.define(op.result)}, [{p.reg(op.address)}], "
           f"{_operand(p, op.compare)}, {_operand(p, op.value)};")


def emit_store_sys(p: KernelPrinter, op: nvgpu.StoreSysOp) -> None:
    order = "release" if op.release is not None else "relaxed"
    off = op.offset.value.data
    at = f"[{p.reg(op.address)}+{off}]" if off else f"[{p.reg(op.address)}]"
    p.emit(f"st.{order}.sys.global.u32 {at}, {_operand(p, op.value)};")


def emit_fence_sc_sys(p: KernelPrinter, op: nvgpu.FenceScSysOp) -> None:
    p.emit("fence.sc.sys;")


def emit_trap(p: KernelPrinter, op: nvgpu.TrapOp) -> None:
    p.emit("trap;")


def emit_park(p: KernelPrinter, op: nvgpu.ParkOp) -> None:
    again = p.label("park")
    p.lines.append(f"{again}:")
    p.emit(f"nanosleep.u32 {op.ns.value.data};")
    p.emit(f"bra {again};")


EMITTERS: dict[type[Operation], Callable] = {
    nvgpu.WatchdogBufferOp: emit_watchdog_buffer,
    nvgpu.AtomicCasSysOp: emit_atomic_cas_sys,
    nvgpu.StoreSysOp: emit_store_sys,
    nvgpu.FenceScSysOp: emit_fence_sc_sys,
    nvgpu.TrapOp: emit_trap,
    nvgpu.ParkOp: emit_park,
}
"""Emitter of each op this module prints."""
