"""fp8 quantization of activations, written as tile programs:
`quantize_rows` scales each row of an M×N bf16 input into float8 e4m3 by
its own factor and stores the factors beside (f32, one a row), as
`tawa.torch.matmul_fp8` takes them for A (`scale_a` of [M, 1]: A ≈ Q · S);
a program takes BLOCK_M whole rows (N ≤ BLOCK_N), launch grid
(⌈M/BLOCK_M⌉,).  `dequantize_rows` computes Q · S back in bf16, a
BLOCK_M × BLOCK_N tile a program, grid (⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉).

They run in the CPU interpreter (`kernel.interpret`) and compile for the GPU
with blocked register layouts (docs/passes.md, "Kernels without dots"): an
e4m3 tile moves in 16-byte vectors of 16 values, and the lowered kernels
match the tile programs in the CPU simulator (tests/transforms/test_quantize.py).
"""

import tawa
import tawa.language as tl

E4M3_MAX = 448.0
"""The largest finite float8 e4m3 value: a row's largest magnitude maps to it."""


@tawa.kernel
def quantize_rows(X: tl.tensor_ref(tl.bf16, 2), Q: tl.tensor_ref(tl.f8e4m3fn, 2), S: tl.tensor_ref(tl.f32, 1),
                  M: tl.index, N: tl.index, BLOCK_M: tl.constexpr = 4, BLOCK_N: tl.constexpr = 1024):
    """Q = X / S rounded to e4m3 (columns past N read 0 and are not
    stored), S = max |X| of the row / 448 (a row of zeros takes a tiny
    factor, not a division by zero)."""
    m0 = tl.program_id(0) * BLOCK_M
    x = tl.load(X, (m0, 0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    amax = tl.maximum(tl.max(tl.abs(x), 1), tl.full((BLOCK_M,), 1e-12, tl.f32))
    scale = amax / E4M3_MAX
    tl.store(Q, (m0, 0), (x / scale[:, None]).to(tl.f8e4m3fn))
    tl.store(S, (m0,), scale)


@tawa.kernel
def dequantize_rows(Q: tl.tensor_ref(tl.f8e4m3fn, 2), S: tl.tensor_ref(tl.f32, 1), Y: tl.tensor_ref(tl.bf16, 2),
                    M: tl.index, N: tl.index, BLOCK_M: tl.constexpr = 8, BLOCK_N: tl.constexpr = 512):
    """Y = Q · S (the row's factor), rounded to bf16."""
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    q = tl.load(Q, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    tl.store(Y, (m0, n0), (q * tl.load(S, (m0,), (BLOCK_M,))[:, None]).to(tl.bf16))
