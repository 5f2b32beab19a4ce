"""One GEMM tile program per tile-shape family, for the tile-shape tests.

The programs come from `tawa.kernels.gemm` (`gemm_source`: C = A · Bᵀ, or
C = A · B with `b_kn`, one program per BLOCK_M × BLOCK_N tile of C, grid
(⌈M/BM⌉, ⌈N/BN⌉)); this module names the shapes the tests run.
Used by tests/transforms/test_tile_shapes.py (CPU) and
tests/runtime/test_tile_shapes_gpu.py (H100).
"""

from __future__ import annotations

from typing import NamedTuple

from tawa.kernels.gemm import GemmConfig, element_bytes, gemm_source


class Shape(NamedTuple):
    bm: int
    bn: int
    bk: int
    operand: str = "bf16"
    """Element type of A and B (MLIR spelling)."""
    b_kn: bool = False
    """B is K×N (read MN-major) instead of N×K."""

    @property
    def id(self) -> str:
        return (f"{self.bm}x{self.bn}x{self.bk}" + ("" if self.operand == "bf16" else f"-{self.operand}")
                + ("-b_kn" if self.b_kn else ""))

    def config(self, out: str = "bf16") -> GemmConfig:
        return GemmConfig(self.bm, self.bn, self.bk, self.operand, self.operand, out, "kn" if self.b_kn else "nk")

    def swizzles(self) -> tuple[int, int]:
        """The swizzles of the A and B slots: the widest span dividing a row."""
        size = element_bytes(self.operand)

        def widest(row: int) -> int:
            return next(s for s in (128, 64, 32) if row % s == 0)

        return widest(self.bk * size), widest((self.bn if self.b_kn else self.bk) * size)


SHAPES = [
    Shape(64, 128, 64),  # one consumer warp group
    Shape(192, 128, 64),  # three
    Shape(256, 128, 64),  # four
    Shape(128, 96, 64),
    Shape(128, 192, 64),
    Shape(128, 256, 32),  # 64-byte rows: 64B swizzle
    Shape(128, 128, 128),  # 256-byte rows: two 128B column chunks
    Shape(128, 128, 32, "f8E4M3FN"),  # 32-byte rows: 32B swizzle
    Shape(128, 96, 64, b_kn=True),  # B MN-major in 64B-swizzled 192-byte rows
]
"""One of each tile-shape family (BLOCK_M: warp groups; BLOCK_N; BLOCK_K: swizzle)."""


def gemm(shape: Shape, out: str = "bf16") -> str:
    return gemm_source(shape.config(out))
