"""PTX emitters of the warp-group MMA ops: descriptors, `wgmma.mma_async`,
fence, commit and wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import BFloat16Type, Float8E4M3FNType, Float16Type
from xdsl.ir import Operation, SSAValue

from tawa.backend.ptx.emit_memory import stage_addr
from tawa.dialects import nvgpu

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter

# wgmma descriptor bits above the address for 128B-swizzled tiles: swizzle
# mode 1 (bit 62) and stride byte offset 1024 >> 4 (bits 32-45: the next 8
# rows of 128 bytes).  The leading byte offset (bits 16-29) is set per tile.
DESC_HI_SW128 = (1 << 62) | (64 << 32)


def emit_descriptor(p: KernelPrinter, op: nvgpu.WgmmaDescriptorOp) -> None:
    t = op.source.type
    assert isinstance(t, nvgpu.SmemType)
    if t.swizzle.data != 128:
        raise p.unsupported(op, "only 128B-swizzled tiles")
    # Rows are 128 bytes within a column chunk; chunks are rows x 128 bytes.
    chunk_bytes = t.get_shape()[1] * 128
    addr = stage_addr(p, op.source, op.stage, op.row, 128)
    d = p.define(op.result)
    p.chunk_bytes[op.result] = chunk_bytes
    # Leading byte offset = the distance between column chunks: the next
    # 64 MN elements of an MN-major operand (ignored for K-major ones).
    hi = DESC_HI_SW128 | ((chunk_bytes >> 4) << 16)
    p.emit(f"cvt.u64.u32 {d}, {addr};")
    p.emit(f"and.b64 {d}, {d}, 262143;")
    p.emit(f"shr.u64 {d}, {d}, 4;")
    p.emit(f"or.b64 {d}, {d}, {hi};")


def _k_offsets(p: KernelPrinter, desc: SSAValue, steps: int, k_major: bool) -> list[int]:
    """Byte offsets of the k-steps (32 bytes of K each) of a descriptor:
    along a 128-byte row, then to the next column chunk (K-major); or 16
    rows of 128 bytes further (MN-major)."""
    if not k_major:
        return [j * 16 * 128 for j in range(steps)]
    chunk = p.chunk_bytes[desc]
    return [(j * 32) // 128 * chunk + (j * 32) % 128 for j in range(steps)]


def emit_wgmma(p: KernelPrinter, op: nvgpu.WgmmaOp) -> None:
    lt, rt = op.lhs.type, op.rhs.type
    assert isinstance(rt, nvgpu.WgmmaDescriptorType)
    a_in_registers = isinstance(lt, nvgpu.FragmentType)
    et = lt.element_type
    rhs_k_major = op.rhs_transposed is not None
    n = rt.get_shape()[0] if rhs_k_major else rt.get_shape()[1]
    k = lt.get_shape()[1]
    if isinstance(et, Float8E4M3FNType):
        kstep, kind, tail = 32, "e4m3.e4m3", ", 1, 1"
    elif isinstance(et, BFloat16Type | Float16Type) and a_in_registers:
        # A in registers: no imm-trans-a; imm-trans-b = 1 for an MN-major B.
        kstep, kind, tail = 16, f"{et}.{et}", f", 1, 1, {0 if rhs_k_major else 1}"
    elif isinstance(et, BFloat16Type | Float16Type):
        # imm-trans-a = 0 (A is K-major); imm-trans-b = 1 for an MN-major B.
        kstep, kind, tail = 16, f"{et}.{et}", f", 1, 1, 0, {0 if rhs_k_major else 1}"
    else:
        raise p.unsupported(op, f"{et} operands")
    acc = p.frag(op.acc)
    if op.acc.has_one_use():
        dst = acc
    else:
        dst = p.define_like_value(op.acc)
        p.copy(dst, acc, op.acc.type)
    p.vals[op.result] = dst
    regs = "{" + ", ".join(dst) + "}"
    db = p.reg(op.rhs)
    steps = k // kstep
    offsets_b = _k_offsets(p, op.rhs, steps, rhs_k_major)
    if a_in_registers:
        a_regs = p.frag(op.lhs)
    else:
        da = p.reg(op.lhs)
        offsets_a = _k_offsets(p, op.lhs, steps, True)
    for j in range(steps):
        db_j = db
        if a_in_registers:
            # k16 block j of the A operand: 4 registers of bf16 pairs.
            da_j = "{" + ", ".join(a_regs[4 * j : 4 * j + 4]) + "}"
        # Offsets enter the descriptor's (address >> 4) field.
        elif offsets_a[j]:
            da_j = p.regs.new("rd")
            p.emit(f"add.s64 {da_j}, {da}, {offsets_a[j] >> 4};")
        else:
            da_j = da
        if offsets_b[j]:
            db_j = p.regs.new("rd")
            p.emit(f"add.s64 {db_j}, {db}, {offsets_b[j] >> 4};")
        scale_d = p.reg(op.accumulate) if j == 0 else p.true()
        p.emit(
            f"wgmma.mma_async.sync.aligned.m64n{n}k{kstep}.f32.{kind} "
            f"{regs}, {da_j}, {db_j}, {scale_d}{tail};"
        )


def emit_fence(p: KernelPrinter, op: nvgpu.WgmmaFenceOp) -> None:
    p.emit("wgmma.fence.sync.aligned;")


def emit_commit_group(p: KernelPrinter, op: nvgpu.WgmmaCommitGroupOp) -> None:
    p.emit("wgmma.commit_group.sync.aligned;")


def emit_wait_group(p: KernelPrinter, op: nvgpu.WgmmaWaitGroupOp) -> None:
    """The results are the operands' registers: the wait only orders them."""
    p.emit(f"wgmma.wait_group.sync.aligned {op.pending.value.data};")
    for res, v in zip(op.results_, op.fragments):
        p.vals[res] = p.vals[v]


EMITTERS: dict[type[Operation], Callable] = {
    nvgpu.WgmmaDescriptorOp: emit_descriptor,
    nvgpu.WgmmaOp: emit_wgmma,
    nvgpu.WgmmaFenceOp: emit_fence,
    nvgpu.WgmmaCommitGroupOp: emit_commit_group,
    nvgpu.WgmmaWaitGroupOp: emit_wait_group,
}
"""Emitter of each op this module prints."""
