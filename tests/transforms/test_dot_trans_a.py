"""`tile.dot` with its lhs transposed (`lhs_transposed`, `tl.dot(a, b,
trans_a=True)`): an A stored K×M read in place as wgmma's MN-major A.

* the front end and the tile interpreter against NumPy; located errors for
  an fp8 operand and a contraction that `trans_a` would fix;
* the GEMM generator's four layouts (A M×K or K×M, B N×K or K×N) in the
  tile interpreter on ragged shapes, C poisoned with NaN;
* lowered by `tawa-hopper-pipeline` and run by the CTA simulator (column
  descriptors of each consumer warp group, 128-row warp groups' second row
  block a column chunk on) against the tile program;
* ptxas assembles the transposed-A programs without spills, with
  imm-trans-a = 1.
"""

from __future__ import annotations

import re
import shutil

import ml_dtypes
import numpy as np
import pytest

import tawa
import tawa.language as tl
from tawa.diagnostics import TawaError
from tawa.kernels.gemm import GemmConfig, gemm_grid, gemm_source, unsupported
from tawa.runtime.autotune import Choice
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

BF16 = ml_dtypes.bfloat16
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) is not on PATH")
RAGGED = (100, 72, 136)
"""M, N, K of 64-tiles: ragged rows and columns of tiles, three K steps, the last ragged."""


def f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32)


def gemm_operands(config: GemmConfig, M: int, N: int, K: int, seed: int = 0):
    """(A, B, C poisoned, M, N, K) in the configuration's layouts, and NumPy's product."""
    rng = np.random.default_rng(seed)
    km, kn = config.a_layout == "km", config.b_layout == "kn"
    A = rng.standard_normal((K, M) if km else (M, K)).astype(BF16)
    B = rng.standard_normal((K, N) if kn else (N, K)).astype(BF16)
    want = (f32(A).T if km else f32(A)) @ (f32(B) if kn else f32(B).T)
    return [A, B, np.full((M, N), np.nan, BF16), M, N, K], want


def assert_product(C: np.ndarray, want: np.ndarray) -> None:
    got = f32(C)
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements of C never written"
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2


# --------------------------------------------------------------------------- front end, tile level


Ref2 = tl.tensor_ref(tl.bf16, 2)


@tawa.kernel
def at_b(A: Ref2, B: Ref2, C: Ref2, M: tl.index, N: tl.index, K: tl.index,
         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = Aᵀ · Bᵀ, A stored K×M and B N×K: the weight gradient's layouts."""
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
    for k in tl.range(0, K, BLOCK_K):
        a = tl.load(A, (k, m0), (BLOCK_K, BLOCK_M))
        b = tl.load(B, (n0, k), (BLOCK_N, BLOCK_K))
        acc = tl.dot(a, b, acc, trans_b=True, trans_a=True)
    tl.store(C, (m0, n0), acc.to(tl.bf16))


def test_front_end_trans_a_in_the_interpreter():
    M, N, K = RAGGED
    args, want = gemm_operands(GemmConfig(a_layout="km"), M, N, K, seed=3)
    at_b.interpret((2, 2), *args, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)
    assert_product(args[2], want)
    [dot] = [line for line in str(at_b.ir(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)).splitlines() if "tile.dot" in line]
    assert "lhs_transposed" in dot and "rhs_transposed" in dot


def test_front_end_errors():
    @tawa.kernel
    def wrong_k(A: Ref2, B: Ref2):
        a = tl.load(A, (0, 0), (64, 128))
        b = tl.load(B, (0, 0), (64, 64))
        tl.dot(a, b)

    with pytest.raises(TawaError, match=r"tl.dot: contraction sizes differ: 64x128 and 64x64 "
                                        r"\(did you mean tl.dot\(a, b, trans_a=True\)\?\)"):
        wrong_k.ir()

    @tawa.kernel
    def flag(A: Ref2):
        a = tl.load(A, (0, 0), (64, 64))
        tl.dot(a, a, trans_a=1)

    with pytest.raises(TawaError, match="tl.dot: trans_a must be a constexpr bool, got"):
        flag.ir()


def test_fp8_trans_a_is_refused_by_the_verifier():
    text = """
func.func @f(%a: tensor<64x64xf8E4M3FN>, %b: tensor<64x64xf8E4M3FN>, %c: tensor<64x64xf32>) {
  %d = tile.dot %a, %b, %c {lhs_transposed, rhs_transposed} : tensor<64x64xf8E4M3FN>, tensor<64x64xf8E4M3FN> -> tensor<64x64xf32>
  func.return
}
"""
    with pytest.raises(TawaError, match=r"tile.dot with f8E4M3FN operands needs a K-major lhs \(no lhs_transposed\)"):
        tawa.parse(text)


# --------------------------------------------------------------------------- the generator's four layouts


LAYOUTS = [("mk", "nk"), ("mk", "kn"), ("km", "nk"), ("km", "kn")]


def test_generated_text():
    text = gemm_source(GemmConfig(128, 128, 64, a_layout="km"))
    assert "%a = tile.load %A[%k, %m0] : memref<?x?xbf16> -> tensor<64x128xbf16>" in text
    assert "{lhs_transposed, rhs_transposed}" in text and "C = Aᵀ · Bᵀ (128x128x64-a_km)" in text
    text = gemm_source(GemmConfig(128, 128, 64, a_layout="km", b_layout="kn"))
    assert "tile.dot %a, %bt, %acc_i {lhs_transposed} :" in text
    assert GemmConfig(a_layout="km", b_layout="kn").id == "128x256x64-a_km-b_kn"
    assert "a K×M A of f8E4M3FN" in unsupported(GemmConfig(a_dtype="f8E4M3FN", b_dtype="f8E4M3FN", a_layout="km"))
    with pytest.raises(TawaError, match="a_layout='mn': expected 'mk'"):
        GemmConfig(a_layout="mn")


@pytest.mark.parametrize("a_layout, b_layout", LAYOUTS)
def test_four_layouts_in_the_interpreter(a_layout, b_layout):
    config = GemmConfig(64, 64, 64, a_layout=a_layout, b_layout=b_layout)
    M, N, K = RAGGED
    args, want = gemm_operands(config, M, N, K, seed=1)
    tawa.interpret(gemm_source(config), config.kernel, gemm_grid(config, M, N), *args)
    assert_product(args[2], want)


def lowered(choice: Choice):
    module = tawa.parse(gemm_source(choice.config))
    ctx = tawa.context()
    HopperPipelinePass.of(prepare=False, **{"epilogue": "auto", **choice.options}).apply(ctx, module)
    for p in PreparePtxPass.steps()[:-1]:
        p.apply(ctx, module)
    return module


@pytest.mark.parametrize("choice", [
    Choice(GemmConfig(128, 128, 64, a_layout="km")),  # two consumer warp groups: column offsets 0 and 64
    pytest.param(Choice(GemmConfig(128, 128, 64, a_layout="km", b_layout="kn")), marks=pytest.mark.slow),
    pytest.param(Choice(GemmConfig(256, 128, 64, a_layout="km"), group_rows=128), marks=pytest.mark.slow),
], ids=lambda c: f"{c.config.id}-rows{c.group_rows}")
def test_lowered_in_the_cta_simulator(choice):
    """Ragged M, N and K; two CTAs (persistent programs)."""
    config = choice.config
    M, N, K = config.block_m * 2 + 17, config.block_n + 40, 3 * 64 - 24
    args, want = gemm_operands(config, M, N, K, seed=2)
    tawa.interpret(lowered(choice), config.kernel, gemm_grid(config, M, N), *args, ctas=2)
    assert_product(args[2], want)


@needs_ptxas
@pytest.mark.parametrize("choice", [
    Choice(GemmConfig(128, 256, 64, a_layout="km")),
    pytest.param(Choice(GemmConfig(128, 256, 64, a_layout="km", b_layout="kn")), marks=pytest.mark.slow),
    pytest.param(Choice(GemmConfig(256, 128, 64, a_layout="km"), group_rows=128), marks=pytest.mark.slow),
], ids=lambda c: f"{c.config.id}-rows{c.group_rows}")
def test_assembles_without_spills(choice, tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    kernel = choice.compile()
    mmas = [line for line in kernel.ptx.splitlines() if "wgmma.mma_async" in line]
    trans_b = "0" if choice.config.b_layout == "nk" else "1"
    assert mmas and all(line.rstrip().endswith(f", 1, 1, 1, {trans_b};") for line in mmas)
    for log in (kernel.assemble().log, kernel.fallback().assemble().log):
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
        assert spills and all(s == ("0", "0") for s in spills), log
