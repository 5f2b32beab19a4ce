"""A dot whose B operand is computed in registers by two consumer warp groups,
and an atomic add that takes the TMA-store epilogue (docs/passes.md,
"Operands computed in registers" and "The TMA-store epilogue"): each warp group
writes its rows of the bf16 K×N tile to one shared buffer between barriers over
all the consumer threads, both read the whole tile as B, and the f32 product is
added into memory by TMA stores that reduce.  The lowered kernel, run by the
CPU simulator on two CTAs whose programs add into the same rows in shuffled
order, gives the tile program's sums; ptxas assembles it without spills.  A
share whose rows are not the scores' is one located error
(tests/filecheck/transforms/lower/lower_tile_a_prologue.mlir: a B tile that
cannot be staged)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from test_dot_free import lowered

import tawa
import tawa.language as tl
from tawa.backend.ptx.printer import print_ptx
from tawa.transforms.hopper_pipeline import HopperPipelinePass

BF16 = ml_dtypes.bfloat16


@tawa.kernel
def transposed_share(K: tl.tensor_ref(tl.bf16, 2), Q: tl.tensor_ref(tl.bf16, 2), Out: tl.tensor_ref(tl.f32, 2),
                     n: tl.index, KEYS: tl.constexpr = 128, D: tl.constexpr = 128, BLOCK: tl.constexpr = 64):
    """Out += Kᵀ·(K·Qᵀ) per key block (attention backward's dQᵀ share, dSᵀ = K·Qᵀ):
    Out is [D, n], every program adds into all of it."""
    k = tl.load(K, (tl.program_id(0) * KEYS, 0), (KEYS, D))
    for m0 in tl.range(0, n, BLOCK):
        q = tl.load(Q, (m0, 0), (BLOCK, D))
        st = (tl.dot(k, q, trans_b=True) * 0.125).to(tl.bf16)  # [keys, queries]: the warp groups' rows
        tl.atomic_add(Out, (0, m0), tl.dot(k, st, trans_a=True))


def inputs(keys: int, n: int, D: int, seed: int):
    rng = np.random.default_rng(seed)
    K = rng.standard_normal((keys, D)).astype(np.float32).astype(BF16)
    Q = rng.standard_normal((n, D)).astype(np.float32).astype(BF16)
    out = rng.standard_normal((D, n)).astype(np.float32)  # adds into what is there
    return K, Q, out


def test_staged_rhs_and_bulk_adds_match_the_tile_program(seed):
    K, Q, out = inputs(3 * 128 - 20, 150, 128, seed)  # 3 programs, the last ragged; 3 query blocks, the last short
    text = transposed_share.ir()
    grid = (3, 1, 1)
    want, got = out.copy(), out.copy()
    tawa.interpret(text, "transposed_share", grid, K, Q, want, 150)
    module = lowered(text)
    assert "nvgpu.staged_operand" not in str(module) and "add :" in str(module)
    tawa.interpret(module, "transposed_share", grid, K, Q, got, 150, ctas=2, order="shuffled")
    err = np.linalg.norm(got - want) / np.linalg.norm(want - out)
    assert err <= 1e-3, f"relative error {err:.2e}"


@needs_ptxas
def test_staged_rhs_assembles_without_spills(tmp_path):
    module = tawa.parse(transposed_share.ir())
    HopperPipelinePass().apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group" in ptx
    assert "red.relaxed.gpu.global.add.f32" not in ptx
    assert_assembles_without_spills(ptx, tmp_path)


def test_a_share_of_other_rows_than_the_scores_is_a_located_error():
    """64 keys (one warp group's rows) against a product of 128 head-dim rows:
    the accumulators' rows disagree, named at the dot that breaks the rule."""
    module = tawa.parse(transposed_share.ir(KEYS=64))
    with pytest.raises(tawa.TawaError, match=r"test_staged_rhs.py:\d+:\d+: error: tawa-warp-specialize: this dot's "
                                             r"accumulator has 128 rows but the dot at .* has 64"):
        HopperPipelinePass().apply(tawa.context(), module)
