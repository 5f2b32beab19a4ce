"""A grouped GEMM driven by an index table (a mixture of experts' expert
layer): program (p, j) multiplies the BLOCK_M rows of A at row block
Tiles[p, 0] by expert Tiles[p, 1]'s weights W[e] (N x K, used transposed)
and writes the BLOCK_M x BLOCK_N product back to the same rows of C,
column block j.  The table is read by the kernel (`tl.load` without a
shape: one i32, a scalar); the producer warp group reads both entries to
place its TMA loads of A and W, the consumers read the row block to place
their store.

A is M x K, W is E x N x K, C is M x N (bf16), Tiles is P x 2 (i32), one row
per program: (row block of A and C, expert).  Launch grid: (P, ⌈N/BLOCK_N⌉).
Row blocks should not repeat (two programs would write the same rows of C);
experts may.  Rows, columns and experts outside the tensors read zeros."""

import tawa
import tawa.language as tl


@tawa.kernel
def grouped_gemm(A: tl.tensor_ref(tl.bf16, 2), W: tl.tensor_ref(tl.bf16, 3), Tiles: tl.tensor_ref(tl.i32, 2),
                 C: tl.tensor_ref(tl.bf16, 2), N: tl.index, K: tl.index,
                 BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 128, BLOCK_K: tl.constexpr = 64):
    p = tl.program_id(0)
    pid_n = tl.program_id(1)
    m0 = tl.load(Tiles, (p, 0)).to(tl.index) * BLOCK_M
    expert = tl.load(Tiles, (p, 1)).to(tl.index)
    n0 = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
    for k in tl.range(0, K, BLOCK_K):
        a = tl.load(A, (m0, k), (BLOCK_M, BLOCK_K))
        w = tl.load(W, (expert, n0, k), (BLOCK_N, BLOCK_K))
        acc = tl.dot(a, w, acc, trans_b=True)
    tl.store(C, (m0, n0), acc.to(tl.bf16))
