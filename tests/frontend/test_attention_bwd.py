"""examples/python/attention_bwd.py in the CPU interpreter against NumPy in
float64: the forward pass with its log-sum-exp, then the backward pass's
three kernels (Delta, dK and dV, dQ) fed with what the kernels before them
wrote, as a training step runs them.  Head dims 64 and 128, causal and not,
ragged lengths (kv_len > q_len: the causal mask aligned bottom-right, and
q_len = kv_len), outputs poisoned with NaN."""

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
    """O, LSE (base 2, of the scaled scores), Delta and the gradients, in float64."""
    S, SK = q.shape[2], k.shape[2]
    s = np.einsum("bhqd,bhkd->bhqk", f64(q), f64(k)) * scale
    if causal:  # aligned bottom-right: query i sees keys j <= i + SK - S
        s = np.where(np.triu(np.ones((S, SK), bool), SK - S + 1), -np.inf, s)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    lsum = e.sum(-1, keepdims=True)
    p = e / lsum
    o = p @ f64(v)
    delta = (f64(do) * o).sum(-1)
    dp = f64(do) @ f64(v).swapaxes(-1, -2)
    ds = p * (dp - delta[..., None])
    return {
        "O": o,
        "LSE": (m[..., 0] + np.log(lsum[..., 0])) / math.log(2),
        "Delta": delta,
        "dQ": ds @ f64(k) * scale,
        "dK": ds.swapaxes(-1, -2) @ f64(q) * scale,
        "dV": p.swapaxes(-1, -2) @ f64(do),
    }


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def training_step(bwd, q, k, v, do, scale: float, causal: bool, D: int) -> dict[str, np.ndarray]:
    """The four kernels in order, each reading what the previous ones wrote."""
    S, SK = q.shape[2], k.shape[2]
    out = {
        "O": np.full(q.shape, np.nan, BF16), "LSE": np.full((B, H, S), np.nan, np.float32),
        "Delta": np.full((B, H, S), np.nan, np.float32), "dQ": np.full(q.shape, np.nan, BF16),
        "dK": np.full(k.shape, np.nan, BF16), "dV": np.full(v.shape, np.nan, BF16),
    }
    fwd = bwd.attention_fwd_lse
    fwd.interpret((cdiv(S, 128), H, B), q, k, v, out["O"], out["LSE"], S, SK, scale, 1, HEAD_DIM=D, CAUSAL=causal)
    bwd.attention_bwd_preprocess.interpret((cdiv(S, 64), H, B), out["O"], do, out["Delta"], S, HEAD_DIM=D)
    bwd.attention_bwd_dkdv.interpret((cdiv(SK, 128), H, B), q, k, v, do, out["LSE"], out["Delta"], out["dK"],
                                     out["dV"], S, SK, scale, HEAD_DIM=D, CAUSAL=causal)
    bwd.attention_bwd_dq.interpret((cdiv(S, 128), H, B), q, k, v, do, out["LSE"], out["Delta"], out["dQ"],
                                   S, SK, scale, HEAD_DIM=D, CAUSAL=causal)
    return out


@pytest.fixture
def bwd(example):
    return example("attention_bwd")


def _step_case(D: int, causal: bool, S: int, SK: int):
    fast = D == 64 and S == SK  # the fast tier's cases; the rest take more than a second each
    return pytest.param(D, causal, S, SK, marks=[] if fast else [pytest.mark.slow],
                        id=f"d{D}-{'causal' if causal else 'full'}-{S}x{SK}")


@pytest.mark.parametrize("D, causal, S, SK", [_step_case(D, causal, S, SK) for D in (64, 128) for causal in (False, True)
                                              for S, SK in ((150, 150), (200, 260))])
def test_training_step_matches_numpy(bwd, seed, D, causal, S, SK):
    rng = np.random.default_rng(seed)
    q, do = rand(rng, B, H, S, D), rand(rng, B, H, S, D)
    k, v = rand(rng, B, H, SK, D), rand(rng, B, H, SK, D)
    scale = 1 / math.sqrt(D)
    got = training_step(bwd, q, k, v, do, scale, causal, D)
    # The reference's Delta and gradients from the kernel's bf16 O (what dS subtracts).
    want = reference(q, k, v, do, scale, causal)
    for name, value in got.items():
        assert not np.isnan(value.astype(np.float32)).any(), f"{name}: elements never written"
    assert rel(got["O"], want["O"]) < TOL
    # LSE is f32 from bf16 inputs: the only error is f32 rounding.
    np.testing.assert_allclose(got["LSE"], want["LSE"], rtol=1e-5, atol=1e-5)
    delta = (f64(do) * f64(got["O"])).sum(-1)
    np.testing.assert_allclose(got["Delta"], delta, rtol=1e-5, atol=1e-4)
    for name in ("dQ", "dK", "dV"):
        assert rel(got[name], want[name]) < TOL, f"{name}: relative error {rel(got[name], want[name]):.2e}"


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
    bwd.attention_bwd_dkdv.interpret((cdiv(SK, 64), H, B), q, k, v, do, lse, delta, dk, dv, S, SK, scale,
                                     BLOCK_M=128, BLOCK_N=64, HEAD_DIM=D, CAUSAL=True)
    bwd.attention_bwd_dq.interpret((cdiv(S, 64), H, B), q, k, v, do, lse, delta, dq, S, SK, scale,
                                   BLOCK_M=64, BLOCK_N=128, HEAD_DIM=D, CAUSAL=True)
    for name, got in (("dK", dk), ("dV", dv), ("dQ", dq)):
        assert rel(got, want[name]) < TOL, name
