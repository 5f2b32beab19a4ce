"""Descriptor fields and k-step offsets of tawa.transforms.lower.wgmma_layout for
every swizzle mode, against what was verified on the H100
(shared/reference/hopper-verified.md §2.1-2.2) and the canonical layouts of
the PTX ISA."""

import pytest
from xdsl.dialects.builtin import bf16

from tawa.backend.ptx.emit_wgmma import descriptor_high_bits
from tawa.dialects import nvgpu
from tawa.transforms.lower.wgmma_layout import TileLayout, tile_layout

LBO_FIELD = 0x3FFF << 16  # bits 16-29


def layout(rows: int, cols: int, swizzle: int) -> TileLayout:
    return tile_layout(nvgpu.SmemType([1, rows, cols], bf16, swizzle))


def test_k_major_128b_matches_the_verified_descriptor():
    # §2.1: A 64x64 bf16, 128B swizzle: desc_hi 0x4000004000010000 with LBO =
    # 16 bytes, and LBO is not read (0 and 8192 gave the same results): SBO
    # and swizzle must match, LBO is the chunk distance.
    lbo, sbo = layout(64, 64, 128).descriptor_offsets(k_major=True)
    assert (lbo, sbo) == (8192, 1024)
    hi = descriptor_high_bits(lbo, sbo, 128)
    assert hi & ~LBO_FIELD == 0x4000004000010000 & ~LBO_FIELD
    # k16 step s: start address + 32 s bytes (descriptor + 2 s).
    assert layout(64, 64, 128).k_offsets(4, 16, k_major=True) == [0, 32, 64, 96]


def test_mn_major_128b_matches_the_verified_descriptor():
    # §2.2: K x 128 stored as two 64-wide MN chunks of 64 K-rows x 128 bytes:
    # LBO = 8192, SBO = 1024, desc_hi 0x4000004002000000, k16 step +2048.
    t = layout(64, 128, 128)
    lbo, sbo = t.descriptor_offsets(k_major=False)
    assert (lbo, sbo) == (8192, 1024)
    assert descriptor_high_bits(lbo, sbo, 128) == 0x4000004002000000
    assert t.k_offsets(4, 16, k_major=False) == [0, 2048, 4096, 6144]


@pytest.mark.parametrize("swizzle, field", [(128, 1), (64, 2), (32, 3)])
def test_swizzled_modes(swizzle, field):
    cols = swizzle // 2  # one span of bf16
    t = layout(64, cols, swizzle)
    assert (t.span, t.chunk_bytes) == (swizzle, 64 * swizzle)
    for k_major in (True, False):
        lbo, sbo = t.descriptor_offsets(k_major)
        # The next 8 rows of the span; the next chunk.
        assert (lbo, sbo) == (64 * swizzle, 8 * swizzle)
        assert descriptor_high_bits(lbo, sbo, swizzle) >> 62 == field
    # K-major k-steps walk the span's row, then jump to the next chunk.
    wide = layout(64, 2 * cols, swizzle)
    steps = 2 * swizzle // 32
    assert wide.k_offsets(steps, 16, True) == [
        (32 * j) // swizzle * 64 * swizzle + (32 * j) % swizzle for j in range(steps)
    ]


def test_unswizzled_core_matrices():
    # 16-byte rows: core matrices of 8 rows x 16 bytes.  LBO is the K stride
    # between core matrices, SBO the MN one.
    t = layout(64, 8, 0)
    assert (t.span, t.chunk_bytes) == (16, 1024)
    assert t.descriptor_offsets(k_major=True) == (1024, 128)
    assert t.descriptor_offsets(k_major=False) == (128, 1024)
    assert descriptor_high_bits(1024, 128, 0) >> 62 == 0
    # MN-major: a k16 step is 16 rows of 16 bytes further.
    assert t.k_offsets(2, 16, k_major=False) == [0, 256]
    with pytest.raises(ValueError, match="rows of 16 bytes"):
        layout(64, 64, 0)
