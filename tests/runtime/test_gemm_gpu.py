"""examples/gemm.mlir on a Hopper GPU: C = A·Bᵀ (A M×K, B N×K, C M×N).

Fresh random inputs (torch.randn; the seed is printed on failure), outputs
poisoned with NaN, float32 reference, relative Frobenius error ≤ 1e-2 (bf16
output rounding alone gives about 1.7e-3); every element of C written,
nothing past its end.  Bad arguments must raise before anything runs.

Run: `pytest -m gpu tests/runtime` on a machine with an H100, CuPy,
cuda-bindings and torch; elsewhere every test here skips and says why.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import tawa
from tawa.runtime import ArgumentError, reinterpret

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GEMM_BF16 = (EXAMPLES / "gemm.mlir").read_text()
GEMM_F16 = GEMM_BF16.replace("bf16", "f16")
BM, BN, BK = 128, 256, 64  # the example's tile: one program per 128×256 tile of C
STAGES = 4
TOL = 1e-2


def source(dtype: str) -> str:
    return {"bf16": GEMM_BF16, "f16": GEMM_F16}[dtype]


def torch_dtype(dtype: str):
    import torch

    return {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]


def grid(M: int, N: int) -> tuple[int, int]:
    return (math.ceil(M / BM), math.ceil(N / BN))


def kernel_for(dtype: str = "bf16", stages: int = STAGES) -> tawa.Kernel:
    return tawa.compile(source(dtype), "gemm", stages=stages)


def inputs(M: int, N: int, K: int, dtype: str, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = torch_dtype(dtype)
    A = torch.randn(M, K, device="cuda", generator=g).to(dt)
    B = torch.randn(N, K, device="cuda", generator=g).to(dt)
    return A, B


def poisoned(M: int, N: int, dtype: str, guard: int = 0):
    """C filled with NaN; with `guard` > 0, C is the start of a buffer whose
    `guard` trailing elements hold a sentinel, returned too."""
    import torch

    storage = torch.full((M * N + guard,), float("nan"), dtype=torch_dtype(dtype), device="cuda")
    if guard:
        storage[M * N :] = 7.0
    return storage[: M * N].view(M, N), storage[M * N :]


def rel_err(C, A, B) -> float:
    ref = A.float() @ B.float().T
    return ((C.float() - ref).norm() / ref.norm()).item()


def check(kernel: tawa.Kernel, M: int, N: int, K: int, dtype: str, seed: int, guard: int = 0):
    import torch

    A, B = inputs(M, N, K, dtype, seed)
    C, tail = poisoned(M, N, dtype, guard)
    kernel(A, B, C, M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    nans = int(torch.isnan(C).sum())
    assert nans == 0, f"{nans} of {M * N} elements of C were not written ({M}x{N}x{K})"
    if guard:
        assert bool((tail == 7.0).all()), f"the kernel wrote past the end of C ({M}x{N}x{K})"
    err = rel_err(C, A, B)
    assert err <= TOL, f"relative error {err:.3g} > {TOL} ({dtype}, {M}x{N}x{K})"
    return A, B, C


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_gemm_4096(cuda, seed, dtype):
    kernel = kernel_for(dtype)
    A, B, C = check(kernel, 4096, 4096, 4096, dtype, seed)
    again = C.clone().fill_(float("nan"))
    kernel(A, B, again, 4096, 4096, 4096, grid=grid(4096, 4096))
    import torch

    torch.cuda.synchronize()
    assert torch.equal(again, C), "two runs on the same inputs differ"


@pytest.mark.parametrize("stages", [3, STAGES])
@pytest.mark.parametrize("k_tiles", ["1", "D", "D+1", "2D+1"])
def test_gemm_k_tiles_around_the_ring_depth(cuda, seed, stages, k_tiles):
    """The loop runs once, exactly D times (the ring fills), D+1 and 2D+1
    times (it wraps)."""
    n = {"1": 1, "D": stages, "D+1": stages + 1, "2D+1": 2 * stages + 1}[k_tiles]
    check(kernel_for("bf16", stages), 256, 256, n * BK, "bf16", seed)


@pytest.mark.parametrize(
    "M, N, K",
    [
        (200, 136, 200),  # nothing is a multiple of the tile
        (128, 256, 64),  # exactly one tile, one K-tile
        (130, 264, 72),  # a few rows, columns and k past a tile
        (64, 8, 8),  # smaller than one tile in every dimension
    ],
)
def test_gemm_ragged_shapes(cuda, seed, M, N, K):
    check(kernel_for("bf16"), M, N, K, "bf16", seed, guard=4096)


def test_gemm_k_zero_writes_zeros(cuda):
    """K = 0: A and B are empty (their tensor maps get scratch), C = 0."""
    import torch

    M, N = 256, 512
    A = torch.empty(M, 0, dtype=torch.bfloat16, device="cuda")
    B = torch.empty(N, 0, dtype=torch.bfloat16, device="cuda")
    C, _ = poisoned(M, N, "bf16")
    kernel_for()(A, B, C, M, N, 0, grid=grid(M, N))
    torch.cuda.synchronize()
    assert bool((C == 0).all())


def test_gemm_empty_grid_is_a_no_op(cuda):
    import torch

    A = torch.empty(0, 64, dtype=torch.bfloat16, device="cuda")
    B = torch.randn(256, 64, device="cuda").to(torch.bfloat16)
    C = torch.empty(0, 256, dtype=torch.bfloat16, device="cuda")
    kernel_for()(A, B, C, 0, 256, 64, grid=grid(0, 256))
    torch.cuda.synchronize()


def test_gemm_on_a_torch_side_stream(cuda, seed):
    import torch

    M = N = K = 1024
    A, B = inputs(M, N, K, "bf16", seed)
    C, _ = poisoned(M, N, "bf16")
    kernel = kernel_for()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        kernel(A, B, C, M, N, K, grid=grid(M, N))  # follows torch's current stream
    stream.synchronize()
    assert rel_err(C, A, B) <= TOL
    C.fill_(float("nan"))
    torch.cuda.synchronize()
    kernel(A, B, C, M, N, K, grid=grid(M, N), stream=stream)  # an explicit torch stream
    stream.synchronize()
    assert rel_err(C, A, B) <= TOL


def test_gemm_with_cupy_arrays(cuda, seed):
    """CuPy: f16 natively; bf16 through reinterpret() of 16-bit integer bits."""
    import cupy
    import torch

    M, N, K = 512, 512, 256
    A, B = inputs(M, N, K, "f16", seed)
    a, b = cupy.asarray(A), cupy.asarray(B)
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    kernel_for("f16")(a, b, c, M, N, K, grid=grid(M, N))
    cupy.cuda.runtime.deviceSynchronize()
    C = torch.as_tensor(c, device="cuda")
    assert not bool(torch.isnan(C).any()) and rel_err(C, A, B) <= TOL

    A, B = inputs(M, N, K, "bf16", seed + 1)
    C, _ = poisoned(M, N, "bf16")
    bits = [cupy.asarray(t.view(torch.int16)) for t in (A, B, C)]
    kernel_for("bf16")(*(reinterpret(x, "bf16") for x in bits), M, N, K, grid=grid(M, N))
    cupy.cuda.runtime.deviceSynchronize()
    assert not bool(torch.isnan(C).any()) and rel_err(C, A, B) <= TOL


def _bad_cases():
    import torch

    M, N, K = 256, 256, 128
    bf = torch.bfloat16

    def good():
        return [
            torch.randn(M, K, device="cuda").to(bf),
            torch.randn(N, K, device="cuda").to(bf),
        ]

    def wrong_dtype():
        a, b = good()
        return [a.float(), b], r"argument 0 \(%A\): expected bf16 elements, got a float32 torch tensor"

    def non_contiguous():
        a, b = good()
        return [torch.randn(K, M, device="cuda").to(bf).T, b], r"argument 0 \(%A\): the stride of its last dimension"

    def misaligned():
        _, b = good()
        storage = torch.randn(M * K + 8, device="cuda").to(bf)
        return [storage[1 : 1 + M * K].view(M, K), b], r"argument 0 \(%A\): address 0x[0-9a-f]+ is not 16-byte aligned"

    def odd_row_stride():
        return (
            [torch.randn(M, 100, device="cuda").to(bf), torch.randn(N, 100, device="cuda").to(bf)],
            r"argument 0 \(%A\): the stride of dimension 0 is 200 bytes, not a multiple of 16",
        )

    def on_the_cpu():
        a, b = good()
        return [a.cpu(), b], r"argument 0 \(%A\): .*in host memory; move it to the GPU"

    return {f.__name__: f for f in (wrong_dtype, non_contiguous, misaligned, odd_row_stride, on_the_cpu)}


@pytest.mark.parametrize(
    "case", ["wrong_dtype", "non_contiguous", "misaligned", "odd_row_stride", "on_the_cpu"]
)
def test_bad_arguments_raise_before_launch(cuda, case):
    import torch

    (a, b), message = _bad_cases()[case]()
    M, N, K = a.shape[0], b.shape[0], a.shape[1]
    C, _ = poisoned(M, N, "bf16")
    kernel = kernel_for()
    with pytest.raises(ArgumentError, match=message) as err:
        kernel(a, b, C, M, N, K, grid=grid(M, N))
    assert "\n" not in str(err.value)
    torch.cuda.synchronize()
    assert bool(torch.isnan(C).all()), "something ran although the arguments were rejected"


def test_column_slices(cuda, seed):
    """A and B are read only through tensor maps: column slices of wider
    matrices (leading strides not dense) are computed on in place.  So is C
    under the TMA-store epilogue (the default): it is written through a
    tensor map, which leaves the columns beside the slice alone.  The thread
    epilogue addresses C itself: there a slice of it is refused."""
    import torch

    M, N, K = 300, 520, 200
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, 3 * K, device="cuda", generator=g).to(torch.bfloat16)[:, K : 2 * K]
    B = torch.randn(N, 2 * K + 8, device="cuda", generator=g).to(torch.bfloat16)[:, :K]
    C, _ = poisoned(M, N, "bf16")
    kernel = kernel_for()
    kernel(A, B, C, M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    assert not torch.isnan(C.float()).any(), "some of C was not written"
    err = rel_err(C, A, B)
    assert err <= TOL, f"relative error {err:.3g} > {TOL}"
    wide = torch.full((M, 2 * N), float("nan"), dtype=torch.bfloat16, device="cuda")
    kernel(A, B, wide[:, :N], M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    assert rel_err(wide[:, :N], A, B) <= TOL
    assert bool(torch.isnan(wide[:, N:]).all()), "the TMA store wrote beside the slice of C"
    # The threads' epilogue addresses C itself, with its row stride (a kernel parameter).
    threads = tawa.compile(source("bf16"), "gemm", stages=STAGES, epilogue="threads")
    wide = torch.full((M, 2 * N), float("nan"), dtype=torch.bfloat16, device="cuda")
    threads(A, B, wide[:, :N], M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    assert rel_err(wide[:, :N], A, B) <= TOL
    assert bool(torch.isnan(wide[:, N:]).all()), "the threads' stores wrote beside the slice of C"
    with pytest.raises(ArgumentError, match=r"argument 2 \(%C\): the stride of its last dimension is 4 bytes.*"
                       r"the kernel addresses it itself"):
        threads(A, B, wide[:, ::2], M, N, K, grid=grid(M, N))


def test_wrong_argument_count_and_scalars(cuda):
    import torch

    A = torch.zeros(128, 64, dtype=torch.bfloat16, device="cuda")
    B = torch.zeros(256, 64, dtype=torch.bfloat16, device="cuda")
    C = torch.zeros(128, 256, dtype=torch.bfloat16, device="cuda")
    kernel = kernel_for()
    with pytest.raises(ArgumentError, match="@gemm takes 6 arguments"):
        kernel(A, B, C, 128, 256, grid=(1, 1))
    with pytest.raises(ArgumentError, match=r"argument 5 \(%K\): expected a Python int \(index\), got float"):
        kernel(A, B, C, 128, 256, 64.0, grid=(1, 1))


@pytest.mark.parametrize(
    "M, N, K", [(4096, 4096, 4096), (200, 136, 304), (256, 512, 128 * (STAGES + 1))]
)
def test_gemm_fp8(cuda, seed, M, N, K):
    """examples/gemm_fp8.mlir: e4m3 inputs (k32 wgmma), bf16 output.  (K is a
    multiple of 16: TMA needs 16-byte row strides, 1 byte per element.)"""
    import torch

    text = (Path(__file__).resolve().parents[2] / "examples" / "gemm_fp8.mlir").read_text()
    kernel = tawa.compile(text, "gemm_fp8", stages=STAGES)
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    B = torch.randn(N, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    C, _ = poisoned(M, N, "bf16")
    kernel(A, B, C, M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    assert not torch.isnan(C.float()).any(), "some of C was not written"
    err = rel_err(C, A, B)
    assert err <= TOL, f"relative error {err:.3g} > {TOL} (fp8, {M}x{N}x{K})"


@pytest.mark.parametrize(
    "M, N, K", [(4096, 4096, 4096), (200, 136, 200), (256, 512, 64 * (2 * STAGES + 1)), (128, 256, 64)]
)
def test_matmul_mn_major_b(cuda, seed, M, N, K):
    """examples/matmul.mlir: C = A·B with B K×N row-major (MN-major wgmma
    operand, loaded as four 64-column TMA boxes per tile)."""
    import torch

    text = (Path(__file__).resolve().parents[2] / "examples" / "matmul.mlir").read_text()
    kernel = tawa.compile(text, "matmul", stages=STAGES)
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    B = torch.randn(K, N, device="cuda", generator=g).to(torch.bfloat16)
    C, _ = poisoned(M, N, "bf16")
    kernel(A, B, C, M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    assert not torch.isnan(C.float()).any(), "some of C was not written"
    ref = A.float() @ B.float()
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL} (matmul, {M}x{N}x{K})"


@pytest.mark.parametrize("M, N, K", [(1024, 768, 512), (200, 136, 200)])
def test_gemm_fused_epilogue(cuda, seed, M, N, K):
    """examples/gemm_scale_relu.mlir: C = max(alpha · A·Bᵀ, 0), the scaling and
    the ReLU on the accumulator registers."""
    import torch

    text = (Path(__file__).resolve().parents[2] / "examples" / "gemm_scale_relu.mlir").read_text()
    kernel = tawa.compile(text, "gemm_scale_relu", stages=STAGES)
    A, B = inputs(M, N, K, "bf16", seed)
    C, _ = poisoned(M, N, "bf16")
    alpha = -0.37
    kernel(A, B, C, M, N, K, alpha, grid=grid(M, N))
    torch.cuda.synchronize()
    assert not torch.isnan(C.float()).any(), "some of C was not written"
    ref = torch.clamp(alpha * (A.float() @ B.float().T), min=0.0)
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL}"
    assert (C.float() >= 0).all()


@pytest.mark.parametrize("M, K", [(1024, 512), (200, 200)])
def test_gemm_softmax(cuda, seed, M, K):
    """examples/gemm_softmax.mlir: row softmax of A·Bᵀ (B has 256 rows) on the
    accumulator registers: quad-shuffle row reductions, exp2, broadcasts."""
    import torch

    text = (Path(__file__).resolve().parents[2] / "examples" / "gemm_softmax.mlir").read_text()
    kernel = tawa.compile(text, "gemm_softmax", stages=STAGES)
    A, B = inputs(M, 256, K, "bf16", seed)
    C, _ = poisoned(M, 256, "bf16")
    s = 0.05
    kernel(A, B, C, M, K, s * math.log2(math.e), grid=(math.ceil(M / BM),))
    torch.cuda.synchronize()
    assert not torch.isnan(C.float()).any(), "some of C was not written"
    ref = torch.softmax(s * (A.float() @ B.float().T), dim=1)
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL}"


@pytest.mark.parametrize("BH, S", [(2, 1024), (3, 200)])
def test_gemm_chain_register_operand(cuda, seed, BH, S):
    """examples/gemm_chain.mlir: O = bf16(Q·Kᵀ)·V per 128-key block, the
    second product taking its A operand from registers (wgmma RS form) and V
    MN-major."""
    import torch

    text = (Path(__file__).resolve().parents[2] / "examples" / "gemm_chain.mlir").read_text()
    kernel = tawa.compile(text, "gemm_chain", stages=2)
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(BH, S, 128, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
    o = torch.full((BH, S, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel(q, k, v, o, S, grid=(math.ceil(S / BM), BH))
    torch.cuda.synchronize()
    assert not torch.isnan(o.float()).any(), "some of O was not written"
    p = torch.einsum("bqd,bkd->bqk", q.float(), k.float())
    ref = torch.einsum("bqk,bkd->bqd", p, v.float())
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL}"


# --------------------------------------------------------------------------- 2-CTA clusters (tawa-cluster)


@pytest.mark.parametrize(
    "M, N, K",
    [
        (384, 304, 192),  # 3 row tiles: the last cluster's second CTA repeats row tile 2
        (200, 136, 200),  # ragged everywhere, 2 row tiles
        (100, 8, 8),  # one row tile: both CTAs of the one cluster run it
        (128 * 7 + 8, 256 * 3 + 8, 64 * 13 + 8),  # 8 row tiles, ragged, 14 K-tiles (the ring wraps)
        (4096, 4096, 4096),
    ],
)
def test_clustered_gemm(cuda, seed, M, N, K):
    """cluster=2: each CTA loads one 128-row band of B and multicasts it to
    both; every element written, nothing past C, same results run twice."""
    import torch

    kernel = tawa.compile(GEMM_BF16, "gemm", stages=STAGES, cluster=2)
    A, B, C = check(kernel, M, N, K, "bf16", seed, guard=4096)
    again = C.clone().fill_(float("nan"))
    kernel(A, B, again, M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    assert torch.equal(again, C), "two runs on the same inputs differ"


@pytest.mark.parametrize("k_tiles", ["1", "D", "D+1", "2D+1"])
def test_clustered_gemm_k_tiles_around_the_ring_depth(cuda, seed, k_tiles):
    n = {"1": 1, "D": STAGES, "D+1": STAGES + 1, "2D+1": 2 * STAGES + 1}[k_tiles]
    check(tawa.compile(GEMM_BF16, "gemm", stages=STAGES, cluster=2), 512, 256, n * BK, "bf16", seed)


def test_clustered_gemm_k_zero_writes_zeros(cuda):
    import torch

    kernel = tawa.compile(GEMM_BF16, "gemm", stages=STAGES, cluster=2)
    A, B = inputs(300, 264, 0, "bf16", 0)
    C, _ = poisoned(300, 264, "bf16")
    kernel(A, B, C, 300, 264, 0, grid=grid(300, 264))
    torch.cuda.synchronize()
    assert bool((C == 0).all())


# --------------------------------------------------------------------------- deferred stores (tawa-defer-stores)


@pytest.mark.parametrize(
    "M, N, K, ctas_note",
    [
        (384, 304, 192, "6 programs"),
        (200, 136, 200, "ragged everywhere"),
        (100, 8, 8, "one program: only the store after the loop over programs"),
        (128 * 7 + 8, 256 * 3 + 8, 64 * 13 + 8, "32 programs, the ring wraps"),
        (4096, 4096, 4096, "512 programs on 132 CTAs: tiles carried from program to program"),
    ],
)
def test_deferred_store_gemm(cuda, seed, M, N, K, ctas_note):
    """defer-stores: each program's tile stored under the next program's
    first dot; every element written, nothing past C, the same bits as the
    kernel that stores at each program's end, and the same twice."""
    import torch

    kernel = tawa.compile(GEMM_BF16, "gemm", stages=STAGES, defer_stores=True)
    A, B, C = check(kernel, M, N, K, "bf16", seed, guard=4096)
    plain = C.clone().fill_(float("nan"))
    kernel_for("bf16")(A, B, plain, M, N, K, grid=grid(M, N))
    again = C.clone().fill_(float("nan"))
    kernel(A, B, again, M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    assert torch.equal(plain, C), "deferred stores differ from stores at each program's end"
    assert torch.equal(again, C), "two runs on the same inputs differ"


@pytest.mark.parametrize("k_tiles", ["1", "D", "D+1", "2D+1"])
def test_deferred_store_gemm_k_tiles_around_the_ring_depth(cuda, seed, k_tiles):
    n = {"1": 1, "D": STAGES, "D+1": STAGES + 1, "2D+1": 2 * STAGES + 1}[k_tiles]
    check(tawa.compile(GEMM_BF16, "gemm", stages=STAGES, defer_stores=True), 1024, 768, n * BK, "bf16", seed)


def test_deferred_store_gemm_k_zero_writes_zeros(cuda):
    import torch

    kernel = tawa.compile(GEMM_BF16, "gemm", stages=STAGES, defer_stores=True)
    A, B = inputs(1000, 600, 0, "bf16", 0)
    C, _ = poisoned(1000, 600, "bf16")
    kernel(A, B, C, 1000, 600, 0, grid=grid(1000, 600))
    torch.cuda.synchronize()
    assert bool((C == 0).all())
