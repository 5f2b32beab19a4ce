"""PTX emitters of the register-fragment ops (`nvgpu.frag_*`, `nvgpu.memref_base`, `memref.dim`).

A fragment is a list of registers, one per value a thread holds (16-bit
values packed in pairs, one register per vector of 2, where the layout's
vectors have an even length).  Which element each
value is — its row and column, the lanes a reduction exchanges with, which
row value a broadcast copies — comes from the fragment type's layout
(`tawa.dialects.nvgpu.layouts`); nothing here re-derives it.  Each emitter
prints one op: bounds, fast paths and global address math are IR (see
`tawa-expand-fragment-stores`), as are shared-memory addresses
(`tawa-expand-shared-accesses`, printed by `tawa.backend.ptx.emit_shared`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import memref
from xdsl.dialects.builtin import BFloat16Type, Float8E4M3FNType, Float8E5M2Type, Float32Type, i1
from xdsl.ir import Operation

from tawa.backend.ptx.emit_arith import CMP, SIGNED
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.layouts import fold_steps
from tawa.target.hopper import THREADS_PER_GROUP, THREADS_PER_WARP

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter

FRAG_BINARY = {
    "addf": "add.f32", "subf": "sub.f32", "mulf": "mul.f32",
    "divf": "div.full.f32", "maximumf": "max.NaN.f32", "minimumf": "min.NaN.f32",
    "addi": "add.s32", "subi": "sub.s32", "muli": "mul.lo.s32",
    "andi": "and.b32", "ori": "or.b32",
}


FP8 = (Float8E4M3FNType, Float8E5M2Type)


def _type(v) -> nvgpu.FragmentType:
    t = v.type
    assert isinstance(t, nvgpu.FragmentType)
    return t


def _pack(element) -> str:
    """The conversion of two f32 values into one packed register (the first
    source goes to the upper half); fp8 saturates to the largest finite
    value, as `satfinite` (e4m3 has no infinity)."""
    if isinstance(element, Float8E4M3FNType | Float8E5M2Type):
        return f"cvt.rn.satfinite.{'e4m3x2' if isinstance(element, Float8E4M3FNType) else 'e5m2x2'}.f32"
    return "cvt.rn.bf16x2.f32" if isinstance(element, BFloat16Type) else "cvt.rn.f16x2.f32"


def emit_zeros(p: KernelPrinter, op: nvgpu.FragmentZerosOp) -> None:
    for r in p.define_frag(op.result):
        p.emit(f"mov.f32 {r}, 0f00000000;")


def emit_undef(p: KernelPrinter, op: nvgpu.FragmentUndefOp) -> None:
    p.define_frag(op.result)  # registers only: the wgmma that reads them ignores their values


def emit_splat(p: KernelPrinter, op: nvgpu.FragmentSplatOp) -> None:
    for d in p.define_frag(op.result):
        p.emit(f"mov.f32 {d}, {p.reg(op.value)};")


def emit_binary(p: KernelPrinter, op: nvgpu.FragmentBinaryOp) -> None:
    inst = FRAG_BINARY[op.kind.data.value]
    if _type(op.lhs).element_type == i1:
        inst = inst.replace(".b32", ".pred")
    lhs, rhs = p.frag(op.lhs), p.vals[op.rhs]
    for i, d in enumerate(p.define_frag(op.result)):
        p.emit(f"{inst} {d}, {lhs[i]}, {rhs[i] if isinstance(rhs, list) else rhs};")


def emit_unary(p: KernelPrinter, op: nvgpu.FragmentUnaryOp) -> None:
    inst = {"exp2": "ex2.approx.ftz.f32", "negf": "neg.f32", "tanh": "tanh.approx.f32", "log2": "lg2.approx.ftz.f32",
            "sqrt": "sqrt.rn.f32", "rsqrt": "rsqrt.approx.ftz.f32", "absf": "abs.f32",
            "rcp": "rcp.rn.f32"}[op.kind.data.value]
    for s, d in zip(p.frag(op.input), p.define_frag(op.result)):
        p.emit(f"{inst} {d}, {s};")


def emit_convert(p: KernelPrinter, op: nvgpu.FragmentConvertOp) -> None:
    """Narrowing: values 2k and 2k+1 (one vector of the layout) pack into
    register k; the first source of `cvt.rn.bf16x2.f32` goes to the upper
    half.  Widening: each 16-bit value (a half of a packed register, the
    lower one first) becomes one f32; an fp8 pair goes through f16."""
    src_t, dst_t = _type(op.input), _type(op.result)
    src = p.frag(op.input)
    if isinstance(dst_t.element_type, Float32Type) and isinstance(src_t.element_type, FP8):
        # A pair to two f16 (`cvt.rn.f16x2.e4m3x2`: the low byte to the low half), each to f32.
        kind = "e4m3x2" if isinstance(src_t.element_type, Float8E4M3FNType) else "e5m2x2"
        dst = p.define_frag(op.result)
        word, lo, hi = p.regs.new("r"), p.regs.new("h"), p.regs.new("h")
        for k, s in enumerate(src):
            p.emit(f"cvt.rn.f16x2.{kind} {word}, {s};")
            p.emit(f"mov.b32 {{{lo}, {hi}}}, {word};")
            p.emit(f"cvt.f32.f16 {dst[2 * k]}, {lo};")
            p.emit(f"cvt.f32.f16 {dst[2 * k + 1]}, {hi};")
        return
    if isinstance(dst_t.element_type, Float32Type):
        widen = "cvt.f32.bf16" if isinstance(src_t.element_type, BFloat16Type) else "cvt.f32.f16"
        dst = p.define_frag(op.result)
        if not src_t.packed():
            for s, d in zip(src, dst):
                p.emit(f"{widen} {d}, {s};")
            return
        lo, hi = p.regs.new("h"), p.regs.new("h")
        for k, s in enumerate(src):
            p.emit(f"mov.b32 {{{lo}, {hi}}}, {s};")
            p.emit(f"{widen} {dst[2 * k]}, {lo};")
            p.emit(f"{widen} {dst[2 * k + 1]}, {hi};")
        return
    cvt = _pack(dst_t.element_type)
    for k, d in enumerate(p.define_frag(op.result)):
        p.emit(f"{cvt} {d}, {src[2 * k + 1]}, {src[2 * k]};")


def emit_transpose(p: KernelPrinter, op: nvgpu.FragmentTransposeOp) -> None:
    """One `movmatrix.trans` a packed register: register k of the result is
    register k of the input transposed (`nvgpu.WGMMA_T`)."""
    for s, d in zip(p.frag(op.input), p.define_frag(op.result)):
        p.emit(f"movmatrix.sync.aligned.m8n8.trans.b16 {d}, {s};")


def _thread_coordinate(p: KernelPrinter, t: nvgpu.FragmentType, axis: int) -> str:
    """The thread part of coordinate `axis` (the layout's thread terms) in a
    32-bit register."""
    return terms_coordinate(p, t.tiled_layout.thread_terms(t.get_shape(), axis))


def terms_coordinate(p: KernelPrinter, terms) -> str:
    """Σ ((source index // divisor) % size) · stride over thread `terms`
    (`ThreadTerm`) in a 32-bit register."""
    tid = p.regs.new("r")
    p.emit(f"mov.u32 {tid}, %tid.x;")
    p.emit(f"and.b32 {tid}, {tid}, {THREADS_PER_GROUP - 1};")
    out = p.regs.new("r")
    p.emit(f"mov.u32 {out}, 0;")
    term = p.regs.new("r")
    for term_ in terms:
        # warp = tid / 32, lane = tid % 32: both are bit fields of tid.
        shift = (term_.divisor * (THREADS_PER_WARP if term_.source == "warp" else 1)).bit_length() - 1
        bits = term_.size.bit_length() - 1
        p.emit(f"bfe.u32 {term}, {tid}, {shift}, {bits};")
        p.emit(f"mad.lo.u32 {out}, {term}, {term_.stride}, {out};")
    return out


def emit_index(p: KernelPrinter, op: nvgpu.FragmentIndexOp) -> None:
    t = _type(op.result)
    axis = op.axis_index()
    base = _thread_coordinate(p, t, axis)
    offsets = t.tiled_layout.value_offsets(t.get_shape(), axis)
    for d, off in zip(p.define_frag(op.result), offsets):
        p.emit(f"add.s32 {d}, {base}, {off};")


def emit_cmpi(p: KernelPrinter, op: nvgpu.FragmentCmpIOp) -> None:
    pred = op.predicate.data.value
    sign = "s" if pred in SIGNED else "u"
    lhs, rhs = p.frag(op.lhs), p.vals[op.rhs]
    for i, d in enumerate(p.define_frag(op.result)):
        p.emit(f"setp.{CMP[pred]}.{sign}32 {d}, {lhs[i]}, {rhs[i] if isinstance(rhs, list) else rhs};")


CMPF = {"oeq": "eq", "une": "neu", "olt": "lt", "ole": "le", "ogt": "gt", "oge": "ge"}
"""`tile.cmpf` predicates as PTX's `setp` float comparisons (the plain ones
are ordered, `neu` unordered)."""


def emit_cmpf(p: KernelPrinter, op: nvgpu.FragmentCmpFOp) -> None:
    lhs, rhs = p.frag(op.lhs), p.vals[op.rhs]
    for i, d in enumerate(p.define_frag(op.result)):
        p.emit(f"setp.{CMPF[op.predicate.data.value]}.f32 {d}, {lhs[i]}, {rhs[i] if isinstance(rhs, list) else rhs};")


def emit_select(p: KernelPrinter, op: nvgpu.FragmentSelectOp) -> None:
    mask, on_true, on_false = p.frag(op.mask), p.frag(op.true_value), p.vals[op.false_value]
    for i, d in enumerate(p.define_frag(op.result)):
        f = on_false[i] if isinstance(on_false, list) else on_false
        p.emit(f"selp.f32 {d}, {on_true[i]}, {f}, {mask[i]};")


def emit_reduce(p: KernelPrinter, op: nvgpu.FragmentReduceOp) -> None:
    """Each result value folds its source values (the layout's reduction
    groups) in the order of `fold_steps`, then exchanges with the lanes of
    each shuffle mask."""
    t = _type(op.input)
    shape = t.get_shape()
    src, tmp = p.frag(op.input), p.regs.new("f")
    _reduce_in_warps(p, t.tiled_layout.reduce(shape, len(shape) - 1), op.kind.data.value, src,
                     p.define_frag(op.result), tmp)


def _reduce_in_warps(p: KernelPrinter, reduction: nvgpu.Reduction, kind: str, src: list[str], dst: list[str],
                     tmp: str) -> str:
    """Folds and shuffles `reduction` of the registers `src` into `dst`
    (`tmp`: the shuffles' register); returns the combining instruction."""
    inst = "max.NaN.f32" if kind == "max" else "add.f32"
    for acc, group in zip(dst, reduction.sources):
        _fold_registers(p, inst, [src[i] for i in group], acc)
        for mask in reduction.lane_masks:
            p.emit(f"shfl.sync.bfly.b32 {tmp}, {acc}, {mask}, 31, -1;")
            p.emit(f"{inst} {acc}, {acc}, {tmp};")
    return inst


def _fold_registers(p: KernelPrinter, inst: str, slots: list[str], acc: str) -> None:
    """acc = the registers `slots` combined in the order of `fold_steps`."""
    steps = fold_steps(len(slots))
    for n, (a, b) in enumerate(steps):
        # The input's registers stay as they are: a slot folded into gets a new one.
        d = acc if n == len(steps) - 1 else p.regs.new("f")
        p.emit(f"{inst} {d}, {slots[a]}, {slots[b]};")
        slots[a] = d
    if not steps:
        p.emit(f"mov.f32 {acc}, {slots[0]};")


def emit_reduce_warps(p: KernelPrinter, op: nvgpu.FragmentReduceWarpsOp) -> None:
    """Within each warp as `emit_reduce`; then each thread t stores its
    partial value j at scratch + 4·(128·j + t), the warp group syncs,
    each thread loads the partials of its partner warps (the same lane of
    each; the warp's own digits along the axis cleared, then stepped by
    immediates) and folds them in their order, and syncs again."""
    red = op.reduction()
    src, dst = p.frag(op.input), p.define_frag(op.result)
    partial = [p.regs.new("f") for _ in dst]
    inst = _reduce_in_warps(p, red, op.kind.data.value, src, partial, p.regs.new("f"))
    scratch, barrier = p.reg(op.scratch), op.barrier.value.data
    tid, own, base, digit = (p.regs.new("r") for _ in range(4))
    p.emit(f"mov.u32 {tid}, %tid.x;")
    p.emit(f"and.b32 {tid}, {tid}, {THREADS_PER_GROUP - 1};")
    p.emit(f"mad.lo.u32 {own}, {tid}, 4, {scratch};")
    row = 4 * THREADS_PER_GROUP  # bytes between a thread's values j and j + 1
    for j, v in enumerate(partial):
        p.emit(f"st.shared.f32 [{own}+{j * row}], {v};")
    p.emit(f"bar.sync {barrier}, {THREADS_PER_GROUP};")
    # The first partner: this thread's lane in the warp whose digits along the axis are 0.
    p.emit(f"mov.u32 {base}, {own};")
    for divisor, size in red.warp_digits:
        shift = (divisor * THREADS_PER_WARP).bit_length() - 1
        p.emit(f"bfe.u32 {digit}, {tid}, {shift}, {size.bit_length() - 1};")
        p.emit(f"mul.lo.u32 {digit}, {digit}, {4 * divisor * THREADS_PER_WARP};")
        p.emit(f"sub.u32 {base}, {base}, {digit};")
    first = red.partner_warps(0)[0]
    steps = [4 * THREADS_PER_WARP * (w - first) for w in red.partner_warps(0)]
    for j, acc in enumerate(dst):
        parts = [p.regs.new("f") for _ in steps]
        for r, step in zip(parts, steps):
            p.emit(f"ld.shared.f32 {r}, [{base}+{step + j * row}];")
        _fold_registers(p, inst, parts, acc)
    p.emit(f"bar.sync {barrier}, {THREADS_PER_GROUP};")


def emit_transpose_shared(p: KernelPrinter, op: nvgpu.FragmentTransposeSharedOp) -> None:
    """Each thread stores value i, element (row, col) of the R x C input,
    at scratch + 4·(C·row + col): its thread coordinates once in a
    register, each value's offset an immediate.  The warp group syncs; each
    thread loads value j of the result, element (a, b), from
    scratch + 4·(C·b + a) the same way, and syncs again."""
    it, rt = _type(op.input), _type(op.result)
    C = it.get_shape()[1]
    src, dst = p.frag(op.input), p.define_frag(op.result)
    scratch, barrier = p.reg(op.scratch), op.barrier.value.data

    def base(t: nvgpu.FragmentType, major: int) -> tuple[str, Callable[[int], int]]:
        """The thread's first element's address and each value's byte
        offset from it, C elements a step along axis `major`."""
        coords = [_thread_coordinate(p, t, axis) for axis in (0, 1)]
        at = p.regs.new("r")
        p.emit(f"mad.lo.u32 {at}, {coords[major]}, {C}, {coords[1 - major]};")
        p.emit(f"mad.lo.u32 {at}, {at}, 4, {scratch};")
        shape = t.get_shape()
        steps = [t.tiled_layout.value_offsets(shape, axis) for axis in (0, 1)]
        return at, lambda i: 4 * (C * steps[major][i] + steps[1 - major][i])

    at, offset = base(it, 0)
    for i, v in enumerate(src):
        p.emit(f"st.shared.f32 [{at}+{offset(i)}], {v};")
    p.emit(f"bar.sync {barrier}, {THREADS_PER_GROUP};")
    at, offset = base(rt, 1)
    for j, d in enumerate(dst):
        p.emit(f"ld.shared.f32 {d}, [{at}+{offset(j)}];")
    p.emit(f"bar.sync {barrier}, {THREADS_PER_GROUP};")


def emit_broadcast(p: KernelPrinter, op: nvgpu.FragmentBroadcastOp) -> None:
    t = _type(op.result)
    axis = op.axis()
    assert axis is not None  # verified
    sources = t.tiled_layout.broadcast_sources(t.get_shape(), axis, _type(op.input).tiled_layout)
    rows = p.frag(op.input)
    for d, j in zip(p.define_frag(op.result), sources):
        p.emit(f"mov.f32 {d}, {rows[j]};")


def emit_memref_base(p: KernelPrinter, op: nvgpu.MemrefBaseOp) -> None:
    p.vals[op.result] = p.memrefs[op.source][0]


def emit_memref_stride(p: KernelPrinter, op: nvgpu.MemrefStrideOp) -> None:
    name = p.strides[op.source][op.dim.value.data]
    p.emit(f"ld.param.u64 {p.define(op.result)}, [{name}];")


def emit_memref_dim(p: KernelPrinter, op: memref.DimOp) -> None:
    index = p.consts.get(op.index)
    if index is None:
        raise p.unsupported(op, "a dimension index that is not a constant")
    p.vals[op.result] = p.memrefs[op.source][1][index]


def _addresses(p: KernelPrinter, t: nvgpu.FragmentType, element, address_value, pitch_value) -> Callable[[int], str]:
    """The operand `[base + offset]` of value i of a fragment whose thread's
    first element is at `address`: value i sits at row(i)·pitch +
    col(i)·bytes from it (the layout's value offsets; a 1-D fragment's axis
    is a column).  One base register per distinct row offset, the column
    offset as an immediate."""
    shape, layout = t.get_shape(), t.tiled_layout
    cols = layout.value_offsets(shape, len(shape) - 1)
    rows = layout.value_offsets(shape, 0) if len(shape) == 2 else (0,) * len(cols)
    nbytes = nvgpu.element_bytes(element)
    address, pitch = p.reg(address_value), p.reg(pitch_value)
    bases: dict[int, str] = {0: address}
    for r in sorted(set(rows) - {0}):
        bases[r] = p.regs.new("rd")
        p.emit(f"mad.lo.s64 {bases[r]}, {pitch}, {r}, {address};")
    return lambda i: f"[{bases[rows[i]]}+{cols[i] * nbytes}]"


def _operand(regs: Sequence[str], first: int, n: int) -> str:
    """The register operand of an access of `n` registers from `first`:
    `{%r0, %r1, ...}` for a vector, the register alone for one."""
    return f"{{{', '.join(regs[first:first + n])}}}" if n > 1 else regs[first]


ACCESS_REGS = 4
"""32-bit registers one global access moves at most (`ld/st.global.v4.b32`:
16 bytes, a blocked layout's vector)."""


def _vector_accesses(t: nvgpu.FragmentType) -> list[tuple[int, int, int, str]] | None:
    """The unmasked global accesses of a fragment's vectors: (first value,
    first register, register count, type suffix: `.b32`, `.v4.b32`,
    `.v2.f32`, ...), each 16 bytes at most and within one vector (so
    aligned where the vector is); None for vectors that are no whole 32-bit
    registers (unpacked 16-bit values, 8-bit pairs)."""
    vector, values = t.vector_length(), t.values_per_thread()
    if t.packed() and t.register_bits() == 32:
        per_reg, kind = 2, "b32"
    elif isinstance(t.element_type, Float32Type):
        per_reg, kind = 1, "f32"
    else:
        return None
    out = []
    for first in range(0, values, vector):
        regs = vector // per_reg
        for c in range(0, regs, ACCESS_REGS):
            n = min(ACCESS_REGS, regs - c)
            out.append((first + c * per_reg, first // per_reg + c, n, f"{f'.v{n}' if n > 1 else ''}.{kind}"))
    return out


def emit_store_global(p: KernelPrinter, op: nvgpu.FragmentStoreGlobalOp) -> None:
    """Value i goes to [address + row(i)·pitch + col(i)·bytes].  Unmasked,
    each vector in accesses of up to 16 bytes (`_vector_accesses`: a packed
    pair is one 32-bit register, a blocked layout's 8 bf16 one `v4.b32`);
    fp8 pairs go two to a 32-bit register where the vector holds whole
    registers (a blocked layout's 16 fp8 one `v4.b32`, under the vector's
    first bit with `vector_mask`), else one 16-bit store a pair.  Masked, each value alone (an fp8 value
    is a byte of the register: `st.b8` stores the low byte, so the upper one
    is shifted down first), or with `vector_mask` the vector stores under
    their first value's bit."""
    t = _type(op.values)
    at = _addresses(p, t, t.element_type, op.address, op.row_pitch)
    regs = p.frag(op.values)
    vector = t.vector_length()
    pair_bits = 16 * nvgpu.element_bytes(t.element_type)
    if isinstance(t.element_type, FP8) and vector % 4 == 0 and (op.mask is None or op.vector_mask is not None):
        # fp8 pairs, two to a 32-bit register: each vector in stores of up to 16 bytes.
        mask = p.frag(op.mask) if op.mask is not None else None
        words = [p.regs.new("r") for _ in range(len(regs) // 2)]
        for k, word in enumerate(words):
            p.emit(f"mov.b32 {word}, {{{regs[2 * k]}, {regs[2 * k + 1]}}};")
        for first in range(0, t.values_per_thread(), vector):
            for c in range(0, vector // 4, ACCESS_REGS):
                n = min(ACCESS_REGS, vector // 4 - c)
                guard = f"@{mask[first]} " if mask is not None else ""
                suffix = f".v{n}.b32" if n > 1 else ".b32"
                p.emit(f"{guard}st.global{suffix} {at(first + 4 * c)}, {_operand(words, first // 4 + c, n)};")
        return
    if op.mask is None:
        accesses = _vector_accesses(t)
        if t.packed() and pair_bits == 16 and accesses is None:  # fp8 pairs
            for k, reg in enumerate(regs):
                p.emit(f"st.global.b{pair_bits} {at(2 * k)}, {reg};")
            return
        if accesses is None:
            raise p.unsupported(op, f"vectors of {vector} x {t.element_type}")
        for first, reg, n, suffix in accesses:
            p.emit(f"st.global{suffix} {at(first)}, {_operand(regs, reg, n)};")
        return
    mask = p.frag(op.mask)
    accesses = _vector_accesses(t) if op.vector_mask is not None else None
    if accesses is not None:  # the mask is the same over each vector: one store a vector where set
        for first, reg, n, suffix in accesses:
            p.emit(f"@{mask[first]} st.global{suffix} {at(first)}, {_operand(regs, reg, n)};")
        return
    if t.packed() and pair_bits == 16:
        hi = p.regs.new("h")
        for k, reg in enumerate(regs):
            p.emit(f"shr.b16 {hi}, {reg}, 8;")
            p.emit(f"@{mask[2 * k]} st.global.b8 {at(2 * k)}, {reg};")
            p.emit(f"@{mask[2 * k + 1]} st.global.b8 {at(2 * k + 1)}, {hi};")
    elif t.packed():
        lo, hi = p.regs.new("h"), p.regs.new("h")
        for k, reg in enumerate(regs):
            p.emit(f"mov.b32 {{{lo}, {hi}}}, {reg};")
            p.emit(f"@{mask[2 * k]} st.global.b16 {at(2 * k)}, {lo};")
            p.emit(f"@{mask[2 * k + 1]} st.global.b16 {at(2 * k + 1)}, {hi};")
    else:
        for i, reg in enumerate(regs):
            p.emit(f"@{mask[i]} st.global.f32 {at(i)}, {reg};")


RED_ADD = "red.relaxed.gpu.global.add"
"""`nvgpu.frag_red_global`'s reduction: relaxed (ordered with nothing), GPU
scope (every CTA's add to an element lands once), no result to wait for."""


def emit_red_global(p: KernelPrinter, op: nvgpu.FragmentRedGlobalOp) -> None:
    """Value i is added at [address + row(i)·pitch + col(i)·4], the address
    `emit_store_global` stores it to, under its mask bit where there is a
    mask: one `red...add.f32` per element (the vector form,
    `red...add.v2.f32`, needs PTX ISA 8.1; kernels are printed as 8.0)."""
    t = _type(op.values)
    at = _addresses(p, t, t.element_type, op.address, op.row_pitch)
    regs = p.frag(op.values)
    mask = p.frag(op.mask) if op.mask is not None else None
    for i, reg in enumerate(regs):
        guard = f"@{mask[i]} " if mask is not None else ""
        p.emit(f"{guard}{RED_ADD}.f32 {at(i)}, {reg};")


def emit_load_global(p: KernelPrinter, op: nvgpu.FragmentLoadGlobalOp) -> None:
    """Value i comes from [address + row(i)·pitch + col(i)·bytes]:
    unmasked, each vector in loads of up to 16 bytes (`_vector_accesses`:
    a packed 16-bit pair is one 32-bit load, a blocked layout's 8 bf16 one
    `v4.b32`); masked, element by element, 0 where the mask is clear, or
    with `vector_mask` those vector loads under their first value's bit,
    each vector's registers zeroed first."""
    t = _type(op.result)
    at = _addresses(p, t, t.element_type, op.address, op.row_pitch)
    dst = p.define_frag(op.result)
    f32 = isinstance(t.element_type, Float32Type)
    if isinstance(t.element_type, FP8):
        _load_fp8(p, op, t, at, dst)
        return
    if op.mask is None:
        accesses = _vector_accesses(t)
        if accesses is None:  # unpacked 16-bit values
            for i, d in enumerate(dst):
                p.emit(f"ld.global.b16 {d}, {at(i)};")
            return
        for first, reg, n, suffix in accesses:
            p.emit(f"ld.global{suffix} {_operand(dst, reg, n)}, {at(first)};")
        return
    mask = p.frag(op.mask)
    accesses = _vector_accesses(t) if op.vector_mask is not None else None
    if accesses is not None:  # the mask is the same over each vector: one load a vector where set, else 0
        zero = "0f00000000" if f32 else "0"
        for first, reg, n, suffix in accesses:
            for d in dst[reg:reg + n]:
                p.emit(f"mov.{'f32' if f32 else 'b32'} {d}, {zero};")
            p.emit(f"@{mask[first]} ld.global{suffix} {_operand(dst, reg, n)}, {at(first)};")
        return
    if t.packed():
        lo, hi = p.regs.new("h"), p.regs.new("h")
        for k, d in enumerate(dst):
            for i, half in ((2 * k, lo), (2 * k + 1, hi)):
                p.emit(f"mov.b16 {half}, 0;")
                p.emit(f"@{mask[i]} ld.global.b16 {half}, {at(i)};")
            p.emit(f"mov.b32 {d}, {{{lo}, {hi}}};")
        return
    for i, d in enumerate(dst):
        p.emit(f"mov.{'f32' if f32 else 'b16'} {d}, {'0f00000000' if f32 else 0};")
        p.emit(f"@{mask[i]} ld.global.{'f32' if f32 else 'b16'} {d}, {at(i)};")


def _load_fp8(p: KernelPrinter, op: nvgpu.FragmentLoadGlobalOp, t: nvgpu.FragmentType, at, dst: list[str]) -> None:
    """fp8 values, a packed pair to a 16-bit register (the first value in
    the low byte).  Vectors of whole 32-bit registers (a blocked layout's 16
    fp8: `v4.b32`) load as words split into pairs, unmasked or with
    `vector_mask` under the vector's first bit (zeroed first); else each
    pair alone unmasked, or each value alone under its bit (`ld.global.u8`,
    0 where clear) and the pair put together."""
    vector, values = t.vector_length(), t.values_per_thread()
    if vector % 4 == 0 and (op.mask is None or op.vector_mask is not None):
        mask = p.frag(op.mask) if op.mask is not None else None
        words = [p.regs.new("r") for _ in range(values // 4)]
        for first in range(0, values, vector):
            for c in range(0, vector // 4, ACCESS_REGS):
                n = min(ACCESS_REGS, vector // 4 - c)
                regs = _operand(words, first // 4 + c, n)
                guard = ""
                if mask is not None:
                    for w in words[first // 4 + c:first // 4 + c + n]:
                        p.emit(f"mov.b32 {w}, 0;")
                    guard = f"@{mask[first]} "
                p.emit(f"{guard}ld.global{f'.v{n}' if n > 1 else ''}.b32 {regs}, {at(first + 4 * c)};")
        for k, w in enumerate(words):
            p.emit(f"mov.b32 {{{dst[2 * k]}, {dst[2 * k + 1]}}}, {w};")
        return
    if op.mask is None:
        for k, d in enumerate(dst):
            p.emit(f"ld.global.b16 {d}, {at(2 * k)};")
        return
    mask = p.frag(op.mask)
    hi = p.regs.new("h")
    for k, d in enumerate(dst):
        p.emit(f"mov.b16 {d}, 0;")
        p.emit(f"mov.b16 {hi}, 0;")
        p.emit(f"@{mask[2 * k]} ld.global.u8 {d}, {at(2 * k)};")
        p.emit(f"@{mask[2 * k + 1]} ld.global.u8 {hi}, {at(2 * k + 1)};")
        p.emit(f"shl.b16 {hi}, {hi}, 8;")
        p.emit(f"or.b16 {d}, {d}, {hi};")


EMITTERS: dict[type[Operation], Callable] = {
    nvgpu.FragmentUndefOp: emit_undef,
    nvgpu.FragmentZerosOp: emit_zeros,
    nvgpu.FragmentSplatOp: emit_splat,
    nvgpu.FragmentBinaryOp: emit_binary,
    nvgpu.FragmentUnaryOp: emit_unary,
    nvgpu.FragmentConvertOp: emit_convert,
    nvgpu.FragmentTransposeOp: emit_transpose,
    nvgpu.FragmentIndexOp: emit_index,
    nvgpu.FragmentCmpIOp: emit_cmpi,
    nvgpu.FragmentCmpFOp: emit_cmpf,
    nvgpu.FragmentSelectOp: emit_select,
    nvgpu.FragmentReduceOp: emit_reduce,
    nvgpu.FragmentReduceWarpsOp: emit_reduce_warps,
    nvgpu.FragmentTransposeSharedOp: emit_transpose_shared,
    nvgpu.FragmentBroadcastOp: emit_broadcast,
    nvgpu.MemrefBaseOp: emit_memref_base,
    nvgpu.MemrefStrideOp: emit_memref_stride,
    nvgpu.FragmentStoreGlobalOp: emit_store_global,
    nvgpu.FragmentRedGlobalOp: emit_red_global,
    nvgpu.FragmentLoadGlobalOp: emit_load_global,
    memref.DimOp: emit_memref_dim,
}
"""Emitter of each op this module prints."""
