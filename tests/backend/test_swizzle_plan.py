"""`swizzle_plan` (tawa/backend/ptx/emit_shared.py): the shared-memory
address of every vector a thread reads or writes (`frag_load_shared`,
`frag_store_shared`), formed as `tb0 + ((16·k) ^ x) + imm`, equals the
address the simulator's storage model gives its element
(`tawa.interpreters.nvgpu.tile_addresses`: column chunks, swizzle of the
absolute address), for every thread, value and swizzle span."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type

from tawa.backend.ptx.emit_shared import swizzle_plan
from tawa.dialects import nvgpu
from tawa.interpreters.fragments import fragment_map
from tawa.interpreters.nvgpu import tile_addresses


@pytest.mark.parametrize(
    ("cols", "element", "swizzle", "rows", "row0", "offset"),
    [
        (256, BFloat16Type(), 128, 128, 64, 0),  # the GEMM's staging tile, second warp group
        (128, Float16Type(), 128, 64, 0, 16384),  # one stage further
        (32, Float16Type(), 64, 64, 0, 512),  # 64B swizzle
        (256, Float32Type(), 128, 128, 64, 0),  # f32: a thread's 8 columns span two 16-byte units
        (16, Float32Type(), 64, 64, 0, 512),  # f32, 64B swizzle
        (16, BFloat16Type(), 32, 128, 64, 256),  # 32B swizzle
    ],
)
def test_plan_addresses_are_the_storage_addresses(cols, element, swizzle, rows, row0, offset):
    frag = nvgpu.FragmentType([64, cols], element, nvgpu.WGMMA)
    smem = nvgpu.SmemType([1, rows, cols], element, swizzle)
    plan = swizzle_plan(frag, smem)
    assert plan is not None
    eb = nvgpu.element_bytes(element)
    span = smem.chunk_columns() * eb
    want = tile_addresses(smem, offset)
    rows_at, cols_at = fragment_map(frag.tiled_layout, frag.get_shape())
    dr = frag.tiled_layout.value_offsets(frag.get_shape(), 0)
    dc = frag.tiled_layout.value_offsets(frag.get_shape(), 1)
    vector = frag.vector_length()
    for t in range(128):
        r_t, c_t = rows_at[t, 0] - dr[0] + row0, cols_at[t, 0] - dc[0]
        tb = offset + r_t * span + c_t * eb
        unit_bits = (span - 1) & ~15
        x = (tb & unit_bits) ^ (((tb >> 7) & (swizzle // 16 - 1)) << 4)
        tb0 = tb & ~unit_bits
        for k, (unit, imm) in enumerate(plan):
            for j in range(vector):
                i = k * vector + j
                got = tb0 + ((16 * unit) ^ x) + imm + j * eb
                assert got == want[row0 + rows_at[t, i], cols_at[t, i]], (t, i)


def test_no_plan_where_it_does_not_hold():
    """Unswizzled, or rows that are not whole swizzle periods: one address
    per vector."""
    frag = nvgpu.FragmentType([64, 64], BFloat16Type(), nvgpu.WGMMA)
    assert swizzle_plan(frag, nvgpu.SmemType([1, 64, 64], BFloat16Type(), 0)) is None
    assert swizzle_plan(frag, nvgpu.SmemType([1, 68, 64], BFloat16Type(), 128)) is None
