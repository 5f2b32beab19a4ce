"""Memory-bound kernels of a transformer, written as tile programs: a row
softmax, RMSNorm, LayerNorm, a residual add fused with RMSNorm, a SwiGLU
gate and its gradient, and the rotary embedding (tawa.torch's norm and
rotary operators and the gated MLP's backward pass run these).  Each
program takes BLOCK_M rows of an M×N row-major bf16 input and computes in
f32; the norms and the softmax see a whole row in one tile
(N ≤ BLOCK_N); `softmax_chunked`, `rmsnorm_chunked`, `layernorm_chunked` and `add_rmsnorm` loop
over the row in chunks of BLOCK_N columns twice (the row's statistics, then
the normalized output), as kernels for rows wider than their registers
must; `add_rmsnorm_row` is `add_rmsnorm` for rows that fit one tile, in one
pass.  Launch grid (⌈M/BLOCK_M⌉,)
(`swiglu`, `swiglu_bwd`: (⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉); `rotary`: (⌈M/BLOCK_M⌉, heads)).

They run in the CPU interpreter (`kernel.interpret`) and match NumPy
(tests/frontend/test_frontend_norms.py); they compile for the GPU with
blocked register layouts (docs/passes.md, "Kernels without dots: blocked
layouts"), and the lowered kernels match the tile programs in the CPU
simulator (tests/transforms/test_blocked_kernels.py).
"""

import tawa
import tawa.language as tl


@tawa.kernel
def softmax(X: tl.tensor_ref(tl.bf16, 2), Y: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index,
            BLOCK_M: tl.constexpr = 16, BLOCK_N: tl.constexpr = 1024):
    m0 = tl.program_id(0) * BLOCK_M
    x = tl.load(X, (m0, 0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    cols = tl.arange(0, BLOCK_N)[None, :] + tl.zeros((BLOCK_M, BLOCK_N), tl.i32)
    x = tl.where(cols < N, x, tl.full((BLOCK_M, BLOCK_N), -1e30, tl.f32))  # columns past N take no weight
    e = tl.exp(x - tl.max(x, 1)[:, None])
    tl.store(Y, (m0, 0), (e / tl.sum(e, 1)[:, None]).to(tl.bf16))


@tawa.kernel
def softmax_chunked(X: tl.tensor_ref(tl.bf16, 2), Y: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index,
                    BLOCK_M: tl.constexpr = 8, BLOCK_N: tl.constexpr = 1024):
    """`softmax` over rows of any width, online: the first loop keeps each
    row's running maximum and the sum of its exponentials scaled to it
    (rescaled by e^(old − new) when the maximum grows), the second writes
    e^(x − max) / sum chunk by chunk."""
    m0 = tl.program_id(0) * BLOCK_M
    cols = tl.arange(0, BLOCK_N)[None, :] + tl.zeros((BLOCK_M, BLOCK_N), tl.i32)
    low = tl.full((BLOCK_M, BLOCK_N), -1e30, tl.f32)
    top = tl.full((BLOCK_M,), -1e30, tl.f32)
    total = tl.zeros((BLOCK_M,), tl.f32)
    for n0 in tl.range(0, N, BLOCK_N):
        x = tl.where(cols < N - n0, tl.load(X, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32), low)
        new = tl.maximum(top, tl.max(x, 1))
        total = total * tl.exp(top - new) + tl.sum(tl.exp(x - new[:, None]), 1)
        top = new
    inv = 1.0 / total
    for n0 in tl.range(0, N, BLOCK_N):
        x = tl.load(X, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
        tl.store(Y, (m0, n0), (tl.exp(x - top[:, None]) * inv[:, None]).to(tl.bf16))


@tawa.kernel
def rmsnorm(X: tl.tensor_ref(tl.bf16, 2), W: tl.tensor_ref(tl.bf16, 1), Y: tl.tensor_ref(tl.bf16, 2),
            M: tl.index, N: tl.index, eps: tl.f32,
            BLOCK_M: tl.constexpr = 16, BLOCK_N: tl.constexpr = 1024):
    m0 = tl.program_id(0) * BLOCK_M
    x = tl.load(X, (m0, 0), (BLOCK_M, BLOCK_N)).to(tl.f32)  # columns past N read 0
    inv = tl.rsqrt(tl.sum(x * x, 1) / N.to(tl.f32) + eps)
    w = tl.load(W, (0,), (BLOCK_N,)).to(tl.f32)
    tl.store(Y, (m0, 0), (x * inv[:, None] * w[None, :]).to(tl.bf16))


@tawa.kernel
def layernorm(X: tl.tensor_ref(tl.bf16, 2), W: tl.tensor_ref(tl.bf16, 1), B: tl.tensor_ref(tl.bf16, 1),
              Y: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index, eps: tl.f32,
              BLOCK_M: tl.constexpr = 16, BLOCK_N: tl.constexpr = 1024):
    m0 = tl.program_id(0) * BLOCK_M
    x = tl.load(X, (m0, 0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    n = N.to(tl.f32)
    mean = tl.sum(x, 1) / n
    cols = tl.arange(0, BLOCK_N)[None, :] + tl.zeros((BLOCK_M, BLOCK_N), tl.i32)
    d = tl.where(cols < N, x - mean[:, None], tl.zeros((BLOCK_M, BLOCK_N), tl.f32))
    inv = tl.rsqrt(tl.sum(d * d, 1) / n + eps)
    w = tl.load(W, (0,), (BLOCK_N,)).to(tl.f32)
    b = tl.load(B, (0,), (BLOCK_N,)).to(tl.f32)
    tl.store(Y, (m0, 0), (d * inv[:, None] * w[None, :] + b[None, :]).to(tl.bf16))


@tawa.kernel
def rmsnorm_chunked(X: tl.tensor_ref(tl.bf16, 2), W: tl.tensor_ref(tl.bf16, 1), Y: tl.tensor_ref(tl.bf16, 2),
                    M: tl.index, N: tl.index, eps: tl.f32,
                    BLOCK_M: tl.constexpr = 8, BLOCK_N: tl.constexpr = 1024):
    """`rmsnorm` over rows of any width: the first loop sums the squares of
    the row's chunks of BLOCK_N columns, the second reads them again and
    scales them."""
    m0 = tl.program_id(0) * BLOCK_M
    squares = tl.zeros((BLOCK_M,), tl.f32)
    for n0 in tl.range(0, N, BLOCK_N):
        x = tl.load(X, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
        squares = squares + tl.sum(x * x, 1)
    inv = tl.rsqrt(squares / N.to(tl.f32) + eps)
    for n0 in tl.range(0, N, BLOCK_N):
        x = tl.load(X, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
        w = tl.load(W, (n0,), (BLOCK_N,)).to(tl.f32)
        tl.store(Y, (m0, n0), (x * inv[:, None] * w[None, :]).to(tl.bf16))


@tawa.kernel
def layernorm_chunked(X: tl.tensor_ref(tl.bf16, 2), W: tl.tensor_ref(tl.bf16, 1), B: tl.tensor_ref(tl.bf16, 1),
                      Y: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index, eps: tl.f32,
                      BLOCK_M: tl.constexpr = 8, BLOCK_N: tl.constexpr = 1024):
    """`layernorm` over rows of any width, in two loops over the row's
    chunks: the first merges each chunk's mean and sum of squared
    deviations into the row's (Chan et al.'s pairwise update, so the
    variance is not the difference of two large sums), the second
    normalizes the chunks read again."""
    m0 = tl.program_id(0) * BLOCK_M
    count = tl.zeros((BLOCK_M,), tl.f32)
    mean = tl.zeros((BLOCK_M,), tl.f32)
    m2 = tl.zeros((BLOCK_M,), tl.f32)
    cols = tl.arange(0, BLOCK_N)[None, :] + tl.zeros((BLOCK_M, BLOCK_N), tl.i32)
    zeros = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
    for n0 in tl.range(0, N, BLOCK_N):
        x = tl.load(X, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
        inside = cols < N - n0
        k = tl.sum(tl.where(inside, zeros + 1.0, zeros), 1)  # the chunk's columns inside the row
        chunk_mean = tl.sum(x, 1) / k
        d = tl.where(inside, x - chunk_mean[:, None], zeros)
        total = count + k
        delta = chunk_mean - mean
        mean = mean + delta * (k / total)
        m2 = m2 + tl.sum(d * d, 1) + delta * delta * (count * k / total)
        count = total
    inv = tl.rsqrt(m2 / N.to(tl.f32) + eps)
    for n0 in tl.range(0, N, BLOCK_N):
        x = tl.load(X, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
        w = tl.load(W, (n0,), (BLOCK_N,)).to(tl.f32)
        b = tl.load(B, (n0,), (BLOCK_N,)).to(tl.f32)
        tl.store(Y, (m0, n0), ((x - mean[:, None]) * inv[:, None] * w[None, :] + b[None, :]).to(tl.bf16))


@tawa.kernel
def add_rmsnorm(X: tl.tensor_ref(tl.bf16, 2), R: tl.tensor_ref(tl.bf16, 2), W: tl.tensor_ref(tl.bf16, 1),
                Y: tl.tensor_ref(tl.bf16, 2), S: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index, eps: tl.f32,
                BLOCK_M: tl.constexpr = 4, BLOCK_N: tl.constexpr = 1024):
    """S = X + R (the new residual stream), Y = rmsnorm(S)·W, over rows of
    any width: the first loop writes S and sums its squares, the second
    reads S back and scales it."""
    m0 = tl.program_id(0) * BLOCK_M
    squares = tl.zeros((BLOCK_M,), tl.f32)
    for n0 in tl.range(0, N, BLOCK_N):
        s = tl.load(X, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32) + tl.load(R, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
        s = s.to(tl.bf16)
        tl.store(S, (m0, n0), s)
        f = s.to(tl.f32)
        squares = squares + tl.sum(f * f, 1)
    inv = tl.rsqrt(squares / N.to(tl.f32) + eps)
    for n0 in tl.range(0, N, BLOCK_N):
        f = tl.load(S, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
        w = tl.load(W, (n0,), (BLOCK_N,)).to(tl.f32)
        tl.store(Y, (m0, n0), (f * inv[:, None] * w[None, :]).to(tl.bf16))


@tawa.kernel
def add_rmsnorm_row(X: tl.tensor_ref(tl.bf16, 2), R: tl.tensor_ref(tl.bf16, 2), W: tl.tensor_ref(tl.bf16, 1),
                    Y: tl.tensor_ref(tl.bf16, 2), S: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index,
                    eps: tl.f32, BLOCK_M: tl.constexpr = 4, BLOCK_N: tl.constexpr = 1024):
    """`add_rmsnorm` for rows that fit one tile (N ≤ BLOCK_N): one pass, S
    normalized from the registers it was stored from instead of read back."""
    m0 = tl.program_id(0) * BLOCK_M
    s = tl.load(X, (m0, 0), (BLOCK_M, BLOCK_N)).to(tl.f32) + tl.load(R, (m0, 0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    s = s.to(tl.bf16)
    tl.store(S, (m0, 0), s)
    f = s.to(tl.f32)
    inv = tl.rsqrt(tl.sum(f * f, 1) / N.to(tl.f32) + eps)
    w = tl.load(W, (0,), (BLOCK_N,)).to(tl.f32)
    tl.store(Y, (m0, 0), (f * inv[:, None] * w[None, :]).to(tl.bf16))


@tawa.kernel
def swiglu(G: tl.tensor_ref(tl.bf16, 2), U: tl.tensor_ref(tl.bf16, 2), Y: tl.tensor_ref(tl.bf16, 2),
           M: tl.index, N: tl.index, BLOCK_M: tl.constexpr = 16, BLOCK_N: tl.constexpr = 512):
    """Y = silu(G) · U = G / (1 + e^-G) · U, elementwise."""
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    g = tl.load(G, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    u = tl.load(U, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    tl.store(Y, (m0, n0), (g / (tl.exp(-g) + 1.0) * u).to(tl.bf16))


@tawa.kernel
def swiglu_bwd(DY: tl.tensor_ref(tl.bf16, 2), G: tl.tensor_ref(tl.bf16, 2), U: tl.tensor_ref(tl.bf16, 2),
               DG: tl.tensor_ref(tl.bf16, 2), DU: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index,
               BLOCK_M: tl.constexpr = 8, BLOCK_N: tl.constexpr = 512):
    """The gradients of Y = silu(G) · U for Y's gradient dY, elementwise:
    dU = dY · silu(G) = dY · G · s and dG = dY · U · silu'(G) =
    dY · U · s · (1 + G · (1 − s)), s = 1 / (1 + e^-G)."""
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    dy = tl.load(DY, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    g = tl.load(G, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    u = tl.load(U, (m0, n0), (BLOCK_M, BLOCK_N)).to(tl.f32)
    s = 1.0 / (tl.exp(-g) + 1.0)
    tl.store(DU, (m0, n0), (dy * g * s).to(tl.bf16))
    tl.store(DG, (m0, n0), (dy * u * s * (g * (1.0 - s) + 1.0)).to(tl.bf16))


@tawa.kernel
def rotary(X: tl.tensor_ref(tl.bf16, 2), COS: tl.tensor_ref(tl.bf16, 2), SIN: tl.tensor_ref(tl.bf16, 2),
           Y: tl.tensor_ref(tl.bf16, 2), M: tl.index, S: tl.index,
           BLOCK_M: tl.constexpr = 32, HALF: tl.constexpr = 64):
    """The rotary embedding (rotate-half pairs) of the heads of X [M, ≥ heads·D]
    into Y [M, heads·D], D = 2·HALF, row m at position s = m mod S:
    y[j] = x[j]·cos[s, j] − x[j + HALF]·sin[s, j] and
    y[j + HALF] = x[j + HALF]·cos[s, j + HALF] + x[j]·sin[s, j + HALF] for j < HALF,
    cos and sin [S, D].  Grid (⌈M/BLOCK_M⌉, heads); BLOCK_M divides S, so a
    program's rows are consecutive positions of one sequence."""
    m0 = tl.program_id(0) * BLOCK_M
    c0 = tl.program_id(1) * (2 * HALF)
    s0 = m0 % S
    x1 = tl.load(X, (m0, c0), (BLOCK_M, HALF)).to(tl.f32)
    x2 = tl.load(X, (m0, c0 + HALF), (BLOCK_M, HALF)).to(tl.f32)
    cos1 = tl.load(COS, (s0, 0), (BLOCK_M, HALF)).to(tl.f32)
    sin1 = tl.load(SIN, (s0, 0), (BLOCK_M, HALF)).to(tl.f32)
    tl.store(Y, (m0, c0), (x1 * cos1 - x2 * sin1).to(tl.bf16))
    cos2 = tl.load(COS, (s0, HALF), (BLOCK_M, HALF)).to(tl.f32)
    sin2 = tl.load(SIN, (s0, HALF), (BLOCK_M, HALF)).to(tl.f32)
    tl.store(Y, (m0, c0 + HALF), (x2 * cos2 + x1 * sin2).to(tl.bf16))
