"""PTX emitters of control flow: `cf.br`, `cf.cond_br`, `func.return`.

Structured control flow is `cf` blocks by now (`convert-scf-to-cf` in
`tawa-prepare-ptx`).  A branch copies its operands into the target block's
argument registers (a parallel copy, `KernelPrinter.branch_args`); a branch
to the block printed next falls through.  A conditional branch with
arguments on an edge gets that edge's copies on its own path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import cf, func
from xdsl.ir import Block, Operation, SSAValue

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter


def emit_return(p: KernelPrinter, op: func.ReturnOp) -> None:
    p.emit("ret;")


def _jump(p: KernelPrinter, block: Block, args: Sequence[SSAValue]) -> None:
    p.branch_args(block, args)
    if block is not p.next_block:
        p.emit(f"bra {p.block_label(block)};")


def emit_br(p: KernelPrinter, op: cf.BranchOp) -> None:
    _jump(p, op.successor, op.arguments)


def emit_cond_br(p: KernelPrinter, op: cf.ConditionalBranchOp) -> None:
    cond = p.reg(op.cond)
    then, els = op.then_block, op.else_block
    if op.then_arguments or op.else_arguments:
        other = p.label("else_edge")
        p.emit(f"@!{cond} bra {other};")
        p.branch_args(then, op.then_arguments)
        p.emit(f"bra {p.block_label(then)};")
        p.lines.append(f"{other}:")
        _jump(p, els, op.else_arguments)
    elif then is p.next_block:
        p.emit(f"@!{cond} bra {p.block_label(els)};")
    else:
        p.emit(f"@{cond} bra {p.block_label(then)};")
        _jump(p, els, ())


EMITTERS: dict[type[Operation], Callable] = {
    func.ReturnOp: emit_return,
    cf.BranchOp: emit_br,
    cf.ConditionalBranchOp: emit_cond_br,
}
"""Emitter of each op this module prints."""
