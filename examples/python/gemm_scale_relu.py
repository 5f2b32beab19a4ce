"""A GEMM with a fused epilogue, C = max(alpha · A·Bᵀ, 0) in bf16 with f32
accumulation: the Python twin of examples/gemm_scale_relu.mlir (same IR, op
for op).  A is M×K, B is N×K, C is M×N, all row-major; launch grid
(⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉).  The scaling and the ReLU run on the accumulator
before the store."""

import tawa
import tawa.language as tl


@tawa.kernel
def gemm_scale_relu(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2),
                    C: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index, K: tl.index,
                    alpha: tl.f32,
                    BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 256, BLOCK_K: tl.constexpr = 64):
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
    for k in tl.range(0, K, BLOCK_K):
        a = tl.load(A, (m0, k), (BLOCK_M, BLOCK_K))
        b = tl.load(B, (n0, k), (BLOCK_N, BLOCK_K))
        acc = tl.dot(a, b, acc, trans_b=True)
    relu = tl.maximum(acc * alpha, 0.0)
    tl.store(C, (m0, n0), relu.to(tl.bf16))
