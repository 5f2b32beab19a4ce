"""Fresh random inputs in every run; a failing test prints the seed to rerun it with."""

from __future__ import annotations

import os
import secrets

import numpy as np
import pytest


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from TAWA_TEST_SEED if set, else freshly."""
    seed = int(os.environ.get("TAWA_TEST_SEED") or secrets.randbits(32))
    request.node.tawa_seed = seed
    return np.random.default_rng(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    seed = getattr(item, "tawa_seed", None)
    if seed is not None and report.failed:
        report.sections.append(("random seed", f"rerun with TAWA_TEST_SEED={seed}"))
