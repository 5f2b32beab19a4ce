"""Kernels without a producer, CTAs per SM, and division by a broadcast
(docs/passes.md: "tawa-occupancy", "tawa-divide-by-reciprocal").

The norms kernels (examples/python/norms.py) at the benchmark's tile shapes
(`tawa.bench.memory.blocks`, rows of 1024, 4096 and 8192 columns) launch one
warp group (128 threads, no producer, no setmaxnreg), start with the
registers `tawa-occupancy` decided (`.maxnreg`, `.minnctapersm`), and ptxas
assembles each at that budget without spilling; the decision itself is
`tawa.transforms.lower.occupancy.decide` over the machine model.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tawa
from tawa.backend.ptx.abi import kernel_abi
from tawa.bench.memory import blocks
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.kernel_info import kernel_info
from tawa.runtime.launch import LaunchShape
from tawa.target.hopper import REGISTER_FILE_SIZE, launch_register_cap, resident_ctas
from tawa.torch.norm_kernels import program
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.lower.occupancy import HEADROOM, decide
from tawa.transforms.tile.reciprocal import DivideByReciprocalPass

ROOT = Path(__file__).resolve().parents[2]
NORMS = ROOT / "examples" / "python" / "norms.py"
PTXAS = shutil.which("ptxas")
BF16 = ml_dtypes.bfloat16

KERNELS = ("softmax", "rmsnorm", "layernorm", "add_rmsnorm", "swiglu")
WIDTHS = (1024, 4096, 8192)

DECISIONS = {
    # (kernel, BLOCK_M, BLOCK_N): (CTAs per SM, .maxnreg)
    ("softmax", 8, 1024): (4, 128), ("softmax", 2, 4096): (4, 128), ("softmax", 1, 8192): (4, 128),
    ("rmsnorm", 8, 1024): (4, 128), ("rmsnorm", 4, 4096): (2, 248), ("rmsnorm", 2, 8192): (2, 248),
    ("layernorm", 16, 1024): (2, 248), ("layernorm", 1, 4096): (4, 128), ("layernorm", 1, 8192): (2, 248),
    ("add_rmsnorm_row", 8, 1024): (4, 128), ("add_rmsnorm_row", 4, 4096): (2, 248),
    ("add_rmsnorm_row", 2, 8192): (2, 248),
    ("swiglu", 16, 512): (4, 128),
}
"""What tawa-occupancy decides at the benchmark's tile shapes (ptxas fits
each without spills: `test_norms_assemble_without_spills`)."""


def source(kernel: str, block_m: int, block_n: int) -> str:
    out = subprocess.run([sys.executable, "-m", "tawa.frontend", str(NORMS), "--kernel", kernel,
                          "-D", f"BLOCK_M={block_m}", "-D", f"BLOCK_N={block_n}"],
                         capture_output=True, text=True, check=True)
    return out.stdout


def shapes() -> list[tuple[str, int, int]]:
    found = []
    for k in KERNELS:
        for n in WIDTHS:
            b = blocks(k, n)
            shape = (program(k, n), b["BLOCK_M"], b["BLOCK_N"])
            if shape not in found:
                found.append(shape)
    return found


def test_the_table_covers_the_benchmark_shapes():
    assert sorted(shapes()) == sorted(DECISIONS)


# --------------------------------------------------------------------------- the decision


def test_decide_takes_as_many_ctas_as_the_demand_allows():
    # 154 estimated + 16 of headroom = 170 -> 176 a thread: 2 CTAs of 128 threads, each with 248.
    d = decide(128, 1024, 154)
    assert (d.need, d.ctas_per_sm, d.maxnreg) == (176, 2, 248)
    # 58 -> 80: 6 CTAs, 65536 / (6 * 128) = 85 -> 80 registers each.
    d = decide(128, 1024, 58)
    assert (d.need, d.ctas_per_sm, d.maxnreg) == (80, 6, 80)
    for demand in range(24, 240, 7):
        d = decide(128, 1024, demand)
        assert d.maxnreg >= min(d.need, launch_register_cap(128))  # never below what the demand needs
        assert d.ctas_per_sm * 128 * d.maxnreg <= REGISTER_FILE_SIZE
        assert resident_ctas(128, d.maxnreg, 1024) == d.ctas_per_sm
        assert d.need == -(-(demand + HEADROOM) // 8) * 8


def test_decide_respects_the_other_limits():
    assert decide(128, 1024, 10).ctas_per_sm == 16  # 2048 threads an SM
    assert decide(128, 100_000, 10).ctas_per_sm == 2  # 228 KB of shared memory an SM
    assert decide(1024, 0, 30).ctas_per_sm == 1  # a CTA of 1024 threads at 64 registers: 1 per SM
    assert decide(128, 1024, None).maxnreg == 248  # not estimated: what 128 threads may start with
    assert decide(128, 1024, 40, budget=48).maxnreg == 48  # at most the partition's budget


def test_a_persistent_launch_fills_the_ctas_per_sm():
    shape = LaunchShape((1000, 1, 1), (128, 1, 1), 1024, persistent=True, ctas_per_sm=3)
    assert shape.launch_grid(132) == (396, 1, 1)
    assert LaunchShape((100, 1, 1), (128, 1, 1), 1024, persistent=True, ctas_per_sm=3).launch_grid(132) == (100, 1, 1)


def test_kernel_info_checks_the_ctas_fit():
    with pytest.raises(Exception, match="do not fit an SM"):
        tawa.parse('func.func @k() attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 1024, '
                   'maxnreg = 248, ctas_per_sm = 3>} { func.return }')


# --------------------------------------------------------------------------- the norms kernels


@pytest.mark.slow
@pytest.mark.parametrize("kernel, block_m, block_n", sorted(DECISIONS))
def test_norms_decision(kernel, block_m, block_n):
    """One warp group, no producer and no setmaxnreg; the decision in
    #nvgpu.kernel, the ABI and the PTX entry."""
    module = tawa.parse(source(kernel, block_m, block_n))
    HopperPipelinePass().apply(tawa.context(), module)
    (k,) = [o for o in module.walk() if isinstance(o, type(module.body.block.first_op)) and o.sym_name.data == kernel]
    info = kernel_info(k)
    assert info.threads == 128
    assert not any(isinstance(o, nvgpu.SetMaxNRegOp) for o in k.walk())
    assert (info.ctas_per_sm, info.maxnreg) == DECISIONS[kernel, block_m, block_n]
    abi = kernel_abi(k)
    assert (abi.ctas_per_sm, abi.maxnreg) == DECISIONS[kernel, block_m, block_n]


@pytest.mark.slow
@pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")
@pytest.mark.parametrize("kernel, block_m, block_n", sorted(DECISIONS))
def test_norms_assemble_without_spills(kernel, block_m, block_n, tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))  # ptxas runs: no cubin from an earlier run
    compiled = tawa.compile(source(kernel, block_m, block_n), kernel)
    ptx = compiled.ptx
    ctas, regs = DECISIONS[kernel, block_m, block_n]
    assert ".reqntid 128, 1, 1" in ptx and "setmaxnreg" not in ptx
    assert f".maxnreg {regs}\n" in ptx
    assert (f".minnctapersm {ctas}\n" in ptx) == (ctas > 1)
    log = compiled.assemble().log
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert spills and all(s == ("0", "0") for s in spills), log
    used = int(re.search(r"Used (\d+) registers", log)[1])
    assert used <= regs


# --------------------------------------------------------------------------- division


ROWS = """
func.func @k(%X: memref<?x?xf32>, %V: memref<?xf32>, %Y: memref<?x?xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<8x32xf32>
  %v = tile.load %V[%c0] : memref<?xf32> -> tensor<8xf32>
  %e = tile.expand_dims %v, 1 : tensor<8xf32> -> tensor<8x1xf32>
  %b = tile.broadcast %e : tensor<8x1xf32> -> tensor<8x32xf32>
  %q = arith.divf %x, %b : tensor<8x32xf32>
  %sb = tile.splat %s : f32 -> tensor<8x32xf32>
  %r = arith.divf %q, %sb : tensor<8x32xf32>
  tile.store %r, %Y[%c0, %c0] : tensor<8x32xf32>, memref<?x?xf32>
  func.return
}
"""


def test_division_by_a_broadcast_within_an_ulp():
    """x / v[:, None] / s against x * (1/v)[:, None] * (1/s) in the interpreter:
    each step within one f32 ulp of the division."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 32)).astype(np.float32)
    V = (rng.standard_normal(8) * 3).astype(np.float32)
    s = 0.3
    module = tawa.parse(ROWS)
    DivideByReciprocalPass().apply(tawa.context(), module)
    left = [str(o.result.type) for o in module.walk() if o.name == "arith.divf"]
    assert left == ["tensor<8xf32>", "f32"]  # the reciprocals: of the vector and of the scalar
    want, got = np.zeros_like(X), np.zeros_like(X)
    tawa.interpret(ROWS, "k", (1,), X, V, want, s)
    tawa.interpret(module, "k", (1,), X, V, got, s)
    ulps = np.abs(want.view(np.int32).astype(np.int64) - got.view(np.int32).astype(np.int64))
    assert ulps.max() <= 2 and (ulps == 0).mean() > 0.5


def test_bf16_division_is_left():
    text = ROWS.replace("f32", "bf16").replace("%s: bf16", "%s: bf16")
    module = tawa.parse(text)
    DivideByReciprocalPass().apply(tawa.context(), module)
    assert len([o for o in module.walk() if o.name == "arith.divf"]) == 2
