"""Shared helpers of the front-end tests: `example(name)` imports
examples/python/<name>.py once per session (`seed` is the suite's,
tests/conftest.py)."""

from __future__ import annotations

import importlib.util
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
