"""compute-sanitizer (memcheck, racecheck, synccheck, initcheck) reports 0
errors for every example kernel at small ragged shapes (tawa/tools/sanitize.py).

The GPU tests (marker `gpu`) run the four tools once, in parallel (one
process each, all examples inside), then check each (tool, example): the
tool's ERROR SUMMARY is 0, no report line falls in the example's launches,
and the example ran and matched its reference.  The CPU tests check the
parsing of the sanitizer's output and that each example's inputs and
reference agree with the tile-level interpreter (`tawa.interpret`), so that
a GPU failure is about the kernel, not about the harness.

Run: `pytest -m gpu tests/runtime/test_sanitizers_gpu.py` on an H100 (about
2-4 minutes); docs/testing.md, section Sanitizers.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tawa
from tawa.tools.sanitize import CASES, EXAMPLES_DIR, TOOLS, parse_output, run_all, sanitizer
from tawa.transforms.hopper_pipeline import HopperPipelinePass

# --------------------------------------------------------------------------- CPU: the harness

OUTPUT = """\
========= COMPUTE-SANITIZER
SANITIZE-BEGIN gemm
SANITIZE-END gemm ok rel_err=1.66e-03
SANITIZE-BEGIN matmul
========= Invalid __global__ write of size 2 bytes
=========     at matmul+0x1a0
=========     by thread (5,0,0) in block (1,0,0)
=========
SANITIZE-END matmul ok rel_err=1.70e-03
SANITIZE-BEGIN attention_fwd
SANITIZE-END attention_fwd FAILED LaunchError: bad
========= ERROR SUMMARY: 1 error
"""


def test_parse_output_attributes_reports_to_examples():
    r = parse_output("memcheck", OUTPUT)
    assert r.errors == 1
    assert r.reports == {"gemm": 0, "matmul": 1, "attention_fwd": 0}
    assert r.outcome == {"gemm": "ok rel_err=1.66e-03", "matmul": "ok rel_err=1.70e-03",
                         "attention_fwd": "FAILED LaunchError: bad"}
    assert not r.clean(["gemm"])  # the summary counts every example's errors
    assert parse_output("memcheck", OUTPUT.replace("1 error", "0 errors")).clean(["gemm", "matmul"])
    assert not parse_output("memcheck", OUTPUT.replace("1 error", "0 errors")).clean(["attention_fwd"])


def test_a_run_without_a_summary_is_not_clean():
    r = parse_output("racecheck", "SANITIZE-BEGIN gemm\nSegmentation fault\n")
    assert r.errors is None and not r.clean(["gemm"]) and "gemm" not in r.outcome


def test_every_example_kernel_is_covered():
    import re

    kernels = set()
    for f in EXAMPLES_DIR.glob("*.mlir"):
        kernels |= set(re.findall(r"^func\.func @(\w+)", f.read_text(), re.M))
    assert {c.kernel for c in CASES.values()} == kernels


@pytest.mark.parametrize("name, depth", [("gemm_128x128_deep", 6), ("gemm_64x128_deep", 8)])
def test_deep_ring_cases_get_their_depth_and_wrap_it_twice(name, depth):
    """The deep-ring cases compile at the depth their inputs assume (2D+1 k-tiles)."""
    case = CASES[name]
    module, pipeline = tawa.parse(case.text()), HopperPipelinePass.of(**case.options())
    pipeline.specialize_pass().apply(tawa.context(), module)
    assert pipeline.depth_and_epilogue(module)[0] == depth
    args, _, _ = case.inputs(np.random.default_rng(0))
    assert -(-args[-1] // case.config.block_k) == 2 * depth + 1


@pytest.mark.parametrize("name", [n if n in ("gemm", "attention_fwd") else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(CASES)])
def test_inputs_and_reference_agree_with_the_interpreter(name):
    """The tile program, interpreted on the CPU with the harness's arguments,
    matches the harness's float32 reference within half the bound the GPU
    run is held to (1e-2; fp8 attention 2.5e-2: P rounded to e4m3)."""
    case = CASES[name]
    args, grid, error = case.inputs(np.random.default_rng(0))
    tawa.interpret(case.text(), case.kernel, grid, *args)
    assert error(args) <= case.tolerance / 2


# --------------------------------------------------------------------------- GPU: the sanitizers


@functools.lru_cache(maxsize=1)
def results():
    return run_all(TOOLS, list(CASES))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("tool", TOOLS)
def test_no_sanitizer_errors(cuda, tool, name):
    if sanitizer() is None:
        pytest.skip("compute-sanitizer is not on PATH (nor in /usr/local/cuda*/bin)")
    r = results()[tool]
    tail = r.output[-6000:]
    assert r.outcome.get(name, "").startswith("ok"), f"{tool}: {name} {r.outcome.get(name, 'did not finish')}\n{tail}"
    assert r.reports.get(name, 0) == 0, f"{tool}: {r.reports[name]} report lines during {name}\n{tail}"
    assert r.errors == 0, f"{tool}: ERROR SUMMARY {r.errors} (reports per example: {r.reports})\n{tail}"
