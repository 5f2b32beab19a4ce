"""The shared-memory planner: the byte plan of the rings, the same one
tawa-lower-aref allocates, and the depth tawa-hopper-pipeline picks from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import BFloat16Type
from xdsl.passes import PassPipeline

import tawa
from tawa.analysis.smem_plan import plan_shared_memory
from tawa.dialects import aref, nvgpu
from tawa.target.hopper import MAX_SMEM_BYTES, SMEM_ALIGN_SLACK
from tawa.transforms.hopper_pipeline import HopperPipelinePass, deepest_fitting
from tawa.transforms.partition.warp_specialize import WarpSpecializePass

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _creates(name: str):
    module = tawa.parse((EXAMPLES / name).read_text())
    PassPipeline((WarpSpecializePass(),)).apply(tawa.context(), module)
    return module, [o for o in module.walk() if isinstance(o, aref.CreateOp)]


def test_gemm_plan():
    _, creates = _creates("gemm.mlir")
    plan = plan_shared_memory(creates, lambda c: 4)
    (ring,) = plan.rings.values()
    # A: 4 x 16 KB at 0, B: 4 x 32 KB, then two arrays of 4 mbarriers.
    assert [p.offset for p in ring.buffers] == [0, 65536]
    assert (ring.full.offset, ring.empty.offset) == (196608, 196640)
    assert ring.tx_bytes == 49152
    assert plan.total == 196672 + SMEM_ALIGN_SLACK and plan.fits
    five = plan_shared_memory(creates, lambda c: 5)
    assert five.total == 246864 and not five.fits and five.total > MAX_SMEM_BYTES


def test_lower_aref_allocates_the_plan():
    module = tawa.parse((EXAMPLES / "gemm.mlir").read_text())
    PassPipeline((HopperPipelinePass(stages=4, epilogue="threads"),)).apply(tawa.context(), module)
    allocs = [(o.offset.value.data, o.result.type) for o in module.walk() if isinstance(o, nvgpu.SmemAllocOp)]
    _, creates = _creates("gemm.mlir")
    (ring,) = plan_shared_memory(creates, lambda c: 4).rings.values()
    assert allocs == [(p.offset, p.type) for p in (*ring.buffers, ring.full, ring.empty)]


def test_the_subtiled_staging_follows_the_rings():
    """staging=subtiled at 4 stages (where the full 64 KiB tile does not
    fit): the TMA-store epilogue's two 128x64 buffers follow the rings."""
    module = tawa.parse((EXAMPLES / "gemm.mlir").read_text())
    pipeline = HopperPipelinePass.of(stages=4, staging="subtiled")
    ctx = tawa.context()
    for step in [pipeline.specialize_pass(), *pipeline.steps(4)]:
        step.apply(ctx, module)
        if step.name == "tawa-lower-tile":
            break
    allocs = [(o.offset.value.data, o.result.type) for o in module.walk() if isinstance(o, nvgpu.SmemAllocOp)]
    _, creates = _creates("gemm.mlir")
    plan = plan_shared_memory(creates, lambda c: 4, staging=[nvgpu.SmemType([2, 128, 64], BFloat16Type(), 128)])
    (ring,) = plan.rings.values()
    assert allocs == [(p.offset, p.type) for p in (*ring.buffers, ring.full, ring.empty, *plan.staging)]
    assert plan.fits and plan.total == 231424


def test_barriers_follow_every_ring_buffer():
    # attention_fwd: Q (32 KiB, depth 1), K and V (32 KiB a slot, depth 2): the tiles back to back,
    # then the barrier arrays, 8 bytes a slot, with no alignment padding among the tiles.
    _, creates = _creates("attention_fwd.mlir")
    creates = creates[:3]
    plan = plan_shared_memory(creates, lambda c: 1 if c is creates[0] else 2)
    q, k, v = (plan.rings[c] for c in creates)
    assert [r.buffers[0].offset for r in (q, k, v)] == [0, 32768, 98304]
    barriers = [(r.full.offset, r.empty.offset) for r in (q, k, v)]
    assert barriers == [(163840, 163848), (163856, 163872), (163888, 163904)]
    assert plan.used == 163920


def test_deepest_fitting_depths():
    # GEMM's 48 KB stages: 4; attention's Q plus K and V rings of 32 KB: 3 (224 KiB of tiles; the
    # barriers after all of them, not between: between, their padding took 2 KiB and left 2).
    for name, depth in (("gemm.mlir", 4), ("attention_fwd.mlir", 3), ("matmul.mlir", 4)):
        module, _ = _creates(name)
        assert deepest_fitting(module) == depth, name


def test_small_tiles_get_deep_rings():
    # HopperPipelinePass's depth (`stages=0`) with the epilogue's staging: as deep as fits, up to
    # `max-stages` (4 by default, 8 for the GEMM configurations): 64x128x64 bf16 (24 KB a stage) and
    # 128x256x32 8, 128x96 7, 128x128 6; 128x256x64 (48 KB) 4 either way.
    from tawa.kernels.gemm import GemmConfig, gemm_source

    def depth(config: GemmConfig, **options) -> int:
        module, pipeline = tawa.parse(gemm_source(config)), HopperPipelinePass.of(**options)
        PassPipeline((pipeline.specialize_pass(),)).apply(tawa.context(), module)
        return pipeline.depth_and_epilogue(module)[0]

    tiles = {(64, 128, 64): 8, (128, 256, 32): 8, (128, 96, 64): 7, (128, 128, 64): 6, (128, 256, 64): 4,
             (64, 64, 64): 8}
    assert {t: depth(GemmConfig(*t), max_stages=8) for t in tiles} == tiles
    assert {t: depth(GemmConfig(*t)) for t in tiles} == dict.fromkeys(tiles, 4)
    assert depth(GemmConfig(64, 64, 128, "f8E4M3FN", "f8E4M3FN"), max_stages=8) == 8
    assert depth(GemmConfig(64, 64, 64), max_stages=2) == 2


@pytest.mark.slow
def test_once_depth_takes_what_the_rings_leave():
    # `once-depth=0` (the default): Q gets two slots in persistent kernels where they fit beside
    # the rings, epilogue and staging chosen without them; d256's Q (64 KiB) does not fit twice
    # beside its 2-deep rings and subtiled staging, so it keeps one; never without persistence.
    def decided(file: str, **options) -> tuple[int, int]:
        module, pipeline = tawa.parse((EXAMPLES / file).read_text()), HopperPipelinePass.of(prepare=False, **options)
        PassPipeline((pipeline.specialize_pass(),)).apply(tawa.context(), module)
        d = pipeline.decide(module)
        return d.stages, d.once_depth

    assert decided("attention_fwd.mlir") == (2, 2)
    assert decided("attention_fwd_d64.mlir") == (4, 2)
    assert decided("attention_fwd_d256.mlir") == (2, 1)
    assert decided("attention_fwd.mlir", persistent=False) == (2, 1)
    assert decided("attention_fwd.mlir", once_depth=1) == (2, 1)
    assert decided("attention_fwd.mlir", stages=3) == (3, 1)  # 3 rings of K and V leave no room
    # What the pipeline builds: Q's two slots beside 2-deep K and V rings.
    module = tawa.parse((EXAMPLES / "attention_fwd.mlir").read_text())
    HopperPipelinePass(prepare=False).apply(tawa.context(), module)
    shapes = [str(a.result.type) for a in module.walk() if isinstance(a, nvgpu.SmemAllocOp)]
    assert shapes.count("!nvgpu.smem<2x128x128xbf16, swizzle = 128>") == 6, shapes  # Q, K, V of both kernels
