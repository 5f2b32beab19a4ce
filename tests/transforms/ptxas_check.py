"""ptxas for the lowering tests: assemble a printed kernel for sm_90a and
check that it neither fails nor spills (tests skip where ptxas is not on
PATH: `needs_ptxas`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tawa.runtime.ptxas import SERIALIZED_WGMMA

PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")
SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def assemble(ptx: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`ptxas -arch=sm_90a -v` of `ptx` (its result: returncode, stderr)."""
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    assert PTXAS is not None
    return subprocess.run([PTXAS, "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)


def assert_assembles_without_spills(ptx: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """ptxas accepts `ptx`, and reports 0 spill stores and loads for every
    function and no note that it waits for wgmma itself
    (`tawa.runtime.ptxas.SERIALIZED_WGMMA`: C7513, C7517)."""
    res = assemble(ptx, tmp_path)
    assert res.returncode == 0, res.stderr
    spills = SPILLS.findall(res.stderr)
    assert spills and all(s == ("0", "0") for s in spills), res.stderr
    assert not SERIALIZED_WGMMA.search(res.stderr), res.stderr
    return res
