"""Split-K GEMMs on a Hopper GPU (`tawa.runtime.splitk`, docs/runtime.md "Split-K"):
one launch, the last program of each tile summing the partials.

* split configurations (bf16, f16 → f32 C, B K×N, fp8; S = 2, 3, 4) on ragged
  shapes — K not a multiple of the slices, empty slices, K = 0, operands a
  tensor map cannot hold (the thread-epilogue twin) — with C and the
  workspace poisoned with NaN and a sentinel after C, against a float32
  reference; the tile counters back at 0 after each launch;
* a split GEMM captured in a CUDA graph and replayed twice in a row with C
  poisoned before each replay: the counters reset themselves, each replay
  is bitwise the eager result;
* the heuristic's split (`split=True`) through `tawa.torch.matmul`, eagerly (on new
  tensors every call: the split launch template), on a side stream, and captured in a CUDA graph (replays bitwise equal to eager runs);
* autotuning a problem whose candidates include splits (GpuTimer poisons
  their workspaces), the winner checked.

Run: `pytest -m gpu tests/runtime/test_splitk_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest

from tawa.kernels.gemm import GemmConfig
from tawa.runtime.autotune import Choice, GemmProblem, Space, autotune, heuristic, machine_parameters
from tawa.runtime.splitk import SplitKGemm

pytestmark = pytest.mark.gpu

TORCH_TYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f8E4M3FN": "float8_e4m3fn"}


def tolerance(config: GemmConfig) -> float:
    return 1e-4 if config.c_dtype == "f32" else 1e-2


def run_poisoned(torch, config: GemmConfig, M: int, N: int, K: int, seed: int, stream=None) -> None:
    """One launch of `config` with C and W poisoned, checked against float32."""
    t = {k: getattr(torch, v) for k, v in TORCH_TYPES.items()}
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(t[config.a_dtype])
    kn = config.b_layout == "kn"
    B = torch.randn(*((K, N) if kn else (N, K)), device="cuda", generator=g).to(t[config.b_dtype])
    guard = 64
    storage = torch.full((M * N + guard,), float("nan"), dtype=t[config.c_dtype], device="cuda")
    storage[M * N:] = 7.0
    C = storage[: M * N].view(M, N)
    choice = Choice(config)
    gemm = choice.compile()
    assert isinstance(gemm, SplitKGemm)
    gemm.workspace(C, M, N, stream).fill_(float("nan"))
    gemm(A, B, C, M, N, K, grid=choice.grid(M, N), stream=stream)
    torch.cuda.synchronize()
    what = f"{config.id} {M}x{N}x{K}"
    nans = int(torch.isnan(C.float()).sum())
    assert nans == 0, f"{nans} of {M * N} elements of C not written ({what})"
    assert bool((storage[M * N:] == 7.0).all()), f"written past the end of C ({what})"
    ref = A.float() @ (B.float() if kn else B.float().T)
    if K == 0:
        assert not bool(C.float().any()), f"K = 0 must give C = 0 ({what})"
        return
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert err <= tolerance(config), f"relative error {err:.3g} ({what})"
    counters = gemm.counters(C, M, N, stream)
    assert not bool(counters.any()), f"tile counters not back at 0: {counters.tolist()} ({what})"


CONFIGS = [
    GemmConfig(64, 256, 64, split_k=4),  # the heuristic's for 64x8192x8192
    GemmConfig(128, 128, 64, split_k=2),  # two consumer warp groups arrive together
    GemmConfig(128, 128, 64, "f16", "f16", "f32", split_k=3),  # f32 C
    GemmConfig(128, 128, 64, b_layout="kn", split_k=3),
    GemmConfig(64, 256, 128, "f8E4M3FN", "f8E4M3FN", "bf16", split_k=4),
    GemmConfig(64, 64, 64, split_k=3),  # many tiles, many counters
    # Cᵀ = B·Aᵀ: partials shaped as Cᵀ, each chunk of the sum stored transposed by the threads.
    GemmConfig(64, 56, 64, transposed=True, split_k=2),
    GemmConfig(128, 24, 64, transposed=True, split_k=3),
    GemmConfig(64, 16, 64, transposed=True, split_k=5),
    # Column chunks that do not divide the tile (32, 32, 8; 48, 48, 8 transposed).
    GemmConfig(64, 72, 64, split_k=3),
    GemmConfig(64, 104, 64, transposed=True, split_k=4),
]
SHAPES = [
    (100, 1000, 1008),  # ragged everywhere; K not a multiple of split_k·BLOCK_K
    (64, 136, 48),  # K < split_k·BLOCK_K: empty slices store zeros
    (200, 264, 8 * 1024 + 32),
    (67, 130, 528),  # C rows of 260 bytes: the thread-epilogue twin
    (1000, 520, 3008),  # many tiles arriving at once
    (65, 72, 0),  # K = 0: every slice empty, C = 0
]
"""K a multiple of 16 (fp8 rows of 16 bytes)."""


@pytest.mark.parametrize("M, N, K", SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.id)
def test_split_gemm_poisoned(cuda, seed, config, M, N, K):
    import torch

    if config.b_layout == "kn" and N % 8:
        pytest.skip("a K×N B needs 16-byte rows (N a multiple of 8)")
    run_poisoned(torch, config, M, N, K, seed)


def test_split_gemm_on_a_side_stream(cuda, seed):
    import torch

    side = torch.cuda.Stream()
    run_poisoned(torch, GemmConfig(64, 256, 64, split_k=4), 64, 2048, 4096, seed, stream=side)


@pytest.mark.parametrize("config", [GemmConfig(64, 128, 64, split_k=3), GemmConfig(128, 64, 64, split_k=4)],
                         ids=lambda c: c.id)
def test_split_gemm_replays_from_a_cuda_graph_twice_in_a_row(cuda, seed, config):
    """The counters reset themselves: a graph of one launch, replayed back to back with C
    poisoned before each replay (no memset of the counters in between), gives the eager bits."""
    import torch

    M, N, K = 130, 200, 64 * 24 + 8
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    choice = Choice(config)
    gemm = choice.compile()
    grid = choice.grid(M, N)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # compile, load, and make the capture stream's workspace
            gemm(A, B, C, M, N, K, grid=grid)
    torch.cuda.current_stream().wait_stream(side)
    made = gemm.counters(C, M, N, side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):  # captured on the warm-up's stream: its counters, no memset captured
        gemm(A, B, C, M, N, K, grid=grid)
    assert gemm.counters(C, M, N, side).data_ptr() == made.data_ptr()
    eager = torch.full_like(C, float("nan"))
    gemm(A, B, eager, M, N, K, grid=grid)
    torch.cuda.synchronize()
    ref = A.float() @ B.float().T
    assert ((eager.float() - ref).norm() / ref.norm()).item() <= 1e-2
    for i in range(2):
        C.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(C, eager), f"replay {i} differs from the eager run ({config.id})"
    assert not bool(made.any()) and not bool(gemm.counters(eager, M, N).any())


def test_split_choice_through_tawa_torch(cuda, seed, request):
    import torch

    import tawa.torch as tt
    from tawa.torch import kernels

    # tawa.torch.matmul asks the heuristic for its split choice, which runs like any other.
    # 64x1024x16384: 16 programs of 64x64 unsplit, which the cost model splits.
    kernels.clear_cache()
    request.addfinalizer(kernels.clear_cache)  # no split choice remembered for later tests
    g = torch.Generator(device="cuda").manual_seed(seed)
    M, N, K = 64, 1024, 16384
    x = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    w = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    choice = kernels.matmul_choice("gemm", "bfloat16", M, N, K, sms)
    want = heuristic(GemmProblem(M, N, K), sms, split=True, params=machine_parameters())  # this GPU's model
    assert choice == want and choice.config.split_k > 1, choice.id
    ref = x.float() @ w.float().T
    y = tt.matmul(x, w, transpose_b=True)
    err = ((y.float() - ref).norm() / ref.norm()).item()
    assert err <= 1e-2, f"relative error {err:.3g} ({choice.id})"

    # New activations every call, as a model makes them: from the second call on through the
    # split launch template (the workspace's addresses fixed), each result its own product.
    from tawa.runtime.splitk import SplitLaunch
    from tawa.torch.calls import _MATMUL

    kept = []
    for i in range(12):
        xi = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
        kept.append((xi, tt.matmul(xi, w, transpose_b=True)))
    assert any(isinstance(c.bound, SplitLaunch) for c in _MATMUL.values())
    side = torch.cuda.Stream()  # another stream: its own workspace, through the checked call
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        kept.append((x, tt.matmul(x, w, transpose_b=True)))
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    for i, (xi, yi) in enumerate(kept):
        ref = xi.float() @ w.float().T
        err = ((yi.float() - ref).norm() / ref.norm()).item()
        assert err <= 1e-2, f"call {i}: relative error {err:.3g}"

    # Captured in a CUDA graph after an eager warm-up on the capture's side stream.
    static_x = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        tt.matmul(static_x, w, transpose_b=True)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = tt.matmul(static_x, w, transpose_b=True)
    for i in range(3):
        static_x.copy_(torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16))
        static_y.fill_(float("nan"))
        graph.replay()
        expected = tt.matmul(static_x, w, transpose_b=True)
        torch.cuda.synchronize()
        assert torch.equal(static_y, expected), f"replay {i} differs from an eager run"


def test_autotune_with_split_candidates(cuda, seed, tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    problem = GemmProblem(64, 2048, 4096)
    space = Space(tiles=((64, 256), (64, 128)), split_k=(1, 0, 2))  # 8 and 16 programs: split candidates
    log: list[str] = []
    best = autotune(problem, space=space, log=log.append)
    print("\n".join(log))
    assert any("split" in line and line.endswith(" ms") for line in log), log
    if best.config.split_k > 1:
        run_poisoned(torch, best.config, 64, 2048, 4096, seed)
