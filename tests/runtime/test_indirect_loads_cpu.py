"""The GPU tests of tests/runtime/test_indirect_loads_gpu.py run on the CPU,
at small shapes: their tensors made by torch on the CPU, each launch the
example's tile program in tawa's interpreter (on NumPy views of the same
memory).  So their tables, poisoning and torch references are checked
against what the kernels must compute before a GPU runs them.  Needs torch
(any build); skipped without it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")
GPU_TESTS = Path(__file__).with_name("test_indirect_loads_gpu.py")


@pytest.fixture
def gpu_tests(monkeypatch):
    spec = importlib.util.spec_from_file_location("indirect_loads_gpu_on_cpu", GPU_TESTS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def interpret(name, grid, *args, **constexprs):
        views = [a.view(torch.int16).numpy().view(ml_dtypes.bfloat16) if isinstance(a, torch.Tensor)
                 and a.dtype == torch.bfloat16 else a.numpy() if isinstance(a, torch.Tensor) else a for a in args]
        module.kernel(name).interpret(grid, *views, **constexprs)  # the views write into the tensors

    monkeypatch.setattr(module, "DEVICE", "cpu")
    monkeypatch.setattr(module, "launch", interpret)
    return module


@pytest.mark.parametrize("test, params", [
    ("test_gather_rows", {"blocks": 5, "N": 200, "extra": 1}),
    ("test_gather_rows", {"blocks": 3, "N": 8, "extra": 2}),
    ("test_grouped_gemm", {"M": 300, "N": 136, "K": 72, "E": 3, "constexprs": {}}),
    ("test_grouped_gemm", {"M": 130, "N": 8, "K": 8, "E": 2, "constexprs": {"BLOCK_M": 64, "BLOCK_N": 256}}),
    ("test_paged_gemm", {"M": 130, "N": 264, "K": 200}),
    ("test_paged_gemm", {"M": 130, "N": 8, "K": 64}),
    ("test_paged_attention", {"causal": False, "head_dim": 64, "q_len": 1, "kv_len": 300}),
    ("test_paged_attention", {"causal": True, "head_dim": 64, "q_len": 130, "kv_len": 300}),
])
def test_gpu_test_on_the_cpu(gpu_tests, seed, test, params):
    getattr(gpu_tests, test)(None, seed, **params)


def test_views_share_memory():
    """What the interpreter writes into a view lands in the tensor."""
    t = torch.zeros(2, 3, dtype=torch.bfloat16)
    t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)[1, 2] = 1.5
    assert t[1, 2].item() == 1.5 and np.count_nonzero(t.float().numpy()) == 1
