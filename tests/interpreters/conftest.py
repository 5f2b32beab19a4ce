"""Fresh random inputs in every run: `rng` is a NumPy generator seeded by the
suite's `seed` fixture (tests/conftest.py), which a failing test prints."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    """A generator seeded from TAWA_TEST_SEED if set, else freshly."""
    return np.random.default_rng(seed)
