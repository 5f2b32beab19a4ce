"""A GEMM with a bias and a GELU epilogue, C = gelu(A·Bᵀ + bias) in bf16 with
f32 accumulation: the Python twin of examples/gemm_bias_gelu.mlir (the same
interpreter results; the splats of the constants sit at their uses, so the op
order differs).  bias is a vector of N bf16 values added to every row;
gelu(x) = x/2 · (1 + tanh(√(2/π) · (x + 0.044715·x³))).  A is M×K, B is N×K,
C is M×N, all row-major; launch grid (⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉)."""

import tawa
import tawa.language as tl

SQRT_2_OVER_PI = 0.7978845608


@tawa.kernel
def gemm_bias_gelu(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2),
                   Bias: tl.tensor_ref(tl.bf16, 1), C: tl.tensor_ref(tl.bf16, 2),
                   M: tl.index, N: tl.index, K: tl.index,
                   BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 256, BLOCK_K: tl.constexpr = 64):
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
    for k in tl.range(0, K, BLOCK_K):
        a = tl.load(A, (m0, k), (BLOCK_M, BLOCK_K))
        b = tl.load(B, (n0, k), (BLOCK_N, BLOCK_K))
        acc = tl.dot(a, b, acc, trans_b=True)
    # The bias row broadcasts over the rows of the tile (NumPy rules).
    x = acc + tl.load(Bias, (n0,), (BLOCK_N,)).to(tl.f32)[None, :]
    # gelu(x) = x · (0.5 + 0.5 · tanh(k0 · (x + k1 · x³)))
    y = x * (tl.tanh((x + x * x * x * 0.044715) * SQRT_2_OVER_PI) * 0.5 + 0.5)
    tl.store(C, (m0, n0), y.to(tl.bf16))
