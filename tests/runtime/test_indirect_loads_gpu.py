"""Loads placed by loaded values on the GPU: examples/python/gather_rows.py,
grouped_gemm.py, paged_gemm.py and paged_attention.py launched through `kernel[grid](...)`
against float32 references on fresh random data, NaN-poisoned outputs,
ragged shapes, tables shuffled with repeated entries, entries past the end
of the tensors they index, negative ones and ones whose rows lie beyond 2^31
(those read zeros: `tawa/transforms/partition/loaded_offsets.py`), and
programs past the end of the table (their entries read 0).  Needs an sm_90 GPU with torch; skipped
elsewhere, saying why.  The CPU side: tests/transforms/test_indirect_loads.py."""

from __future__ import annotations

import math
import runpy
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-2


@cache
def kernel(name: str):
    return runpy.run_path(str(ROOT / "examples" / "python" / f"{name}.py"))[name]


DEVICE = "cuda"
"""Where the tests make their tensors (tests/runtime/test_indirect_loads_cpu.py
runs them on the CPU, `launch` then being tawa's interpreter)."""


def launch(name: str, grid: tuple[int, ...], *args, **constexprs) -> None:
    """Compiles and launches example `name` (cached), then waits for it."""
    import torch

    kernel(name)[grid](*args, **constexprs)
    torch.cuda.synchronize()


@pytest.mark.parametrize("blocks, N, extra", [(5, 200, 1), (40, 1024, 0), (3, 8, 2)])
def test_gather_rows(cuda, seed, blocks, N, extra):
    import torch

    BM, BN = 64, 128
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    rows = blocks * BM - 10  # a ragged last block
    x = torch.randn(rows, N, device=DEVICE, generator=g).to(torch.bfloat16)
    n_idx = 2 * blocks
    # Repeats; `blocks` lies past X, -1 before it, 2^31 - 1 beyond 2^31 rows: those read zeros.
    idx = torch.randint(-1, blocks + 1, (n_idx,), device=DEVICE, generator=g, dtype=torch.int32)
    idx[0] = 2**31 - 1
    scale = torch.rand(n_idx, device=DEVICE, generator=g) + 0.5
    programs = n_idx + extra  # programs past the table read index 0 and scale 0
    out = torch.full((programs * BM, N), float("nan"), device=DEVICE, dtype=torch.bfloat16)
    launch("gather_rows", (programs, math.ceil(N / BN)), x, idx, scale, out, N)
    padded = torch.zeros((blocks + 1) * BM, N, device=DEVICE)
    padded[:rows] = x.float()
    ref = torch.zeros(programs * BM, N, device=DEVICE)
    for i in range(n_idx):
        j = int(idx[i])
        if 0 <= j <= blocks:
            ref[i * BM:(i + 1) * BM] = (padded[j * BM:(j + 1) * BM] * scale[i]).to(torch.bfloat16).float()
    assert not torch.isnan(out.float()).any(), "some of Out was not written (or is NaN)"
    assert torch.equal(out.float(), ref), f"max difference {(out.float() - ref).abs().max().item()}"


@pytest.mark.parametrize("M, N, K, E", [(1000, 264, 392, 4), (2048, 1024, 1024, 8), (130, 8, 8, 2)])
@pytest.mark.parametrize("constexprs", [{}, {"BLOCK_M": 64, "BLOCK_N": 256}])
def test_grouped_gemm(cuda, seed, M, N, K, E, constexprs):
    import torch

    BM, BN = constexprs.get("BLOCK_M", 128), constexprs.get("BLOCK_N", 128)
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    a = torch.randn(M, K, device=DEVICE, generator=g).to(torch.bfloat16)
    w = torch.randn(E, N, K, device=DEVICE, generator=g).to(torch.bfloat16)
    blocks = math.ceil(M / BM)
    order = torch.randperm(blocks, device=DEVICE, generator=g)
    # E: past the last expert, -1 before the first, 2^31 - 1 beyond 2^31 rows of W: those read zeros.
    experts = torch.randint(-1, E + 1, (blocks,), device=DEVICE, generator=g)
    experts[0] = 2**31 - 1
    table = torch.stack([order, experts], dim=1).to(torch.int32).contiguous()
    c = torch.full((M, N), float("nan"), device=DEVICE, dtype=torch.bfloat16)
    launch("grouped_gemm", (blocks, math.ceil(N / BN)), a, w, table, c, N, K, **constexprs)
    ref = torch.zeros(M, N, device=DEVICE)
    for blk, e in table.tolist():
        if 0 <= e < E:
            ref[blk * BM:(blk + 1) * BM] = a[blk * BM:(blk + 1) * BM].float() @ w[e].float().T
    assert not torch.isnan(c.float()).any(), "some of C was not written (or is NaN)"
    err = ((c.float() - ref).norm() / ref.norm().clamp_min(1e-6)).item()
    assert err <= TOL, f"relative error {err:.3g} ({M}x{N}x{K}, {E} experts, {constexprs})"


@pytest.mark.parametrize("M, N, K", [(1000, 264, 392), (2048, 1024, 1024), (130, 8, 64)])
def test_paged_gemm(cuda, seed, M, N, K):
    import torch

    BM, BN, BK = 128, 128, 64
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    nb, kb = math.ceil(N / BN), math.ceil(K / BK)
    total = nb * kb + 2  # two pages nobody uses
    a = torch.randn(M, K, device=DEVICE, generator=g).to(torch.bfloat16)
    pool = torch.randn(total * BN, BK, device=DEVICE, generator=g).to(torch.bfloat16)
    pages = torch.randperm(total, device=DEVICE, generator=g)[: nb * kb].reshape(nb, kb).to(torch.int32)
    pages[0, 0] = total + 3  # outside the pool: that tile of B reads zeros
    c = torch.full((M, N), float("nan"), device=DEVICE, dtype=torch.bfloat16)
    launch("paged_gemm", (math.ceil(M / BM), nb), a, pool, pages.contiguous(), c, K)
    b = torch.zeros(nb * BN, kb * BK, device=DEVICE)
    for j in range(nb):
        for k in range(kb):
            p = int(pages[j, k])
            if p < total:
                b[j * BN:(j + 1) * BN, k * BK:(k + 1) * BK] = pool[p * BN:(p + 1) * BN].float()
    ref = a.float() @ b[:N, :K].T
    assert not torch.isnan(c.float()).any(), "some of C was not written (or is NaN)"
    # With one tile of B (130x8x64), the page outside the pool makes all of B, so C, zero.
    err = ((c.float() - ref).norm() / ref.norm().clamp_min(1e-6)).item()
    assert err <= TOL, f"relative error {err:.3g} ({M}x{N}x{K})"


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [128, 64])
@pytest.mark.parametrize("q_len, kv_len", [(130, 1000), (1, 300), (128, 128)])
def test_paged_attention(cuda, seed, causal, head_dim, q_len, kv_len):
    import torch

    B, H, G, BN = 3, 4, 2, 128
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    n_pages = math.ceil(kv_len / BN)
    pool = B * n_pages + 5
    q = torch.randn(B, H, q_len, head_dim, device=DEVICE, generator=g).to(torch.bfloat16)
    kc = torch.randn(pool, H // G, BN, head_dim, device=DEVICE, generator=g).to(torch.bfloat16)
    vc = torch.randn(pool, H // G, BN, head_dim, device=DEVICE, generator=g).to(torch.bfloat16)
    table = torch.randperm(pool, device=DEVICE, generator=g)[: B * n_pages].reshape(B, n_pages).to(torch.int32)
    lens = torch.randint(q_len if causal else 1, kv_len + 1, (B,), device=DEVICE, generator=g, dtype=torch.int32)
    lens[0] = kv_len
    for b in range(B):  # entries past a sequence's end are never read: make them nonsense
        table[b, math.ceil(int(lens[b]) / BN):] = -1
    o = torch.full((B, H, q_len, head_dim), float("nan"), device=DEVICE, dtype=torch.bfloat16)
    scale = 1 / math.sqrt(head_dim)
    launch("paged_attention", (math.ceil(q_len / 128), H, B), q, kc, vc, table.contiguous(), lens, o, q_len, kv_len,
           scale, G, HEAD_DIM=head_dim, CAUSAL=causal)
    assert not torch.isnan(o.float()).any(), "some of O was not written (or is NaN)"
    for b in range(B):
        n = int(lens[b])
        pages = table[b, : math.ceil(n / BN)].long()
        k = kc[pages].permute(1, 0, 2, 3).reshape(H // G, -1, head_dim)[:, :n].float().repeat_interleave(G, 0)
        v = vc[pages].permute(1, 0, 2, 3).reshape(H // G, -1, head_dim)[:, :n].float().repeat_interleave(G, 0)
        s = q[b].float() @ k.transpose(1, 2) * scale
        if causal:  # query i sits at position i + n - q_len among the sequence's keys
            key, query = torch.arange(n, device=DEVICE), torch.arange(q_len, device=DEVICE) + n - q_len
            s = s.masked_fill(key[None, :] > query[:, None], float("-inf"))
        ref = torch.softmax(s, -1) @ v
        err = ((o[b].float() - ref).norm() / ref.norm()).item()
        assert err <= TOL, f"sequence {b} ({n} keys): relative error {err:.3g}"
