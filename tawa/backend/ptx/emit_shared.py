"""PTX emitters of the fragment ops that read and write shared memory
(`nvgpu.frag_load_shared`, `nvgpu.frag_store_shared`).

Their addresses are formed here, from the fragment's layout and the swizzle
of `tawa.target.hopper` — the one place where the printer still does
address math (to move into IR like the global accesses of
`tawa-expand-fragment-stores`).  `swizzle_plan` and
`unit_plan` decide when a thread can form one register per 16-byte column
unit and reach every access with an immediate; `tests/backend/test_swizzle_plan.py`
checks every address against the simulator's storage model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Operation, SSAValue

from tawa.backend.ptx.emit_fragments import terms_coordinate
from tawa.backend.ptx.emit_memory import stage_addr
from tawa.dialects import nvgpu
from tawa.target.hopper import THREADS_PER_GROUP, THREADS_PER_WARP

if TYPE_CHECKING:
    from tawa.backend.ptx.printer import KernelPrinter


def _type(v: SSAValue) -> nvgpu.FragmentType:
    t = v.type
    assert isinstance(t, nvgpu.FragmentType)
    return t


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
    r_t = terms_coordinate(p, terms[0])
    p.emit(f"add.u32 {r_t}, {r_t}, {row0};")
    c_t = terms_coordinate(p, terms[1])
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


def emit_load_shared(p: KernelPrinter, op: nvgpu.FragmentLoadSharedOp) -> None:
    """The fragment read from its slot (`_shared_access`)."""
    _shared_access(p, "ld", _type(op.result), p.define_frag(op.result), op.source, op.stage, op.row)


def emit_store_shared(p: KernelPrinter, op: nvgpu.FragmentStoreSharedOp) -> None:
    """The fragment written to the staging tile, the dual of
    `emit_load_shared`."""
    _shared_access(p, "st", _type(op.fragment), p.frag(op.fragment), op.dest, op.stage, op.row)


EMITTERS: dict[type[Operation], Callable] = {
    nvgpu.FragmentLoadSharedOp: emit_load_shared,
    nvgpu.FragmentStoreSharedOp: emit_store_shared,
}
"""Emitter of each op this module prints."""
