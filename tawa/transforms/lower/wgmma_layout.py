"""The shared-memory tile layouts wgmma reads, their descriptor fields and k-steps.

A tile in an `!nvgpu.smem` buffer is stored as column chunks (one TMA box
each): chunk c holds a `span`-byte slice of every row, rows one after the
other, so a chunk is `rows × span` bytes.  With a swizzle the span is the
swizzle's (32, 64 or 128 bytes); unswizzled, wgmma's canonical layout is
made of core matrices of 8 rows × 16 bytes, which a tile matches when its
rows are 16 bytes (one chunk).

The descriptor's byte offsets (PTX ISA "Matrix Descriptor Format"; CUTLASS
writes the same canonical layouts as `((8,m),(T,2))` for K-major and
`((T,s,m),(8,k))` for MN-major operands) name two strides of that layout:

* swizzled, K-major: SBO = the next 8 rows (8 × span); LBO is not read (a
  k-step stays inside one row of the span) and tawa sets the chunk distance,
  as verified on the H100 (hopper-verified.md §2.1: 16, 0 and 8192 agree);
* swizzled, MN-major (B read as K×N, A read as K×M with `lhs_transposed`):
  LBO = the next chunk of MN (rows × span), SBO = the next 8 rows of K
  (8 × span) (§2.2: 8192 and 1024 for 128B);
* unswizzled: LBO is the stride along K between core matrices and SBO the
  stride along MN — K-major: LBO = the next chunk, SBO = 8 rows × 16 bytes;
  MN-major: LBO = 8 rows × 16 bytes, SBO = the next chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

from tawa.dialects import nvgpu
from tawa.target.hopper import SWIZZLE_ATOM_ROWS, WGMMA_K_BYTES

CORE_MATRIX_ROW_BYTES = 16
"""A wgmma core matrix is 8 rows of 16 bytes (PTX ISA, "Shared Memory
Matrix Layout"): the span of an unswizzled canonical layout."""


@dataclass(frozen=True)
class TileLayout:
    swizzle: int
    span: int
    """Bytes of one row of a column chunk."""
    chunk_bytes: int
    """Bytes from one column chunk to the next (rows × span)."""

    def descriptor_offsets(self, k_major: bool) -> tuple[int, int]:
        """(leading byte offset, stride byte offset) of an operand read
        K-major or MN-major."""
        eight_rows = SWIZZLE_ATOM_ROWS * self.span
        if self.swizzle == 0 and not k_major:
            return eight_rows, self.chunk_bytes
        return self.chunk_bytes, eight_rows

    def k_offsets(self, steps: int, k_step: int, k_major: bool) -> list[int]:
        """Byte offset of each k-step (k_step elements of K, WGMMA_K_BYTES
        bytes): K-major, along a row of the span, then to the next chunk;
        MN-major, k_step rows further."""
        if not k_major:
            return [j * k_step * self.span for j in range(steps)]
        return [
            (j * WGMMA_K_BYTES) // self.span * self.chunk_bytes + (j * WGMMA_K_BYTES) % self.span
            for j in range(steps)
        ]


    def row_offset(self, rows: int) -> int:
        """Byte offset of row `rows` of a K-major operand: the rows of a
        chunk are `span` bytes apart (8-row swizzle atoms, or core matrices,
        one after the other), so a descriptor `rows` further down reads the
        same k-steps of the rows below (a warp group's second 64-row block of A)."""
        return rows * self.span

    def mn_offset(self, elements: int, element_bytes: int) -> int:
        """Byte offset of element `elements` along MN of an MN-major
        operand (a column of the tile), a multiple of the span: whole column
        chunks further (the second 64-row block of an MN-major A)."""
        along = elements * element_bytes
        if along % self.span:
            raise ValueError(f"{elements} elements of {element_bytes} bytes are no whole number of "
                             f"{self.span}-byte column chunks")
        return along // self.span * self.chunk_bytes


def tile_layout(t: nvgpu.SmemType) -> TileLayout:
    """The layout of each `rows × cols` tile of a `stages × rows × cols` buffer
    (ValueError if wgmma cannot read it)."""
    _, rows, cols = t.get_shape()
    swizzle = t.swizzle.data
    if swizzle:
        return TileLayout(swizzle, swizzle, rows * swizzle)
    row_bytes = cols * nvgpu.element_bytes(t.element_type)
    if row_bytes != CORE_MATRIX_ROW_BYTES:
        raise ValueError(
            f"an unswizzled tile is a wgmma layout only with rows of {CORE_MATRIX_ROW_BYTES} "
            f"bytes, got {row_bytes} in {t}"
        )
    return TileLayout(0, CORE_MATRIX_ROW_BYTES, rows * CORE_MATRIX_ROW_BYTES)
