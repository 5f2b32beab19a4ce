"""tawa.torch.matmul_fp8 on a Hopper GPU.

- Per-tensor and per-row scales of both operands, e4m3 (and e5m2 for a),
  out bf16, f16 and f32, against a float64 reference of the fp8 inputs
  (exact products, so only the output's rounding and f32 accumulation
  differ) on ragged shapes: M = 1, 37, 1000 and 4096, N and K not multiples
  of the tile (K a multiple of 16).  The output is the operator's own
  allocation: the block the caching allocator hands it is filled with NaN
  first (the test checks it got that block), and every element must come
  out finite, within 2e-2 of the reference's scale (bf16) or 1e-3 (f16,
  f32: Hopper's fp8 wgmma adds its products into fewer mantissa bits than
  f32 has, so an f32 output is no closer than that; on the H100 a K = 256
  product came within 4e-4).
- torch._scaled_mm's calling convention: b the transpose of a row-major
  [N, K] (read in place), scale_a [M, 1], scale_b [1, N]; the same result as
  torch._scaled_mm within the output's rounding.  A row-major b (copied).
- A CUDA graph: replays on new inputs and new scales (the kernel reads the
  scales on the device) equal eager runs bitwise.

Run: `pytest -m gpu tests/runtime/test_matmul_fp8_gpu.py` (CuPy,
cuda-bindings, torch ≥ 2.5, an sm_90 GPU); elsewhere every test skips and
says why.
"""

from __future__ import annotations

import pytest

import tawa.torch as tt

pytestmark = pytest.mark.gpu
SHAPES = [(1, 40, 16), (37, 200, 112), (1000, 1000, 1008), (4096, 4104, 528)]


@pytest.fixture
def torch(cuda):
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


def fp8(torch, g, *shape, dtype=None):
    return torch.randn(*shape, device="cuda", generator=g).to(dtype or torch.float8_e4m3fn)


def scales(torch, g, kind, shape):
    if kind == "tensor":
        return torch.rand((), device="cuda", generator=g) + 0.5
    return torch.rand(*shape, device="cuda", generator=g) + 0.5


def poisoned(torch, run, shape, dtype):
    """`run()` after a warm-up (compiles, loads), its output in a NaN-filled block."""
    del_me = run()
    del del_me
    block = torch.full(shape, float("nan"), dtype=dtype, device="cuda")
    ptr = block.data_ptr()
    del block
    out = run()
    assert out.data_ptr() == ptr, "the output did not get the poisoned block"
    torch.cuda.synchronize()
    assert out.shape == shape and out.dtype == dtype and bool(torch.isfinite(out).all())
    return out


def close(torch, got, want, tol, what):
    err = (got.double() - want).abs().max().item()
    scale = max(1.0, want.abs().max().item())
    assert err <= tol * scale, f"{what}: off by {err:.3g} (scale {scale:.3g})"


@pytest.mark.parametrize("M, N, K", SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("kind_a, kind_b", [("tensor", "tensor"), ("row", "row"), ("row", "tensor"), ("tensor", "row")])
def test_against_float64(torch, seed, M, N, K, kind_a, kind_b):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a, w = fp8(torch, g, M, K), fp8(torch, g, N, K)
    sa, sb = scales(torch, g, kind_a, (M, 1)), scales(torch, g, kind_b, (1, N))
    c = poisoned(torch, lambda: tt.matmul_fp8(a, w.t(), sa, sb), (M, N), torch.bfloat16)
    want = (a.double() @ w.double().T) * sa.double() * sb.double()
    close(torch, c, want, 2e-2, f"{M}x{N}x{K} {kind_a}/{kind_b}")


@pytest.mark.parametrize("out_dtype, tol", [("float16", 2e-3), ("float32", 1e-3)])
def test_out_dtypes_and_e5m2(torch, seed, out_dtype, tol):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = getattr(torch, out_dtype)
    a, w = fp8(torch, g, 300, 256, dtype=torch.float8_e5m2), fp8(torch, g, 264, 256)
    sa, sb = scales(torch, g, "row", (300, 1)), scales(torch, g, "tensor", ())
    c = poisoned(torch, lambda: tt.matmul_fp8(a, w.t(), sa, sb, out_dtype=dtype), (300, 264), dtype)
    close(torch, c, (a.double() @ w.double().T) * sa.double() * sb.double(), tol, out_dtype)


def test_like_scaled_mm_and_a_row_major_b(torch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    M, N, K = 333, 528, 1024  # (torch._scaled_mm takes N a multiple of 16)
    a, w = fp8(torch, g, M, K), fp8(torch, g, N, K)
    sa, sb = scales(torch, g, "row", (M, 1)), scales(torch, g, "row", (1, N))
    c = tt.matmul_fp8(a, w.t(), sa, sb)
    ref = torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    close(torch, c, ref.double(), 1e-2, "against torch._scaled_mm")
    b = w.t().contiguous()  # row-major [K, N]: copied into bᵀ
    assert torch.equal(tt.matmul_fp8(a, b, sa, sb), c)


def test_cuda_graph_replays_new_inputs_and_scales(torch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a, w = fp8(torch, g, 200, 256), fp8(torch, g, 136, 256)
    sa, sb = scales(torch, g, "row", (200, 1)), scales(torch, g, "tensor", ())
    tt.matmul_fp8(a, w.t(), sa, sb)  # loads the kernel
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = tt.matmul_fp8(a, w.t(), sa, sb)
    for _ in range(2):
        a.copy_(fp8(torch, g, 200, 256))
        sa.copy_(scales(torch, g, "row", (200, 1)))
        sb.fill_(torch.rand((), generator=g, device="cuda").item() + 0.5)
        graph.replay()
        assert torch.equal(out, tt.matmul_fp8(a, w.t(), sa, sb))
