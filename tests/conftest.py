"""Settings of the whole test suite, and the `cuda` fixture of GPU tests.

Tests write caches only under a temporary directory: the cubin cache of
`tawa.runtime.ptxas` (`$TAWA_CACHE_DIR`, else `~/.cache/tawa`) goes to a
fresh directory that is removed at the end.  It is set in `pytest_configure`,
before collection, so it holds for the subprocesses tests start (lit,
tawa-opt) and for each pytest-xdist worker (its own directory).  Tests that
exercise the cache itself set `TAWA_CACHE_DIR` to their own `tmp_path`.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

CACHE_ENV = "TAWA_CACHE_DIR"
_cache = pytest.StashKey[str]()
_saved = pytest.StashKey["str | None"]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_saved] = os.environ.get(CACHE_ENV)
    config.stash[_cache] = tempfile.mkdtemp(prefix="tawa-test-cache-")
    os.environ[CACHE_ENV] = config.stash[_cache]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _cache not in config.stash:
        return
    shutil.rmtree(config.stash[_cache], ignore_errors=True)
    saved = config.stash[_saved]
    if saved is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = saved


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
    """The CUDA device, or a skip that says why GPU tests cannot run here."""
    reason = gpu_unavailable()
    if reason:
        pytest.skip(reason)
    import torch

    return torch.device("cuda")
