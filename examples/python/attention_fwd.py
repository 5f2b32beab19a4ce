"""FlashAttention-2-style forward pass, O = softmax(Q·Kᵀ·sm_scale)·V: the
Python twin of examples/attention_fwd.mlir (@attention_fwd, and
@attention_fwd_causal with CAUSAL=True).  Q, O are
[batch, heads, q_len, HEAD_DIM] and K, V [batch, heads / group, kv_len,
HEAD_DIM] bf16 (rows contiguous, any other strides): query head h reads
key/value head h // group.  sm_scale > 0 (the row max is taken before the
scaling).  One program computes BLOCK_M query rows of one (batch, head): it
streams BLOCK_N-key blocks of K and V, keeps a running row max m_i and row
sum l_i (online softmax) and rescales the f32 accumulator as the max grows.
Launch grid: (⌈q_len/BLOCK_M⌉, heads, batch).

Key columns past kv_len (zero-filled by the load) are masked to -inf; query
rows past q_len are computed from zero-filled Q rows and dropped by the
store.  The causal variant masks key j for query i when
j > i + kv_len - q_len (aligned bottom-right: kv_len >= q_len) and stops at
the diagonal block."""

import tawa
import tawa.language as tl

LOG2E = 1.44269504


@tawa.kernel
def attention_fwd(Q: tl.tensor_ref(tl.bf16, 4), K: tl.tensor_ref(tl.bf16, 4),
                  V: tl.tensor_ref(tl.bf16, 4), O: tl.tensor_ref(tl.bf16, 4),  # noqa: E741
                  q_len: tl.index, kv_len: tl.index, sm_scale: tl.f32, group: tl.index,
                  BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 128,
                  HEAD_DIM: tl.constexpr = 128, CAUSAL: tl.constexpr = False):
    m0 = tl.program_id(0) * BLOCK_M
    h = tl.program_id(1)
    b = tl.program_id(2)
    hk = h // group
    # Softmax in base 2: exp(x * scale) = exp2(x * scale * log2(e)).
    qk_scale = sm_scale * LOG2E
    # The queries' positions among the keys (bottom-right: the last q_len of them).
    m0_key = m0 + (kv_len - q_len)
    query = (m0_key + tl.arange(0, BLOCK_M))[:, None]
    q = tl.load(Q, (b, h, m0, 0), (BLOCK_M, HEAD_DIM))
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.f32)
    l_i = tl.zeros((BLOCK_M,), tl.f32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.f32)
    hi = tl.minimum(m0_key + BLOCK_M, kv_len) if CAUSAL else kv_len
    for n0 in tl.range(0, hi, BLOCK_N):
        k = tl.load(K, (b, hk, n0, 0), (BLOCK_N, HEAD_DIM))
        v = tl.load(V, (b, hk, n0, 0), (BLOCK_N, HEAD_DIM))
        s = tl.dot(q, k, trans_b=True)
        # Keys past the end of the sequence (zero-filled by the load) are masked out.
        key = (n0 + tl.arange(0, BLOCK_N))[None, :]
        valid = key < kv_len
        if CAUSAL:
            valid = valid & (key <= query)
        s = tl.where(valid, s, float("-inf"))
        # Online softmax: new running max, rescale what was accumulated so far.
        # The row max of the unscaled scores, scaled: qk_scale > 0, so
        # max(s)·qk_scale = max(s·qk_scale), and s·qk_scale - m is one fma per score.
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.bf16), v, acc * alpha[:, None])
        m_i = m_new
    # One division per row, then a product per element.
    o = acc * (1.0 / l_i)[:, None]
    tl.store(O, (b, h, m0, 0), o.to(tl.bf16))
