"""fp8 quantization of activations, written as a tile program: each row of
an M×N bf16 input scaled into float8 e4m3 by its own factor, the factors
stored beside (f32, one a row), as `tawa.torch.matmul_fp8` takes them for
A (`scale_a` of [M, 1]: A ≈ Q · S).  A program takes BLOCK_M whole rows
(N ≤ BLOCK_N); launch grid (⌈M/BLOCK_M⌉,).

It runs in the CPU interpreter (`kernel.interpret`) and compiles for the GPU
with blocked register layouts (docs/passes.md, "Kernels without dots"): the
e4m3 tile is stored in 8-byte vectors, and the lowered kernel matches the
tile program in the CPU simulator (tests/transforms/test_quantize.py).
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
