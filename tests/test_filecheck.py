"""Runs the lit / FileCheck suite under tests/filecheck as one pytest test.

The tools (`lit`, `tawa-opt`, `filecheck`) are taken from the directory of
the running interpreter first (a virtual environment's `bin/`, where
`pip install -e '.[test]'` puts them), then from PATH: `.venv/bin/pytest` or
`.venv/bin/python -m pytest` works without activating the environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).resolve().parent / "filecheck"
TOOLS = ("tawa-opt", "lit", "filecheck")


def scripts_dir() -> Path:
    """Where pip put the scripts of the running interpreter's packages
    (not resolved: a venv's python is a link to the system one)."""
    return Path(sys.executable).parent


def tool_path(name: str, path: str | None = None) -> str | None:
    """`name` next to the running interpreter, else on `path` (default PATH)."""
    return shutil.which(name, path=os.pathsep.join([str(scripts_dir()), path or os.environ.get("PATH", "")]))


def lit_environment() -> dict[str, str]:
    """The environment for lit: the interpreter's scripts first on PATH."""
    return {**os.environ, "PATH": os.pathsep.join([str(scripts_dir()), os.environ.get("PATH", "")])}


_MISSING = [tool for tool in TOOLS if tool_path(tool) is None]


@pytest.mark.skipif(
    bool(_MISSING),
    reason=f"{', '.join(_MISSING)} found neither in {scripts_dir()} (beside {sys.executable}) nor on PATH: "
    "install tawa into this interpreter with `pip install -e '.[test]'`",
)
def test_lit_filecheck_suite():
    # The `lit` script, not `python -m lit`: the pip package has no __main__.
    lit = tool_path("lit")
    res = subprocess.run(
        [lit, "-v", str(FILECHECK_DIR)],
        capture_output=True,
        text=True,
        timeout=1200,
        env=lit_environment(),
    )
    assert res.returncode == 0, f"lit -v {FILECHECK_DIR} failed:\n{res.stdout}\n{res.stderr}"


def _beside_interpreter() -> None:
    missing = [tool for tool in TOOLS if not (scripts_dir() / tool).exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed beside {sys.executable} (found on PATH instead)")


def test_tools_are_found_beside_the_interpreter_without_path(monkeypatch):
    _beside_interpreter()
    monkeypatch.setenv("PATH", os.defpath)
    for tool in TOOLS:
        assert tool_path(tool) == str(scripts_dir() / tool)
    assert lit_environment()["PATH"].split(os.pathsep)[0] == str(scripts_dir())


def test_lit_config_finds_the_tools_without_path():
    """`.venv/bin/lit tests/filecheck` without an activated environment:
    lit.cfg puts lit's own interpreter's scripts first on the tests' PATH."""
    _beside_interpreter()
    one = FILECHECK_DIR / "transforms" / "strength_reduce.mlir"  # one cheap RUN line
    env = {k: v for k, v in os.environ.items() if k not in ("PATH", "VIRTUAL_ENV")}
    res = subprocess.run(
        [str(scripts_dir() / "lit"), "-v", str(one)],
        capture_output=True, text=True, timeout=300, env={**env, "PATH": os.defpath},
    )
    assert res.returncode == 0 and "PASS:" in res.stdout, res.stdout + res.stderr
