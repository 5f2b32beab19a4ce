"""Every tile-shape family on a Hopper GPU (docs/passes.md, "Tile shapes").

One GEMM per family (`tests/transforms/gemm_shapes.py`: BLOCK_M 64/128/192/256
→ 1..4 consumer warp groups with their derived register budgets, BLOCK_N
96/128/192/256, BLOCK_K giving 128B, 64B and 32B swizzled slots, and a
K×N B read MN-major from 64B-swizzled slots), compiled
with `tawa.compile` at the defaults (ring depth from shared memory, derived
warp groups and budgets) and with `stages=3`, against a float32 reference:

* ragged M, N and K (none a multiple of the tile), K-tile counts 1, D, D+1
  and 2D+1 around the ring depth D = 3;
* at the GEMM configurations' ring depth D (`stages=0` with `max_stages=8`,
  `tawa.runtime.autotune.GEMM_MAX_STAGES`), K-tile counts D, D+1 and 2D+1
  for every shape whose ring is then deeper than 4;
* a problem with more programs than SMs (the persistent CTAs loop);
* fresh random inputs (the seed is printed on failure), C poisoned with NaN
  and followed by a sentinel: every element written, nothing past the end;
  relative Frobenius error ≤ 1e-2.

Run: `pytest -m gpu tests/runtime/test_tile_shapes_gpu.py` on an H100.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

import tawa
from tawa.ir import parse
from tawa.runtime.autotune import GEMM_MAX_STAGES
from tawa.transforms.hopper_pipeline import HopperPipelinePass

pytestmark = pytest.mark.gpu

_spec = importlib.util.spec_from_file_location(
    "gemm_shapes", Path(__file__).resolve().parents[1] / "transforms" / "gemm_shapes.py"
)
assert _spec is not None and _spec.loader is not None
gemm_shapes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gemm_shapes)

SHAPES = gemm_shapes.SHAPES
STAGES = 3
TOL = 1e-2


def torch_dtype(name: str):
    import torch

    return {"bf16": torch.bfloat16, "f8E4M3FN": torch.float8_e4m3fn}[name]


_kernels: dict = {}


def kernel_for(shape, stages: int | None, **more) -> tawa.Kernel:
    key = (shape, stages, *more.items())
    if key not in _kernels:
        options = ({} if stages is None else {"stages": stages}) | more
        _kernels[key] = tawa.compile(gemm_shapes.gemm(shape), "gemm", **options)
    return _kernels[key]


def check(kernel: tawa.Kernel, shape, M: int, N: int, K: int, seed: int) -> None:
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch_dtype(shape.operand))
    B = torch.randn(*((K, N) if shape.b_kn else (N, K)), device="cuda", generator=g).to(torch_dtype(shape.operand))
    guard = 64
    storage = torch.full((M * N + guard,), float("nan"), dtype=torch.bfloat16, device="cuda")
    storage[M * N :] = 7.0
    C = storage[: M * N].view(M, N)
    kernel(A, B, C, M, N, K, grid=(math.ceil(M / shape.bm), math.ceil(N / shape.bn)))
    torch.cuda.synchronize()
    what = f"{shape.id}: {M}x{N}x{K}"
    nans = int(torch.isnan(C).sum())
    assert nans == 0, f"{nans} of {M * N} elements of C were not written ({what})"
    assert bool((storage[M * N :] == 7.0).all()), f"the kernel wrote past the end of C ({what})"
    ref = A.float() @ (B.float() if shape.b_kn else B.float().T)
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL} ({what})"


def ragged(shape, k_tiles: int) -> tuple[int, int, int]:
    """M, N and K that are no multiples of the tile (N and K keep the
    16-byte row alignment TMA needs), with `k_tiles` K tiles, the last short."""
    return 2 * shape.bm + 37, 2 * shape.bn - 24, k_tiles * shape.bk - shape.bk // 2


@pytest.mark.parametrize("k_tiles", ["1", "D", "D+1", "2D+1"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_ragged_k_tiles_around_the_ring_depth(cuda, seed, shape, k_tiles):
    n = {"1": 1, "D": STAGES, "D+1": STAGES + 1, "2D+1": 2 * STAGES + 1}[k_tiles]
    check(kernel_for(shape, STAGES), shape, *ragged(shape, n), seed)


def deep_depth(shape) -> int:
    """The ring depth `stages=0` gives `shape`'s GEMM with `max_stages=GEMM_MAX_STAGES`."""
    from xdsl.context import Context

    module, pipeline = parse(gemm_shapes.gemm(shape)), HopperPipelinePass.of(max_stages=GEMM_MAX_STAGES)
    pipeline.specialize_pass().apply(Context(), module)
    return pipeline.depth_and_epilogue(module)[0]


DEEP = [s for s in SHAPES if deep_depth(s) > 4]


@pytest.mark.parametrize("k_tiles", ["D", "D+1", "2D+1"])
@pytest.mark.parametrize("shape", DEEP, ids=lambda s: s.id)
def test_deep_ring_ragged_k_tiles_around_the_ring(cuda, seed, shape, k_tiles):
    depth = deep_depth(shape)
    n = {"D": depth, "D+1": depth + 1, "2D+1": 2 * depth + 1}[k_tiles]
    check(kernel_for(shape, None, max_stages=GEMM_MAX_STAGES), shape, *ragged(shape, n), seed)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_defaults_more_programs_than_sms(cuda, seed, shape):
    kernel = kernel_for(shape, None)
    groups = shape.bm // 64
    assert kernel.abi.threads == 128 * (1 + groups)
    check(kernel, shape, 2000 + 3, 2000 - 8, 1008, seed)  # K: 16-byte rows for fp8 too
