"""PTX emitters of the register-fragment ops (`nvgpu.frag_*`, `nvgpu.memref_base`, `memref.dim`).

A fragment is a list of registers, one per value a thread holds (16-bit
values packed in pairs, one register per vector of 2, where the layout's
vectors have an even length).  Which element each
value is — its row and column, the lanes a reduction exchanges with, which
row value a broadcast copies — comes from the fragment type's layout
(`tawa.dialects.nvgpu.layouts`); nothing here re-derives it.  Each emitter
prints one op: bounds, fast paths and global address math are IR (see
`tawa-expand-fragment-stores`); the shared-memory addresses of
`frag_load_shared` / `frag_store_shared` are the one exception, formed here from the layout (or
its matrix plan, for `stmatrix`) and the swizzle of `tawa.target.hopper` (to move into IR like the
global ones).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects import memref
from xdsl.dialects.builtin import BFloat16Type, Float8E4M3FNType, Float8E5M2Type, Float32Type, i1
from xdsl.ir import Operation, SSAValue

from tawa.backend.ptx.emit_arith import CMP, SIGNED
from tawa.backend.ptx.emit_memory import stage_addr
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.layouts import fold_steps
from tawa.target.hopper import MATRICES_PER_STORE, MATRIX_ROW_BYTES, THREADS_PER_GROUP, THREADS_PER_WARP

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter

FRAG_BINARY = {
    "addf": "add.f32", "subf": "sub.f32", "mulf": "mul.f32",
    "divf": "div.rn.f32", "maximumf": "max.NaN.f32", "minimumf": "min.NaN.f32",
    "addi": "add.s32", "subi": "sub.s32", "muli": "mul.lo.s32",
    "andi": "and.b32", "ori": "or.b32",
}


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
    inst = {"exp2": "ex2.approx.ftz.f32", "negf": "neg.f32", "tanh": "tanh.approx.f32"}[op.kind.data.value]
    for s, d in zip(p.frag(op.input), p.define_frag(op.result)):
        p.emit(f"{inst} {d}, {s};")


def emit_convert(p: KernelPrinter, op: nvgpu.FragmentConvertOp) -> None:
    """Narrowing: values 2k and 2k+1 (one vector of the layout) pack into
    register k; the first source of `cvt.rn.bf16x2.f32` goes to the upper
    half.  Widening: each 16-bit value (a half of a packed register, the
    lower one first) becomes one f32."""
    src_t, dst_t = _type(op.input), _type(op.result)
    src = p.frag(op.input)
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


def _thread_coordinate(p: KernelPrinter, t: nvgpu.FragmentType, axis: int) -> str:
    """The thread part of coordinate `axis` (the layout's thread terms) in a
    32-bit register."""
    return _terms_coordinate(p, t.tiled_layout.thread_terms(t.get_shape(), axis))


def _terms_coordinate(p: KernelPrinter, terms) -> str:
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
    reduction = t.tiled_layout.reduce(shape, len(shape) - 1)
    inst = "max.NaN.f32" if op.kind.data.value == "max" else "add.f32"
    src = p.frag(op.input)
    tmp = p.regs.new("f")
    for acc, group in zip(p.define_frag(op.result), reduction.sources):
        slots = [src[i] for i in group]
        steps = fold_steps(len(group))
        for n, (a, b) in enumerate(steps):
            # The input's registers stay as they are: a slot folded into gets a new one.
            d = acc if n == len(steps) - 1 else p.regs.new("f")
            p.emit(f"{inst} {d}, {slots[a]}, {slots[b]};")
            slots[a] = d
        if not steps:
            p.emit(f"mov.f32 {acc}, {slots[0]};")
        for mask in reduction.lane_masks:
            p.emit(f"shfl.sync.bfly.b32 {tmp}, {acc}, {mask}, 31, -1;")
            p.emit(f"{inst} {acc}, {acc}, {tmp};")


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


def emit_store_global(p: KernelPrinter, op: nvgpu.FragmentStoreGlobalOp) -> None:
    """Value i goes to [address + row(i)·pitch + col(i)·bytes]."""
    t = _type(op.values)
    rows = t.tiled_layout.value_offsets(t.get_shape(), 0)
    at = _addresses(p, t, t.element_type, op.address, op.row_pitch)
    regs = p.frag(op.values)
    vector = t.vector_length()
    if op.mask is None:
        for k in range(len(rows) // vector):
            first = k * vector
            if t.packed() and vector == 2:
                p.emit(f"st.global.b32 {at(first)}, {regs[k]};")
            elif isinstance(t.element_type, Float32Type) and vector in (2, 4):
                vals = ", ".join(regs[first:first + vector])
                p.emit(f"st.global.v{vector}.f32 {at(first)}, {{{vals}}};")
            else:
                raise p.unsupported(op, f"vectors of {vector} x {t.element_type}")
        return
    mask = p.frag(op.mask)
    if t.packed():
        lo, hi = p.regs.new("h"), p.regs.new("h")
        for k, reg in enumerate(regs):
            p.emit(f"mov.b32 {{{lo}, {hi}}}, {reg};")
            p.emit(f"@{mask[2 * k]} st.global.b16 {at(2 * k)}, {lo};")
            p.emit(f"@{mask[2 * k + 1]} st.global.b16 {at(2 * k + 1)}, {hi};")
    else:
        for i, reg in enumerate(regs):
            p.emit(f"@{mask[i]} st.global.f32 {at(i)}, {reg};")


def emit_load_global(p: KernelPrinter, op: nvgpu.FragmentLoadGlobalOp) -> None:
    """Value i comes from [address + row(i)·pitch + col(i)·bytes]:
    unmasked, one load per vector (a packed 16-bit pair is one 32-bit
    load); masked, element by element, 0 where the mask is clear."""
    t = _type(op.result)
    at = _addresses(p, t, t.element_type, op.address, op.row_pitch)
    dst = p.define_frag(op.result)
    vector = t.vector_length()
    f32 = isinstance(t.element_type, Float32Type)
    if op.mask is None:
        if t.packed():
            for k, d in enumerate(dst):  # each register is a vector of 2 (or a pair of one)
                p.emit(f"ld.global.b32 {d}, {at(2 * k)};")
        elif f32 and vector in (2, 4):
            for k in range(len(dst) // vector):
                p.emit(f"ld.global.v{vector}.f32 {{{', '.join(dst[k * vector:(k + 1) * vector])}}}, {at(k * vector)};")
        else:
            for i, d in enumerate(dst):
                p.emit(f"ld.global.{'f32' if f32 else 'b16'} {d}, {at(i)};")
        return
    mask = p.frag(op.mask)
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


def swizzle_plan(t: nvgpu.FragmentType, st: nvgpu.SmemType) -> list[tuple[int, int]] | None:
    """Per vector of fragment `t` in a swizzled tile of type `st`, (k, imm)
    such that its shared address is `tb0 + ((16·k) ^ x) + imm`, where, for
    `tb` = stage base + row · span + col · bytes of the thread's first
    element, `tb0` is `tb` with its 16-byte-unit bits (4 up to the span)
    cleared and `x` is those bits XOR the swizzle term (bits [7, 7 + b) of
    `tb` moved to bits [4, 4 + b)); None when the layout does not allow it
    (`unit_plan`)."""
    shape, layout = t.get_shape(), t.tiled_layout
    dr, dc = layout.value_offsets(shape, 0), layout.value_offsets(shape, 1)
    vector = t.vector_length()
    offsets = [(dr[i], dc[i]) for i in range(0, len(dr), vector)]
    columns = _thread_columns(layout.thread_terms(shape, 1))
    return unit_plan(st, offsets, columns, vector * nvgpu.element_bytes(st.element_type))


def unit_plan(st: nvgpu.SmemType, offsets: list[tuple[int, int]], thread_columns: set[int],
              nbytes: int) -> list[tuple[int, int]] | None:
    """`swizzle_plan` for accesses of `nbytes` at (row, col) `offsets` from
    each thread's first element, whose columns are `thread_columns`.

    It applies when every offset's row is a multiple of 8 rows (8 rows
    are one swizzle period, `SMEM_ALIGNMENT`, to which stages and column
    chunks of a multiple of 8 rows are aligned: the swizzle term is the
    same for all of a thread's rows), no access straddles a 16-byte unit
    whatever the thread (the threads' first columns, at most `low` bytes
    into their unit, plus the access's offset into its unit, `rest` — 0 for
    16-bit vectors, 8 for every other fp8 one — plus its bytes fit in 16:
    the swizzle leaves the low 4 bits alone, so `rest` is an immediate),
    and the unit bits of the threads' first columns and of the offsets are
    disjoint (so adding them is XOR-ing them).  A thread then forms one
    address per distinct column unit (8 for a 128B span), not one per
    access; rows and column chunks are immediates."""
    swizzle = st.swizzle.data
    rows = st.get_shape()[-2]
    if not swizzle or rows % 8:
        return None
    eb = nvgpu.element_bytes(st.element_type)
    w = st.chunk_columns()
    span = w * eb
    thread_units, lowest = 0, 0
    for col in thread_columns:
        unit, low = divmod(col * eb, 16)
        thread_units |= unit
        lowest = max(lowest, low)
    plan, units = [], 0
    for dr, dc in offsets:
        unit, rest = divmod((dc % w) * eb, 16)
        if dr % 8 or lowest + rest + nbytes > 16:
            return None
        units |= unit
        plan.append((unit, (dc // w) * rows * span + dr * span + rest))
    if thread_units & units or (thread_units | units) >= span // 16:
        return None
    return plan


def _thread_columns(terms) -> set[int]:
    """The column of the first element of each thread of a warp group, for
    the thread terms `terms` of the column axis."""
    cols = set()
    for tid in range(THREADS_PER_GROUP):
        warp, lane = divmod(tid, THREADS_PER_WARP)
        cols.add(sum((((warp if term.source == "warp" else lane) // term.divisor) % term.size) * term.stride
                     for term in terms))
    return cols


def _shared_vectors(p: KernelPrinter, t: nvgpu.FragmentType, buf, stage, row):
    """(first value, address register, immediate) of each vector of the
    layout in a stage of a shared-memory tile, rows from `row` on
    (`_tile_addresses` of the layout's thread terms and value offsets)."""
    shape, layout = t.get_shape(), t.tiled_layout
    vector = t.vector_length()
    dr, dc = layout.value_offsets(shape, 0), layout.value_offsets(shape, 1)
    offsets = [(dr[i], dc[i]) for i in range(0, len(dr), vector)]
    terms = (layout.thread_terms(shape, 0), layout.thread_terms(shape, 1))
    for k, a, imm in _tile_addresses(p, buf, stage, row, terms, offsets,
                                     vector * nvgpu.element_bytes(t.element_type)):
        yield k * vector, a, imm


def _tile_addresses(p: KernelPrinter, buf, stage, row, terms, offsets: list[tuple[int, int]], nbytes: int):
    """(index, address register, immediate) of each access of `nbytes` at
    (row, col) `offsets` from a thread's element (`terms`: its thread
    terms per axis) in a stage of a shared-memory tile, rows from `row` on:
    the stage's base, its column chunk of `w` columns (chunks of rows x span
    bytes follow each other), row · span + (col mod w) · bytes, then the
    swizzle of the address (`tawa.target.hopper.swizzled_address`: bits
    [4, 4+b) ^= bits [7, 7+b)).  Accesses never straddle a 16-byte unit, so
    one swizzle per access is exact.  Where `unit_plan` applies, a thread
    forms one register per column unit and the rest are immediates;
    otherwise one address per access (in a reused register)."""
    st = buf.type
    assert isinstance(st, nvgpu.SmemType)
    rows, _ = st.get_shape()[-2:]
    eb = nvgpu.element_bytes(st.element_type)
    w, swizzle = st.chunk_columns(), st.swizzle.data
    span = w * eb
    base = stage_addr(p, buf, stage)
    row0 = p.u32(row)
    r_t = _terms_coordinate(p, terms[0])
    p.emit(f"add.u32 {r_t}, {r_t}, {row0};")
    c_t = _terms_coordinate(p, terms[1])
    columns = _thread_columns(terms[1])
    plan = unit_plan(st, offsets, columns, nbytes)
    if plan is not None:
        tb, sw = p.regs.new("r"), p.regs.new("r")
        p.emit(f"mad.lo.u32 {tb}, {r_t}, {span}, {base};")
        p.emit(f"mad.lo.u32 {tb}, {c_t}, {eb}, {tb};")
        p.emit(f"shr.u32 {sw}, {tb}, 7;")
        p.emit(f"and.b32 {sw}, {sw}, {swizzle // 16 - 1};")
        p.emit(f"shl.b32 {sw}, {sw}, 4;")
        if any(col * eb >= 16 for col in columns):
            # The thread's own unit bits join the XOR term (x), tb keeps the rest (tb0).
            unit_bits, own = (span - 1) & ~15, p.regs.new("r")
            p.emit(f"and.b32 {own}, {tb}, {unit_bits};")
            p.emit(f"xor.b32 {sw}, {sw}, {own};")
            p.emit(f"and.b32 {tb}, {tb}, 0x{~unit_bits & 0xFFFFFFFF:08X};")
        units: dict[int, str] = {}
        for unit in sorted({u for u, _ in plan}):
            units[unit] = p.regs.new("r")
            p.emit(f"xor.b32 {units[unit]}, {sw}, {16 * unit};")
            p.emit(f"add.u32 {units[unit]}, {tb}, {units[unit]};")
        for k, (unit, imm) in enumerate(plan):
            yield k, units[unit], imm
        return
    r, c, a, tmp = (p.regs.new("r") for _ in range(4))
    for k, (dr, dc) in enumerate(offsets):
        p.emit(f"add.u32 {r}, {r_t}, {dr};")
        p.emit(f"add.u32 {c}, {c_t}, {dc};")
        p.emit(f"shr.u32 {tmp}, {c}, {w.bit_length() - 1};")  # the column chunk
        p.emit(f"mad.lo.u32 {a}, {tmp}, {rows * span}, {base};")
        p.emit(f"mad.lo.u32 {a}, {r}, {span}, {a};")
        p.emit(f"and.b32 {tmp}, {c}, {w - 1};")
        p.emit(f"mad.lo.u32 {a}, {tmp}, {eb}, {a};")
        if swizzle:
            p.emit(f"shr.u32 {tmp}, {a}, 7;")
            p.emit(f"and.b32 {tmp}, {tmp}, {swizzle // 16 - 1};")
            p.emit(f"shl.b32 {tmp}, {tmp}, 4;")
            p.emit(f"xor.b32 {a}, {a}, {tmp};")
        yield k, a, 0


def _shared_access(p: KernelPrinter, kind: str, t: nvgpu.FragmentType, regs_of: list[str], smem: SSAValue,
                   stage: SSAValue, row: SSAValue) -> None:
    """`ld.shared` (kind `ld`) into or `st.shared` (`st`) from the registers
    `regs_of` of a fragment of type `t`: each vector of the layout is one
    access at the address the tile's storage gives its element
    (`_shared_vectors`); 16-bit values that are not packed go one by one."""
    eb = nvgpu.element_bytes(t.element_type)
    vector = t.vector_length()
    per_reg = 2 if t.packed() else 1
    suffix = f"b{t.register_bits()}" if t.packed() else "f32" if isinstance(t.element_type, Float32Type) else None

    def access(width: str, at: str, operand: str) -> None:
        p.emit(f"ld.shared{width} {operand}, {at};" if kind == "ld" else f"st.shared{width} {at}, {operand};")

    for i, a, imm in _shared_vectors(p, t, smem, stage, row):
        regs = regs_of[i // per_reg:(i + vector) // per_reg]
        at = f"[{a}+{imm}]" if imm else f"[{a}]"
        if suffix is None:
            for j, r in enumerate(regs):
                access(".b16", f"[{a}+{imm + j * eb}]", r)
        elif len(regs) > 1:
            access(f".v{len(regs)}.{suffix}", at, f"{{{', '.join(regs)}}}")
        else:
            access(f".{suffix}", at, regs[0])


def _matrix_store(p: KernelPrinter, op: nvgpu.FragmentStoreSharedOp) -> None:
    """The fragment written as 8x8 matrices, `stmatrix.x4` after
    `stmatrix.x4` (`TiledLayout.matrix_plan`; the op's `matrices`): lane
    8·j + i gives the address of row i of matrix j of the instruction, each
    16 contiguous bytes of the tile (`_tile_addresses` of the plan's thread
    terms and instruction offsets), and register j of each lane is that
    lane's part of matrix j (vector v + j of the fragment)."""
    t = _type(op.fragment)
    plan = t.tiled_layout.matrix_plan(t.get_shape())
    assert plan is not None, "the verifier checks the matrix plan"
    regs = p.frag(op.fragment)
    offsets = [origin for _, origin in plan.groups]
    for g, a, imm in _tile_addresses(p, op.dest, op.stage, op.row, plan.thread_terms, offsets, MATRIX_ROW_BYTES):
        first = plan.groups[g][0]
        at = f"[{a}+{imm}]" if imm else f"[{a}]"
        operands = ", ".join(regs[first:first + MATRICES_PER_STORE])
        p.emit(f"stmatrix.sync.aligned.m8n8.x{MATRICES_PER_STORE}.shared.b16 {at}, {{{operands}}};")


def emit_load_shared(p: KernelPrinter, op: nvgpu.FragmentLoadSharedOp) -> None:
    """The fragment read from its slot (`_shared_access`)."""
    _shared_access(p, "ld", _type(op.result), p.define_frag(op.result), op.source, op.stage, op.row)


def emit_store_shared(p: KernelPrinter, op: nvgpu.FragmentStoreSharedOp) -> None:
    """The fragment written to the staging tile, the dual of
    `emit_load_shared`, or as 8x8 matrices where the op says `matrices`."""
    if op.matrices is not None:
        _matrix_store(p, op)
        return
    _shared_access(p, "st", _type(op.fragment), p.frag(op.fragment), op.dest, op.stage, op.row)


EMITTERS: dict[type[Operation], Callable] = {
    nvgpu.FragmentUndefOp: emit_undef,
    nvgpu.FragmentZerosOp: emit_zeros,
    nvgpu.FragmentSplatOp: emit_splat,
    nvgpu.FragmentBinaryOp: emit_binary,
    nvgpu.FragmentUnaryOp: emit_unary,
    nvgpu.FragmentConvertOp: emit_convert,
    nvgpu.FragmentIndexOp: emit_index,
    nvgpu.FragmentCmpIOp: emit_cmpi,
    nvgpu.FragmentSelectOp: emit_select,
    nvgpu.FragmentReduceOp: emit_reduce,
    nvgpu.FragmentBroadcastOp: emit_broadcast,
    nvgpu.MemrefBaseOp: emit_memref_base,
    nvgpu.FragmentStoreGlobalOp: emit_store_global,
    nvgpu.FragmentLoadGlobalOp: emit_load_global,
    nvgpu.FragmentLoadSharedOp: emit_load_shared,
    nvgpu.FragmentStoreSharedOp: emit_store_shared,
    memref.DimOp: emit_memref_dim,
}
"""Emitter of each op this module prints."""
