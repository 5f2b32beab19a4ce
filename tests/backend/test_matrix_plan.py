"""`TiledLayout.matrix_plan` and the `stmatrix.x4` stores the PTX printer forms
from it (`frag_store_shared {matrices}`, tawa/backend/ptx/emit_shared.py).

For every thread of the warp group and every instruction: the row lane 8·j + i
addresses, formed as the printer forms it (`tb0 + ((16·k) ^ x) + imm` of
`unit_plan` over the plan's thread terms and instruction offsets), is the
storage address (the simulator's model, `tawa.interpreters.nvgpu.tile_addresses`)
of row i of matrix j; and the register a lane gives for matrix j is the
lane's part of that matrix (row lane / 4, columns 2·(lane % 4) and that + 1):
so the instruction writes every element where `st.shared` per register would."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type

from tawa.backend.ptx.emit_shared import unit_plan
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.layouts import WGMMA, WGMMA_ROW
from tawa.interpreters.nvgpu import tile_addresses
from tawa.target.hopper import MATRICES_PER_STORE, MATRIX_ROW_BYTES, THREADS_PER_WARP


def _term_sum(terms, thread: int) -> int:
    warp, lane = divmod(thread, THREADS_PER_WARP)
    return sum(((warp if t.source == "warp" else lane) // t.divisor) % t.size * t.stride for t in terms)


@pytest.mark.parametrize(
    ("rows", "cols", "element", "swizzle", "tile_rows", "row0", "offset"),
    [
        (64, 64, BFloat16Type(), 128, 128, 64, 0),  # the GEMM's staging chunk, second warp group
        (64, 128, BFloat16Type(), 128, 64, 0, 16384),  # attention d128's tile, one stage further
        (64, 256, Float16Type(), 128, 64, 0, 0),  # four column chunks
        (128, 256, BFloat16Type(), 128, 128, 0, 0),  # a warp group owning 128 rows
        (64, 80, BFloat16Type(), 32, 64, 0, 8192),  # 80 columns: 5 instructions, 32B swizzle
        (64, 32, Float16Type(), 64, 64, 0, 512),  # 64B swizzle
        (64, 16, BFloat16Type(), 32, 128, 64, 256),  # 32B swizzle
    ],
)
def test_matrix_rows_are_the_storage_rows(rows, cols, element, swizzle, tile_rows, row0, offset):
    frag = nvgpu.FragmentType([rows, cols], element, nvgpu.WGMMA)
    smem = nvgpu.SmemType([1, tile_rows, cols], element, swizzle)
    assert nvgpu.stores_as_matrices(frag)
    shape = frag.get_shape()
    plan = WGMMA.matrix_plan(shape)
    assert plan is not None and len(plan.groups) * MATRICES_PER_STORE * 2 == WGMMA.values_per_thread(shape)
    offsets = [origin for _, origin in plan.groups]
    columns = {_term_sum(plan.thread_terms[1], t) for t in range(128)}
    units = unit_plan(smem, offsets, columns, MATRIX_ROW_BYTES)
    assert units is not None
    eb = nvgpu.element_bytes(element)
    span = smem.chunk_columns() * eb
    unit_bits = (span - 1) & ~15
    want = tile_addresses(smem, offset)
    stored = set()
    for t in range(128):
        warp, lane = divmod(t, THREADS_PER_WARP)
        j, i = divmod(lane, 8)
        r_t, c_t = _term_sum(plan.thread_terms[0], t) + row0, _term_sum(plan.thread_terms[1], t)
        tb = offset + r_t * span + c_t * eb
        x = (tb & unit_bits) ^ (((tb >> 7) & (swizzle // 16 - 1)) << 4)
        tb0 = tb & ~unit_bits
        for (first, _), (unit, imm) in zip(plan.groups, units, strict=True):
            # The row this lane addresses: row i of matrix j, whose origin in this
            # warp is where the fragment's vector first + j starts in lane 0.
            r_m, c_m = WGMMA.thread_coords(shape, warp * THREADS_PER_WARP, 2 * (first + j))
            got = tb0 + ((16 * unit) ^ x) + imm
            assert got == want[row0 + r_m + i, c_m], (t, first)
            # What this lane gives for each matrix k of the instruction.
            for k in range(MATRICES_PER_STORE):
                r_k, c_k = WGMMA.thread_coords(shape, warp * THREADS_PER_WARP, 2 * (first + k))
                held = [WGMMA.thread_coords(shape, t, 2 * (first + k) + e) for e in (0, 1)]
                assert held == [(r_k + lane // 4, c_k + 2 * (lane % 4) + e) for e in (0, 1)], (t, first, k)
                stored.update(held)
    assert stored == {(r, c) for r in range(rows) for c in range(cols)}


def test_no_matrices_where_the_layout_has_none():
    """f32 values are not 16-bit; 8 columns are two matrices, not four; a row
    vector is not made of matrices; fp8 pairs are 16 bits, not 32."""
    assert not nvgpu.stores_as_matrices(nvgpu.FragmentType([64, 64], Float32Type(), nvgpu.WGMMA))
    assert not nvgpu.stores_as_matrices(nvgpu.FragmentType([64, 8], BFloat16Type(), nvgpu.WGMMA))
    assert WGMMA.matrix_plan((64, 8)) is None
    assert WGMMA_ROW.matrix_plan((64,)) is None
