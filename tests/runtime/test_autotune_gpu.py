"""Autotuning on a Hopper GPU (tawa.runtime.autotune, docs/runtime.md).

* `tawa.autotune` of a small ragged problem with real timing (`GpuTimer`:
  every candidate's result checked, then CUDA events): a winner, written to
  the cache and read back without timing; the winner compiled and run on
  other ragged problems, C poisoned with NaN and followed by a sentinel,
  against a float32 reference (relative error ≤ 1e-2);
* `tawa.torch.matmul` with `TAWA_AUTOTUNE=1` and with the heuristic.

Run: `pytest -m gpu tests/runtime/test_autotune_gpu.py` on an H100.
"""

from __future__ import annotations

import json

import pytest

import tawa
from tawa.runtime.autotune import GemmProblem, Space, autotune, heuristic

pytestmark = pytest.mark.gpu

TOL = 1e-2
SPACE = Space(tiles=((128, 256), (128, 128), (64, 128)), stages=(0, 3))
"""Three tiles × two ring depths; autotune builds the heuristic's choice and the cost model's next three."""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    return tmp_path


def check(choice, M: int, N: int, K: int, seed: int) -> None:
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
    guard = 64
    storage = torch.full((M * N + guard,), float("nan"), dtype=torch.bfloat16, device="cuda")
    storage[M * N :] = 7.0
    C = storage[: M * N].view(M, N)
    choice.compile()(A, B, C, M, N, K, grid=choice.grid(M, N))
    torch.cuda.synchronize()
    nans = int(torch.isnan(C).sum())
    assert nans == 0, f"{nans} of {M * N} elements of C were not written ({choice.id}, {M}x{N}x{K})"
    assert bool((storage[M * N :] == 7.0).all()), f"the kernel wrote past the end of C ({choice.id})"
    ref = A.float() @ B.float().T
    err = ((C.float() - ref).norm() / ref.norm()).item()
    assert err <= TOL, f"relative error {err:.3g} > {TOL} ({choice.id}, {M}x{N}x{K})"


def test_autotune_a_ragged_problem(cuda, seed, cache_dir):
    problem = GemmProblem(1000, 1500, 1000)
    log: list[str] = []
    best = tawa.autotune(problem, space=SPACE, log=log.append)
    print("\n".join(log))
    timed = [line for line in log if line.endswith(" ms")]
    assert len(timed) >= 2, log
    (entry,) = json.loads((cache_dir / "autotune" / "gemm.json").read_text())["entries"].values()
    assert entry["ms"] == min(entry["timed"].values()) > 0
    assert best.id in entry["timed"]

    def never(choice, kernel):
        raise AssertionError("timed although cached")

    assert autotune(problem, space=SPACE, measure=never) == best  # the same shape: read back
    check(best, 1021, 1100, 1016, seed)  # the winner on other ragged shapes
    check(best, 67, 136, 40, seed + 1)  # smaller than one tile, one short K step


def test_torch_matmul_autotuned_and_heuristic(cuda, seed, cache_dir, monkeypatch):
    import torch

    import tawa.torch as tt
    from tawa.torch import kernels

    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(3, 333, 256, device="cuda", generator=g).to(torch.bfloat16)  # M = 999
    w = torch.randn(520, 256, device="cuda", generator=g).to(torch.bfloat16)
    ref = x.float() @ w.float().T
    for env in ("1", "0"):
        monkeypatch.setenv(kernels.AUTOTUNE_ENV, env)
        kernels.clear_cache()
        y = tt.matmul(x, w, transpose_b=True)
        err = ((y.float() - ref).norm() / ref.norm()).item()
        assert err <= TOL, f"TAWA_AUTOTUNE={env}: relative error {err:.3g}"
        choice = kernels.matmul_choice("gemm", "bfloat16", 999, 520, 256)
        if env == "0":
            assert choice == heuristic(GemmProblem(999, 520, 256), torch.cuda.get_device_properties(0).multi_processor_count)
    assert (cache_dir / "autotune" / "gemm.json").is_file()
