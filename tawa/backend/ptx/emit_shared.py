"""PTX emitters of the fragment ops that read and write shared memory at
addresses formed in IR (`nvgpu.frag_load_shared_at`,
`nvgpu.frag_store_shared_at`; `tawa-expand-shared-accesses` writes those
addresses out): one `ld.shared` / `st.shared` per vector, at the address
operand and immediate its properties name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Operation, SSAValue

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.shared_access import access_values

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter


def _type(v: SSAValue) -> nvgpu.FragmentType:
    t = v.type
    assert isinstance(t, nvgpu.FragmentType)
    return t


def _shared_access(p: KernelPrinter, kind: str, t: nvgpu.FragmentType, regs_of: list[str],
                   op: nvgpu.FragmentLoadSharedAtOp | nvgpu.FragmentStoreSharedAtOp) -> None:
    """`ld.shared` (kind `ld`) into or `st.shared` (`st`) from the registers
    `regs_of` of a fragment of type `t`: access k (`access_values`) at
    `[addresses[bases[k]]+offsets[k]]`; 16-bit values that are not packed go
    one by one."""
    eb = nvgpu.element_bytes(t.element_type)
    vector = access_values(t)
    per_reg = 2 if t.packed() else 1
    suffix = f"b{t.register_bits()}" if t.packed() else "f32" if isinstance(t.element_type, Float32Type) else None
    addresses = [p.reg(a) for a in op.addresses]

    def access(width: str, at: str, operand: str) -> None:
        p.emit(f"ld.shared{width} {operand}, {at};" if kind == "ld" else f"st.shared{width} {at}, {operand};")

    for k, (base, imm) in enumerate(zip(op.bases.get_values(), op.offsets.get_values())):
        a, i = addresses[base], k * vector
        regs = regs_of[i // per_reg:(i + vector) // per_reg]
        at = f"[{a}+{imm}]" if imm else f"[{a}]"
        if suffix is None:
            for j, r in enumerate(regs):
                access(".b16", f"[{a}+{imm + j * eb}]", r)
        elif len(regs) > 1:
            access(f".v{len(regs)}.{suffix}", at, f"{{{', '.join(regs)}}}")
        else:
            access(f".{suffix}", at, regs[0])


def emit_load_shared_at(p: KernelPrinter, op: nvgpu.FragmentLoadSharedAtOp) -> None:
    _shared_access(p, "ld", _type(op.result), p.define_frag(op.result), op)


def emit_store_shared_at(p: KernelPrinter, op: nvgpu.FragmentStoreSharedAtOp) -> None:
    _shared_access(p, "st", _type(op.fragment), p.frag(op.fragment), op)


EMITTERS: dict[type[Operation], Callable] = {
    nvgpu.FragmentLoadSharedAtOp: emit_load_shared_at,
    nvgpu.FragmentStoreSharedAtOp: emit_store_shared_at,
}
"""Emitter of each op this module prints."""
