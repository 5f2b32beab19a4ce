"""`python -m tawa.frontend file.py`: the IR of every kernel, or one located
error and exit status 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tawa.frontend.__main__ import main
from tawa.ir import parse

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def test_prints_every_kernel_as_one_parsable_module(tmp_path, capsys):
    f = tmp_path / "two.py"
    f.write_text(
        "import tawa\n"
        "import tawa.language as tl\n"
        "@tawa.kernel\n"
        "def first(C: tl.tensor_ref(tl.f32, 2), BLOCK: tl.constexpr = 64):\n"
        "    tl.store(C, (0, 0), tl.zeros((BLOCK, BLOCK), tl.f32))\n"
        "@tawa.kernel\n"
        "def second(C: tl.tensor_ref(tl.f32, 1), x: tl.f32):\n"
        "    tl.store(C, (tl.program_id(0) * 64,), tl.full((64,), x, tl.f32))\n"
    )
    assert main([str(f), "--constexpr", "BLOCK=128"]) == 0
    out = capsys.readouterr().out
    module = parse(out)
    assert [op.sym_name.data for op in module.body.block.ops] == ["first", "second"]
    assert "tensor<128x128xf32>" in out
    assert main([str(f), "--kernel", "second"]) == 0
    assert "@first" not in capsys.readouterr().out


def test_errors_are_one_located_line(tmp_path, capsys):
    f = tmp_path / "bad.py"
    f.write_text(
        "import tawa\n"
        "import tawa.language as tl\n"
        "@tawa.kernel\n"
        "def bad(C: tl.tensor_ref(tl.f32, 2)):\n"
        "    x = tl.zeros((64, 64), tl.f32)\n"
        "    y = x + tl.zeros((32,), tl.f32)\n"
    )
    assert main([str(f)]) == 1
    err = capsys.readouterr().err
    assert err == f"{f}:6:9: error: x + tl.zeros((32,), tl.f32): cannot broadcast shapes 64x64 and 32 " \
                  "(64x64xf32 and 32xf32)\n"
    assert main([str(f), "--constexpr", "NOPE=1"]) == 1
    assert "no kernel has a constexpr named NOPE" in capsys.readouterr().err
    (tmp_path / "syntax.py").write_text("def f(:\n")
    assert main([str(tmp_path / "syntax.py")]) == 1
    assert capsys.readouterr().err.startswith(f"{tmp_path / 'syntax.py'}:1:")


def test_module_entry_point():
    """The real `python -m` start: status 0 and the GEMM's IR on stdout."""
    run = subprocess.run([sys.executable, "-m", "tawa.frontend", str(EXAMPLES / "gemm.py")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "tile.dot" in run.stdout and run.stderr == ""
