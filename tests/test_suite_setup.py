"""The test suite's own setup (tests/conftest.py, pyproject.toml): caches
under a temporary directory, skip reasons shown."""

from __future__ import annotations

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


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    command = readme.split("Run every test", 1)[1].split("\n\n", 2)[1].strip()
    assert command.startswith("pip install -e '.[test]' && pytest"), command
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in ci, f".ci/run does not run the README's test command {command!r}"
