"""C = A · Bᵀ in bf16 with f32 accumulation: the Python twin of
examples/gemm.mlir (same IR, op for op).  A is M×K, B is N×K, C is M×N, all
row-major; one program computes one BLOCK_M×BLOCK_N tile of C.  Launch grid:
(⌈M/BLOCK_M⌉, ⌈N/BLOCK_N⌉).  Ragged edges need no masks: loads outside A or B
read 0 and stores outside C are dropped."""

import tawa
import tawa.language as tl


@tawa.kernel
def gemm(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2), C: tl.tensor_ref(tl.bf16, 2),
         M: tl.index, N: tl.index, K: tl.index,
         BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 256, BLOCK_K: tl.constexpr = 64):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    m0 = pid_m * BLOCK_M
    n0 = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
    for k in tl.range(0, K, BLOCK_K):
        a = tl.load(A, (m0, k), (BLOCK_M, BLOCK_K))
        b = tl.load(B, (n0, k), (BLOCK_N, BLOCK_K))
        acc = tl.dot(a, b, acc, trans_b=True)
    tl.store(C, (m0, n0), acc.to(tl.bf16))
