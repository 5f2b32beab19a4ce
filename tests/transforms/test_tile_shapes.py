"""Tile shapes come from the tile program (docs/passes.md, "Tile shapes").

For one GEMM of each tile-shape family (`gemm_shapes.SHAPES`: BLOCK_M 64..256
→ 1..4 consumer warp groups, BLOCK_N 96..256, BLOCK_K giving 128-, 64- and
32-byte slot rows, and an MN-major B in 64B-swizzled rows):

* the partition and the slots follow the shape: G = BLOCK_M / 64 consumer
  warp groups with the derived register budgets, the slots' swizzle the
  widest span dividing their rows;
* the CPU simulator runs the whole `tawa-hopper-pipeline{prepare=false}`
  output (plus tawa-prepare-ptx less its scf-to-cf step) against the tile
  program, on ragged sizes with a K loop of D + 1 trips (ring depth D = 2),
  outputs poisoned with NaN;
* the same lowering, printed, assembles with ptxas without spills.

Shapes whose registers cannot fit are rejected by tawa-check-resources
before ptxas, and ptxas indeed refuses them.  Budgets are unit-tested
against the launch pool (`register_budgets`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from gemm_shapes import SHAPES, Shape, gemm
from ptxas_check import assemble, assert_assembles_without_spills, needs_ptxas
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.diagnostics import TawaError
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.kernel_info import kernel_info
from tawa.interpreters.schedule import Schedule
from tawa.target.hopper import register_pool
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.partition.warp_groups import register_budgets
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

STAGES = 2
DTYPES = {"bf16": ml_dtypes.bfloat16, "f8E4M3FN": ml_dtypes.float8_e4m3fn}
DERIVED = {1: (40, 256), 2: (40, 232), 3: (24, 160), 4: (24, 112)}
"""(producer, consumer) budgets per consumer warp groups G (docs/passes.md)."""


@cache
def lowered(shape: Shape) -> ModuleOp:
    """The structured output the simulator runs (and the printer prints after scf-to-cf)."""
    module = tawa.parse(gemm(shape), f"gemm_{shape.id}.mlir")
    pipeline, ctx = HopperPipelinePass(prepare=False), tawa.context()
    for p in [pipeline.specialize_pass(), *pipeline.steps(STAGES), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    return module


def kernel(module: ModuleOp) -> func.FuncOp:
    return next(o for o in module.ops if isinstance(o, func.FuncOp))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_partition_and_slots_follow_the_shape(shape: Shape):
    groups = shape.bm // 64
    info = kernel_info(kernel(lowered(shape)))
    producer, consumer = DERIVED[groups]
    assert info.threads == 128 * (1 + groups)
    assert info.regs == (producer, *[consumer] * groups)
    assert sum(info.regs) * 128 <= register_pool(info.threads)
    allocs = [o for o in lowered(shape).walk() if isinstance(o, nvgpu.SmemAllocOp)]
    # The ring slots (not the TMA-store epilogue's staging tile)
    tiles = [o.result.type for o in allocs if isinstance(o.result.type, nvgpu.SmemType) and o.result.name_hint != "staging"]
    b_tile = (shape.bk, shape.bn) if shape.b_kn else (shape.bn, shape.bk)
    assert [t.get_shape() for t in tiles] == [(STAGES, shape.bm, shape.bk), (STAGES, *b_tile)]
    assert tuple(t.swizzle.data for t in tiles) == shape.swizzles()
    # One descriptor each for A and B; SBO = 8 rows of the span.
    descs = [o for o in lowered(shape).walk() if isinstance(o, nvgpu.WgmmaDescEncodeOp)]
    assert tuple(d.swizzle.value.data for d in descs) == shape.swizzles()
    assert all(d.stride_byte_offset.value.data == 8 * d.swizzle.value.data for d in descs)


@pytest.mark.parametrize("shape", [SHAPES[0], *(pytest.param(s, marks=pytest.mark.slow) for s in SHAPES[1:])],
                         ids=lambda s: s.id)
def test_simulator_matches_the_tile_program(shape: Shape):
    rng = np.random.default_rng(shape.bm * 1000 + shape.bn + shape.bk)
    # Two programs each way, every edge ragged; K: D + 1 trips, the last short.
    m, n, k = shape.bm + shape.bm // 2 + 3, shape.bn + 5, (STAGES + 1) * shape.bk - shape.bk // 4
    dtype = DTYPES[shape.operand]
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n) if shape.b_kn else (n, k)).astype(dtype)
    grid = (-(-m // shape.bm), -(-n // shape.bn))
    want = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    tawa.interpret(gemm(shape), "gemm", grid, a, b, want, m, n, k)
    got = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    tawa.interpret(lowered(shape), "gemm", grid, a, b, got, m, n, k, schedule=Schedule("random", seed=3))
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert not np.isnan(w).any()
    assert not np.isnan(g).any(), f"{int(np.isnan(g).sum())} elements of C never written"
    err = np.linalg.norm(g - w) / np.linalg.norm(w)
    assert err <= 1e-2, f"relative error {err:.2e}"


@needs_ptxas
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_assembles_without_spills(shape: Shape, tmp_path: Path):
    module = lowered(shape).clone()
    ConvertScfToCf().apply(tawa.context(), module)
    ptx = print_ptx(module)
    groups = shape.bm // 64
    assert f".reqntid {128 * (1 + groups)}, 1, 1" in ptx
    assert f"setmaxnreg.inc.sync.aligned.u32 {DERIVED[groups][1]};" in ptx
    assert_assembles_without_spills(ptx, tmp_path)


@needs_ptxas
def test_registers_that_cannot_fit_are_reported_before_ptxas(tmp_path: Path):
    # 192x256: three consumer warp groups, 512 threads start with 128 registers
    # each, and one m64n256 wgmma needs ~154 of them at once.
    shape = Shape(192, 256, 64)
    with pytest.raises(TawaError) as info:
        HopperPipelinePass(stages=STAGES).apply(tawa.context(), tawa.parse(gemm(shape), "k.mlir"))
    msg = str(info.value)
    # Located at the dot the wgmma was made of.
    assert msg.startswith("k.mlir:17:5: error: tawa-check-resources: a wgmma with a 64x256xf32 accumulator "
                          "needs ~154 registers at once"), msg
    assert "512 threads starts with 128 per thread" in msg and "BLOCK_N ≤ 200" in msg
    # ... which is what ptxas says when it gets the kernel anyway.
    module, pipeline, ctx = tawa.parse(gemm(shape)), HopperPipelinePass(), tawa.context()
    for p in [pipeline.specialize_pass(), *pipeline.steps(STAGES)]:
        if p.name not in ("tawa-check-resources", "tawa-verify-protocol"):
            p.apply(ctx, module)
    res = assemble(print_ptx(module), tmp_path)
    assert res.returncode != 0 and "Insufficient registers (128)" in res.stderr, res.stderr
    assert "register target of 154" in res.stderr, res.stderr


def test_register_budgets_share_the_launch_pool():
    k = kernel(tawa.parse(gemm(Shape(128, 128, 64))))
    for groups, budgets in DERIVED.items():
        assert register_budgets(k, 4, 4 * groups, None, None) == budgets
    # Explicit budgets win; a derived one takes what is left.
    assert register_budgets(k, 4, 8, 24, 240) == (24, 240)
    assert register_budgets(k, 4, 8, None, 240) == (24, 240)
    assert register_budgets(k, 4, 8, 40, None) == (40, 232)
    assert register_budgets(k, 4, 12, 40, None) == (40, 152)
    # Oversubscribed: a located error naming the pool (640 threads hold 96 x 640).
    with pytest.raises(TawaError, match=r"32 x \(4 x 40 \+ 16 x 112\) = 62464 > 96 x 640 = 61440"):
        register_budgets(k, 4, 16, 40, 112)
    with pytest.raises(TawaError, match="oversubscribe"):
        register_budgets(k, 4, 8, None, 256)
