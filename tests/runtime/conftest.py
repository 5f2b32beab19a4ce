"""Shared helpers of the runtime tests: the `seed` fixture (printed when a
test fails).  The `cuda` fixture, which skips (saying why) unless CuPy,
cuda-bindings, torch and a Hopper GPU are all there, is the whole suite's
(tests/conftest.py).  GPU tests also carry the `gpu` marker (declared in
pyproject.toml)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


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
