"""Runs the lit / FileCheck suite under tests/filecheck, one pytest test per
lit test file, so a failure names its file and pytest-xdist spreads the files
over its workers.

The files are those lit discovers (`tests/filecheck/lit.cfg`: `*.mlir`, not
under `Inputs/` or `Output/`); `test_the_files_are_those_lit_discovers`
checks the two agree.  A file that runs the whole pipeline, or one of
`SLOW_DIRS` (`is_slow`), is marked `slow` and runs under `pytest -m slow`
(docs/testing.md); the others, each pass's FileCheck tests on its own inputs,
the dialects' and the PTX printer's, are in the fast tier.

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
SUFFIXES = (".mlir",)
EXCLUDED_DIRS = {"Inputs", "Output"}
"""lit.cfg's `config.suffixes` and `config.excludes`."""

WHOLE_PIPELINE = ("tawa-hopper-pipeline", "tawa-verify-protocol")
"""A lit file whose RUN lines name one of these runs the whole pipeline or
the protocol proof on its kernels: seconds of CPU each, so the file is in
the slow tier."""
SLOW_DIRS = ("examples", "frontend", "tools")
"""Lit files of these directories are slow too: they test whole example
files, the Python front end and the command-line tools, each with several
processes (the fast tier tests the same in-process: tests/test_tawa_opt.py,
tests/test_hardening.py, tests/frontend).  The fast tier keeps dialects/,
transforms/ and verify/ (each pass on its own inputs) and backend/ (the PTX
printer)."""


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


def is_slow(name: str) -> bool:
    runs = [line for line in (FILECHECK_DIR / name).read_text().splitlines() if "RUN:" in line]
    return name.split("/", 1)[0] in SLOW_DIRS or any(p in line for line in runs for p in WHOLE_PIPELINE)


def lit_files() -> list[str]:
    """The test files lit discovers under tests/filecheck, relative to it."""
    return sorted(
        path.relative_to(FILECHECK_DIR).as_posix()
        for path in FILECHECK_DIR.rglob("*")
        if path.suffix in SUFFIXES and path.is_file()
        and not EXCLUDED_DIRS & set(path.relative_to(FILECHECK_DIR).parts[:-1])
    )


_MISSING = [tool for tool in TOOLS if tool_path(tool) is None]
needs_tools = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"{', '.join(_MISSING)} found neither in {scripts_dir()} (beside {sys.executable}) nor on PATH: "
    "install tawa into this interpreter with `pip install -e '.[test]'`",
)


@needs_tools
@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=[pytest.mark.slow] if is_slow(name) else []) for name in lit_files()]
)
def test_lit(name):
    # The `lit` script, not `python -m lit`: the pip package has no __main__.
    res = subprocess.run(
        [tool_path("lit"), "-v", "-j1", str(FILECHECK_DIR / name)],
        capture_output=True,
        text=True,
        timeout=1200,
        env=lit_environment(),
    )
    assert res.returncode == 0, f"lit -v tests/filecheck/{name} failed:\n{res.stdout}\n{res.stderr}"
    assert "Passed: 1" in res.stdout, f"lit ran no test in tests/filecheck/{name}:\n{res.stdout}"


@needs_tools
def test_the_files_are_those_lit_discovers():
    res = subprocess.run(
        [tool_path("lit"), "--show-tests", str(FILECHECK_DIR)],
        capture_output=True, text=True, timeout=300, env=lit_environment(),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    discovered = sorted(line.split(" :: ", 1)[1] for line in res.stdout.splitlines() if " :: " in line)
    assert discovered == lit_files()


def test_the_slow_directories_hold_lit_files():
    assert {name.split("/", 1)[0] for name in lit_files()} >= set(SLOW_DIRS)


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
    one = FILECHECK_DIR / "transforms" / "prepare" / "strength_reduce.mlir"  # one cheap RUN line
    env = {k: v for k, v in os.environ.items() if k not in ("PATH", "VIRTUAL_ENV")}
    res = subprocess.run(
        [str(scripts_dir() / "lit"), "-v", str(one)],
        capture_output=True, text=True, timeout=300, env={**env, "PATH": os.defpath},
    )
    assert res.returncode == 0 and "PASS:" in res.stdout, res.stdout + res.stderr
