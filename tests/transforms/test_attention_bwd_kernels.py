"""The kernels of examples/python/attention_bwd.py through `tawa-hopper-pipeline`
(docs/passes.md, "Attention backward"): the forward pass that stores its
log-sum-exp (a row vector of the wgmma accumulators), the preprocessing
Delta = rowsum(dO ∘ O) (no dots: blocked layouts), the dK/dV kernel, the
dQ kernel, the dK/dV kernel that adds dQᵀ = Kᵀ·dSᵀ atomically (its dSᵀ
staged in shared memory by every warp group as the B operand, its adds TMA
bulk reductions) and the conversion of the f32 dQᵀ sum (no dots: a
transpose through shared memory).  Each lowered kernel, run by the CPU simulator on two CTAs over
ragged lengths with NaN-poisoned outputs, gives what its tile program gives
in the interpreter (the oracle, itself checked against NumPy by
tests/frontend/test_attention_bwd.py); ptxas assembles each without spills,
the dK/dV kernel at head dim 128 with 128-key blocks included."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from test_dot_free import lowered

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.torch.kernels import python_example
from tawa.transforms.hopper_pipeline import HopperPipelinePass

BF16 = ml_dtypes.bfloat16
B, H = 1, 2


def bwd():
    """The module of examples/python/attention_bwd.py (loaded once)."""
    return python_example("attention_bwd")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def arguments(name: str, constexprs: dict, S: int, SK: int, rng: np.random.Generator):
    """(grid, arguments with outputs poisoned, indices of the outputs) of kernel `name`."""
    values = getattr(bwd(), name).constexprs(constexprs)
    D = values["HEAD_DIM"]

    def rand(*shape):
        return rng.standard_normal(shape).astype(np.float32).astype(BF16)

    q, do, o = rand(B, H, S, D), rand(B, H, S, D), rand(B, H, S, D)
    k, v = rand(B, H, SK, D), rand(B, H, SK, D)
    # An LSE of the magnitude attention's has (P ≤ 1 where the scores are small), a Delta of any sign.
    lse = (rng.random((B, H, S)) * 2 + math.log2(SK)).astype(np.float32)
    delta = rng.standard_normal((B, H, S)).astype(np.float32)
    scale = np.float32(1 / math.sqrt(D))
    rows = cdiv(S, values.get("BLOCK_M", 0) or 1)
    if name == "attention_fwd_lse":
        outs = [np.full(q.shape, np.nan, BF16), np.full((B, H, S), np.nan, np.float32)]
        return (rows, H, B), [q, k, v, *outs, S, SK, scale, 1], (3, 4)
    if name == "attention_bwd_preprocess":
        return (rows, H, B), [o, do, np.full((B, H, S), np.nan, np.float32), S], (2,)
    if name == "attention_bwd_dq":
        return (rows, H, B), [q, k, v, do, lse, delta, np.full(q.shape, np.nan, BF16), S, SK, scale, 1], (6,)
    if name == "attention_bwd_dq_convert":  # dQᵀ's sum [B, H, D, S]
        acc = rng.standard_normal((B, H, D, S)).astype(np.float32)
        return (rows, H, B), [acc, np.full(q.shape, np.nan, BF16), scale], (1,)
    outs = [np.full(k.shape, np.nan, BF16), np.full(v.shape, np.nan, BF16)]
    if name == "attention_bwd_dkdvdq":  # dQᵀ added into a buffer that holds something already
        acc = rng.standard_normal((B, H, D, S)).astype(np.float32)
        return (cdiv(SK, values["BLOCK_N"]), H, B), [q, k, v, do, lse, delta, *outs, acc, S, SK, scale, 1], (6, 7, 8)
    assert name == "attention_bwd_dkdv"
    return (cdiv(SK, values["BLOCK_N"]), H, B), [q, k, v, do, lse, delta, *outs, S, SK, scale, 1], (6, 7)


def case(name: str, marks=(), **constexprs):
    label = "-".join(f"{k}={v}" for k, v in constexprs.items()) or "defaults"
    return pytest.param(name, constexprs, marks=list(marks), id=f"{name}-{label}")


CASES = [
    case("attention_bwd_preprocess"),
    case("attention_bwd_dq_convert"),
    case("attention_bwd_preprocess", [pytest.mark.slow], HEAD_DIM=64),
    case("attention_fwd_lse", [pytest.mark.slow]),
    case("attention_fwd_lse", [pytest.mark.slow], CAUSAL=True),
    case("attention_bwd_dq", [pytest.mark.slow]),
    case("attention_bwd_dq", [pytest.mark.slow], HEAD_DIM=64, CAUSAL=True),
    case("attention_bwd_dq", [pytest.mark.slow], BLOCK_N=64, CAUSAL=True),
    case("attention_bwd_dkdv", [pytest.mark.slow], HEAD_DIM=64),
    case("attention_bwd_dkdv", [pytest.mark.slow], HEAD_DIM=64, CAUSAL=True),
    case("attention_bwd_dkdv", [pytest.mark.slow], BLOCK_N=64, CAUSAL=True),
    case("attention_bwd_dkdv", [pytest.mark.slow], CAUSAL=True),  # head dim 128, 128-key blocks
    case("attention_bwd_dkdvdq", [pytest.mark.slow], HEAD_DIM=64, BLOCK_N=64, CAUSAL=True),
    case("attention_bwd_dkdvdq", [pytest.mark.slow]),  # head dim 128, 128-key blocks: dSᵀ staged by both warp groups
    case("attention_bwd_dkdvdq", [pytest.mark.slow], CAUSAL=True),
    case("attention_bwd_dq_convert", [pytest.mark.slow], BLOCK_M=32),
]


@pytest.mark.parametrize("name, constexprs", CASES)
def test_lowered_kernel_matches_the_tile_program(name, constexprs, seed):
    # Ragged: 3 query blocks of 64 and 2 of 128, the last short; 2 key blocks of 128, 3 of 64.
    S, SK = 150, 190
    text = getattr(bwd(), name).ir(**constexprs)
    grid, args, outputs = arguments(name, constexprs, S, SK, np.random.default_rng(seed))
    want, got = list(args), list(args)
    for i in outputs:
        want[i], got[i] = args[i].copy(), args[i].copy()
    tawa.interpret(text, name, grid, *want)
    # The atomic kernel's programs add into the same dQ rows: in another order, the same sums.
    order = "shuffled" if name == "attention_bwd_dkdvdq" else "grid"
    tawa.interpret(lowered(text), name, grid, *got, ctas=2, order=order)
    for i in outputs:
        w, g = want[i].astype(np.float64), got[i].astype(np.float64)
        if name == "attention_bwd_dkdvdq" and i == 8:  # what the kernel added to the buffer
            w, g = w - args[i], g - args[i]
        assert not np.isnan(w).any()
        assert not np.isnan(g).any(), f"{name}: {int(np.isnan(g).sum())} output elements never written"
        # wgmma sums K in other chunks than the interpreter's dot, reductions fold in another order.
        err = np.linalg.norm(g - w) / np.linalg.norm(w)
        assert err <= 1e-3, f"{name} output {i}: relative error {err:.2e}"


def seq_major(x: np.ndarray, fill: float = np.nan) -> np.ndarray:
    """[B, H, S, D] `x` as a view of a [B, S, H + 1, D] array (heads of a
    fused projection side by side, one more head, `fill`, beside them): the
    layout of a fused-QKV model's O and dO, whose rows are contiguous."""
    b, h, s, d = x.shape
    wide = np.full((b, s, h + 1, d), fill, x.dtype)
    view = wide[:, :, 1:, :].transpose(0, 2, 1, 3)
    view[...] = x
    assert not view.flags.c_contiguous and view.strides[-1] == x.itemsize
    return view


def test_preprocess_reads_seq_major_o_and_do_in_place(seed):
    """The preprocess addresses O and dO itself, with their strides: on
    seq-major views (what tawa.torch now passes instead of dense copies),
    Delta equals the dense tile program's, and the NaN head beside them is
    never read (it would spread into Delta)."""
    S, SK = 150, 190
    name = "attention_bwd_preprocess"
    text = getattr(bwd(), name).ir()
    grid, args, _ = arguments(name, {}, S, SK, np.random.default_rng(seed))
    want = [*args[:2], args[2].copy(), S]
    tawa.interpret(text, name, grid, *want)
    got = [seq_major(args[0]), seq_major(args[1]), args[2].copy(), S]
    tawa.interpret(lowered(text), name, grid, *got, ctas=2)
    w, g = want[2].astype(np.float64), got[2].astype(np.float64)
    assert not np.isnan(g).any()
    assert np.linalg.norm(g - w) / np.linalg.norm(w) <= 1e-3


SPILL_FREE = [
    case("attention_bwd_preprocess"),
    case("attention_bwd_dq_convert"),
    case("attention_bwd_dq_convert", HEAD_DIM=64),
    case("attention_bwd_preprocess", HEAD_DIM=64),
    case("attention_fwd_lse", [pytest.mark.slow]),
    case("attention_fwd_lse", [pytest.mark.slow], CAUSAL=True),
    case("attention_bwd_dq", [pytest.mark.slow]),
    case("attention_bwd_dq", [pytest.mark.slow], CAUSAL=True),
    case("attention_bwd_dq", [pytest.mark.slow], HEAD_DIM=64),
    case("attention_bwd_dq", [pytest.mark.slow], BLOCK_N=64),
    case("attention_bwd_dkdv", [pytest.mark.slow], HEAD_DIM=64),
    case("attention_bwd_dkdv", [pytest.mark.slow], HEAD_DIM=64, CAUSAL=True),
    case("attention_bwd_dkdv", [pytest.mark.slow], BLOCK_N=64),
    # Head dim 128 with 128-key blocks (the defaults): two 64x128 f32 accumulators and two
    # 64x64 score tiles per consumer warp group fit setmaxnreg's 232 without spills.
    case("attention_bwd_dkdv", [pytest.mark.slow]),
    case("attention_bwd_dkdv", [pytest.mark.slow], CAUSAL=True),
    # Head dim 128 with 128-key blocks: dK, dV and the dQᵀ share (64x64 per warp group) beside
    # the scores; head dim 64 with 64-key blocks, one consumer warp group.
    case("attention_bwd_dkdvdq", [pytest.mark.slow]),
    case("attention_bwd_dkdvdq", [pytest.mark.slow], CAUSAL=True),
    case("attention_bwd_dkdvdq", [pytest.mark.slow], HEAD_DIM=64, BLOCK_N=64),
]


@needs_ptxas
@pytest.mark.parametrize("name, constexprs", SPILL_FREE)
def test_assembles_without_spills(name, constexprs, tmp_path):
    module = tawa.parse(getattr(bwd(), name).ir(**constexprs))
    HopperPipelinePass().apply(tawa.context(), module)
    assert_assembles_without_spills(print_ptx(module), tmp_path)


def test_dkdvdq_stages_dst_as_b_and_adds_by_bulk_reductions():
    """dQᵀ's share Kᵀ·dSᵀ reads Kᵀ from K's slot (a `{columns}` descriptor,
    each warp group its 64 head-dim rows) and dSᵀ, computed in registers, from
    a shared buffer of the whole [keys, queries] tile that both warp groups
    write before a barrier over all the consumer threads; the adds are TMA
    stores that reduce (one bulk group per chunk), not `red` per element."""
    module = tawa.parse(bwd().attention_bwd_dkdvdq.ir())
    HopperPipelinePass(prepare=False).apply(tawa.context(), module)
    text = str(module)
    buffers = sorted(str(o.result.type) for o in module.walk() if o.name == "nvgpu.smem_alloc")
    # Neither the full nor the subtiled staging fits beside a ring of 2 (Q and dO), so the choice is
    # full-in-loops: the dQᵀ share's full tile, per warp group (a store in the query loop), dK and dV
    # single; dSᵀ in two buffers that alternate with the dO slot's parity.
    assert "!nvgpu.smem<2x64x128xbf16, swizzle = 128>" in buffers  # the Q and dO rings, 2 deep
    assert "!nvgpu.smem<2x64x64xf32, swizzle = 128>" in buffers  # dQᵀ: 64 head-dim rows a warp group
    assert buffers.count("!nvgpu.smem<1x128x64xbf16, swizzle = 128>") == 2  # dK, dV: single
    assert "!nvgpu.smem<2x128x64xbf16, swizzle = 128>" in buffers  # dSᵀ, 128 keys x 64 queries, twice
    descriptors = [o for o in module.walk() if o.name == "nvgpu.wgmma_descriptor"]
    assert any(d.properties.get("columns") for d in descriptors)
    assert any(str(d.result.type) == "!nvgpu.wgmma_desc<128x64xbf16, swizzle = 128>" for d in descriptors)
    syncs = {(o.barrier_id.value.data, o.num_threads.value.data) for o in module.walk()
             if o.name == "nvgpu.named_barrier_sync"}
    assert (1, 256) in syncs
    adds = [o for o in module.walk() if o.name == "nvgpu.tma_store" and o.properties.get("add")]
    assert adds and "nvgpu.frag_red_global" not in text and "nvgpu.frag_atomic_add" not in text


def test_dkdvdq_with_more_keys_than_head_dim_is_a_located_error():
    """128-key blocks at head dim 64: the dQᵀ share has 64 rows where the
    other dots have 128 (two warp groups' rows): refused where the rows
    disagree."""
    module = tawa.parse(bwd().attention_bwd_dkdvdq.ir(HEAD_DIM=64, BLOCK_N=128))
    with pytest.raises(tawa.TawaError, match=r"attention_bwd.py:\d+:\d+: error: tawa-warp-specialize: this dot's "
                                             r"accumulator has \d+ rows but the dot at .* has \d+"):
        HopperPipelinePass().apply(tawa.context(), module)
