"""tawa-check-resources' register estimate against what ptxas allocates.

For each example the estimate of the consumer warp group must bracket
ptxas's need within `TOLERANCE`: with `-maxrregcount estimate + TOLERANCE`
ptxas assembles the kernel without spills, with `estimate - TOLERANCE` it
spills (the setmaxnreg / .maxnreg / .reqntid lines are removed so that the
flag alone bounds the allocation).  A kernel with two live 64x256xf32
accumulators is rejected by the check, and ptxas spills it at the budget
the pipeline gives.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from xdsl.passes import PassPipeline

import tawa
from tawa.analysis.register_demand import RegisterDemand
from tawa.backend.ptx.printer import print_ptx
from tawa.diagnostics import TawaError
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.kernel_info import kernel_info
from tawa.dialects.nvgpu.types import RegAction
from tawa.target.hopper import REGISTER_ESTIMATE_ERROR, SMEM_ALIGN_SLACK
from tawa.transforms.hopper_pipeline import HopperPipelinePass, deepest_fitting
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass
from tawa.verify.check_resources import CheckResourcesPass, shared_memory_extent

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["gemm", "matmul", "gemm_fp8", "gemm_scale_relu", "gemm_softmax", "gemm_chain", "attention_fwd",
            "attention_fwd_d64", "attention_fwd_d256"]
TWO_ACCUMULATORS = ROOT / "tests/filecheck/transforms/Inputs/resources_gemm2.mlir"
PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")
TOLERANCE = REGISTER_ESTIMATE_ERROR
"""Registers the estimate may be off by, either way (it was within 5 on every
example); tawa-check-resources lets a role through inside this margin."""


def lowered(path: Path):
    """The pipeline's lowering without its checks (which would stop at the
    two-accumulator kernel)."""
    module = tawa.parse(path.read_text())
    pipeline = HopperPipelinePass(prepare=False)
    pipeline.specialize_pass().apply(tawa.context(), module)
    steps = [p for p in pipeline.steps(deepest_fitting(module)) if p.name not in ("tawa-check-resources", "tawa-verify-protocol")]
    PassPipeline(tuple(steps)).apply(tawa.context(), module)
    return module


def consumer_estimates(module) -> dict[str, int]:
    out = {}
    for kernel in module.ops:
        for op in kernel.walk():
            if isinstance(op, nvgpu.SetMaxNRegOp) and op.action.data == RegAction.INC:
                out[kernel.sym_name.data] = RegisterDemand().of_block(op.parent_block()).registers
    return out


def spills(ptx: str, tmp_path: Path, maxrregcount: int | None) -> dict[str, int]:
    """Spill-store bytes per kernel that ptxas reports."""
    if maxrregcount is not None:
        ptx = re.sub(r"^\s*(setmaxnreg\..*|\.maxnreg .*|\.reqntid .*)$", "", ptx, flags=re.M)
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    flags = [] if maxrregcount is None else ["-maxrregcount", str(maxrregcount)]
    res = subprocess.run([PTXAS, "-arch=sm_90a", "-v", *flags, str(src), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True)
    if res.returncode:  # "Insufficient registers": as bad as a spill
        return {"*": -1}
    found = re.findall(r"Compiling entry function '(\w+)'.*?(\d+) bytes spill stores", res.stderr, re.S)
    return {name: int(n) for name, n in found}


@needs_ptxas
@pytest.mark.parametrize("name", [n if n in ("gemm", "matmul", "gemm_fp8", "gemm_scale_relu")
                                  else pytest.param(n, marks=pytest.mark.slow) for n in EXAMPLES])
def test_estimate_brackets_ptxas(name, tmp_path):
    module = lowered(ROOT / "examples" / f"{name}.mlir")
    CheckResourcesPass().apply(tawa.context(), module)  # no false positive
    estimates = consumer_estimates(module)
    assert estimates
    PassPipeline((PreparePtxPass(),)).apply(tawa.context(), module)
    ptx = print_ptx(module)
    high = max(estimates.values()) + TOLERANCE
    low = min(estimates.values()) - TOLERANCE
    assert all(n == 0 for n in spills(ptx, tmp_path, high).values()), f"{name}: spills at {high}"
    assert all(n != 0 for n in spills(ptx, tmp_path, low).values()), f"{name}: no spills at {low}"


@pytest.mark.slow
@needs_ptxas
def test_two_accumulators_rejected_and_ptxas_would_spill(tmp_path):
    module = lowered(TWO_ACCUMULATORS)
    assert consumer_estimates(module) == {"gemm2": 2 * 128 + 26}
    with pytest.raises(TawaError) as err:
        CheckResourcesPass().apply(tawa.context(), module)
    assert "needs ~282 registers" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(TawaError, match="needs ~282 registers"):  # the pipeline runs the check
        PassPipeline((HopperPipelinePass(),)).apply(tawa.context(), tawa.parse(TWO_ACCUMULATORS.read_text()))
    PassPipeline((PreparePtxPass(),)).apply(tawa.context(), module)
    assert spills(print_ptx(module), tmp_path, None)["gemm2"] > 1000


def test_shared_memory_agrees_with_lower_aref():
    # The check's extent plus slack is what tawa-lower-aref recorded.
    for name in ("gemm", "attention_fwd"):
        module = lowered(ROOT / "examples" / f"{name}.mlir")
        for kernel in module.ops:
            assert kernel_info(kernel).smem == shared_memory_extent(kernel) + SMEM_ALIGN_SLACK
