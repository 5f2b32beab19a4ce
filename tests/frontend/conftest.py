"""Shared helpers of the front-end tests: `example(name)` imports
examples/python/<name>.py once per session; `seed` gives fresh random data
(printed when a test fails; TAWA_TEST_SEED fixes it)."""

from __future__ import annotations

import importlib.util
import os
import secrets
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_loaded: dict[str, ModuleType] = {}


def load_example(name: str) -> ModuleType:
    if name not in _loaded:
        spec = importlib.util.spec_from_file_location(f"tawa_example_{name}", EXAMPLES / "python" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[name] = module
    return _loaded[name]


@pytest.fixture(scope="session")
def example():
    return load_example


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    value = int(os.environ.get("TAWA_TEST_SEED") or secrets.randbits(31))
    print(f"seed {value} (TAWA_TEST_SEED={value} repeats it)")
    return value
