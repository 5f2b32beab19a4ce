"""The test suite's own setup (tests/conftest.py, pyproject.toml, .ci/run):
caches under a temporary directory, skip reasons shown, the fast and slow
tiers, CI running the README's commands."""

from __future__ import annotations

import importlib.util
import os
import tempfile
import tomllib
from pathlib import Path

from tawa.runtime import cache_dir

ROOT = Path(__file__).resolve().parent.parent


def test_the_cubin_cache_is_a_temporary_directory():
    folder = cache_dir()
    assert os.environ["TAWA_CACHE_DIR"] == str(folder)
    assert folder.is_relative_to(tempfile.gettempdir()) and folder.name.startswith("tawa-test-cache-")
    assert not folder.is_relative_to(Path.home() / ".cache")


def test_skip_reasons_are_shown_by_default(pytestconfig):
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-rfEs" in options["addopts"].split()
    # failures and errors stay in the summary next to the skips (-r replaces pytest's default "fE")
    assert set("fEs") <= set(pytestconfig.option.reportchars)


def test_ci_runs_the_readme_test_commands():
    """The README's commands, the fast tier then the slow one, are lines of
    .ci/run (alone or followed by `||`: CI runs every step, then fails)."""
    readme = (ROOT / "README.md").read_text()
    commands = [line.strip() for line in readme.split("Run every test", 1)[1].split("\n\n", 2)[1].splitlines()]
    assert commands[0].startswith("pip install -e '.[test]' && pytest"), commands
    assert any(command.endswith(" -m slow") for command in commands), commands
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in commands:
        assert any(line == command or line.startswith(f"{command} ||") for line in ci), (
            f".ci/run does not run the README's test command {command!r}"
        )


def _conftest():
    spec = importlib.util.spec_from_file_location("tests_conftest", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plain_pytest_runs_the_fast_tier():
    tier = _conftest().tier_expression
    assert tier("", ["tests"]) == "not slow"
    assert tier("", []) == "not slow"
    assert tier("slow", ["tests"]) == "slow"  # `pytest -m slow`: the slow tier
    assert tier("gpu", ["tests"]) == "gpu"  # any -m expression replaces the default
    assert tier("", ["tests/x.py::test_y"]) == ""  # a test named by its node id runs, slow or not


def test_the_slow_marker_is_registered_and_markers_are_strict():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(marker.startswith("slow:") for marker in options["markers"])
    assert "--strict-markers" in options["addopts"].split()
