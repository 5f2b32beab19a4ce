"""The Python examples (examples/python/) against their .mlir twins: the same
interpreter results on random inputs with ragged shapes, and, where the IR is
op-for-op the same (the GEMMs), the same PTX."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tawa
from tawa.ir import parse

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BF16 = ml_dtypes.bfloat16


def rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32).astype(BF16)


def twin(name: str) -> str:
    return (EXAMPLES / f"{name}.mlir").read_text()


def run_both(kernel, mlir_name: str, twin_kernel: str, grid, inputs, out, scalars, **constexprs):
    """Interprets the Python kernel and its twin on the same inputs; returns both outputs."""
    mine, theirs = out.copy(), out.copy()
    kernel.interpret(grid, *inputs, mine, *scalars, **constexprs)
    tawa.interpret(twin(mlir_name), twin_kernel, grid, *inputs, theirs, *scalars)
    return mine, theirs


@pytest.mark.parametrize("name", ["gemm", "gemm_scale_relu", "gemm_bias_gelu"])
def test_gemm_examples_match_twins(example, seed, name):
    kernel = getattr(example(name), name)
    rng = np.random.default_rng(seed)
    M, N, K = 130, 200, 72  # ragged in every dimension
    A, B, bias = rand(rng, M, K), rand(rng, N, K), rand(rng, N)
    C = np.full((M, N), np.nan, dtype=BF16)
    inputs = [A, B] + ([bias] if name == "gemm_bias_gelu" else [])
    scalars = [M, N, K] + ([0.75] if name == "gemm_scale_relu" else [])
    mine, theirs = run_both(kernel, name, name, (2, 1), inputs, C, scalars)
    # The same math in the same order (the splats of constants may sit elsewhere): the same bits.
    np.testing.assert_array_equal(mine.astype(np.float32), theirs.astype(np.float32))
    ref = A.astype(np.float32) @ B.astype(np.float32).T
    if name == "gemm_scale_relu":
        ref = np.maximum(0.75 * ref, 0)
    if name == "gemm_bias_gelu":
        x = ref + bias.astype(np.float32)
        ref = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(mine.astype(np.float32), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_twin(example, seed, causal):
    kernel = example("attention_fwd").attention_fwd
    rng = np.random.default_rng(seed)
    B, H, HKV, S, SK, D = 1, 2, 1, 130, 200, 128  # two query heads on one key/value head, a longer cache
    q = rand(rng, B, H, S, D)
    k, v = (rand(rng, B, HKV, SK, D) for _ in range(2))
    o = np.full((B, H, S, D), np.nan, dtype=BF16)
    scale = 1 / math.sqrt(D)
    name = "attention_fwd_causal" if causal else "attention_fwd"
    mine, theirs = run_both(kernel, "attention_fwd", name, (2, H, B), [q, k, v], o, [S, SK, scale, H // HKV],
                            CAUSAL=causal)
    assert not np.isnan(mine.astype(np.float32)).any()
    # The same math in another op order (splats placed at their use): the same bits.
    np.testing.assert_array_equal(mine.astype(np.float32), theirs.astype(np.float32))
    s = np.einsum("bhqd,bkd->bhqk", q.astype(np.float32), k[:, 0].astype(np.float32)) * scale
    if causal:  # aligned bottom-right: query i sees keys j <= i + SK - S
        s = np.where(np.triu(np.ones((S, SK), bool), SK - S + 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = np.einsum("bhqk,bkd->bhqd", p / p.sum(-1, keepdims=True), v[:, 0].astype(np.float32))
    err = np.linalg.norm(mine.astype(np.float32) - ref) / np.linalg.norm(ref)
    assert err < 1e-2


@pytest.mark.parametrize("name", ["gemm", pytest.param("gemm_scale_relu", marks=pytest.mark.slow)])
def test_gemm_examples_give_the_twins_ptx(example, name):
    kernel = getattr(example(name), name)
    compiled = kernel.compile()
    assert compiled.ptx == tawa.compile(twin(name), name).ptx
    assert kernel.compile() is compiled  # kernel[grid](...) launches reuse it


def test_specializations_are_cached_per_constexpr_tuple(example):
    gemm = example("gemm").gemm
    assert gemm.specialize() is gemm.specialize(BLOCK_M=128, BLOCK_N=256)
    small = gemm.ir(BLOCK_N=128)
    assert "tensor<128x128xf32>" in small and "tensor<128x256xf32>" not in small
    assert gemm.specialize(BLOCK_N=128) is not gemm.specialize()
    parse(small)  # the text is what tawa-opt parses


def test_ops_carry_python_locations(example):
    module = example("gemm").gemm.module()
    dot = next(op for op in module.walk() if op.name == "tile.dot")
    loc = dot.location
    path = str(EXAMPLES / "python" / "gemm.py")
    line = next(i for i, ln in enumerate(open(path), 1) if "tl.dot(" in ln)
    assert (loc.filename.data, loc.line.data) == (path, line)
