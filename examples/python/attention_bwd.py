"""Attention for training, FlashAttention-2 style, as tile programs: a forward
pass that also writes each query row's log-sum-exp, and the backward pass in
three kernels, with dQ either from a kernel of its own or added atomically
by the dK/dV kernel.

Q, O, dO, dQ are [batch, heads, q_len, HEAD_DIM] and K, V, dK, dV [batch,
kv_heads, kv_len, HEAD_DIM], bf16 (rows contiguous, any other strides), with
`group` = heads / kv_heads query heads per key/value head (grouped-query
attention; 1: multi-head); LSE and Delta are [batch, heads, q_len] f32.
sm_scale > 0.  Causal kernels mask key
j for query i when j > i + kv_len - q_len (aligned bottom-right, kv_len >=
q_len), as examples/python/attention_fwd.py does.

* `attention_fwd_lse`: examples/python/attention_fwd.py's forward pass (the
  same math in the same order) that also stores
  LSE = m + log2(l) per query row, in base 2 and in the units of the scaled
  scores: P = exp2(S·sm_scale·log2(e) − LSE) is the softmax, with no row max
  or sum to recompute.  Grid (⌈q_len/BLOCK_M⌉, heads, batch).
* `attention_bwd_preprocess`: Delta = rowsum(dO ∘ O), the term dS = P ∘ (dP −
  Delta) subtracts (Σⱼ Pᵢⱼ·dPᵢⱼ = rowsum(dO ∘ O)).  No dots.  Grid
  (⌈q_len/BLOCK_M⌉, heads, batch).
* `attention_bwd_dkdv`: one program per block of BLOCK_N keys of a key/value
  head, looping over the query blocks that see it (causal: from the diagonal
  on) of each query head of its group, so dK and dV are the group's sums.
  It works in the transposed frame — Sᵀ = K·Qᵀ, Pᵀ, dPᵀ = V·dOᵀ, dSᵀ — so
  that both products it accumulates, dV += Pᵀ·dO and dK += dSᵀ·Q, take a
  tile computed in registers as their A operand and a loaded tile as B, and
  no tile is transposed.  LSE and Delta are column vectors of that frame.
  Grid (⌈kv_len/BLOCK_N⌉, kv_heads, batch).
* `attention_bwd_dq`: one program per block of BLOCK_M queries, looping over
  the key blocks it sees (causal: up to the diagonal), dQ += dS·K in f32 and
  stored once.  It recomputes S and dP rather than taking dS from the dK/dV
  kernel: no atomics, and every output written by one program.  Grid
  (⌈q_len/BLOCK_M⌉, heads, batch).
* `attention_bwd_dkdvdq`: `attention_bwd_dkdv` that also adds each key
  block's share of dQ, transposed — dQᵀ = Kᵀ·dSᵀ, in the frame's own tiles —
  into dQaccT [batch, heads, HEAD_DIM, q_len] f32, zeroed before, with
  `tl.atomic_add`: no second kernel recomputes S and dP.  The share's rows
  are the head dim, so BLOCK_N must equal HEAD_DIM (every accumulator of a
  kernel has the rows its warp groups own).  Same grid as the dK/dV kernel.
* `attention_bwd_dq_convert`: dQ = sm_scale · dQaccTᵀ in bf16.  Grid
  (⌈q_len/BLOCK_M⌉, heads, batch).

Query rows past q_len read zeros (Q, dO) and an LSE and Delta of 0, so their
dS is 0 and they add nothing to dK and dV; key rows past kv_len are masked
(dQ) or dropped by the store (dK, dV).

They run in the CPU interpreter (`kernel.interpret`) and match NumPy in
float64 (tests/frontend/test_attention_bwd.py).  What the Hopper pipeline
compiles of them: docs/passes.md, "Attention backward".
"""

import tawa
import tawa.language as tl

LOG2E = 1.44269504


@tawa.kernel
def attention_fwd_lse(Q: tl.tensor_ref(tl.bf16, 4), K: tl.tensor_ref(tl.bf16, 4),
                      V: tl.tensor_ref(tl.bf16, 4), O: tl.tensor_ref(tl.bf16, 4),  # noqa: E741
                      LSE: tl.tensor_ref(tl.f32, 3),
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
        key = (n0 + tl.arange(0, BLOCK_N))[None, :]
        valid = key < kv_len
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
    # log2 Σⱼ exp2(sⱼ·qk_scale) = m + log2 Σⱼ exp2(sⱼ·qk_scale − m): what the backward
    # pass subtracts to recompute P.
    tl.store(LSE, (b, h, m0), m_i + tl.log2(l_i))


@tawa.kernel
def attention_bwd_preprocess(O: tl.tensor_ref(tl.bf16, 4), dO: tl.tensor_ref(tl.bf16, 4),  # noqa: E741
                             Delta: tl.tensor_ref(tl.f32, 3), q_len: tl.index,
                             BLOCK_M: tl.constexpr = 64, HEAD_DIM: tl.constexpr = 128):
    m0 = tl.program_id(0) * BLOCK_M
    h = tl.program_id(1)
    b = tl.program_id(2)
    o = tl.load(O, (b, h, m0, 0), (BLOCK_M, HEAD_DIM)).to(tl.f32)
    do = tl.load(dO, (b, h, m0, 0), (BLOCK_M, HEAD_DIM)).to(tl.f32)
    tl.store(Delta, (b, h, m0), tl.sum(o * do, 1))


@tawa.kernel
def attention_bwd_dkdv(Q: tl.tensor_ref(tl.bf16, 4), K: tl.tensor_ref(tl.bf16, 4),
                       V: tl.tensor_ref(tl.bf16, 4), dO: tl.tensor_ref(tl.bf16, 4),
                       LSE: tl.tensor_ref(tl.f32, 3), Delta: tl.tensor_ref(tl.f32, 3),
                       dK: tl.tensor_ref(tl.bf16, 4), dV: tl.tensor_ref(tl.bf16, 4),
                       q_len: tl.index, kv_len: tl.index, sm_scale: tl.f32, group: tl.index,
                       BLOCK_M: tl.constexpr = 64, BLOCK_N: tl.constexpr = 128,
                       HEAD_DIM: tl.constexpr = 128, CAUSAL: tl.constexpr = False):
    n0 = tl.program_id(0) * BLOCK_N
    hk = tl.program_id(1)
    b = tl.program_id(2)
    qk_scale = sm_scale * LOG2E
    shift = kv_len - q_len
    k = tl.load(K, (b, hk, n0, 0), (BLOCK_N, HEAD_DIM))
    v = tl.load(V, (b, hk, n0, 0), (BLOCK_N, HEAD_DIM))
    key = (n0 + tl.arange(0, BLOCK_N))[:, None]
    dk = tl.zeros((BLOCK_N, HEAD_DIM), tl.f32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), tl.f32)
    # Causal: query i sees key n0 from i = n0 − shift on; start at the query block holding
    # it (max before the subtraction: offsets are unsigned).
    lo = (tl.maximum(n0, shift) - shift) // BLOCK_M * BLOCK_M if CAUSAL else 0
    # The group's query heads, each over its query blocks from lo on (none where lo ≥ q_len:
    # a key block no query sees).
    for h in tl.range(hk * group, hk * group + group, 1):
        for m0 in tl.range(lo, q_len, BLOCK_M):
            q = tl.load(Q, (b, h, m0, 0), (BLOCK_M, HEAD_DIM))
            do = tl.load(dO, (b, h, m0, 0), (BLOCK_M, HEAD_DIM))
            lse = tl.load(LSE, (b, h, m0), (BLOCK_M,))
            delta = tl.load(Delta, (b, h, m0), (BLOCK_M,))
            st = tl.dot(k, q, trans_b=True)
            if CAUSAL:
                query = (m0 + shift + tl.arange(0, BLOCK_M))[None, :]
                st = tl.where(key <= query, st, float("-inf"))
            pt = tl.exp2(st * qk_scale - lse[None, :])
            dv = tl.dot(pt.to(tl.bf16), do, dv)
            dpt = tl.dot(v, do, trans_b=True)
            dst = pt * (dpt - delta[None, :])
            dk = tl.dot(dst.to(tl.bf16), q, dk)
    # dS is the gradient of the scaled scores S·sm_scale: dK = sm_scale · dSᵀ·Q.
    tl.store(dK, (b, hk, n0, 0), (dk * sm_scale).to(tl.bf16))
    tl.store(dV, (b, hk, n0, 0), dv.to(tl.bf16))


@tawa.kernel
def attention_bwd_dkdvdq(Q: tl.tensor_ref(tl.bf16, 4), K: tl.tensor_ref(tl.bf16, 4),
                         V: tl.tensor_ref(tl.bf16, 4), dO: tl.tensor_ref(tl.bf16, 4),
                         LSE: tl.tensor_ref(tl.f32, 3), Delta: tl.tensor_ref(tl.f32, 3),
                         dK: tl.tensor_ref(tl.bf16, 4), dV: tl.tensor_ref(tl.bf16, 4),
                         dQaccT: tl.tensor_ref(tl.f32, 4),
                         q_len: tl.index, kv_len: tl.index, sm_scale: tl.f32, group: tl.index,
                         BLOCK_M: tl.constexpr = 64, BLOCK_N: tl.constexpr = 128,
                         HEAD_DIM: tl.constexpr = 128, CAUSAL: tl.constexpr = False):
    n0 = tl.program_id(0) * BLOCK_N
    hk = tl.program_id(1)
    b = tl.program_id(2)
    qk_scale = sm_scale * LOG2E
    shift = kv_len - q_len
    k = tl.load(K, (b, hk, n0, 0), (BLOCK_N, HEAD_DIM))
    v = tl.load(V, (b, hk, n0, 0), (BLOCK_N, HEAD_DIM))
    key = (n0 + tl.arange(0, BLOCK_N))[:, None]
    dk = tl.zeros((BLOCK_N, HEAD_DIM), tl.f32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), tl.f32)
    lo = (tl.maximum(n0, shift) - shift) // BLOCK_M * BLOCK_M if CAUSAL else 0
    for h in tl.range(hk * group, hk * group + group, 1):
        for m0 in tl.range(lo, q_len, BLOCK_M):
            q = tl.load(Q, (b, h, m0, 0), (BLOCK_M, HEAD_DIM))
            do = tl.load(dO, (b, h, m0, 0), (BLOCK_M, HEAD_DIM))
            lse = tl.load(LSE, (b, h, m0), (BLOCK_M,))
            delta = tl.load(Delta, (b, h, m0), (BLOCK_M,))
            st = tl.dot(k, q, trans_b=True)
            if CAUSAL:
                query = (m0 + shift + tl.arange(0, BLOCK_M))[None, :]
                st = tl.where(key <= query, st, float("-inf"))
            pt = tl.exp2(st * qk_scale - lse[None, :])
            dv = tl.dot(pt.to(tl.bf16), do, dv)
            dpt = tl.dot(v, do, trans_b=True)
            ds16 = (pt * (dpt - delta[None, :])).to(tl.bf16)
            dk = tl.dot(ds16, q, dk)
            # This key block's share of dQᵀ = Kᵀ·dSᵀ (unscaled: attention_bwd_dq_convert scales the
            # sum): Kᵀ read transposed from K's slot, dSᵀ from shared memory (tawa-stage-operands), and
            # the add one bulk reduction per chunk (the TMA-store epilogue's).
            tl.atomic_add(dQaccT, (b, h, 0, m0), tl.dot(k, ds16, trans_a=True))
    tl.store(dK, (b, hk, n0, 0), (dk * sm_scale).to(tl.bf16))
    tl.store(dV, (b, hk, n0, 0), dv.to(tl.bf16))


@tawa.kernel
def attention_bwd_dq(Q: tl.tensor_ref(tl.bf16, 4), K: tl.tensor_ref(tl.bf16, 4),
                     V: tl.tensor_ref(tl.bf16, 4), dO: tl.tensor_ref(tl.bf16, 4),
                     LSE: tl.tensor_ref(tl.f32, 3), Delta: tl.tensor_ref(tl.f32, 3),
                     dQ: tl.tensor_ref(tl.bf16, 4),
                     q_len: tl.index, kv_len: tl.index, sm_scale: tl.f32, group: tl.index,
                     BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 128,
                     HEAD_DIM: tl.constexpr = 128, CAUSAL: tl.constexpr = False):
    m0 = tl.program_id(0) * BLOCK_M
    h = tl.program_id(1)
    b = tl.program_id(2)
    hk = h // group
    qk_scale = sm_scale * LOG2E
    m0_key = m0 + (kv_len - q_len)
    query = (m0_key + tl.arange(0, BLOCK_M))[:, None]
    q = tl.load(Q, (b, h, m0, 0), (BLOCK_M, HEAD_DIM))
    do = tl.load(dO, (b, h, m0, 0), (BLOCK_M, HEAD_DIM))
    lse = tl.load(LSE, (b, h, m0), (BLOCK_M,))
    delta = tl.load(Delta, (b, h, m0), (BLOCK_M,))
    dq = tl.zeros((BLOCK_M, HEAD_DIM), tl.f32)
    hi = tl.minimum(m0_key + BLOCK_M, kv_len) if CAUSAL else kv_len
    for n0 in tl.range(0, hi, BLOCK_N):
        k = tl.load(K, (b, hk, n0, 0), (BLOCK_N, HEAD_DIM))
        v = tl.load(V, (b, hk, n0, 0), (BLOCK_N, HEAD_DIM))
        s = tl.dot(q, k, trans_b=True)
        key = (n0 + tl.arange(0, BLOCK_N))[None, :]
        valid = key < kv_len
        if CAUSAL:
            valid = valid & (key <= query)
        s = tl.where(valid, s, float("-inf"))
        p = tl.exp2(s * qk_scale - lse[:, None])
        dp = tl.dot(do, v, trans_b=True)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(tl.bf16), k, dq)
    tl.store(dQ, (b, h, m0, 0), (dq * sm_scale).to(tl.bf16))


@tawa.kernel
def attention_bwd_dq_convert(dQaccT: tl.tensor_ref(tl.f32, 4), dQ: tl.tensor_ref(tl.bf16, 4),
                             sm_scale: tl.f32, BLOCK_M: tl.constexpr = 64, HEAD_DIM: tl.constexpr = 128):
    m0 = tl.program_id(0) * BLOCK_M
    h = tl.program_id(1)
    b = tl.program_id(2)
    dqt = tl.load(dQaccT, (b, h, 0, m0), (HEAD_DIM, BLOCK_M))
    tl.store(dQ, (b, h, m0, 0), (tl.trans(dqt) * sm_scale).to(tl.bf16))
