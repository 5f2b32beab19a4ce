"""GEMM tile programs of any tile shape, for the tile-shape tests.

`gemm(shape)` is `examples/gemm.mlir` with its tile constants replaced:
C = A · Bᵀ (A M×K, B N×K, C M×N, row-major), one program per BLOCK_M ×
BLOCK_N tile of C, K in BLOCK_K steps; grid (⌈M/BM⌉, ⌈N/BN⌉).  With
`b_kn`, B is K×N instead (`examples/matmul.mlir`: C = A · B, B read
MN-major, its slot rows are BLOCK_N wide).
Used by tests/transforms/test_tile_shapes.py (CPU) and
tests/runtime/test_tile_shapes_gpu.py (H100).
"""

from __future__ import annotations

from typing import NamedTuple

TEMPLATE = """\
func.func @gemm(%A: memref<?x?x{a}>, %B: memref<?x?x{a}>, %C: memref<?x?x{c}>,
                %M: index, %N: index, %K: index) {{
  %c0 = arith.constant 0 : index
  %cbk = arith.constant {bk} : index
  %cbm = arith.constant {bm} : index
  %cbn = arith.constant {bn} : index
  %pid_m = tile.program_id 0
  %pid_n = tile.program_id 1
  %m0 = arith.muli %pid_m, %cbm : index
  %n0 = arith.muli %pid_n, %cbn : index
  %zero = tile.zeros : tensor<{bm}x{bn}xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero) -> (tensor<{bm}x{bn}xf32>) {{
    %a = tile.load %A[%m0, %k] : memref<?x?x{a}> -> tensor<{bm}x{bk}x{a}>
    {load_b}
    {dot}
    scf.yield %d : tensor<{bm}x{bn}xf32>
  }}
  %c = arith.truncf %acc : tensor<{bm}x{bn}xf32> to tensor<{bm}x{bn}x{c}>
  tile.store %c, %C[%m0, %n0] : tensor<{bm}x{bn}x{c}>, memref<?x?x{c}>
  func.return
}}
"""


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

    def swizzles(self) -> tuple[int, int]:
        """The swizzles of the A and B slots: the widest span dividing a row."""
        size = 1 if self.operand.startswith("f8") else 2

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
    bm, bn, bk, a = shape.bm, shape.bn, shape.bk, shape.operand
    if shape.b_kn:
        load_b = f"%b = tile.load %B[%k, %n0] : memref<?x?x{a}> -> tensor<{bk}x{bn}x{a}>"
        dot = (f"%d = tile.dot %a, %b, %acc_i : tensor<{bm}x{bk}x{a}>, tensor<{bk}x{bn}x{a}> "
               f"-> tensor<{bm}x{bn}xf32>")
    else:
        load_b = f"%b = tile.load %B[%n0, %k] : memref<?x?x{a}> -> tensor<{bn}x{bk}x{a}>"
        dot = (f"%d = tile.dot %a, %b, %acc_i {{rhs_transposed}} : tensor<{bm}x{bk}x{a}>, "
               f"tensor<{bn}x{bk}x{a}> -> tensor<{bm}x{bn}xf32>")
    return TEMPLATE.format(bm=bm, bn=bn, bk=bk, a=a, c=out, load_b=load_b, dot=dot)
