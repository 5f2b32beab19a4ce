"""A transpose, written as a tile program: Y = Xᵀ for an M×N input, a
BLOCK_M × BLOCK_N tile a program, launch grid (⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉).

It runs in the CPU interpreter (`kernel.interpret`) and compiles for the GPU
with blocked register layouts (docs/passes.md, "Kernels without dots"): the
loaded tile and its transpose each take the layout of their shape (16-byte
vectors along the rows), and `tile.trans` moves the values between the
threads through shared memory (`nvgpu.frag_transpose_shared`); the lowered
kernel matches the tile program in the CPU simulator
(tests/transforms/test_transpose.py).
"""

import tawa
import tawa.language as tl


@tawa.kernel
def transpose(X: tl.tensor_ref(tl.bf16, 2), Y: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index,
              BLOCK_M: tl.constexpr = 64, BLOCK_N: tl.constexpr = 64):
    """Y[n, m] = X[m, n]: Y is N×M (elements past the edges are neither read nor written)."""
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    tl.store(Y, (n0, m0), tl.trans(tl.load(X, (m0, n0), (BLOCK_M, BLOCK_N))))


@tawa.kernel
def transpose_f32(X: tl.tensor_ref(tl.f32, 2), Y: tl.tensor_ref(tl.f32, 2), M: tl.index, N: tl.index,
                  BLOCK_M: tl.constexpr = 32, BLOCK_N: tl.constexpr = 64):
    """`transpose` of f32 matrices."""
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    tl.store(Y, (n0, m0), tl.trans(tl.load(X, (m0, n0), (BLOCK_M, BLOCK_N))))


@tawa.kernel
def column_softmax(X: tl.tensor_ref(tl.bf16, 2), Y: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index,
                   BLOCK_M: tl.constexpr = 64, BLOCK_N: tl.constexpr = 32):
    """Y = softmax of each column of X, stored transposed (N×M: a row of Y
    is a column of X), for M ≤ BLOCK_M: the transposed tile's rows are
    reduced."""
    n0 = tl.program_id(0) * BLOCK_N
    t = tl.trans(tl.load(X, (0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32))
    cols = tl.arange(0, BLOCK_M)[None, :] + tl.zeros((BLOCK_N, BLOCK_M), tl.i32)
    t = tl.where(cols < M, t, tl.full((BLOCK_N, BLOCK_M), -1e30, tl.f32))
    e = tl.exp(t - tl.max(t, 1)[:, None])
    tl.store(Y, (n0, 0), (e / tl.sum(e, 1)[:, None]).to(tl.bf16))
