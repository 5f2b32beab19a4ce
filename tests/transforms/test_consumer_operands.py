"""Consumer-side operands (docs/passes.md): the example kernels whose
epilogues load their own operands assemble without spills, and the CPU
simulator runs their final IR (fast paths of whole tiles and edge paths)
to the tile program's results."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.transforms.hopper_pipeline import HopperPipelinePass

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KERNELS = ["gemm_bias_gelu", "gemm_alpha_beta", "gemm_fp8_scaled"]
ASSEMBLED = [*KERNELS, "batched_gemm", "gemm_a_prologue"]
PTXAS = shutil.which("ptxas")


def _lowered(name: str, **options):
    module = tawa.parse((EXAMPLES / f"{name}.mlir").read_text(), f"{name}.mlir")
    HopperPipelinePass.of(**options).apply(tawa.context(), module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")
@pytest.mark.parametrize("name", ASSEMBLED)
def test_assembles_without_spills(name, tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(print_ptx(_lowered(name)))
    res = subprocess.run([PTXAS, "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", res.stderr)
    assert spills and all(s == ("0", "0") for s in spills), res.stderr


def _args(name: str, M: int, N: int, K: int, rng: np.random.Generator):
    bf16, f8 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn
    dt = f8 if name == "gemm_fp8_scaled" else bf16
    A = rng.standard_normal((M, K)).astype(dt)
    B = rng.standard_normal((N, K)).astype(dt)
    C = np.full((M, N), np.nan, dtype=bf16)
    if name == "gemm_bias_gelu":
        return [A, B, rng.standard_normal(N).astype(bf16), C, M, N, K], 3
    if name == "gemm_alpha_beta":
        return [A, B, rng.standard_normal((M, N)).astype(bf16), M, N, K, np.float32(0.5), np.float32(2.0)], 2
    sa, sb = rng.random(M).astype(np.float32), rng.random(N).astype(np.float32)
    return [A, B, sa, sb, C, M, N, K], 4


@pytest.mark.parametrize("name", [KERNELS[0], *(pytest.param(n, marks=pytest.mark.slow) for n in KERNELS[1:])])
def test_final_ir_matches_the_tile_program(name):
    """130 x 300: the first column tile is whole (fast paths), the second
    and the last row tile ragged (edge paths)."""
    M, N = 130, 300
    K = 136 if name != "gemm_fp8_scaled" else 272
    module = _lowered(name, stages=2, prepare=False)
    rng = np.random.default_rng(5)
    want, out = _args(name, M, N, K, rng)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in want]
    grid = (2, 2)
    tawa.interpret((EXAMPLES / f"{name}.mlir").read_text(), name, grid, *want)
    tawa.interpret(module, name, grid, *got)
    w, g = want[out].astype(np.float64), got[out].astype(np.float64)
    assert not np.isnan(g).any()
    assert np.linalg.norm(g - w) <= 1e-2 * np.linalg.norm(w)
