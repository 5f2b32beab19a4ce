"""Shared helpers of the runtime tests: the `cuda` fixture skips (saying why)
unless CuPy, cuda-bindings, torch and a Hopper GPU are all there.  GPU tests
also carry the `gpu` marker (declared in pyproject.toml)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def gpu_unavailable() -> str | None:
    """Why GPU tests cannot run here, or None."""
    for module in ("cupy", "cuda.bindings.driver", "torch"):
        try:
            __import__(module)
        except ImportError as err:
            return f"{module} is not importable ({err}); GPU tests need the 'gpu' extra and torch"
    import torch

    if not torch.cuda.is_available():
        return "torch sees no CUDA GPU"
    cc = torch.cuda.get_device_capability()
    if cc != (9, 0):
        return f"needs a Hopper GPU (sm_90), found {torch.cuda.get_device_name()} (sm_{cc[0]}{cc[1]})"
    return None


@pytest.fixture
def cuda():
    reason = gpu_unavailable()
    if reason:
        pytest.skip(reason)
    import torch

    return torch.device("cuda")


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """TAWA_TEST_SEED if set, else fresh; printed when the test fails."""
    value = int(os.environ.get("TAWA_TEST_SEED") or secrets.randbits(31))
    request.node.tawa_seed = value
    return value


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    value = getattr(item, "tawa_seed", None)
    if value is not None and report.failed:
        report.sections.append(("random seed", f"rerun with TAWA_TEST_SEED={value}"))
