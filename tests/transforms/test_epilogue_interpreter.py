"""The fused-epilogue example means what it says on the CPU (the oracle the
GPU test compares against is the same formula)."""

from pathlib import Path

import ml_dtypes
import numpy as np

import tawa

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gemm_scale_relu.mlir"


def test_gemm_scale_relu_on_the_cpu():
    rng = np.random.default_rng()
    M, N, K, alpha = 200, 136, 72, -0.37
    A = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    C = np.full((M, N), np.nan, dtype=ml_dtypes.bfloat16)
    tawa.interpret(EXAMPLE.read_text(), "gemm_scale_relu", (2, 1), A, B, C, M, N, K, alpha)
    ref = np.maximum(alpha * (A.astype(np.float64) @ B.astype(np.float64).T), 0)
    got = C.astype(np.float64)
    assert not np.isnan(got).any()
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-2


def test_gemm_softmax_on_the_cpu():
    rng = np.random.default_rng()
    M, K, s = 200, 72, 0.3
    A = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((256, K)).astype(ml_dtypes.bfloat16)
    C = np.full((M, 256), np.nan, dtype=ml_dtypes.bfloat16)
    text = (EXAMPLE.parent / "gemm_softmax.mlir").read_text()
    tawa.interpret(text, "gemm_softmax", (2,), A, B, C, M, K, s * np.log2(np.e))
    x = s * (A.astype(np.float64) @ B.astype(np.float64).T)
    ref = np.exp(x - x.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    got = C.astype(np.float64)
    assert not np.isnan(got).any()
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-2


def test_gemm_chain_on_the_cpu():
    rng = np.random.default_rng()
    BH, S = 2, 200
    q, k, v = (rng.standard_normal((BH, S, 128)).astype(ml_dtypes.bfloat16) for _ in range(3))
    o = np.full((BH, S, 128), np.nan, dtype=ml_dtypes.bfloat16)
    text = (EXAMPLE.parent / "gemm_chain.mlir").read_text()
    tawa.interpret(text, "gemm_chain", (2, BH), q, k, v, o, S)
    f = lambda x: x.astype(np.float64)  # noqa: E731
    ref = np.einsum("bqk,bkd->bqd", np.einsum("bqd,bkd->bqk", f(q), f(k)), f(v))
    got = f(o)
    assert not np.isnan(got).any()
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-2
