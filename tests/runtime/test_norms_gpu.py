"""The memory-bound kernels of examples/python/norms.py (row softmax, RMSNorm, LayerNorm,
residual add + RMSNorm, SwiGLU) on a Hopper GPU, launched through `kernel[grid](...)` on torch
tensors: bf16 in and out, f32 math, in blocked register layouts (docs/passes.md, "Kernels
without dots: blocked layouts").

Fresh random inputs (the seed is printed on failure), outputs poisoned with NaN, checked
against torch in float32 on ragged shapes: whole rows (BLOCK_N ≥ N) with the default 16-row
tiles, tiles of one or two rows whose reductions combine across warps through shared memory,
add + RMSNorm looping over rows wider than its chunk, and the tile shapes `python -m tawa.bench
memory` passes (`tawa.bench.memory.blocks`).  The CPU simulator and ptxas do not show that
these kernels run correctly on a GPU; these tests run them on one.

Run: `pytest -m gpu tests/runtime/test_norms_gpu.py` on an H100.
"""

from __future__ import annotations

import math

import pytest

from tawa.torch.kernels import python_example

pytestmark = pytest.mark.gpu

TOL = 3e-2  # bf16 outputs of values up to about 4 (tests/frontend/test_frontend_norms.py)
EPS = 1e-6


def norms():
    """The module of examples/python/norms.py (loaded once)."""
    return python_example("norms")


def run(program: str, M: int, N: int, seed: int, options: dict | None = None, **constexprs: int):
    """Launches tile program `program` of examples/python/norms.py (a one-pass
    or chunked program of a row kernel, or SwiGLU) on fresh M x N data;
    returns (outputs, torch's float32 outputs); `options` are
    tawa-hopper-pipeline's."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator(device="cuda").manual_seed(seed)

    def rand(*shape: int):
        return torch.randn(*shape, device="cuda", generator=g).to(torch.bfloat16)

    def poisoned():
        return torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)

    kernel = getattr(norms(), program)
    name = program.removesuffix("_chunked").removesuffix("_row")
    blocks = kernel.constexprs(constexprs)
    grid = (math.ceil(M / blocks["BLOCK_M"]),)
    if name == "softmax":
        x, y = rand(M, N), poisoned()
        kernel[grid](x, y, M, N, options=options, **constexprs)
        return [y], [torch.softmax(x.float(), 1)]
    if name == "rmsnorm":
        x, w, y = rand(M, N), rand(N), poisoned()
        kernel[grid](x, w, y, M, N, EPS, options=options, **constexprs)
        return [y], [F.rms_norm(x.float(), (N,), w.float(), EPS)]
    if name == "layernorm":
        x, w, b, y = rand(M, N), rand(N), rand(N), poisoned()
        kernel[grid](x, w, b, y, M, N, EPS, options=options, **constexprs)
        return [y], [F.layer_norm(x.float(), (N,), w.float(), b.float(), EPS)]
    if name == "add_rmsnorm":
        x, r, w, y, s = rand(M, N), rand(M, N), rand(N), poisoned(), poisoned()
        kernel[grid](x, r, w, y, s, M, N, EPS, options=options, **constexprs)
        ref_s = (x.float() + r.float()).to(torch.bfloat16).float()
        return [s, y], [ref_s, F.rms_norm(ref_s, (N,), w.float(), EPS)]
    assert name == "swiglu"
    gate, up, y = rand(M, N), rand(M, N), poisoned()
    kernel[(grid[0], math.ceil(N / blocks["BLOCK_N"]))](gate, up, y, M, N, options=options, **constexprs)
    return [y], [F.silu(gate.float()) * up.float()]


def check(name: str, M: int, N: int, seed: int, options: dict | None = None, **constexprs: int) -> None:
    import torch

    outputs, refs = run(name, M, N, seed, options, **constexprs)
    torch.cuda.synchronize()
    for out, ref in zip(outputs, refs):
        assert not bool(torch.isnan(out).any()), f"{name}: elements of the output were not written (or are NaN)"
        err = ((out.float() - ref).abs() / (ref.abs() + 1)).max().item()
        assert err <= TOL, f"{name} {M}x{N} {constexprs}: max relative error {err:.3g}"


KERNELS = ["softmax", "rmsnorm", "layernorm", "add_rmsnorm", "swiglu"]


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("M, N", [(37, 700), (4096, 1024), (1, 8), (37, 768), (300, 776)])
def test_defaults(cuda, seed, name, M, N):
    """Default tiles (16 x 1024; add + RMSNorm 4 x 1024 chunks; SwiGLU 16 x 512) on ragged shapes
    (rows of 768 and 776, multiples of 8 short of the tile: the edge path by whole vectors)."""
    check(name, M, N, seed)


@pytest.mark.parametrize("name, constexprs, M, N", [
    ("softmax", {"BLOCK_M": 1}, 9, 700),
    ("softmax", {"BLOCK_M": 2, "BLOCK_N": 8192}, 33, 5000),
    ("rmsnorm", {"BLOCK_M": 2, "BLOCK_N": 8192}, 7, 8000),
    ("layernorm", {"BLOCK_M": 1, "BLOCK_N": 4096}, 5, 3000),
    ("add_rmsnorm", {"BLOCK_M": 1}, 3, 2500),
    ("add_rmsnorm", {"BLOCK_N": 256}, 37, 700),
], ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else str(v))
def test_reductions_across_warps_and_loops(cuda, seed, name, constexprs, M, N):
    """Tiles of one or two rows: the layout's warps split each row, whose max and sum combine
    through shared memory (nvgpu.frag_reduce_warps); add + RMSNorm over several chunks."""
    check(name, M, N, seed, **constexprs)


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("N", [1024, 4096, 8192])
def test_benchmark_tiles(cuda, seed, name, N):
    """The programs and tile shapes `python -m tawa.bench memory` runs, on a ragged row count."""
    from tawa.bench.memory import blocks
    from tawa.torch import norm_kernels

    program = name if name == "swiglu" else norm_kernels.program(name, N)
    check(program, 300, N, seed, **blocks(name, N))


@pytest.mark.parametrize("M, N", [(37, 700), (300, 4096), (37, 768)])
def test_strided_views_in_place(cuda, seed, M, N):
    """RMSNorm and add + RMSNorm whose matrices are column slices of wider
    arrays (rows contiguous, their stride the wider row), outputs included:
    the kernels address them with their row strides (kernel parameters), so
    they read and write the slices in place; NaN beside the slices is neither
    read (it would spread into the rows) nor overwritten."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator(device="cuda").manual_seed(seed)

    def wide(fill=None):
        """An M x (N + 40) array, NaN but for columns 16..16+N (random, or NaN with `fill`)."""
        a = torch.full((M, N + 40), float("nan"), device="cuda", dtype=torch.bfloat16)
        if fill is None:
            a[:, 16 : 16 + N] = torch.randn(M, N, device="cuda", generator=g).to(torch.bfloat16)
        return a, a[:, 16 : 16 + N]

    (_, x), (_, r), (yw, y), (zw, z), (sw, s) = wide(), wide(), wide(True), wide(True), wide(True)
    w = torch.randn(N, device="cuda", generator=g).to(torch.bfloat16)
    from tawa.torch.norm_kernels import tile

    t = tile("rmsnorm", N)  # a whole row in one tile (the defaults' BLOCK_N is 1024)
    grid = (math.ceil(M / t["BLOCK_M"]),)
    norms().rmsnorm[grid](x, w, y, M, N, EPS, **t)
    grid = (math.ceil(M / norms().add_rmsnorm.constexprs({})["BLOCK_M"]),)
    norms().add_rmsnorm[grid](x, r, w, z, s, M, N, EPS)  # z: the normalized sum, s: the sum
    torch.cuda.synchronize()
    ref_s = (x.float() + r.float()).to(torch.bfloat16).float()
    refs = ((y, F.rms_norm(x.float(), (N,), w.float(), EPS)), (s, ref_s),
            (z, F.rms_norm(ref_s, (N,), w.float(), EPS)))
    for out, ref in refs:
        assert not bool(torch.isnan(out).any()), "elements of the output slice were not written (or are NaN)"
        err = ((out.float() - ref).abs() / (ref.abs() + 1)).max().item()
        assert err <= TOL, f"{M}x{N}: max relative error {err:.3g}"
    for a in (yw, zw, sw):
        assert bool(torch.isnan(a[:, :16]).all() and torch.isnan(a[:, 16 + N :]).all()), "written beside the slice"
