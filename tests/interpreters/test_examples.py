"""The example kernels on the CPU interpreter against float64 NumPy.

Error measure: relative Frobenius error ‖out − ref‖_F / ‖ref‖_F, where `ref`
is computed in float64 from the very inputs the kernel got (already rounded to
bf16), so it measures the kernel's own arithmetic.  The bounds asserted here
(docs/interpreter.md explains them):

- GEMM, bf16 in/out, f32 accumulation: rounding C to bf16 alone is at most
  u = 2⁻⁸ ≈ 3.9e-3 relative per element; f32 accumulation adds ~1e-6.
  Asserted ≤ 4e-3; observed ≈ 1.7e-3.  f16: u = 2⁻¹¹ (asserted ≤ 5e-4);
  f8E4M3FN: u = 2⁻⁴ (asserted ≤ 6.5e-2).
- attention forward, bf16 in/out: P is rounded to bf16 before P·V and O to
  bf16 at the end.  Asserted ≤ 5e-3 (the GPU tests allow 1e-2);
  observed ≈ 2e-3.
"""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.rewriter import Rewriter

import tawa

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BF16 = ml_dtypes.bfloat16


def rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


def randn(rng: np.random.Generator, shape: tuple[int, ...], dtype) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


# --------------------------------------------------------------------------- GEMM

GEMM_TEXT = (EXAMPLES / "gemm.mlir").read_text()
GEMM_TILE = (128, 256)  # the example's tile of C; K steps by 64


@pytest.fixture(scope="module")
def gemm() -> ModuleOp:
    return tawa.parse(GEMM_TEXT, "examples/gemm.mlir")


def run_gemm(module: ModuleOp, rng: np.random.Generator, m: int, n: int, k: int, dtype):
    a = randn(rng, (m, k), dtype)
    b = randn(rng, (n, k), dtype)
    c = np.full((m, n), np.nan, dtype=dtype)  # poisoned: every element must be written
    grid = (math.ceil(m / GEMM_TILE[0]), math.ceil(n / GEMM_TILE[1]))
    tawa.interpret(module, "gemm", grid, a, b, c, m, n, k)
    assert not np.isnan(c.astype(np.float32)).any(), "some elements of C were not written"
    return c, a.astype(np.float64) @ b.astype(np.float64).T


@pytest.mark.parametrize(
    "m, n, k",
    [
        (128, 256, 64),  # one tile, one K-tile
        (256, 512, 128),  # multiples of the tile, 2 K-tiles
        (200, 136, 72),  # ragged M, N; 2 K-tiles, the last 8 wide
        (130, 260, 320),  # ragged M, N; 5 full K-tiles
        (77, 300, 290),  # ragged everything; 5 K-tiles, the last 34 wide
        (64, 100, 40),  # smaller than one tile in every dimension
    ],
)
def test_gemm_bf16(gemm: ModuleOp, rng: np.random.Generator, m: int, n: int, k: int):
    c, ref = run_gemm(gemm, rng, m, n, k, BF16)
    assert c.dtype == BF16
    assert rel_error(c, ref) <= 4e-3


@pytest.mark.parametrize(
    "dtype, mlir_type, bound",
    [(np.float16, "f16", 5e-4), (ml_dtypes.float8_e4m3fn, "f8E4M3FN", 6.5e-2)],
)
def test_gemm_other_formats(rng: np.random.Generator, dtype, mlir_type: str, bound: float):
    # The same kernel with every bf16 (operands and C) replaced by another format.
    module = tawa.parse(GEMM_TEXT.replace("bf16", mlir_type))
    c, ref = run_gemm(module, rng, 200, 136, 72, dtype)
    assert c.dtype == dtype
    assert rel_error(c, ref) <= bound


def test_gemm_writes_only_its_view(gemm: ModuleOp, rng: np.random.Generator):
    """Operands that are strided views of larger buffers: loads read inside
    the view only (zero fill past its edges), stores write inside it only."""
    m, n, k = 200, 136, 72
    big_a = np.full((m + 5, k + 9), 1e4, dtype=BF16)
    big_b = np.full((n + 3, 2 * k + 7), 1e4, dtype=BF16)
    big_c = np.full((m + 60, n + 130), 7.0, dtype=BF16)
    a, b, c = big_a[2 : m + 2, 4 : k + 4], big_b[1 : n + 1, : 2 * k : 2], big_c[50 : m + 50, 10 : n + 10]
    a[...] = randn(rng, (m, k), BF16)
    b[...] = randn(rng, (n, k), BF16)
    tawa.interpret(gemm, "gemm", (2, 1), a, b, c, m, n, k)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert rel_error(c, ref) <= 4e-3
    outside = np.ones(big_c.shape, dtype=bool)
    outside[50 : m + 50, 10 : n + 10] = False
    assert (big_c[outside].astype(np.float32) == 7.0).all()


def test_gemm_grid_too_small_leaves_tiles_unwritten(gemm: ModuleOp, rng: np.random.Generator):
    m, n, k = 256, 256, 64
    a, b = randn(rng, (m, k), BF16), randn(rng, (n, k), BF16)
    c = np.full((m, n), np.nan, dtype=BF16)
    tawa.interpret(gemm, "gemm", (1,), a, b, c, m, n, k)  # grid axis 1 defaults to 1
    written = ~np.isnan(c.astype(np.float32))
    assert written[:128].all() and not written[128:].any()


# --------------------------------------------------------------------------- attention

ATTENTION_TEXT = (EXAMPLES / "attention_fwd.mlir").read_text()
BLOCK_M = 128  # query rows per program

# The example is written for head dim 128.  Its head-dim-64 variant is derived
# here rather than kept as a second file: exactly the values below, all tiles
# whose last dimension is the head dimension (Q, K, V tiles, the output
# accumulator and what is computed from it), get last dimension 64; every other
# 128 (the 128-row query block, the 128-key block, the score tiles, the loop
# step) is left alone.  Re-parsing the printed result verifies it, so a value
# missed or wrongly changed here fails the verifier (dot shapes, loop-carried
# and yielded types must agree) instead of passing silently.
HEAD_DIM_VALUES = frozenset(
    {"q", "k", "v", "acc_init", "acc_prev", "acc_scaled", "acc_new", "acc", "alpha_b", "l_b", "o", "o_bf16"}
)


def with_head_dim(text: str, d: int) -> ModuleOp:
    module = tawa.parse(text, "examples/attention_fwd.mlir")
    for kernel in [op for op in module.walk() if isinstance(op, FuncOp)]:
        values = [v for op in kernel.walk() for v in op.results] + [
            a for op in kernel.walk() for r in op.regions for b in r.blocks for a in b.args
        ]
        changed = set()
        for v in values:
            if v.name_hint in HEAD_DIM_VALUES:
                t = v.type
                assert isinstance(t, TensorType) and t.get_shape()[-1] == 128, (v.name_hint, t)
                shape = (*t.get_shape()[:-1], d)
                Rewriter.replace_value_with_new_type(v, TensorType(t.get_element_type(), shape))
                changed.add(v.name_hint)
        assert changed == HEAD_DIM_VALUES, f"@{kernel.sym_name.data}: {HEAD_DIM_VALUES - changed} not found"
        kernel.sym_name = StringAttr(f"{kernel.sym_name.data}_d{d}")
    return tawa.parse(str(module), f"attention_fwd_d{d}")


@pytest.fixture(scope="module")
def attention() -> dict[int, ModuleOp]:
    return {128: tawa.parse(ATTENTION_TEXT, "examples/attention_fwd.mlir"), 64: with_head_dim(ATTENTION_TEXT, 64)}


def attention_reference(q, k, v, scale: float, causal: bool) -> np.ndarray:
    """float64 attention of q [B, H, Sq, D] over k, v [B, Hkv, Sk, D] (query
    head h reads key/value head h / (H / Hkv)); causal aligned bottom-right:
    query i sees the keys j <= i + Sk - Sq."""
    group = q.shape[1] // k.shape[1]
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    k, v = (np.repeat(x, group, axis=1) for x in (k, v))
    s = q @ k.swapaxes(-1, -2) * scale
    if causal:
        sq, sk = s.shape[-2:]
        s = np.where(np.tril(np.ones((sq, sk), dtype=bool), sk - sq), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def run_attention(module: ModuleOp, kernel: str, rng, heads: int, s: int, d: int, causal: bool,
                  kv_heads: int = 1, kv_len: int | None = None, batch: int = 1):
    kv_len = s if kv_len is None else kv_len
    q = randn(rng, (batch, heads, s, d), BF16)
    k, v = (randn(rng, (batch, kv_heads, kv_len, d), BF16) for _ in range(2))
    o = np.full(q.shape, np.nan, dtype=BF16)
    scale = 1.0 / math.sqrt(d)
    tawa.interpret(module, kernel, (math.ceil(s / BLOCK_M), heads, batch), q, k, v, o, s, kv_len, scale,
                   heads // kv_heads)
    return o, attention_reference(q, k, v, scale, causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("s", [128, 256, 200, 77])
def test_attention(attention, rng: np.random.Generator, causal: bool, d: int, s: int):
    kernel = "attention_fwd_causal" if causal else "attention_fwd"
    if d != 128:
        kernel += f"_d{d}"
    o, ref = run_attention(attention[d], kernel, rng, 2, s, d, causal)  # two query heads share k, v
    assert not np.isnan(o.astype(np.float32)).any()
    assert rel_error(o, ref) <= 5e-3


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(("s", "kv_len", "heads", "kv_heads", "batch"),
                         [(70, 200, 4, 1, 1), (1, 130, 2, 2, 2), (130, 131, 2, 1, 1),
                          pytest.param(150, 150, 4, 2, 2, marks=pytest.mark.slow)])
def test_attention_queries_against_a_longer_cache(attention, rng: np.random.Generator, causal: bool, s: int,
                                                 kv_len: int, heads: int, kv_heads: int, batch: int):
    """q_len < kv_len (prefill against a cache), grouped heads and batches:
    causal aligns the queries with the last keys (bottom-right)."""
    kernel = "attention_fwd_causal" if causal else "attention_fwd"
    o, ref = run_attention(attention[128], kernel, rng, heads, s, 128, causal, kv_heads, kv_len, batch)
    assert not np.isnan(o.astype(np.float32)).any()
    assert rel_error(o, ref) <= 5e-3


def test_attention_d128_kernel_on_d64_arrays(attention, rng: np.random.Generator):
    """Zero-filled loads and dropped stores make the head-dim-128 kernel exact
    on narrower heads: the extra Q·Kᵀ terms are 0 and the extra O columns are
    dropped."""
    o, ref = run_attention(attention[128], "attention_fwd_causal", rng, 3, 150, 64, True)
    assert rel_error(o, ref) <= 5e-3


def test_head_dim_variant_changes_only_head_dim_tiles(attention):
    text = str(attention[64])
    assert "tensor<128x64xbf16>" in text and "tensor<128x64xf32>" in text
    # The score tiles stay 128x128 (query block x key block).
    assert "tensor<128x128xbf16>" in text and "tensor<128x128xf32>" in text
    assert "tensor<128x128xbf16>, tensor<128x64xbf16> -> tensor<128x64xf32>" in text  # P·V
    assert "tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>" in text  # Q·Kᵀ
