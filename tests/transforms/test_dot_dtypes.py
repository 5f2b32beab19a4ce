"""Every operand and output type combination of tile.dot
(`dot_dtype_cases.COMBOS`: fp8 e5m2 and mixed e4m3 × e5m2, tf32, f32 outputs)
through tawa-hopper-pipeline, on the CPU:

* the tile program on the interpreter against float64 NumPy on the operands
  as the tensor core reads them (f32 truncated to tf32), relative Frobenius
  error ≤ 1e-5 for an f32 C (f32 accumulation alone), 4e-3 for bf16 (its
  rounding, u = 2⁻⁸);
* the last structured output of the pipeline (4-stage rings) on the CPU
  simulator against the tile program: ≤ 1e-5 for f32 C, 1e-2 for bf16 (a
  different summation order may flip a bf16 rounding);
* the kernel's PTX assembles with `ptxas -arch=sm_90a` without spills and
  issues the wgmma of its types.

Shapes: ragged M, N and K, K taking two loop steps (the last short).
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import pytest
from dot_dtype_cases import BYTES, COMBOS, NUMPY, block_k, combo_id, gemm_text, grid, random_inputs
from ptxas_check import PTXAS, assert_assembles_without_spills
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.interpreters.dtypes import mma_operand
from tawa.interpreters.schedule import Schedule
from tawa.target.hopper import WGMMA_OPERAND_TYPES
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

STAGES = 4
CHECKS = {"tawa-check-resources", "tawa-verify-protocol"}
"""Analyses that leave the IR unchanged, tested on their own (and on every example)."""
TOL = {"f32": 1e-5, "bf16": 4e-3}
SIM_TOL = {"f32": 1e-5, "bf16": 1e-2}


def rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


def shape(a: str) -> tuple[int, int, int]:
    bk = block_k(a)
    return 100, 200, 2 * bk - bk // 4


def run(module: ModuleOp | str, combo: tuple[str, str, str], seed: int, **kw) -> tuple[np.ndarray, list]:
    a, b, c = combo
    m, n, k = shape(a)
    x, y = random_inputs(np.random.default_rng(seed), a, b, m, n, k)
    out = np.full((m, n), np.nan, dtype=NUMPY[c])
    tawa.interpret(module, "gemm", grid(m, n), x, y, out, m, n, k, **kw)
    assert not np.isnan(out.astype(np.float32)).any(), "some elements of C were not written"
    return out, [x, y]


@cache
def lowered(combo: tuple[str, str, str]) -> tuple[ModuleOp, str]:
    """The last structured output of the pipeline (what the simulator runs)
    and the kernel's PTX."""
    module = tawa.parse(gemm_text(*combo), f"gemm_{combo_id(combo)}.mlir")
    pipeline = HopperPipelinePass(prepare=False)
    ctx = tawa.context()
    prepare = PreparePtxPass.steps()
    for p in [pipeline.specialize_pass(), *pipeline.steps(STAGES), *prepare[:-1]]:
        if p.name not in CHECKS:
            p.apply(ctx, module)
    structured = module.clone()
    prepare[-1].apply(ctx, module)
    return structured, print_ptx(module)


def test_mma_operand_reads_f32_as_tf32():
    x = np.array([1 + 2**-10 + 2**-11, -(1 + 2**-11), 3.0, np.inf, np.nan, 2**-130], dtype=np.float32)
    got = mma_operand(x)
    # 13 low mantissa bits dropped: toward zero, whatever the sign; subnormals too.
    want = np.array([1 + 2**-10, -1.0, 3.0, np.inf, np.nan, 2**-130], dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    bf = np.array([1.5, -0.375], dtype=np.float32).astype(np.dtype("bfloat16"))
    np.testing.assert_array_equal(mma_operand(bf), np.array([1.5, -0.375], dtype=np.float32))


@pytest.mark.parametrize("combo", COMBOS, ids=combo_id)
def test_tile_program(combo):
    out, (x, y) = run(gemm_text(*combo), combo, seed=1)
    ref = mma_operand(x).astype(np.float64) @ mma_operand(y).astype(np.float64).T
    err = rel_error(out, ref)
    assert err <= TOL[combo[2]], f"relative error {err:.2e}"
    if combo[0] == "f32":
        # The truncation to tf32 is what the product sees: against the exact
        # f32 operands the error is that of 10-bit mantissas.
        exact = x.astype(np.float64) @ y.astype(np.float64).T
        assert rel_error(out, exact) > 1e-4


@pytest.mark.parametrize("combo", [*COMBOS[:3], *(pytest.param(c, marks=pytest.mark.slow) for c in COMBOS[3:])], ids=combo_id)
def test_simulated_kernel_and_ptxas(combo, tmp_path):
    structured, ptx = lowered(combo)
    want, _ = run(gemm_text(*combo), combo, seed=2)
    got, _ = run(structured, combo, seed=2, schedule=Schedule("random", seed=3))
    err = rel_error(got, want.astype(np.float64))
    assert err <= SIM_TOL[combo[2]], f"simulated kernel: relative error {err:.2e}"

    a, b, _ = combo
    ta, tb = WGMMA_OPERAND_TYPES[a], WGMMA_OPERAND_TYPES[b]
    # K-major fp8 and tf32 take no imm-trans operands; 16-bit types take two.
    tail = ", 1, 1;" if BYTES[a] != 2 else ", 1, 1, 0, 0;"
    instr = f"wgmma.mma_async.sync.aligned.m64n256k{ta.k}.f32.{ta.ptx}.{tb.ptx} "
    assert ptx.count(instr) == block_k(a) // ta.k, ptx
    assert re.search(re.escape(instr) + r"\{[^}]*\}, %rd\d+, %rd\d+, %p\d+" + re.escape(tail), ptx)
    if PTXAS is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH: the simulator part passed")
    assert_assembles_without_spills(ptx, tmp_path)
