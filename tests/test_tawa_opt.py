"""tawa-opt in-process: registries, printing, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawa.backend import get_all_targets
from tawa.dialects import get_all_dialects
from tawa.tools.tawa_opt import main
from tawa.transforms import get_all_passes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def test_pass_registry_keys_equal_pass_names():
    for name, factory in get_all_passes().items():
        assert factory().name == name


def test_target_registry_keys_equal_target_names():
    for name, factory in get_all_targets().items():
        assert factory().name == name


def test_dialect_registry_keys_equal_dialect_names():
    for name, factory in get_all_dialects().items():
        dialect = factory()
        assert dialect.name == name
        for op in dialect.operations:
            assert op.name.startswith(name + "."), op.name
            assert op.__name__.endswith("Op"), op.__name__
            assert op.__doc__ and "Example" in op.__doc__, f"{op.name} lacks a documented example"


@pytest.mark.parametrize("example", ["gemm.mlir", "attention_fwd.mlir"])
def test_examples_print_stably(example, capsys):
    assert main([str(EXAMPLES / example)]) == 0
    first = capsys.readouterr().out
    assert "tile.dot" in first
    tmp = ROOT / "tests" / f".stable_{example}"
    try:
        tmp.write_text(first)
        assert main([str(tmp)]) == 0
        assert capsys.readouterr().out == first
    finally:
        tmp.unlink(missing_ok=True)


def _error_of(argv, capsys) -> str:
    assert main(argv) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


def test_truncated_input_is_one_line(tmp_path, capsys):
    src = tmp_path / "trunc.mlir"
    src.write_text("\n".join((EXAMPLES / "gemm.mlir").read_text().splitlines()[:20]))
    line = _error_of([str(src)], capsys)
    assert line.startswith(f"{src}:") and "error: unexpected end of input" in line


def test_unknown_op_is_located(tmp_path, capsys):
    src = tmp_path / "unknown.mlir"
    src.write_text((EXAMPLES / "gemm.mlir").read_text().replace("tile.zeros", "tile.zeroes"))
    line = _error_of([str(src)], capsys)
    assert line.startswith(f"{src}:17:") and "tile.zeroes is not registered" in line


def test_verifier_error_is_located(tmp_path, capsys):
    src = tmp_path / "dot.mlir"
    text = (EXAMPLES / "gemm.mlir").read_text().replace("256x64xbf16", "256x32xbf16")
    src.write_text(text)
    line = _error_of([str(src)], capsys)
    assert line == (
        f"{src}:21:5: error: tile.dot contraction sizes differ: lhs has K=64, rhs has K=32"
    )


def test_unknown_pass(capsys):
    line = _error_of([str(EXAMPLES / "gemm.mlir"), "-p", "no-such-pass"], capsys)
    assert line.startswith("tawa-opt: error: invalid pass pipeline") and "no-such-pass" in line


def test_unknown_flag_and_target(capsys):
    assert "unrecognized arguments" in _error_of(["--frobnicate"], capsys)
    assert "invalid choice: 'nope'" in _error_of(["-t", "nope", str(EXAMPLES / "gemm.mlir")], capsys)


def test_missing_file(capsys):
    assert "cannot open input" in _error_of(["does-not-exist.mlir"], capsys)


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert "tawa-opt" in capsys.readouterr().out


def test_help_lists_tawa_passes_and_targets(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "tawa passes:" in out and "tawa targets:" in out
    for name in get_all_passes():
        assert name in out
