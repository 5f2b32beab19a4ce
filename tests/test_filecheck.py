"""Runs the lit / FileCheck suite under tests/filecheck as one pytest test."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).resolve().parent / "filecheck"

_MISSING = [tool for tool in ("tawa-opt", "lit", "filecheck") if shutil.which(tool) is None]


@pytest.mark.skipif(
    bool(_MISSING),
    reason=f"not on PATH: {', '.join(_MISSING)} (install tawa with `pip install -e '.[test]'`)",
)
def test_lit_filecheck_suite():
    # The `lit` script, not `python -m lit`: the pip package has no __main__.
    res = subprocess.run(
        ["lit", "-v", str(FILECHECK_DIR)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, f"lit -v {FILECHECK_DIR} failed:\n{res.stdout}\n{res.stderr}"
