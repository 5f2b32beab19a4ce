"""examples/python/attention_bwd.py in the CPU interpreter against NumPy in
float64: the forward pass with its log-sum-exp, then the backward pass's
kernels (Delta, dK and dV, dQ) fed with what the kernels before them
wrote, as a training step runs them.  Head dims 64 and 128, causal and not,
ragged lengths (kv_len > q_len: the causal mask aligned bottom-right, and
q_len = kv_len), outputs poisoned with NaN.  Both ways to dQ: the separate
dQ kernel, and the dK/dV kernel's atomic adds into a zeroed f32 dQᵀ that
attention_bwd_dq_convert transposes, scales and rounds.  Grouped-query heads (4 query
heads a key/value head) read K and V in place and sum dK and dV over the
group in the dK/dV program."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

BF16 = ml_dtypes.bfloat16
B, H = 1, 2
TOL = 1e-2  # relative Frobenius error: bf16 inputs and outputs, P and dS rounded to bf16 for the dots


def rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32).astype(BF16)


def f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


def rel(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.linalg.norm(f64(got) - want) / np.linalg.norm(want))


def reference(q, k, v, do, scale: float, causal: bool) -> dict[str, np.ndarray]:
    """O, LSE (base 2, of the scaled scores), Delta and the gradients, in float64;
    k and v may have fewer heads (a group of query heads each)."""
    S, SK = q.shape[2], k.shape[2]
    group = q.shape[1] // k.shape[1]
    k, v = (np.repeat(f64(t), group, axis=1) for t in (k, v))
    s = np.einsum("bhqd,bhkd->bhqk", f64(q), k) * scale
    if causal:  # aligned bottom-right: query i sees keys j <= i + SK - S
        s = np.where(np.triu(np.ones((S, SK), bool), SK - S + 1), -np.inf, s)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    lsum = e.sum(-1, keepdims=True)
    p = e / lsum
    o = p @ v
    delta = (f64(do) * o).sum(-1)
    dp = f64(do) @ v.swapaxes(-1, -2)
    ds = p * (dp - delta[..., None])

    def summed(g: np.ndarray) -> np.ndarray:  # a key/value head's gradient: its query heads' sum
        return g.reshape(g.shape[0], -1, group, *g.shape[2:]).sum(2)

    return {
        "O": o,
        "LSE": (m[..., 0] + np.log(lsum[..., 0])) / math.log(2),
        "Delta": delta,
        "dQ": ds @ k * scale,
        "dK": summed(ds.swapaxes(-1, -2) @ f64(q) * scale),
        "dV": summed(p.swapaxes(-1, -2) @ f64(do)),
    }


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def training_step(bwd, q, k, v, do, scale: float, causal: bool, D: int, path: str = "kernel",
                  key_block: int = 128, heads: int = H) -> dict[str, np.ndarray]:
    """The kernels in order, each reading what the previous ones wrote; dQ by the
    separate kernel (`path` "kernel") or by the dK/dV kernel's atomic adds ("atomic")."""
    S, SK, HKV = q.shape[2], k.shape[2], k.shape[1]
    group = heads // HKV
    out = {
        "O": np.full(q.shape, np.nan, BF16), "LSE": np.full((B, heads, S), np.nan, np.float32),
        "Delta": np.full((B, heads, S), np.nan, np.float32), "dQ": np.full(q.shape, np.nan, BF16),
        "dK": np.full(k.shape, np.nan, BF16), "dV": np.full(v.shape, np.nan, BF16),
    }
    fwd = bwd.attention_fwd_lse
    fwd.interpret((cdiv(S, 128), heads, B), q, k, v, out["O"], out["LSE"], S, SK, scale, group, HEAD_DIM=D,
                  CAUSAL=causal)
    bwd.attention_bwd_preprocess.interpret((cdiv(S, 64), heads, B), out["O"], do, out["Delta"], S, HEAD_DIM=D)
    saved = (q, k, v, do, out["LSE"], out["Delta"], out["dK"], out["dV"])
    if path == "kernel":
        bwd.attention_bwd_dkdv.interpret((cdiv(SK, key_block), HKV, B), *saved, S, SK, scale, group,
                                         BLOCK_N=key_block, HEAD_DIM=D, CAUSAL=causal)
        bwd.attention_bwd_dq.interpret((cdiv(S, 128), heads, B), q, k, v, do, out["LSE"], out["Delta"], out["dQ"],
                                       S, SK, scale, group, HEAD_DIM=D, CAUSAL=causal)
    else:
        assert path == "atomic"
        acc = np.zeros((B, heads, D, S), np.float32)  # dQᵀ's sum
        bwd.attention_bwd_dkdvdq.interpret((cdiv(SK, key_block), HKV, B), *saved, acc, S, SK, scale, group,
                                           BLOCK_N=key_block, HEAD_DIM=D, CAUSAL=causal)
        bwd.attention_bwd_dq_convert.interpret((cdiv(S, 64), heads, B), acc, out["dQ"], scale, HEAD_DIM=D)
    return out


@pytest.fixture
def bwd(example):
    return example("attention_bwd")


def _step_case(D: int, causal: bool, S: int, SK: int):
    fast = D == 64 and S == SK  # the fast tier's cases; the rest take more than a second each
    return pytest.param(D, causal, S, SK, marks=[] if fast else [pytest.mark.slow],
                        id=f"d{D}-{'causal' if causal else 'full'}-{S}x{SK}")


def check_step(got: dict[str, np.ndarray], want: dict[str, np.ndarray], do: np.ndarray) -> None:
    for name, value in got.items():
        assert not np.isnan(value.astype(np.float32)).any(), f"{name}: elements never written"
    assert rel(got["O"], want["O"]) < TOL
    # LSE is f32 from bf16 inputs: the only error is f32 rounding.
    np.testing.assert_allclose(got["LSE"], want["LSE"], rtol=1e-5, atol=1e-5)
    delta = (f64(do) * f64(got["O"])).sum(-1)
    np.testing.assert_allclose(got["Delta"], delta, rtol=1e-5, atol=1e-4)
    for name in ("dQ", "dK", "dV"):
        assert rel(got[name], want[name]) < TOL, f"{name}: relative error {rel(got[name], want[name]):.2e}"


@pytest.mark.parametrize("D, causal, S, SK", [_step_case(D, causal, S, SK) for D in (64, 128) for causal in (False, True)
                                              for S, SK in ((150, 150), (200, 260))])
def test_training_step_matches_numpy(bwd, seed, D, causal, S, SK):
    rng = np.random.default_rng(seed)
    q, do = rand(rng, B, H, S, D), rand(rng, B, H, S, D)
    k, v = rand(rng, B, H, SK, D), rand(rng, B, H, SK, D)
    scale = 1 / math.sqrt(D)
    check_step(training_step(bwd, q, k, v, do, scale, causal, D), reference(q, k, v, do, scale, causal), do)


def _atomic_case(D: int, causal: bool, S: int, SK: int):
    fast = D == 64 and S == SK and causal
    return pytest.param(D, causal, S, SK, marks=[] if fast else [pytest.mark.slow],
                        id=f"d{D}-{'causal' if causal else 'full'}-{S}x{SK}")


@pytest.mark.parametrize("D, causal, S, SK", [_atomic_case(D, causal, S, SK) for D in (64, 128)
                                              for causal in (False, True) for S, SK in ((150, 150), (130, 200))])
def test_atomic_dq_matches_numpy(bwd, seed, D, causal, S, SK):
    """dQᵀ summed by the dK/dV kernel's atomic adds (key blocks of the head dim's
    size), transposed by the conversion, gives the gradients."""
    rng = np.random.default_rng(seed)
    q, do = rand(rng, B, H, S, D), rand(rng, B, H, S, D)
    k, v = rand(rng, B, H, SK, D), rand(rng, B, H, SK, D)
    scale = 1 / math.sqrt(D)
    got = training_step(bwd, q, k, v, do, scale, causal, D, path="atomic", key_block=D)
    check_step(got, reference(q, k, v, do, scale, causal), do)


@pytest.mark.parametrize("path, causal", [("kernel", True), pytest.param("kernel", False, marks=pytest.mark.slow),
                                          pytest.param("atomic", True, marks=pytest.mark.slow),
                                          ("atomic", False)])
def test_grouped_query_heads(bwd, seed, path, causal):
    """4 query heads a key/value head: K and V read in place, dK and dV summed over the group."""
    rng = np.random.default_rng(seed)
    S, SK, D, HKV = 100, 130, 64, 1
    assert H // HKV > 1
    q, do = rand(rng, B, H * 2, S, D), rand(rng, B, H * 2, S, D)
    k, v = rand(rng, B, HKV, SK, D), rand(rng, B, HKV, SK, D)
    scale = 1 / math.sqrt(D)
    got = training_step(bwd, q, k, v, do, scale, causal, D, path=path, key_block=64, heads=H * 2)
    check_step(got, reference(q, k, v, do, scale, causal), do)


@pytest.mark.parametrize("causal", [pytest.param(False, marks=pytest.mark.slow), True], ids=["full", "causal"])
def test_forward_is_attention_fwd_bit_for_bit(bwd, example, seed, causal):
    """attention_fwd_lse computes O with examples/python/attention_fwd.py's math in its order."""
    rng = np.random.default_rng(seed)
    S, SK, D = 130, 200, 128
    q, k, v = rand(rng, B, H, S, D), rand(rng, B, H, SK, D), rand(rng, B, H, SK, D)
    mine, theirs = np.full(q.shape, np.nan, BF16), np.full(q.shape, np.nan, BF16)
    lse = np.full((B, H, S), np.nan, np.float32)
    scale = 1 / math.sqrt(D)
    bwd.attention_fwd_lse.interpret((2, H, B), q, k, v, mine, lse, S, SK, scale, 1, CAUSAL=causal)
    example("attention_fwd").attention_fwd.interpret((2, H, B), q, k, v, theirs, S, SK, scale, 1, CAUSAL=causal)
    np.testing.assert_array_equal(mine.astype(np.float32), theirs.astype(np.float32))


@pytest.mark.slow
def test_block_sizes(bwd, seed):
    """Other tilings give the same gradients: dK/dV over 64-key blocks and 128-query
    blocks, dQ over 64-query blocks and 128-key blocks."""
    rng = np.random.default_rng(seed)
    S, SK, D = 190, 190, 64
    q, do, k, v = (rand(rng, B, H, n, D) for n in (S, S, SK, SK))
    scale = 1 / math.sqrt(D)
    want = reference(q, k, v, do, scale, True)
    lse = want["LSE"].astype(np.float32)
    delta = want["Delta"].astype(np.float32)
    dk, dv, dq = np.full(k.shape, np.nan, BF16), np.full(v.shape, np.nan, BF16), np.full(q.shape, np.nan, BF16)
    bwd.attention_bwd_dkdv.interpret((cdiv(SK, 64), H, B), q, k, v, do, lse, delta, dk, dv, S, SK, scale, 1,
                                     BLOCK_M=128, BLOCK_N=64, HEAD_DIM=D, CAUSAL=True)
    bwd.attention_bwd_dq.interpret((cdiv(S, 64), H, B), q, k, v, do, lse, delta, dq, S, SK, scale, 1,
                                   BLOCK_M=64, BLOCK_N=128, HEAD_DIM=D, CAUSAL=True)
    for name, got in (("dK", dk), ("dV", dv), ("dQ", dq)):
        assert rel(got, want[name]) < TOL, name
