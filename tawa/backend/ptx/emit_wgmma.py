"""PTX emitters of the warp-group MMA ops: descriptors, `wgmma.mma_async`,
fence, commit and wait.

Descriptor fields and k-step offsets are properties by now
(`tawa-encode-wgmma-descriptors`, `tawa-expand-wgmma`); this module only
places them in the descriptor's bits (`tawa.target.hopper.WGMMA_DESCRIPTOR`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.ir import Operation

from tawa.dialects import nvgpu
from tawa.target.hopper import WGMMA_DESCRIPTOR as FMT

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter

_UNIT_SHIFT = FMT.unit.bit_length() - 1


def emit_smem_address(p: KernelPrinter, op: nvgpu.SmemAddressOp) -> None:
    """A buffer's register already holds its shared address."""
    p.vals[op.result] = p.reg(op.source)


def descriptor_high_bits(lbo: int, sbo: int, swizzle: int) -> int:
    """The descriptor's bits other than the address, from its fields."""
    return (
        (lbo >> _UNIT_SHIFT) << FMT.leading_offset_shift
        | (sbo >> _UNIT_SHIFT) << FMT.stride_offset_shift
        | FMT.swizzle_field(swizzle) << FMT.swizzle_shift
    )


def emit_desc_encode(p: KernelPrinter, op: nvgpu.WgmmaDescEncodeOp) -> None:
    hi = descriptor_high_bits(
        op.leading_byte_offset.value.data, op.stride_byte_offset.value.data, op.swizzle.value.data
    )
    d = p.define(op.result)
    p.emit(f"cvt.u64.u32 {d}, {p.reg(op.address)};")
    p.emit(f"and.b64 {d}, {d}, {FMT.address_mask};")
    p.emit(f"shr.u64 {d}, {d}, {_UNIT_SHIFT};")
    p.emit(f"or.b64 {d}, {d}, {hi};")


def emit_desc_advance(p: KernelPrinter, op: nvgpu.WgmmaDescAdvanceOp) -> None:
    """The offset enters the (address >> 4) field; an offset of 0 is the
    same register."""
    offset = op.offset.value.data
    if not offset:
        p.vals[op.result] = p.reg(op.source)
        return
    p.emit(f"add.s64 {p.define(op.result)}, {p.reg(op.source)}, {offset >> _UNIT_SHIFT};")


def emit_k_slice(p: KernelPrinter, op: nvgpu.WgmmaKSliceOp) -> None:
    t = op.result.type
    assert isinstance(t, nvgpu.FragmentType)
    values, regs = op.source_values(), p.frag(op.source)
    # A packed register holds a vector of 2 values: name it once, by its first.
    per_reg = 2 if t.packed() else 1
    p.vals[op.result] = [regs[v // per_reg] for v in values[::per_reg]]


def emit_mma_async(p: KernelPrinter, op: nvgpu.WgmmaMmaAsyncOp) -> None:
    """Accumulates in place in the accumulator's registers (copied first
    when the accumulator is still read afterwards); of an accumulator of
    several row blocks, in its row block's registers (`block_values`)."""
    a_type, b_type = op.wgmma_types()
    kind = f"{a_type.ptx}.{b_type.ptx}"
    rhs_k_major = op.rhs_transposed is not None
    if not b_type.mn_major:
        # fp8 and tf32: both operands K-major, no imm-trans operands at all.
        tail = ", 1, 1"
    elif isinstance(op.lhs.type, nvgpu.FragmentType):
        # A in registers: no imm-trans-a; imm-trans-b = 1 for an MN-major B.
        tail = f", 1, 1, {0 if rhs_k_major else 1}"
    else:
        # imm-trans-a = 1 for an MN-major A (`lhs_transposed`); imm-trans-b = 1 for an MN-major B.
        tail = f", 1, 1, {0 if op.lhs_transposed is None else 1}, {0 if rhs_k_major else 1}"
    acc = p.frag(op.acc)
    if p.dead_after(op, op.acc):
        dst = acc
    else:
        dst = p.define_like_value(op.acc)
        p.copy(dst, acc, op.acc.type)
    p.vals[op.result] = dst
    lhs = p.vals[op.lhs]
    a = "{" + ", ".join(lhs) + "}" if isinstance(lhs, list) else lhs
    written = dst if op.row_blocks() == 1 else [dst[v] for v in op.block_values()]
    p.emit(
        f"wgmma.mma_async.sync.aligned.m64n{op.n()}k{op.k_step()}.f32.{kind} "
        f"{{{', '.join(written)}}}, {a}, {p.reg(op.rhs)}, {p.reg(op.accumulate)}{tail};"
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
    nvgpu.SmemAddressOp: emit_smem_address,
    nvgpu.WgmmaDescEncodeOp: emit_desc_encode,
    nvgpu.WgmmaDescAdvanceOp: emit_desc_advance,
    nvgpu.WgmmaKSliceOp: emit_k_slice,
    nvgpu.WgmmaMmaAsyncOp: emit_mma_async,
    nvgpu.WgmmaFenceOp: emit_fence,
    nvgpu.WgmmaCommitGroupOp: emit_commit_group,
    nvgpu.WgmmaWaitGroupOp: emit_wait_group,
}
"""Emitter of each op this module prints."""
