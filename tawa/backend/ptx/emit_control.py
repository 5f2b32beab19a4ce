"""PTX emitters of control flow: `scf.for`, `scf.if`, `func.return`.

Loop-carried values are copied into the loop's registers on entry and at
each `scf.yield` (a parallel copy, see `KernelPrinter.parallel_copy`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects import func, scf
from xdsl.ir import Block, Operation

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter


def emit_return(p: KernelPrinter, op: func.ReturnOp) -> None:
    p.emit("ret;")


def emit_for(p: KernelPrinter, op: scf.ForOp) -> None:
    body = op.body.block
    iv = p.define(body.args[0])
    p.emit(f"mov.u64 {iv}, {p.reg(op.lb)};")
    for arg, init in zip(body.args[1:], op.iter_args):
        p.copy(p.define_like(arg), p.vals[init], arg.type)
    head, end = p.label("for_head"), p.label("for_end")
    done = p.regs.new("p")
    p.lines.append(f"{head}:")
    p.emit(f"setp.ge.s64 {done}, {iv}, {p.reg(op.ub)};")
    p.emit(f"@{done} bra {end};")
    for inner in body.ops:
        if isinstance(inner, scf.YieldOp):
            p.parallel_copy(list(body.args[1:]), list(inner.operands))
        else:
            p.op(inner)
    p.emit(f"add.s64 {iv}, {iv}, {p.reg(op.step)};")
    p.emit(f"bra {head};")
    p.lines.append(f"{end}:")
    for res, arg in zip(op.results, body.args[1:]):
        p.vals[res] = p.vals[arg]


def _branch(p: KernelPrinter, block: Block, op: scf.IfOp) -> None:
    for inner in block.ops:
        if isinstance(inner, scf.YieldOp):
            for res, v in zip(op.results, inner.operands):
                p.copy(p.vals[res], p.vals[v], res.type)
        else:
            p.op(inner)


def emit_if(p: KernelPrinter, op: scf.IfOp) -> None:
    for r in op.results:
        p.define_like(r)
    els, end = p.label("else"), p.label("endif")
    p.emit(f"@!{p.reg(op.cond)} bra {els};")
    _branch(p, op.true_region.block, op)
    p.emit(f"bra {end};")
    p.lines.append(f"{els}:")
    if op.false_region.blocks:
        _branch(p, op.false_region.block, op)
    p.lines.append(f"{end}:")


EMITTERS: dict[type[Operation], Callable] = {
    func.ReturnOp: emit_return,
    scf.ForOp: emit_for,
    scf.IfOp: emit_if,
}
"""Emitter of each op this module prints."""
