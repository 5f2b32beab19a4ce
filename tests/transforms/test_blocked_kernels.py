"""Kernels without dots in blocked layouts (docs/passes.md, "Kernels without dots"): the five
memory-bound kernels of examples/python/norms.py (softmax, RMSNorm, LayerNorm, add + RMSNorm
looping over the row, SwiGLU) and a column-sum kernel through the whole pipeline.  The lowered
kernel, run by the CPU simulator on two CTAs over ragged shapes with NaN-poisoned outputs,
gives the tile program's results (the interpreter is the oracle, itself checked against NumPy
by tests/frontend/test_frontend_norms.py); ptxas assembles each without spills.  Variants of
few rows make the layout's warps split a row (its reductions combine through shared memory,
`nvgpu.frag_reduce_warps`), inside a loop too.  Bad inputs are one located error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from test_dot_free import lowered

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.torch.kernels import python_example
from tawa.transforms.hopper_pipeline import HopperPipelinePass

KERNELS = Path(__file__).resolve().parent / "dot_free"
BF16 = ml_dtypes.bfloat16


def norms():
    """The module of examples/python/norms.py (loaded once)."""
    return python_example("norms")


def arguments(name: str, M: int, N: int, rng: np.random.Generator):
    """(inputs, outputs (NaN), scalars) of a norms kernel on an M x N problem."""
    def rand(*shape):
        return rng.standard_normal(shape).astype(np.float32).astype(BF16)

    def out():
        return np.full((M, N), np.nan, BF16)

    return {
        "softmax": ([rand(M, N)], [out()], [M, N]),
        "softmax_chunked": ([rand(M, N)], [out()], [M, N]),
        "rmsnorm": ([rand(M, N), rand(N)], [out()], [M, N, 1e-6]),
        "layernorm": ([rand(M, N), rand(N), rand(N)], [out()], [M, N, 1e-5]),
        "rmsnorm_chunked": ([rand(M, N), rand(N)], [out()], [M, N, 1e-6]),
        "layernorm_chunked": ([(rand(M, N).astype(np.float32) * 4 + 20).astype(BF16), rand(N), rand(N)], [out()],
                              [M, N, 1e-5]),  # far from 0: the chunks' merged variance
        "add_rmsnorm": ([rand(M, N), rand(M, N), rand(N)], [out(), out()], [M, N, 1e-6]),
        "add_rmsnorm_row": ([rand(M, N), rand(M, N), rand(N)], [out(), out()], [M, N, 1e-6]),
        "swiglu": ([rand(M, N), rand(M, N)], [out()], [M, N]),
        "swiglu_bwd": ([rand(M, N), rand(M, N), rand(M, N)], [out(), out()], [M, N]),
    }[name]


def grid(name: str, M: int, N: int, constexprs: dict[str, int]) -> tuple[int, ...]:
    values = getattr(norms(), name).constexprs(constexprs)
    rows = -(-M // values["BLOCK_M"])
    return (rows, -(-N // values["BLOCK_N"])) if name in ("swiglu", "swiglu_bwd") else (rows,)


CASES = [
    # (kernel, M, N, constexprs): defaults (whole rows of BLOCK_N = 1024 ≥ N) on ragged shapes,
    ("softmax", 37, 700, {}),
    ("rmsnorm", 37, 700, {}),
    ("layernorm", 37, 700, {}),
    ("add_rmsnorm", 37, 700, {}),
    ("add_rmsnorm", 37, 700, {"BLOCK_N": 256}),  # 3 chunks a row, the last ragged
    ("add_rmsnorm_row", 37, 700, {}),
    # rows of whole vectors that do not fill the tile (N a multiple of 8): the edge path
    # by whole vectors (`vector_mask`), the simulator checking each vector wholly in or out,
    ("rmsnorm", 37, 768, {}),
    ("swiglu", 37, 776, {}),
    pytest.param(("layernorm", 37, 768, {}), marks=pytest.mark.slow),
    pytest.param(("add_rmsnorm_row", 37, 768, {}), marks=pytest.mark.slow),
    ("swiglu", 37, 700, {}),
    ("swiglu_bwd", 37, 700, {}),
    # rows the layout's warps split: reductions through shared memory (in a loop, too),
    ("softmax", 9, 700, {"BLOCK_M": 1}),
    ("rmsnorm", 7, 5000, {"BLOCK_M": 2, "BLOCK_N": 8192}),
    ("layernorm", 5, 3000, {"BLOCK_M": 1, "BLOCK_N": 4096}),
    ("add_rmsnorm", 3, 2500, {"BLOCK_M": 1}),
    ("add_rmsnorm_row", 3, 2500, {"BLOCK_M": 2, "BLOCK_N": 4096}),  # one pass over wide rows
    # rows wider than the registers: two loops over chunks, the last ragged,
    ("rmsnorm_chunked", 5, 2500, {"BLOCK_M": 4, "BLOCK_N": 1024}),
    ("softmax_chunked", 5, 2500, {"BLOCK_M": 4, "BLOCK_N": 1024}),  # online: the running max rescales the sum
    pytest.param(("layernorm_chunked", 3, 2500, {"BLOCK_M": 1, "BLOCK_N": 1024}), marks=pytest.mark.slow),  # 1 row
    ("layernorm_chunked", 5, 2500, {"BLOCK_M": 4, "BLOCK_N": 1024}),
    # tiles whose rows are not a power of two (the operators' tiles of 768- and 3000-wide rows):
    # three vectors a lane; a row of twelve warp rows split over the 4 warps,
    ("rmsnorm", 37, 700, {"BLOCK_M": 4, "BLOCK_N": 768}),
    ("layernorm", 5, 3000, {"BLOCK_M": 1, "BLOCK_N": 3072}),
    pytest.param(("swiglu", 37, 776, {"BLOCK_M": 32, "BLOCK_N": 256}), marks=pytest.mark.slow),
    pytest.param(("softmax", 9, 1400, {"BLOCK_M": 2, "BLOCK_N": 1536}), marks=pytest.mark.slow),
    # a tile smaller than a warp group's vectors: copies in the other threads.
    ("softmax", 3, 5, {"BLOCK_M": 1, "BLOCK_N": 8}),
]


def case_id(case) -> str:
    name, M, N, constexprs = case
    return f"{name}-{M}x{N}" + "".join(f"-{k}={v}" for k, v in constexprs.items())


def run_both(text: str, name: str, grid_, inputs, outputs, scalars) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(the tile program's outputs, the lowered kernel's on 2 CTAs), each into poisoned copies."""
    want, got = [o.copy() for o in outputs], [o.copy() for o in outputs]
    tawa.interpret(text, name, grid_, *inputs, *want, *scalars)
    tawa.interpret(lowered(text), name, grid_, *inputs, *got, *scalars, ctas=2)
    return want, got


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_lowered_kernel_matches_the_tile_program(case, seed):
    name, M, N, constexprs = case
    inputs, outputs, scalars = arguments(name, M, N, np.random.default_rng(seed))
    text = getattr(norms(), name).ir(**constexprs)
    want, got = run_both(text, name, grid(name, M, N, constexprs), inputs, outputs, scalars)
    for w, g in zip(want, got):
        w, g = w.astype(np.float32), g.astype(np.float32)
        assert not np.isnan(w).any()
        # Row sums fold in another order (per thread, lanes, warps): a bf16 result may round
        # the other way, one unit in its last place (2⁻⁸ relative), rarely. A result near zero
        # that cancels O(1) terms (LayerNorm's bias against the normalised row) carries their
        # float32 rounding, an absolute error of a few 2⁻²⁴ units: atol covers it.
        np.testing.assert_allclose(g, w, rtol=2**-7, atol=2**-19)
        assert (g != w).mean() < 1e-3, f"{int((g != w).sum())} of {g.size} elements differ"


@pytest.mark.parametrize("name", ["rmsnorm_chunked", pytest.param("add_rmsnorm", marks=pytest.mark.slow)])
def test_chunk_loops_stream_or_the_threads_load(name, seed):
    """A loop over a row's chunks streams them from a TMA producer (the
    default); the kernel's twin (`epilogue=threads`, what a launch takes
    where a tensor map cannot describe x) has no producer and its threads
    load them: both give the tile program's outputs."""
    M, N, c = 5, 2500, {"BLOCK_M": 4, "BLOCK_N": 1024}
    text = getattr(norms(), name).ir(**c)
    streamed, twin = str(lowered(text)), lowered(text, epilogue="threads")
    assert "nvgpu.tma_load" in streamed and "nvgpu.frag_load_shared" in streamed
    assert "nvgpu.tma_load" not in str(twin)
    inputs, outputs, scalars = arguments(name, M, N, np.random.default_rng(seed))
    want = [o.copy() for o in outputs]
    tawa.interpret(text, name, grid(name, M, N, c), *inputs, *want, *scalars)
    got = [o.copy() for o in outputs]
    tawa.interpret(twin, name, grid(name, M, N, c), *inputs, *got, *scalars, ctas=2)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=2**-7, atol=2**-19)


def test_column_sums(seed):
    """Sums along the rows: the 4 warps of the 32-row tile's layout combine through shared
    memory; the sums are stored (1-D) and broadcast back over the rows."""
    M, N = 70, 300
    X = np.random.default_rng(seed).standard_normal((M, N)).astype(np.float32)
    g = (-(-M // 32), -(-N // 256))
    outputs = [np.full((g[0], N), np.nan, np.float32), np.full((M, N), np.nan, np.float32)]
    want, got = run_both((KERNELS / "column_sums.mlir").read_text(), "column_sums", g, [X], outputs, [])
    ref = np.stack([X[32 * i:32 * i + 32].sum(0) for i in range(g[0])])
    np.testing.assert_allclose(want[0], ref, rtol=1e-5, atol=1e-5)
    # The warps' partials fold in another order than the interpreter's sum: the last bits differ.
    for w, o in zip(want, got):
        np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-5)


SPILL_FREE = [
    ("softmax", {}), ("rmsnorm", {}), ("layernorm", {}), ("add_rmsnorm", {}), ("add_rmsnorm_row", {}),
    ("swiglu", {}), ("swiglu_bwd", {}),
    ("swiglu_bwd", {"BLOCK_M": 4, "BLOCK_N": 1024}),
    ("softmax", {"BLOCK_M": 1}), ("rmsnorm", {"BLOCK_M": 2, "BLOCK_N": 8192}),
    ("layernorm", {"BLOCK_M": 1, "BLOCK_N": 4096}), ("softmax", {"BLOCK_M": 4, "BLOCK_N": 4096}),
]


@needs_ptxas
@pytest.mark.parametrize("name, constexprs", SPILL_FREE, ids=lambda v: v if isinstance(v, str) else
                         "-".join(f"{k}={x}" for k, x in v.items()) or "defaults")
def test_assembles_without_spills(name, constexprs, tmp_path):
    module = tawa.parse(getattr(norms(), name).ir(**constexprs))
    HopperPipelinePass().apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert_assembles_without_spills(ptx, tmp_path)
    if name in ("rmsnorm", "softmax") and not constexprs:
        # The edge path by whole vectors: a predicated 16-byte load or store a vector of 8 bf16.
        assert re.search(r"@%p\d+ ld\.global\.v4\.b32", ptx) and re.search(r"@%p\d+ st\.global\.v4\.b32", ptx)


@needs_ptxas
def test_column_sums_assemble(tmp_path):
    module = tawa.parse((KERNELS / "column_sums.mlir").read_text())
    HopperPipelinePass().apply(tawa.context(), module)
    assert_assembles_without_spills(print_ptx(module), tmp_path)


def run_opt(text: str, tmp_path: Path, pipeline: str = "tawa-hopper-pipeline") -> subprocess.CompletedProcess:
    src = tmp_path / "k.mlir"
    src.write_text(text)
    return subprocess.run([sys.executable, "-m", "tawa.tools.tawa_opt", str(src), "-p", pipeline],
                          capture_output=True, text=True)


def test_too_many_registers_is_one_located_line(tmp_path):
    """LayerNorm over 4 rows of 4096: the f32 tile (128 registers) and the weight and bias
    vectors, which every warp holds whole (64 registers each), do not fit: one line at the
    kernel's def, no traceback."""
    res = run_opt(norms().layernorm.ir(BLOCK_M=4, BLOCK_N=4096), tmp_path)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert re.match(r".*norms\.py:\d+:\d+: error: tawa-check-resources: consumer warp group needs ~\d+ registers",
                    lines[0]), lines[0]


def test_a_tile_far_too_large_is_refused_quickly(tmp_path):
    """A softmax of 65536 rows a program (a fuzz mutant's BLOCK_M): the layout
    algebra's reduction and broadcast maps are linear in the values a thread
    holds, so the compile reaches the resource check's one line (it ran past
    the fuzzer's time limit while the maps were quadratic)."""
    res = run_opt(norms().softmax.ir(BLOCK_M=65536, BLOCK_N=1024), tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "tawa-check-resources: consumer warp group needs ~" in res.stderr


def column_slice(a: np.ndarray, fill: float) -> np.ndarray:
    """`a` as columns 16.. of a wider array (rows contiguous, 40 elements
    longer than its own), the columns beside it `fill`: a strided view."""
    wide = np.full((a.shape[0], a.shape[1] + 40), fill, a.dtype)
    view = wide[:, 16 : 16 + a.shape[1]]
    view[...] = a
    assert not view.flags.c_contiguous
    return view


@pytest.mark.parametrize("name", ["rmsnorm", "add_rmsnorm", "swiglu_bwd"])
def test_strided_views_are_addressed_in_place(name, seed):
    """Every matrix a column slice of a wider array (what tawa.torch passes
    for a strided view instead of a copy): the lowered kernel, which
    addresses them itself with their row strides (`nvgpu.memref_stride`),
    reads and writes them in place and gives the dense tile program's
    results; NaN beside the slices is neither read (it would spread into
    the rows) nor overwritten."""
    M, N = 37, 700
    inputs, outputs, scalars = arguments(name, M, N, np.random.default_rng(seed))
    text = getattr(norms(), name).ir()
    want = [o.copy() for o in outputs]
    tawa.interpret(text, name, grid(name, M, N, {}), *inputs, *want, *scalars)
    views = [column_slice(a, np.nan) if a.ndim == 2 else a for a in inputs]
    got = [column_slice(o, np.nan) for o in outputs]
    tawa.interpret(lowered(text), name, grid(name, M, N, {}), *views, *got, *scalars, ctas=2)
    for w, g in zip(want, got):
        w, g = w.astype(np.float32), g.astype(np.float32)
        assert not np.isnan(g).any(), "some of the view was not written"
        np.testing.assert_allclose(g, w, rtol=2**-7, atol=0)
        assert (g != w).mean() < 1e-3
    for g in got:
        assert np.isnan(g.base[:, :16].astype(np.float32)).all() and np.isnan(g.base[:, 16 + N :].astype(np.float32)).all()


def test_the_simulator_refuses_a_view_without_contiguous_rows():
    """An addressed array whose rows are not contiguous cannot be what the
    runtime passes (it refuses it): the simulator says so, in one line."""
    M, N = 8, 64
    inputs, outputs, scalars = arguments("rmsnorm", M, N, np.random.default_rng(0))
    X = np.asfortranarray(inputs[0])
    with pytest.raises(tawa.TawaError, match="contiguous rows and positive strides, got byte strides"):
        tawa.interpret(lowered(norms().rmsnorm.ir()), "rmsnorm", (1,), X, inputs[1], *outputs, *scalars, ctas=1)


VECTOR_MASK_MIXED = """
func.func @k(%B: memref<?xbf16>) attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 0>} {
  %base = nvgpu.memref_base %B : memref<?xbf16>
  %i = nvgpu.frag_index row : !nvgpu.frag<256xi32, wgmma_col>
  %c3 = arith.constant 3 : i32
  %m = nvgpu.frag_cmpi slt, %i, %c3 : !nvgpu.frag<256xi32, wgmma_col>, i32
  %v = nvgpu.frag_load_global %base, %base mask %m {vector_mask} : !nvgpu.frag<256xbf16, wgmma_col>, !nvgpu.frag<256xi1, wgmma_col>
  func.return
}
"""


def test_the_simulator_checks_a_vector_mask():
    """`vector_mask` promises each vector wholly in or out (the PTX takes a
    vector under its first bit): a mask that splits a pair is a located error."""
    from tawa.diagnostics import TawaError

    B = np.zeros(1024, BF16)
    with pytest.raises(TawaError, match="vector_mask whose bits differ within it"):
        tawa.interpret(VECTOR_MASK_MIXED, "k", (1,), B)
    tawa.interpret(VECTOR_MASK_MIXED.replace("constant 3", "constant 4"), "k", (1,), B)  # whole pairs: fine
