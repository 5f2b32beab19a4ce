"""`tile.atomic_add` (`tl.atomic_add`) through the pipeline: the tile
interpreter's semantics against NumPy, the lowered kernels (blocked tiles
of a kernel without dots, wgmma accumulators of a split-K product) in the
CPU simulator against the tile program in three program orders, the PTX's
`red.relaxed.gpu.global.add` (the threads' adds) or `cp.reduce.async.bulk.tensor
... .add` (an accumulator's, through the TMA-store epilogue) and ptxas
without spills, and the front end's diagnostics."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from test_dot_free import lowered

import tawa
import tawa.language as tl
from tawa.backend.ptx.printer import print_ptx
from tawa.diagnostics import TawaError
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.atomics import replicated
from tawa.dialects.nvgpu.layouts import blocked_layout
from tawa.transforms.hopper_pipeline import HopperPipelinePass

BF16 = ml_dtypes.bfloat16


@tawa.kernel
def add_rows(X: tl.tensor_ref(tl.f32, 2), Y: tl.tensor_ref(tl.f32, 3), n: tl.index,
             BLOCK: tl.constexpr = 64, COLS: tl.constexpr = 64):
    """Program (i, j) adds block i of X into Y[j] at row 8·i: neighbouring
    programs overlap, and the last blocks hang over Y's edges."""
    i = tl.program_id(0)
    j = tl.program_id(1)
    x = tl.load(X, (i * BLOCK, 0), (BLOCK, COLS))
    tl.atomic_add(Y, (j, i * 8, 0), x * 2.0)


@tawa.kernel
def split_k(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2), C: tl.tensor_ref(tl.f32, 2),
            K: tl.index, BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 64,
            BLOCK_K: tl.constexpr = 64, SPLIT: tl.constexpr = 128):
    """C += A·Bᵀ, program (m, n, s) summing K slice s of SPLIT columns."""
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    k0 = tl.program_id(2) * SPLIT
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
    for k in tl.range(k0, tl.minimum(k0 + SPLIT, K), BLOCK_K):
        a = tl.load(A, (m0, k), (BLOCK_M, BLOCK_K))
        b = tl.load(B, (n0, k), (BLOCK_N, BLOCK_K))
        acc = tl.dot(a, b, acc, trans_b=True)
    tl.atomic_add(C, (m0, n0), acc)


def _add_rows_case(rng):
    x = rng.standard_normal((200, 64)).astype(np.float32)
    y = rng.standard_normal((2, 70, 60)).astype(np.float32)
    grid = (4, 2, 1)
    want = y.astype(np.float64)
    for i in range(4):
        block = np.zeros((64, 64))
        part = x[i * 64:(i + 1) * 64]
        block[:len(part)] = part
        lo, hi = i * 8, min(i * 8 + 64, 70)
        want[:, lo:hi, :] += 2 * block[:hi - lo, :60]
    return grid, [x, y, 200], 1, want


def test_interpreter_adds_overlapping_boxes_and_drops_the_outside(seed):
    grid, args, out, want = _add_rows_case(np.random.default_rng(seed))
    add_rows.interpret(grid, *args)
    np.testing.assert_allclose(args[out], want, rtol=1e-5, atol=1e-5)


def _split_k_case(rng, M=200, N=100, K=300):
    a = rng.standard_normal((M, K)).astype(np.float32).astype(BF16)
    b = rng.standard_normal((N, K)).astype(np.float32).astype(BF16)
    c = rng.standard_normal((M, N)).astype(np.float32)
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64).T
    return (-(-M // 128), -(-N // 64), -(-K // 128)), [a, b, c, K], 2, want


def _order_case(kernel, make, order):
    slow = kernel is split_k and order != "grid"  # (a second of CPU each)
    return pytest.param(kernel, make, order, marks=[pytest.mark.slow] if slow else [],
                        id=f"{'wgmma' if kernel is split_k else 'blocked'}-{order}")


@pytest.mark.parametrize("kernel, make, order", [_order_case(k, m, o) for k, m in ((add_rows, _add_rows_case),
                                                                                 (split_k, _split_k_case))
                                                 for o in ("grid", "reversed", "shuffled")])
def test_lowered_kernel_matches_the_tile_program_in_any_order(kernel, make, order, seed):
    grid, args, out, want = make(np.random.default_rng(seed))
    text = kernel.ir()
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    tawa.interpret(text, kernel.name, grid, *args)
    tawa.interpret(lowered(text), kernel.name, grid, *mine, ctas=2, order=order)
    np.testing.assert_allclose(args[out], want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(mine[out], want, rtol=1e-4, atol=1e-3)


@needs_ptxas
@pytest.mark.parametrize("kernel, options", [(add_rows, {}), (split_k, {"epilogue": "threads"})],
                         ids=["blocked", "wgmma-threads"])
def test_assembles_without_spills(kernel, options, tmp_path):
    """The threads' adds: a kernel without dots, or accumulators with the thread epilogue."""
    module = tawa.parse(kernel.ir())
    HopperPipelinePass(**options).apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert "\tred.relaxed.gpu.global.add.f32" in ptx  # the fast path
    assert "@%p" in ptx.split("red.relaxed", 1)[1] and "] red.relaxed" not in ptx
    assert ptx.count("red.relaxed.gpu.global.add.f32") >= 2 * 32  # both paths, every value
    assert "st.global" not in ptx and "cp.reduce" not in ptx  # nothing is stored
    assert_assembles_without_spills(ptx, tmp_path)


@needs_ptxas
def test_accumulators_add_by_bulk_reductions(tmp_path):
    """By default an accumulator's adds take the TMA-store epilogue: staged, and
    one `cp.reduce.async.bulk.tensor ... .add` per chunk, no `red` per element."""
    module = tawa.parse(split_k.ir())
    HopperPipelinePass().apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group" in ptx
    assert "red.relaxed" not in ptx and "st.global" not in ptx
    assert_assembles_without_spills(ptx, tmp_path)


def test_replicated_layouts_are_told_apart():
    # A row vector of the accumulators sits in the 4 threads of a quad; accumulators once.
    assert replicated(nvgpu.WGMMA_ROW, (64,))
    assert not replicated(nvgpu.WGMMA, (64, 128))
    assert replicated(blocked_layout((2, 8), 4), (2, 8))  # 16 elements, 128 threads
    assert not replicated(blocked_layout((64, 64), 4), (64, 64))


@tawa.kernel
def add_bf16(X: tl.tensor_ref(tl.bf16, 2), Y: tl.tensor_ref(tl.bf16, 2)):
    x = tl.load(X, (0, 0), (64, 64))
    tl.atomic_add(Y, (0, 0), x)


@tawa.kernel
def add_too_wide(X: tl.tensor_ref(tl.f32, 2), Y: tl.tensor_ref(tl.f32, 1)):
    x = tl.load(X, (0, 0), (64, 64))
    tl.atomic_add(Y, (0,), x)


@pytest.mark.parametrize("kernel, message", [
    (add_bf16, "tl.atomic_add: adds f32 tiles into an f32 tensor_ref"),
    (add_too_wide, "tl.atomic_add: the 2-D tile"),
])
def test_front_end_errors_are_located(kernel, message):
    with pytest.raises(TawaError, match=message) as err:
        kernel.ir()
    assert "test_atomic_add.py" in str(err.value)
