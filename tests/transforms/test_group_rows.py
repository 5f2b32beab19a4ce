"""Warp groups that own 128 rows (`consumer_warps` below one warp group per
64 accumulator rows: `tawa.transforms.partition.warp_groups.group_rows_of_tile`).

For GEMM configurations whose consumer warp groups each own 128 rows of the
tile (256x128 with 8 consumer warps under each epilogue and staging, 128x128
with one warp group, fp8 operands, and a K×N B read MN-major):

* the structure: every wgmma fragment is `rows`xBLOCK_N with rows =
  BLOCK_M / (consumer warp groups), and after `tawa-expand-wgmma`
  each k-step issues one `nvgpu.wgmma_mma_async` per 64-row block (`row_block`
  0..R-1, chained on one accumulator, one B descriptor), row block r's A
  descriptor 64 rows (8192 bytes of 128-byte rows) beyond row block 0's;
* the CPU simulator runs the whole `tawa-hopper-pipeline{prepare=false}`
  output (plus tawa-prepare-ptx less its scf-to-cf step) against the tile
  program, on ragged sizes with K loops of 0, 1, D and D + 1 trips (ring
  depth D), outputs poisoned with NaN; K = 0 gives exactly zero;
* the simulator catches a wrong row block: all instructions on row block 0,
  or row block 1's A descriptor left at row block 0's rows, give wrong C;
* the printed PTX assembles with ptxas without spills, the two instructions
  of a k-step writing disjoint halves of the accumulator's registers;
* splits that are not whole 64-row blocks, and a register A operand
  (attention's P·V) in a warp group of 128 rows, are one-line located errors.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np
import pytest
from ptxas_check import assert_assembles_without_spills, needs_ptxas
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf

import tawa
from tawa.backend.ptx.printer import print_ptx
from tawa.diagnostics import TawaError
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.kernel_info import kernel_info
from tawa.interpreters.schedule import Schedule
from tawa.kernels.gemm import GemmConfig, element_bytes, gemm_source
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DTYPES = {"bf16": ml_dtypes.bfloat16, "f8E4M3FN": ml_dtypes.float8_e4m3fn}
ROW_BLOCK_BYTES = 64 * 128
"""64 rows of a 128-byte-row (128B-swizzled) A slot: row block 1's A offset."""


class Config(NamedTuple):
    id: str
    gemm: GemmConfig
    consumer_warps: int
    stages: int
    options: dict[str, Any] = {}
    programs: tuple[int, int] = (2, 2)
    """Programs along M and N (every edge ragged)."""

    @property
    def rows(self) -> int:
        """Rows each consumer warp group owns."""
        return self.gemm.block_m // (self.consumer_warps // 4)

    def sizes(self, trips: int) -> tuple[int, int, int]:
        """(M, N, K): ragged programs, K of `trips` steps (1 and D + 1: the last short)."""
        bm, bn, bk = self.gemm.tile
        pm, pn = self.programs
        m, n = bm * (pm - 1) + bm // 2 + 3, bn * (pn - 1) + 5
        k = bk * trips - (bk // 4 if trips in (1, self.stages + 1) else 0)
        return m, n, k


CONFIGS = [
    Config("256x128-single", GemmConfig(256, 128, 64), 8, 2, {"staging": "single"}),
    Config("256x128-threads", GemmConfig(256, 128, 64), 8, 2, {"epilogue": "threads"}),
    Config("256x128-subtiled-warpgroup", GemmConfig(256, 128, 64), 8, 2,
           {"staging": "subtiled", "store_group": "warpgroup"}),
    Config("128x128-one-group", GemmConfig(128, 128, 64), 4, 2),
    Config("256x128x128-fp8", GemmConfig(256, 128, 128, "f8E4M3FN", "f8E4M3FN"), 8, 2),
    Config("256x128-b_kn", GemmConfig(256, 128, 64, b_layout="kn"), 8, 2),
]
BY_ID = {c.id: c for c in CONFIGS}


@cache
def lowered(cfg_id: str) -> ModuleOp:
    """The structured output the simulator runs (and the printer prints after scf-to-cf)."""
    cfg = BY_ID[cfg_id]
    module = tawa.parse(gemm_source(cfg.gemm), f"gemm_{cfg.id}.mlir")
    pipeline = HopperPipelinePass.of(prepare=False, consumer_warps=cfg.consumer_warps, stages=cfg.stages, **cfg.options)
    ctx = tawa.context()
    for p in [pipeline.specialize_pass(), *pipeline.steps(cfg.stages), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    return module


def kernel(module: ModuleOp) -> func.FuncOp:
    return next(o for o in module.ops if isinstance(o, func.FuncOp))


def mmas(module: ModuleOp) -> list[nvgpu.WgmmaMmaAsyncOp]:
    return [o for o in module.walk() if isinstance(o, nvgpu.WgmmaMmaAsyncOp)]


def k_steps(cfg: Config) -> int:
    """wgmma instructions per row block of one BLOCK_K (each reads 32 bytes of K)."""
    return cfg.gemm.block_k * element_bytes(cfg.gemm.a_dtype) // 32


# --------------------------------------------------------------------------- structure


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.id)
def test_fragments_and_row_blocks(cfg: Config):
    module = lowered(cfg.id)
    info = kernel_info(kernel(module))
    assert info.threads == 128 * (1 + cfg.consumer_warps // 4)
    assert cfg.rows == 128
    blocks = cfg.rows // 64
    ops = mmas(module)
    assert ops and not any(isinstance(o, nvgpu.WgmmaOp) for o in module.walk())
    for o in ops:
        assert isinstance(o.result.type, nvgpu.FragmentType)
        assert o.result.type.get_shape() == (cfg.rows, cfg.gemm.block_n), str(o)
        assert o.row_blocks() == blocks
        assert o.lhs.type.get_shape() == (cfg.rows, cfg.gemm.block_k), str(o)  # an M-row A descriptor
    # Per k-step: row blocks 0..R-1 in order, chained, one B descriptor, A r·64 rows further.
    assert len(ops) % (blocks * k_steps(cfg)) == 0
    assert [o.block() for o in ops] == list(range(blocks)) * (len(ops) // blocks)
    for i in range(0, len(ops), blocks):
        step = ops[i:i + blocks]
        advances = [o.lhs.owner for o in step]
        assert all(isinstance(a, nvgpu.WgmmaDescAdvanceOp) for a in advances)
        assert len({a.source for a in advances}) == 1
        first = advances[0].offset.value.data
        assert [a.offset.value.data - first for a in advances] == [r * ROW_BLOCK_BYTES for r in range(blocks)]
        assert all(o.rhs == step[0].rhs for o in step)
        assert all(o.acc == prev.result for prev, o in zip(step, step[1:]))


# --------------------------------------------------------------------------- the simulator


def simulate(module: ModuleOp, cfg: Config, trips: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(C of the lowered `module`, C of the tile program), both poisoned with NaN first."""
    rng = np.random.default_rng(seed)
    m, n, k = cfg.sizes(trips)
    dtype = DTYPES[cfg.gemm.a_dtype]
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n) if cfg.gemm.b_layout == "kn" else (n, k)).astype(dtype)
    bm, bn, _ = cfg.gemm.tile
    grid = (-(-m // bm), -(-n // bn))
    assert grid == cfg.programs
    want = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    tawa.interpret(gemm_source(cfg.gemm), "gemm", grid, a, b, want, m, n, k)
    got = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    tawa.interpret(module, "gemm", grid, a, b, got, m, n, k, schedule=Schedule("random", seed=seed), ctas=2)
    return got.astype(np.float64), want.astype(np.float64)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.id)
@pytest.mark.parametrize("trips", ["0", "1", "D", "D+1"])
def test_simulator_matches_the_tile_program(cfg: Config, trips: str):
    count = {"0": 0, "1": 1, "D": cfg.stages, "D+1": cfg.stages + 1}[trips]
    got, want = simulate(lowered(cfg.id), cfg, count, seed=count + 3)
    assert not np.isnan(want).any()
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements of C never written"
    if count == 0:
        assert not want.any() and not got.any(), "K = 0 must give exactly zero"
        return
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err <= 1e-2, f"relative error {err:.2e}"


def wrong(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.isnan(got).any()) or np.linalg.norm(got - want) / np.linalg.norm(want) > 0.5


def test_the_simulator_catches_every_instruction_on_row_block_0():
    cfg = BY_ID["256x128-single"]
    got, want = simulate(lowered(cfg.id), cfg, cfg.stages + 1, seed=1)
    assert not wrong(got, want)
    module = lowered(cfg.id).clone()
    ops = mmas(module)
    assert {o.block() for o in ops} == {0, 1}
    for o in ops:
        o.properties["row_block"] = IntegerAttr(0, 64)
    module.verify()
    got, want = simulate(module, cfg, cfg.stages + 1, seed=1)
    assert wrong(got, want)


def test_the_simulator_catches_row_block_1_reading_row_block_0s_rows():
    cfg = BY_ID["256x128-single"]
    module = lowered(cfg.id).clone()
    ops = mmas(module)
    for r0, r1 in zip(ops[::2], ops[1::2]):
        assert (r0.block(), r1.block()) == (0, 1)
        a0, a1 = r0.lhs.owner, r1.lhs.owner
        assert isinstance(a0, nvgpu.WgmmaDescAdvanceOp) and isinstance(a1, nvgpu.WgmmaDescAdvanceOp)
        assert a1.offset.value.data == a0.offset.value.data + ROW_BLOCK_BYTES
        a1.properties["offset"] = IntegerAttr(a0.offset.value.data, 64)
    module.verify()
    got, want = simulate(module, cfg, cfg.stages + 1, seed=1)
    assert wrong(got, want)


# --------------------------------------------------------------------------- ptxas

WGMMA = re.compile(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)\S* \{([^}]*)\}")


@needs_ptxas
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.id)
def test_assembles_without_spills(cfg: Config, tmp_path: Path):
    module = lowered(cfg.id).clone()
    ConvertScfToCf().apply(tawa.context(), module)
    ptx = print_ptx(module)
    assert f".reqntid {128 * (1 + cfg.consumer_warps // 4)}, 1, 1" in ptx
    shape = f"m64n{cfg.gemm.block_n}k{32 // element_bytes(cfg.gemm.a_dtype)}"
    found = WGMMA.findall(ptx)
    assert found and {s for s, _ in found} == {shape}, {s for s, _ in found}
    # Consecutive instructions (row blocks 0 and 1 of a k-step) write disjoint 64-register
    # halves of the warp group's 128-register accumulator.
    regs = [tuple(r.strip() for r in rs.split(",")) for _, rs in found]
    assert len(regs) == 2 * k_steps(cfg)  # one main loop
    for lo, hi in zip(regs[::2], regs[1::2]):
        assert len(lo) == len(hi) == len(set(lo)) == len(set(hi)) == 64
        assert not set(lo) & set(hi), f"row blocks 0 and 1 share registers: {sorted(set(lo) & set(hi))}"
    # In place: every k-step accumulates in the same two halves.
    assert {frozenset(r) for r in regs} == {frozenset(regs[0]), frozenset(regs[1])}
    assert_assembles_without_spills(ptx, tmp_path)


# --------------------------------------------------------------------------- errors


def error_of(src: str, consumer_warps: int) -> str:
    with pytest.raises(TawaError) as info:
        HopperPipelinePass(consumer_warps=consumer_warps).apply(tawa.context(), tawa.parse(src, "k.mlir"))
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert re.match(r"k\.mlir:\d+:\d+: error: ", msg), msg
    return msg


def test_warp_groups_that_cannot_split_the_rows_are_an_error():
    msg = error_of(gemm_source(GemmConfig(128, 128, 64)), 12)
    assert msg.startswith("k.mlir:1:1: error: tawa-warp-specialize: 3 consumer warp groups cannot split a "
                          "128-row tile"), msg


def test_a_register_lhs_needs_warp_groups_of_64_rows():
    msg = error_of((EXAMPLES / "attention_fwd.mlir").read_text(), 4)
    assert "lhs in registers needs warp groups of 64 rows" in msg, msg
