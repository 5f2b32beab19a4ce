"""`tawa-split-tma-chunks` (tawa/transforms/prepare/split_tma.py) under the CPU
simulator: TMA copies written out as one op per box (column chunk) load
and store what the whole-tile ops did, bit for bit, and a store's boxes
stay one bulk group (closed by its commit), so that the simulator still
sees a staging tile written while a store may read it."""

from __future__ import annotations

import numpy as np
import pytest
from example_cases import CASES, EXAMPLES, case, fresh_outputs
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.rewriter import Rewriter

import tawa
from tawa.diagnostics import TawaError
from tawa.dialects import nvgpu
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.split_tma import SplitTmaChunksPass

STAGES = 2


def lowered(kernel: str, staging: str = "full", split: bool = True) -> ModuleOp:
    file = CASES[kernel][0]
    module = tawa.parse((EXAMPLES / file).read_text(), f"examples/{file}")
    ctx = tawa.context()
    HopperPipelinePass.of(stages=STAGES, epilogue="tma", staging=staging, prepare=False).apply(ctx, module)
    if split:
        SplitTmaChunksPass().apply(ctx, module)
    return module


def run(kernel: str, module: ModuleOp, trips: int, seed: int) -> list[np.ndarray]:
    c = case(kernel, trips, np.random.default_rng(seed))
    out = fresh_outputs(c)
    tawa.interpret(module, kernel, c.grid, *out, schedule=Schedule("random", seed=seed), ctas=1)
    return [out[i] for i in c.outputs]


@pytest.mark.parametrize(("kernel", "chunked_loads", "stores"), [
    ("gemm", False, {4}),  # A and B tiles of one chunk; the 128x256 staging tile: four boxes, one commit
    pytest.param("attention_fwd", True, {2}, marks=pytest.mark.slow),  # tiles of 128 columns: two boxes each
])
def test_the_boxes_copy_what_the_tiles_did(kernel, chunked_loads, stores):
    whole, boxes = lowered(kernel, split=False), lowered(kernel)
    assert not any(isinstance(o, nvgpu.TmaLoadOp | nvgpu.TmaStoreOp) for o in boxes.walk())
    blocks = [o.parent_block() for o in boxes.walk() if isinstance(o, nvgpu.TmaStoreCommitOp)]
    assert {sum(isinstance(o, nvgpu.TmaStoreBoxOp) for o in b.ops) for b in blocks} == stores
    offsets = {o.offset.value.data for o in boxes.walk() if isinstance(o, nvgpu.TmaLoadBoxOp)}
    assert (offsets != {0}) == chunked_loads
    for trips in (1, STAGES + 1):
        got, want = run(kernel, boxes, trips, seed=trips), run(kernel, whole, trips, seed=trips)
        for g, w in zip(got, want):
            assert not np.isnan(g.astype(np.float64)).any(), "elements never written"
            assert np.array_equal(g, w), f"{kernel}, {trips} K tiles: the boxes copy something else"


def test_the_simulator_sees_a_missing_wait():
    """Without the wait before the staging tile is written again, a CTA's
    second program overwrites it while its first store's boxes may still
    read it."""
    module = lowered("gemm")
    Rewriter.erase_op(next(o for o in module.walk() if isinstance(o, nvgpu.TmaStoreWaitOp)))
    with pytest.raises(TawaError, match=r"nvgpu.frag_store_shared writes shared memory .* that the TMA store "
                       r"issued by thread 128 may still read"):
        run("gemm", module, 1, seed=0)


def test_a_wait_counts_commits_not_boxes():
    """Subtiled: each 64-column chunk is one box and one commit; a wait that
    leaves 2 groups pending lets chunk 2 overwrite buffer 0 while chunk 0's
    store may still read it, one that leaves 1 does not."""
    module = lowered("gemm", "subtiled")
    waits = [o for o in module.walk() if isinstance(o, nvgpu.TmaStoreWaitOp)]
    assert [w.pending.value.data for w in waits] == [1, 1, 1, 1, 0]
    run("gemm", module, 1, seed=0)
    waits[2].pending = IntegerAttr(2, 32)
    with pytest.raises(TawaError, match=r"nvgpu.frag_store_shared writes shared memory .* that the TMA store "
                       r"issued by thread 128 may still read"):
        run("gemm", module, 1, seed=0)
