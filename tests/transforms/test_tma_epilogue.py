"""The TMA-store epilogue (tawa/transforms/lower/tma_epilogue.py) under the CPU
simulator: what it computes, that the simulator sees its ordering, and
which stores `epilogue=tma` refuses.

The differential tests of every example (test_lowering_differential.py)
run it at the default `epilogue=auto staging=auto` (the GEMMs: the full
staging tile at ring depths 1-3, the subtiled staging at depth 4, the
thread epilogue where neither fits); here: `tma`, full and subtiled,
forced against `threads` on the same ragged problem, K = 0, K-tile counts
around the ring depth, and a persistent CTA running several programs (the
staging buffers reused while earlier stores may still read them); and one
store per warp group (`store-group=warpgroup`; attention takes it by
default, so the differential tests run it there).
"""

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
from tawa.kernels.gemm import GemmConfig, gemm_source
from tawa.transforms.hopper_pipeline import HopperPipelinePass

STAGES = 2


def lowered(kernel: str, epilogue: str, staging: str = "full", store_group: str = "auto") -> ModuleOp:
    file = CASES[kernel][0]
    module = tawa.parse((EXAMPLES / file).read_text(), f"examples/{file}")
    HopperPipelinePass.of(stages=STAGES, epilogue=epilogue, staging=staging, store_group=store_group,
                          prepare=False).apply(tawa.context(), module)
    return module


def run(kernel: str, module: ModuleOp, trips: int, seed: int, ctas: int | None = None) -> list[np.ndarray]:
    c = case(kernel, trips, np.random.default_rng(seed))
    out = fresh_outputs(c)
    tawa.interpret(module, kernel, c.grid, *out, schedule=Schedule("random", seed=seed), ctas=ctas)
    return [out[i] for i in c.outputs]


@pytest.mark.parametrize("staging", ["full", pytest.param("subtiled", marks=pytest.mark.slow)])
def test_tma_and_thread_epilogues_store_the_same(staging: str):
    """Bit for bit: both store the same converted accumulators, clipped to
    the ragged edges (260 x 100 C: a partial row tile and column tile),
    whether the tile is staged whole or in 64-column chunks (two of them
    past C's last column: boxes the tensor map drops entirely)."""
    kernel = "gemm"
    tma, threads = lowered(kernel, "tma", staging), lowered(kernel, "threads")
    stores = [o for o in tma.walk() if isinstance(o, nvgpu.TmaStoreOp)]
    assert len(stores) == (4 if staging == "subtiled" else 1)
    assert not any(isinstance(o, nvgpu.TmaStoreOp) for o in threads.walk())
    for trips in (0, STAGES - 1, STAGES, STAGES + 1):  # K = 0 and around the ring depth
        got, want = run(kernel, tma, trips, seed=trips, ctas=1), run(kernel, threads, trips, seed=trips)
        for g, w in zip(got, want):
            assert not np.isnan(g.astype(np.float64)).any(), "elements never written"
            assert np.array_equal(g, w), f"{kernel}, {trips} K tiles: the epilogues differ"


@pytest.mark.slow
@pytest.mark.parametrize("staging", ["full", "subtiled"])
def test_stores_per_warp_group_store_the_same(staging: str):
    """`store-group=warpgroup`: each of the GEMM's two warp groups stages its
    64 rows in its own buffers and stores them itself (two 64-row boxes per
    chunk); bit for bit what the thread epilogue stores, on the ragged
    260 x 100 C (the second warp group's rows past C's last row in the last
    row tile), with one CTA running every program."""
    kernel = "gemm"
    by_group, threads = lowered(kernel, "tma", staging, "warpgroup"), lowered(kernel, "threads")
    (buf,) = [o for o in by_group.walk() if isinstance(o, nvgpu.SmemAllocOp) and o.result.name_hint == "staging"]
    assert buf.result.type.get_shape() == ((4, 64, 64) if staging == "subtiled" else (2, 64, 256))
    for trips in (0, STAGES + 1):
        got, want = run(kernel, by_group, trips, seed=trips, ctas=1), run(kernel, threads, trips, seed=trips)
        for g, w in zip(got, want):
            assert not np.isnan(g.astype(np.float64)).any(), "elements never written"
            assert np.array_equal(g, w), f"{kernel}, {trips} K tiles: the epilogues differ"


def test_the_simulator_sees_a_missing_wait():
    """Without the wait before the staging tile is written again, a CTA's
    second program overwrites it while its first store may still read it."""
    module = lowered("gemm", "tma")
    wait = next(o for o in module.walk() if isinstance(o, nvgpu.TmaStoreWaitOp))
    Rewriter.erase_op(wait)
    with pytest.raises(TawaError, match=r"nvgpu.frag_store_shared writes shared memory .* that the TMA store "
                       r"issued by thread 128 may still read"):
        run("gemm", module, 1, seed=0, ctas=1)


def test_the_simulator_sees_a_too_weak_subtile_wait():
    """Subtiled: a wait that leaves 2 stores pending lets chunk 2 overwrite
    buffer 0 while chunk 0's store may still read it."""
    module = lowered("gemm", "tma", "subtiled")
    waits = [o for o in module.walk() if isinstance(o, nvgpu.TmaStoreWaitOp)]
    assert [w.pending.value.data for w in waits] == [1, 1, 1, 1, 0]
    waits[2].pending = IntegerAttr(2, 32)
    with pytest.raises(TawaError, match=r"nvgpu.frag_store_shared writes shared memory .* that the TMA store "
                       r"issued by thread 128 may still read"):
        run("gemm", module, 1, seed=0, ctas=1)


def test_tma_refuses_a_store_it_cannot_take():
    """BLOCK_N = 8 bf16: 16-byte rows, no swizzle span for a staging tile;
    `auto` keeps the thread epilogue, `tma` says why not, at the store."""
    text = gemm_source(GemmConfig(block_m=64, block_n=8, block_k=64))
    module = tawa.parse(text, "gemm_n8.mlir")
    HopperPipelinePass(stages=2, epilogue="auto", prepare=False).apply(tawa.context(), module)
    assert not any(isinstance(o, nvgpu.TmaStoreOp) for o in module.walk())
    with pytest.raises(TawaError, match=r"^gemm_n8.mlir:\d+:\d+: error: tawa-stage-stores: epilogue=tma: this store "
                       r"cannot take the TMA-store epilogue: its 16-byte rows are not a multiple of a 32-byte "
                       r"swizzle span$"):
        HopperPipelinePass(stages=2, epilogue="tma").apply(tawa.context(), tawa.parse(text, "gemm_n8.mlir"))


class _Device:
    id = 0


class _CudaArray:
    """What the runtime reads of a CuPy array (f16: CuPy has no bf16)."""

    def __init__(self, shape: tuple[int, int], ptr: int):
        self.shape, self.ptr, self.device = shape, ptr, _Device()

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": "<f2", "data": (self.ptr, False), "strides": None, "version": 3}


_CudaArray.__module__ = "cupy._core.core"


@pytest.mark.slow
def test_a_c_with_unaligned_rows_is_an_argument_error_at_launch():
    """C's tensor map needs rows of a multiple of 16 bytes: 100 f16 columns
    (200 bytes) is the runtime's one-line ArgumentError, naming C; the
    thread epilogue takes them."""
    from tawa.runtime import ArgumentError

    text = (EXAMPLES / "gemm.mlir").read_text().replace("bf16", "f16")
    M, N, K = 128, 100, 64
    args = [_CudaArray((M, K), 0x1000_0000), _CudaArray((N, K), 0x2000_0000), _CudaArray((M, N), 0x3000_0000), M, N, K]
    with pytest.raises(ArgumentError, match=r"%C.*200 bytes, not a multiple of 16") as info:
        tawa.compile(text, "gemm", stages=3, epilogue="tma").plan(*args, grid=(1, 1))
    assert "\n" not in str(info.value)
    tawa.compile(text, "gemm", stages=3, epilogue="threads").plan(*args, grid=(1, 1))


@pytest.mark.slow
def test_auto_launches_the_thread_epilogue_twin_for_such_a_c():
    """With `epilogue="auto"` (the default) the same C is taken: the kernel's
    plan refuses it (TensorMapError), and the call goes to its twin compiled
    with the thread epilogue, which plans it (no GPU here: the launch itself
    then stops at the missing CuPy).  An explicit `epilogue="tma"` has no twin."""
    from tawa.runtime import LaunchError, TensorMapError

    text = (EXAMPLES / "gemm.mlir").read_text().replace("bf16", "f16")
    M, N, K = 128, 100, 64
    args = [_CudaArray((M, K), 0x1000_0000), _CudaArray((N, K), 0x2000_0000), _CudaArray((M, N), 0x3000_0000), M, N, K]
    auto = tawa.compile(text, "gemm", stages=3)
    with pytest.raises(TensorMapError):
        auto.plan(*args, grid=(1, 1))
    with pytest.raises(LaunchError, match="needs CuPy"):
        auto(*args, grid=(1, 1))
    assert auto._twin is not None and auto._twin.options == {"stages": 3, "epilogue": "threads"}
    assert auto._twin.plan(*args, grid=(1, 1)).params
    tma = tawa.compile(text, "gemm", stages=3, epilogue="tma")
    assert tma.fallback is None
    with pytest.raises(TensorMapError, match="%C"):
        tma(*args, grid=(1, 1))


def test_a_store_in_a_loop_of_the_program_is_told_from_one_per_program():
    """`in_program_loop`: after `tawa-persistent` the GEMM's epilogue store sits in the
    loop over programs only (marked `PROGRAM_LOOP`), so it runs once per program; the
    atomic dK/dV kernel's dQᵀ adds sit in its query loop, so they run every iteration
    (and take `full-in-loops`' full tile, per warp group)."""
    from tawa.dialects import tile
    from tawa.torch.kernels import python_example
    from tawa.transforms.lower.tma_epilogue import in_program_loop
    from tawa.transforms.pipeline.persistent import PROGRAM_LOOP

    def stores_after(text: str, name: str) -> list[bool]:
        module = tawa.parse(text, name)
        pipeline = HopperPipelinePass.of(stages=2)
        steps = [*pipeline.tile_steps(), pipeline.specialize_pass(), *pipeline.steps(2)]
        for p in steps[:[s.name for s in steps].index("tawa-stage-stores")]:
            p.apply(tawa.context(), module)
        assert any(PROGRAM_LOOP in o.attributes for o in module.walk())
        return [in_program_loop(o) for o in module.walk() if isinstance(o, tile.StoreOp | tile.AtomicAddOp)]

    assert stores_after((EXAMPLES / "gemm.mlir").read_text(), "gemm.mlir") == [False]
    dkdvdq = python_example("attention_bwd").attention_bwd_dkdvdq.ir()
    assert stores_after(dkdvdq, "attention_bwd.py") == [True, False, False]  # the dQᵀ add; dK, dV
