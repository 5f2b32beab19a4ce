"""The 4-D attention kernels on the CTA simulator: grouped-query heads,
strided operands and queries against a longer cache.

examples/attention_fwd.mlir through the whole `tawa-hopper-pipeline`
(persistent, on 2 CTAs that each run several programs; the structured IR
the PTX printer takes, less its scf-to-cf step) reads q, k, v as strided
NumPy views (q a [B, S, H, D] array transposed; k and v the halves of one
packed [B, Sk, 2, Hkv, D] array, as a fused KV projection leaves them) and
writes O into [B, S, H, D] storage; it computes what the tile program
computes on dense copies (the tile program itself is exact on the views),
and both match a float64 reference with causal masks aligned bottom-right.
"""

from __future__ import annotations

from functools import cache

import ml_dtypes
import numpy as np
import pytest
from example_cases import EXAMPLES
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

BF16 = ml_dtypes.bfloat16
SCALE = 0.088


@cache
def source() -> ModuleOp:
    return tawa.parse((EXAMPLES / "attention_fwd.mlir").read_text(), "examples/attention_fwd.mlir")


@cache
def lowered() -> ModuleOp:
    module = source().clone()
    pipeline, ctx = HopperPipelinePass(prepare=False), tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for p in [*pipeline.planned_steps(module), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    return module


def operands(rng: np.random.Generator, B: int, H: int, Hkv: int, S: int, Sk: int):
    """Strided q [B, H, S, D], k, v [B, Hkv, Sk, D] and O [B, H, S, D] (NaN)."""
    q = rng.standard_normal((B, S, H, 128)).astype(BF16).transpose(0, 2, 1, 3)
    kv = rng.standard_normal((B, Sk, 2, Hkv, 128)).astype(BF16).transpose(2, 0, 3, 1, 4)
    o = np.full((B, S, H, 128), np.nan, BF16).transpose(0, 2, 1, 3)
    return q, kv[0], kv[1], o


def reference(q, k, v, causal: bool) -> np.ndarray:
    group = q.shape[1] // k.shape[1]
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    k, v = (np.repeat(x, group, axis=1) for x in (k, v))
    s = q @ k.swapaxes(-1, -2) * np.float64(np.float32(SCALE))
    if causal:
        n, m = s.shape[-2:]
        s = np.where(np.tril(np.ones((n, m), bool), m - n), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


def run(module: ModuleOp, kernel: str, q, k, v, o, **options) -> np.ndarray:
    B, H, S, _ = q.shape
    tawa.interpret(module, kernel, (-(-S // 128), H, B), q, k, v, o, S, k.shape[2], np.float32(SCALE),
                   H // k.shape[1], **options)
    return o


def check(kernel: str, B: int, H: int, Hkv: int, S: int, Sk: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    q, k, v, o = operands(rng, B, H, Hkv, S, Sk)
    assert not (q.flags.c_contiguous or k.flags.c_contiguous or o.flags.c_contiguous)
    dense = [np.ascontiguousarray(x) for x in (q, k, v)]
    want = run(source(), kernel, *dense, np.full(q.shape, np.nan, BF16))
    ref = reference(q, k, v, kernel.endswith("causal"))
    assert np.linalg.norm(want.astype(np.float64) - ref) / np.linalg.norm(ref) < 5e-3
    views = run(source(), kernel, q, k, v, o.copy())  # the tile program on the views: exact
    np.testing.assert_array_equal(views.view(np.uint16), want.view(np.uint16))
    got = run(lowered(), kernel, q, k, v, o, schedule=Schedule("random", seed=seed), ctas=2)
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert not np.isnan(g).any(), f"{int(np.isnan(g).sum())} elements of O never written"
    assert np.linalg.norm(g - w) / np.linalg.norm(w) <= 1e-2


@pytest.mark.slow
def test_causal_queries_against_a_longer_cache():
    """2 batches of 2 query heads on 1 key/value head, 70 queries over 200
    keys (the last 70 positions: two key blocks, the second ragged)."""
    check("attention_fwd_causal", 2, 2, 1, 70, 200, seed=1)


@pytest.mark.slow
def test_four_query_heads_per_key_value_head():
    """2 batches of 4 query heads on 1 key/value head, 150 queries and keys
    (two query blocks, the second ragged): 16 programs on 2 CTAs."""
    check("attention_fwd", 2, 4, 1, 150, 150, seed=2)
