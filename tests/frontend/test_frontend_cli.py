"""`python -m tawa.frontend file.py`: the IR of every kernel, or one located
error and exit status 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tawa
from tawa.diagnostics import TawaError
from tawa.frontend.__main__ import load_kernels, main
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


KERNEL = (
    "import tawa\n"
    "import tawa.language as tl\n"
    "@tawa.kernel\n"
    "def k(C: tl.tensor_ref(tl.f32, 1), BLOCK: tl.constexpr = 64):\n"
    "    tl.store(C, (0,), tl.zeros((BLOCK,), tl.f32))\n"
)


def _one_line(capsys, argv) -> str:
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err and "internal error" not in captured.err
    return captured.err.rstrip("\n")


def test_nul_byte_is_located(tmp_path, capsys):
    f = tmp_path / "nul.py"
    f.write_bytes(KERNEL.encode().replace(b"(0,)", b"(0\0,)"))
    assert _one_line(capsys, [str(f)]) == f"{f}:5:19: error: the file contains a NUL byte"


def test_undecodable_byte_is_located(tmp_path, capsys):
    f = tmp_path / "bytes.py"
    f.write_bytes(KERNEL.encode().replace(b"(0,)", b"(0,) \xa4"))
    col = KERNEL.splitlines()[4].index("(0,)") + len("(0,) ") + 1
    assert _one_line(capsys, [str(f)]) == f"{f}:5:{col}: error: the file is not valid utf-8 (byte 0xa4)"


def test_import_error_has_line_and_column(tmp_path, capsys):
    f = tmp_path / "name.py"
    f.write_text(KERNEL.replace("= 64", "= undefined_name"))
    col = KERNEL.splitlines()[3].index("64") + 1
    assert _one_line(capsys, [str(f)]) == (f"{f}:4:{col}: error: importing the file raised NameError: "
                                           "name 'undefined_name' is not defined")
    f.write_text("import sys\nsys.exit(3)\n")
    assert _one_line(capsys, [str(f)]) == f"{f}:2:1: error: importing the file raised SystemExit: 3"
    f.write_text("import tawa\n\n@tawa.kernel\nclass K:\n    pass\n")
    assert _one_line(capsys, [str(f)]) == (f"{f}:3:2: error: importing the file raised TypeError: "
                                           "@tawa.kernel decorates a function, got type")


def test_too_deep_for_python_to_compile(tmp_path, capsys):
    """A statement Python's compiler cannot take (RecursionError, no frame
    of the file) is located at that statement."""
    f = tmp_path / "deep.py"
    f.write_text("import tawa\nx = 1\ny = " + " + ".join(["x"] * 3000) + "\n")
    line = _one_line(capsys, [str(f)])
    assert line.startswith(f"{f}:3:1: error: importing the file raised RecursionError: ")


def test_deep_expression_in_a_kernel(tmp_path, capsys):
    f = tmp_path / "deep.py"
    f.write_text(KERNEL.replace("tl.zeros((BLOCK,), tl.f32)", " + ".join(["tl.zeros((BLOCK,), tl.f32)"] * 1000)))
    assert _one_line(capsys, [str(f)]) == (f"{f}:5:23: error: expression nested more than 64 deep "
                                           "(split it with assignments)")


def test_command_line_values_are_located_where_they_apply(tmp_path, capsys):
    f = tmp_path / "k.py"
    f.write_text(KERNEL)
    assert _one_line(capsys, [str(f), "--constexpr", "BLOCK=foo"]) == (
        f"{f}:4:36: error: --constexpr BLOCK=foo: not a Python literal or a dtype")
    assert _one_line(capsys, [str(f), "--constexpr", "BLOCK=" + "[" * 500]) == (
        f"{f}:4:36: error: --constexpr BLOCK={'[' * 37}...: not a Python literal or a dtype")
    assert _one_line(capsys, [str(f), "--constexpr", "NOPE=1"]) == (
        f"{f}:4:1: error: --constexpr NOPE: no kernel has a constexpr named NOPE (constexprs: BLOCK)")
    assert _one_line(capsys, [str(f), "--kernel", "nope"]) == f"{f}:4:1: error: no kernel named nope (kernels: k)"
    assert _one_line(capsys, [str(f), "--constexpr", "BLOCK=-5"]) == (
        f"{f}:5:23: error: tl.zeros: tile sizes must be positive ints, got -5")


def test_usage_errors_are_one_line_and_exit_1(tmp_path, capsys):
    """As tawa-opt and tawa-run: no argparse usage text, no exit status 2."""
    f = tmp_path / "k.py"
    f.write_text(KERNEL)
    prog = "python -m tawa.frontend"
    assert _one_line(capsys, [str(f), "--nope"]) == f"{prog}: error: unrecognized arguments: --nope"
    assert _one_line(capsys, []) == f"{prog}: error: the following arguments are required: file"
    assert _one_line(capsys, [str(f), "-D", "X"]) == f"{prog}: error: --constexpr expects NAME=VALUE, got 'X'"
    assert _one_line(capsys, [str(tmp_path / "missing.py")]) == (
        f"{tmp_path / 'missing.py'}: error: cannot open input: No such file or directory")


# --------------------------------------------------------------------------- Python locations in the IR

INPUTS = Path(__file__).resolve().parents[1] / "filecheck" / "frontend" / "Inputs"


def test_printed_ops_carry_their_python_locations(tmp_path, capsys, monkeypatch):
    """Each op (and each parameter) is followed by `loc("path":L:C)` with the
    path as given on the command line; parsing the text keeps them, so the
    ops of `tawa.parse` are at the Python lines; `--no-locations` prints
    none."""
    monkeypatch.chdir(EXAMPLES)
    assert main(["gemm.py"]) == 0
    out = capsys.readouterr().out
    assert '%A: memref<?x?xbf16> loc("gemm.py":' in out and "loc(unknown)" not in out
    module = parse(out, "<stdin>")
    dot = next(op for op in module.walk() if op.name == "tile.dot")
    line = next(i for i, text in enumerate((EXAMPLES / "gemm.py").read_text().splitlines(), 1) if "tl.dot(" in text)
    assert (dot.location.filename.data, dot.location.line.data) == ("gemm.py", line)
    assert main(["gemm.py", "--no-locations"]) == 0
    plain = capsys.readouterr().out
    assert "loc(" not in plain and parse(plain).is_structurally_equivalent(parse(out))


def test_a_later_pass_names_the_python_line_on_both_paths(capsys, monkeypatch):
    """A kernel that the front end builds and tawa-warp-specialize refuses
    (two dots whose accumulators differ in rows): `tawa.compile` of the
    kernel and `tawa.compile` of the front end's printed text (what
    `python -m tawa.frontend k.py | tawa-opt -p tawa-hopper-pipeline` runs)
    report the same Python line and column, the second dot's."""
    monkeypatch.chdir(INPUTS.parent)
    path = "Inputs/mixed_rows.py"
    (kernel,) = load_kernels(path)
    with pytest.raises(TawaError) as api:
        kernel.compile()
    assert main([path]) == 0
    with pytest.raises(TawaError) as cli:
        tawa.compile(capsys.readouterr().out, "mixed_rows")
    line = next(i for i, text in enumerate((INPUTS / "mixed_rows.py").read_text().splitlines(), 1)
                if "small = tl.dot(" in text)
    assert api.value.where == cli.value.where == f"{path}:{line}:17"
    assert f"the dot at {path}:{line - 2}:15 has 128" in cli.value.message
