"""A row-block gather (an embedding lookup by blocks): program (i, j) copies
the BLOCK_M x BLOCK_N block of X at row block Idx[i] and column block j into
row block i of Out, scaled by Scale[i].  Idx and Scale are read by the
kernel (`tl.load` without a shape: one element, a scalar), and the row index
places the block's load.  X is R x N bf16, Idx (i32) and Scale (f32) have
one entry per output row block, Out is (len(Idx) · BLOCK_M) x N.  Launch
grid: (len(Idx), ⌈N/BLOCK_N⌉).  An index may repeat; one outside X reads
zeros (as every load outside a tensor does)."""

import tawa
import tawa.language as tl


@tawa.kernel
def gather_rows(X: tl.tensor_ref(tl.bf16, 2), Idx: tl.tensor_ref(tl.i32, 1), Scale: tl.tensor_ref(tl.f32, 1),
                Out: tl.tensor_ref(tl.bf16, 2), N: tl.index,
                BLOCK_M: tl.constexpr = 64, BLOCK_N: tl.constexpr = 128):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    src = tl.load(Idx, (pid_m,)).to(tl.index)
    scale = tl.load(Scale, (pid_m,))
    n0 = pid_n * BLOCK_N
    x = tl.load(X, (src * BLOCK_M, n0), (BLOCK_M, BLOCK_N))
    tl.store(Out, (pid_m * BLOCK_M, n0), (x.to(tl.f32) * scale).to(tl.bf16))
