"""A GEMM whose B is stored in pages (the block table of paged attention,
on a GEMM): C = A · Bᵀ, where the BLOCK_N x BLOCK_K tile of B at column
block j and K block kb lives in Pool at row block Pages[j, kb].  The kernel
reads the page of every K step (`tl.load` without a shape: one i32) and
the producer warp group places that step's TMA load with it.

A is M x K, Pool is (pages · BLOCK_N) x BLOCK_K, Pages is ⌈N/BLOCK_N⌉ x
⌈K/BLOCK_K⌉ (i32), C is M x N (bf16).  Launch grid: (⌈M/BLOCK_M⌉,
⌈N/BLOCK_N⌉).  Pages may be shared and come in any order; a page outside
the pool reads zeros."""

import tawa
import tawa.language as tl


@tawa.kernel
def paged_gemm(A: tl.tensor_ref(tl.bf16, 2), Pool: tl.tensor_ref(tl.bf16, 2), Pages: tl.tensor_ref(tl.i32, 2),
               C: tl.tensor_ref(tl.bf16, 2), K: tl.index,
               BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 128, BLOCK_K: tl.constexpr = 64):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
    for k in tl.range(0, K, BLOCK_K):
        page = tl.load(Pages, (pid_n, k // BLOCK_K)).to(tl.index)
        a = tl.load(A, (pid_m * BLOCK_M, k), (BLOCK_M, BLOCK_K))
        b = tl.load(Pool, (page * BLOCK_N, 0), (BLOCK_N, BLOCK_K))
        acc = tl.dot(a, b, acc, trans_b=True)
    tl.store(C, (pid_m * BLOCK_M, pid_n * BLOCK_N), acc.to(tl.bf16))
