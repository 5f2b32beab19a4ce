"""examples/python/norms.py (softmax, RMSNorm, LayerNorm, residual add +
RMSNorm, SwiGLU) in the CPU interpreter against NumPy in float32, on ragged
shapes with NaN-poisoned outputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

BF16 = ml_dtypes.bfloat16
M, N = 37, 700  # ragged: neither a multiple of the tiles
TOLERANCE = 3e-2  # bf16 outputs of values up to about 4


def rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32).astype(BF16)


def f32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32)


def poisoned(*shape: int) -> np.ndarray:
    return np.full(shape, np.nan, BF16)


def rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(1, keepdims=True) + eps) * w


@pytest.fixture
def norms(example):
    return example("norms")


def test_softmax(norms, seed):
    X = rand(np.random.default_rng(seed), M, N)
    Y = poisoned(M, N)
    norms.softmax.interpret((3,), X, Y, M, N)
    e = np.exp(f32(X) - f32(X).max(1, keepdims=True))
    np.testing.assert_allclose(f32(Y), e / e.sum(1, keepdims=True), atol=1e-3)


def test_rmsnorm(norms, seed):
    rng = np.random.default_rng(seed)
    X, W = rand(rng, M, N), rand(rng, N)
    Y = poisoned(M, N)
    norms.rmsnorm.interpret((3,), X, W, Y, M, N, 1e-6)
    np.testing.assert_allclose(f32(Y), rms(f32(X), f32(W), 1e-6), atol=TOLERANCE, rtol=TOLERANCE)


def test_layernorm(norms, seed):
    rng = np.random.default_rng(seed)
    X, W, B = rand(rng, M, N), rand(rng, N), rand(rng, N)
    Y = poisoned(M, N)
    norms.layernorm.interpret((3,), X, W, B, Y, M, N, 1e-5)
    x = f32(X)
    mu = x.mean(1, keepdims=True)
    ref = (x - mu) / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + 1e-5) * f32(W) + f32(B)
    np.testing.assert_allclose(f32(Y), ref, atol=TOLERANCE, rtol=TOLERANCE)


def test_add_rmsnorm_loops_over_the_row(norms, seed):
    rng = np.random.default_rng(seed)
    X, R, W = rand(rng, M, N), rand(rng, M, N), rand(rng, N)
    Y, S = poisoned(M, N), poisoned(M, N)
    norms.add_rmsnorm.interpret((10,), X, R, W, Y, S, M, N, 1e-6, BLOCK_N=256)  # 3 chunks, the last ragged
    s = f32((f32(X) + f32(R)).astype(BF16))
    np.testing.assert_array_equal(f32(S), s)
    np.testing.assert_allclose(f32(Y), rms(s, f32(W), 1e-6), atol=TOLERANCE, rtol=TOLERANCE)


def test_add_rmsnorm_row_is_the_chunked_kernel_in_one_pass(norms, seed):
    """Rows of one chunk: the one-pass twin gives the chunked kernel's bits."""
    rng = np.random.default_rng(seed)
    X, R, W = rand(rng, M, N), rand(rng, M, N), rand(rng, N)
    outs = {}
    for name, rows in (("add_rmsnorm", 10), ("add_rmsnorm_row", 4)):
        Y, S = poisoned(M, N), poisoned(M, N)
        getattr(norms, name).interpret((-(-M // rows),), X, R, W, Y, S, M, N, 1e-6, BLOCK_M=rows, BLOCK_N=1024)
        outs[name] = (Y, S)
    for a, b in zip(outs["add_rmsnorm"], outs["add_rmsnorm_row"]):
        np.testing.assert_array_equal(f32(a), f32(b))
    np.testing.assert_array_equal(f32(outs["add_rmsnorm_row"][1]), f32((f32(X) + f32(R)).astype(BF16)))


def test_swiglu(norms, seed):
    rng = np.random.default_rng(seed)
    G, U = rand(rng, M, N), rand(rng, M, N)
    Y = poisoned(M, N)
    norms.swiglu.interpret((3, 2), G, U, Y, M, N)
    g = f32(G)
    np.testing.assert_allclose(f32(Y), g / (1 + np.exp(-g)) * f32(U), atol=TOLERANCE, rtol=TOLERANCE)


def test_swiglu_bwd(norms, seed):
    """The gradients of silu(G)·U against NumPy's derivative."""
    rng = np.random.default_rng(seed)
    DY, G, U = rand(rng, M, N), rand(rng, M, N), rand(rng, M, N)
    DG, DU = poisoned(M, N), poisoned(M, N)
    norms.swiglu_bwd.interpret((-(-M // 8), -(-N // 512)), DY, G, U, DG, DU, M, N)
    dy, g, u = f32(DY), f32(G), f32(U)
    s = 1 / (1 + np.exp(-g))
    np.testing.assert_allclose(f32(DU), dy * g * s, atol=TOLERANCE, rtol=TOLERANCE)
    np.testing.assert_allclose(f32(DG), dy * u * (s + g * s * (1 - s)), atol=TOLERANCE, rtol=TOLERANCE)
