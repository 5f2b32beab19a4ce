"""Settings of the whole test suite, the `cuda` fixture of GPU tests and the
`seed` fixture of tests on random data (TAWA_TEST_SEED fixes it; a failing
test's report says how to repeat it).

Two tiers.  Plain `pytest` runs the fast tier: tests marked `slow` are
deselected (`-m "not slow"`) unless the command line gives its own `-m`
expression or names a test by its node id (`file::test`).  So `pytest -m
slow` runs the slow tier, `pytest -m "slow or not slow"` runs both, and
`pytest tests/x.py::test_y` runs that test whatever its tier (the rule for
marking a test slow: docs/testing.md).

Tests write caches only under a temporary directory: the cubin cache of
`tawa.runtime.ptxas` (`$TAWA_CACHE_DIR`, else `~/.cache/tawa`) goes to a
fresh directory that is removed at the end, and so do the protocol proofs
of `tawa-verify-protocol` (`tawa.cache.ProofStore`).  It is set in
`pytest_configure`, before collection, so it holds for the subprocesses
tests start (lit, tawa-opt) and for the pytest-xdist workers, which share
the controller's directory: a kernel's protocol is proved once per run, not
once per process.  Tests that exercise the caches set `TAWA_CACHE_DIR` to
their own `tmp_path`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile

import pytest

CACHE_ENV = "TAWA_CACHE_DIR"
SHARED_ENV = "TAWA_TEST_CACHE_DIR"
"""Set by the pytest process that made the directory; xdist workers, which
inherit it, use that directory instead of making their own."""
_cache = pytest.StashKey[str]()
_saved = pytest.StashKey["str | None"]()


FAST_TIER = "not slow"
"""The mark expression of plain `pytest`."""


def tier_expression(markexpr: str, args: list[str]) -> str:
    """The mark expression a run selects with: `-m` as given; without one,
    the fast tier, unless a test is named by its node id."""
    if markexpr or any("::" in arg for arg in args):
        return markexpr
    return FAST_TIER


def pytest_configure(config: pytest.Config) -> None:
    config.option.markexpr = tier_expression(config.option.markexpr, config.args)
    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(SHARED_ENV):
        return  # a worker: the controller's directory (inherited) is shared, and the controller removes it
    config.stash[_saved] = os.environ.get(CACHE_ENV)
    config.stash[_cache] = tempfile.mkdtemp(prefix="tawa-test-cache-")
    os.environ[CACHE_ENV] = os.environ[SHARED_ENV] = config.stash[_cache]


def pytest_report_header(config: pytest.Config) -> str:
    if config.option.markexpr == FAST_TIER:
        return "tier: fast (tests marked slow are deselected; `pytest -m slow` runs them)"
    return f"tier: -m {config.option.markexpr!r}" if config.option.markexpr else "tier: the tests named, slow or not"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _cache not in config.stash:
        return
    os.environ.pop(SHARED_ENV, None)
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


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """TAWA_TEST_SEED if set, else fresh; printed when the test fails."""
    value = int(os.environ.get("TAWA_TEST_SEED") or secrets.randbits(31))
    request.node.tawa_seed = value
    return value


def _replays_match_eager(fn, inputs) -> None:
    """Captures `fn(*inputs[0])` in a CUDA graph (after two warm-up calls on
    a side stream, as torch.cuda.graphs asks: they compile and load the
    kernels), then for each later argument tuple copies it into the captured
    tensors, replays, and checks every output is finite and bitwise equal to
    an eager call on the same arguments."""
    import torch

    static = [t.clone() for t in inputs[0]]  # clone keeps the strides
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = fn(*static)
    captured = captured if isinstance(captured, tuple) else (captured,)
    for new in inputs[1:]:
        for dst, src in zip(static, new):
            dst.copy_(src)
        graph.replay()
        expected = fn(*new)
        expected = expected if isinstance(expected, tuple) else (expected,)
        torch.cuda.synchronize()
        for got, want in zip(captured, expected, strict=True):
            assert bool(torch.isfinite(got).all())
            assert torch.equal(got, want), "the replayed graph differs from an eager run"


@pytest.fixture
def replays_match_eager(cuda):
    """`replays_match_eager(fn, inputs)`: a CUDA graph of `fn` replayed on
    each of `inputs` (tuples of tensors) equals eager calls bitwise."""
    return _replays_match_eager


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    value = getattr(item, "tawa_seed", None)
    if value is not None and report.failed:
        report.sections.append(("random seed", f"rerun with TAWA_TEST_SEED={value}"))
