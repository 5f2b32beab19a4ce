"""A folded grid: a batched GEMM whose program id 0 is batch · tiles + tile,
split by `arith.divui` and `arith.remui`.  Its producer needs both results
to place its loads, so `tawa-warp-specialize` recomputes them there (integer
divisions are pure scalar ops); the whole `tawa-hopper-pipeline` output,
run by the CTA simulator, computes what the tile program computes, and its
PTX assembles without spills."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

BF16 = ml_dtypes.bfloat16
SOURCE = """
func.func @batched_gemm_folded(%A: memref<?x?x?xbf16>, %B: memref<?x?x?xbf16>, %C: memref<?x?x?xbf16>,
                               %M: index, %N: index, %K: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c127 = arith.constant 127 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid = tile.program_id 0
  %pid_n = tile.program_id 1
  %m_pad = arith.addi %M, %c127 : index
  %tiles = arith.divui %m_pad, %c128 : index
  %b = arith.divui %pid, %tiles : index
  %pid_m = arith.remui %pid, %tiles : index
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %zero = tile.zeros : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %a = tile.load %A[%b, %m0, %k] : memref<?x?x?xbf16> -> tensor<128x64xbf16>
    %bt = tile.load %B[%b, %n0, %k] : memref<?x?x?xbf16> -> tensor<256x64xbf16>
    %d = tile.dot %a, %bt, %acc_i {rhs_transposed} : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %c = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %c, %C[%b, %m0, %n0] : tensor<128x256xbf16>, memref<?x?x?xbf16>
  func.return
}
"""
KERNEL = "batched_gemm_folded"


@cache
def lowered() -> ModuleOp:
    """The structured output the simulator runs (the PTX printer's input, less scf-to-cf)."""
    module = tawa.parse(SOURCE, "folded.mlir")
    pipeline, ctx = HopperPipelinePass(prepare=False, stages=2), tawa.context()
    for p in [pipeline.specialize_pass(), *pipeline.steps(2), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    return module


@pytest.mark.parametrize("seed", [0, 1])
def test_folded_grid_matches_the_tile_program(seed: int):
    rng = np.random.default_rng(seed)
    batch, m, n, k = 3, 130, 100, 3 * 64 - 20  # two ragged row tiles per batch, a ragged K slice
    a = rng.standard_normal((batch, m, k)).astype(BF16)
    b = rng.standard_normal((batch, n, k)).astype(BF16)
    grid = (batch * 2, 1)
    want = np.full((batch, m, n), np.nan, BF16)
    tawa.interpret(SOURCE, KERNEL, grid, a, b, want, m, n, k)
    ref = np.einsum("bmk,bnk->bmn", a.astype(np.float64), b.astype(np.float64))
    assert np.linalg.norm(want.astype(np.float64) - ref) / np.linalg.norm(ref) < 1e-2
    got = np.full((batch, m, n), np.nan, BF16)
    tawa.interpret(lowered(), KERNEL, grid, a, b, got, m, n, k, schedule=Schedule("random", seed=seed), ctas=2)
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert not np.isnan(g).any(), f"{int(np.isnan(g).sum())} elements of C never written"
    assert np.linalg.norm(g - w) / np.linalg.norm(w) <= 1e-2


@needs_ptxas
def test_folded_grid_assembles_without_spills(tmp_path: Path):
    kernel = tawa.compile(SOURCE, KERNEL)
    assert "rem.u32" in kernel.ptx or "rem.u64" in kernel.ptx
    assert_assembles_without_spills(kernel.ptx, tmp_path)
