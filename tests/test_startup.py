"""tawa.startup: the collector paused while tawa starts, and as it was after."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tawa.startup import paused_collector
from tawa.tools.tawa_opt import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("enabled", [True, False])
def test_paused_then_as_it_was(enabled):
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with paused_collector():
            assert not gc.isenabled()
        assert gc.isenabled() == enabled
        with pytest.raises(ValueError), paused_collector():
            raise ValueError
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_main_with_arguments_leaves_the_collector_alone(tmp_path):
    frozen = gc.get_freeze_count()
    out = tmp_path / "out.mlir"
    assert main([str(ROOT / "examples" / "gemm.mlir"), "-p", "tawa-exp-to-exp2", "-o", str(out)]) == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_the_command_freezes_its_start_up(tmp_path):
    code = ("import gc, sys\n"
            "import tawa\n"
            "assert gc.isenabled() and gc.get_freeze_count() == 0\n"
            "from tawa.tools.tawa_opt import main\n"
            f"sys.argv = ['tawa-opt', {str(ROOT / 'examples' / 'gemm.mlir')!r}, '-p', 'tawa-exp-to-exp2', "
            f"'-o', {str(tmp_path / 'out.mlir')!r}]\n"
            "assert main() == 0\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "TAWA_PROOF_CACHE": "0"})
    assert out.stdout.split() == ["True", "True"], out.stderr
