"""Attention over a paged key/value cache (vLLM's layout): O =
softmax(Q·Kᵀ·sm_scale)·V for each sequence of a batch, whose keys and
values live in pages of BLOCK_N rows scattered over a pool.  The block
table gives sequence b's pages in order (BlockTable[b, j]: the page of its
keys [j·BLOCK_N, (j + 1)·BLOCK_N)), SeqLens[b] its length.  Both are read by
the kernel (`tl.load` without a shape): the producer warp group reads each
step's page to place its TMA loads of K and V, the consumers read the
sequence's length to mask the keys past it.

Q, O are [batch, heads, q_len, HEAD_DIM], KCache and VCache [pages,
heads / group, BLOCK_N, HEAD_DIM] bf16, BlockTable [batch, ⌈kv_len/BLOCK_N⌉]
and SeqLens [batch] i32, with 1 <= SeqLens[b] <= kv_len.  Every program
loops over kv_len keys (the longest sequence), so the loop's trip count does
not come from memory (the protocol proof derives trip counts from sizes and
program ids): a shorter sequence's blocks past its end are masked out, and
table entries there may be anything (a page outside the pool reads zeros).
Launch grid: (⌈q_len/BLOCK_M⌉, heads, batch).

With CAUSAL=True query i of a sequence of length L sees keys j <= i + L -
q_len (aligned bottom-right, as in attention_fwd.py: L >= q_len): the mask
does it, every program still looping over kv_len keys (stopping at the
diagonal would make the trip count depend on L, read from memory)."""

import tawa
import tawa.language as tl

LOG2E = 1.44269504


@tawa.kernel
def paged_attention(Q: tl.tensor_ref(tl.bf16, 4), KCache: tl.tensor_ref(tl.bf16, 4),
                    VCache: tl.tensor_ref(tl.bf16, 4), BlockTable: tl.tensor_ref(tl.i32, 2),
                    SeqLens: tl.tensor_ref(tl.i32, 1), O: tl.tensor_ref(tl.bf16, 4),  # noqa: E741
                    q_len: tl.index, kv_len: tl.index, sm_scale: tl.f32, group: tl.index,
                    BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 128, HEAD_DIM: tl.constexpr = 128,
                    CAUSAL: tl.constexpr = False):
    m0 = tl.program_id(0) * BLOCK_M
    h = tl.program_id(1)
    b = tl.program_id(2)
    hk = h // group
    seq_len = tl.load(SeqLens, (b,)).to(tl.index)
    qk_scale = sm_scale * LOG2E
    # The queries' positions among the sequence's keys (bottom-right: its last q_len).
    query = (m0 + (seq_len - q_len) + tl.arange(0, BLOCK_M))[:, None]
    q = tl.load(Q, (b, h, m0, 0), (BLOCK_M, HEAD_DIM))
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.f32)
    l_i = tl.zeros((BLOCK_M,), tl.f32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.f32)
    for n0 in tl.range(0, kv_len, BLOCK_N):
        page = tl.load(BlockTable, (b, n0 // BLOCK_N)).to(tl.index)
        k = tl.load(KCache, (page, hk, 0, 0), (BLOCK_N, HEAD_DIM))
        v = tl.load(VCache, (page, hk, 0, 0), (BLOCK_N, HEAD_DIM))
        s = tl.dot(q, k, trans_b=True)
        # Keys past this sequence's end are masked out.
        key = (n0 + tl.arange(0, BLOCK_N))[None, :]
        valid = key < seq_len
        if CAUSAL:
            valid = valid & (key <= query)
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.bf16), v, acc * alpha[:, None])
        m_i = m_new
    o = acc * (1.0 / l_i)[:, None]
    tl.store(O, (b, h, m0, 0), o.to(tl.bf16))
