"""Input hardening at the byte and nesting level, and through the Python API
(docs/testing.md, "Fuzzing"); the FileCheck side is
tests/filecheck/tools/hardening_*.mlir."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tawa
from tawa.diagnostics import MAX_NESTING, TawaError
from tawa.tools.tawa_opt import main

ROOT = Path(__file__).resolve().parent.parent
GEMM = (ROOT / "examples" / "gemm.mlir").read_bytes()


def _one_error_line(argv, capsys) -> str:
    assert main(argv) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err + captured.out
    assert "internal error" not in lines[0]
    return lines[0]


def _nested(depth: int) -> str:
    """`depth` ops nested in regions, the innermost at that depth (func = 1)."""
    return (
        "func.func @f(%a: index) {\n  %c = arith.constant 1 : i1\n"
        + "scf.if %c {\n" * (depth - 2)
        + "%x = arith.addi %a, %a : index\n"
        + "}\n" * (depth - 2)
        + "func.return\n}\n"
    )


def test_non_utf8_byte_is_located(tmp_path, capsys):
    lines = GEMM.split(b"\n")
    lines[16] = lines[16][:5] + b"\xff" + lines[16][5:]  # line 17, column 6
    src = tmp_path / "bytes.mlir"
    src.write_bytes(b"\n".join(lines))
    assert _one_error_line([str(src)], capsys) == f"{src}:17:6: error: input is not valid UTF-8 (byte 0xff)"


def test_non_utf8_in_a_later_chunk_counts_its_lines(tmp_path, capsys):
    src = tmp_path / "split.mlir"
    src.write_bytes(GEMM + b"\n// -----\n// caf\xe9\n" + GEMM)
    line = _one_error_line([str(src), "--split-input-file"], capsys)
    at = GEMM.count(b"\n") + 3  # the chunk's second line
    assert line == f"{src}:{at}:7: error: input is not valid UTF-8 (byte 0xe9)"


def test_utf8_in_comments_is_fine(capsys):
    assert "·" in GEMM.decode()  # the example's comments are UTF-8 (C = A · Bᵀ)
    assert main([str(ROOT / "examples" / "gemm.mlir")]) == 0


def test_nesting_limit_is_inclusive(tmp_path, capsys):
    deepest = tmp_path / "deepest.mlir"
    deepest.write_text(_nested(MAX_NESTING))
    assert main([str(deepest), "-p", "canonicalize,cse"]) == 0
    # The printed module (an explicit builtin.module) parses again.
    printed = tmp_path / "printed.mlir"
    main([str(deepest)])
    printed.write_text(capsys.readouterr().out)
    assert main([str(printed)]) == 0
    capsys.readouterr()
    too_deep = tmp_path / "too_deep.mlir"
    too_deep.write_text(_nested(MAX_NESTING + 1))
    line = _one_error_line([str(too_deep)], capsys)
    assert line == f"{too_deep}:{MAX_NESTING + 2}:1: error: operations nested more than {MAX_NESTING} deep"


@pytest.mark.parametrize("depth", [10_000])
def test_deeply_nested_ops_are_one_clean_error(tmp_path, capsys, depth):
    src = tmp_path / "deep_ops.mlir"
    src.write_text("func.func @f() {\n" + "scf.execute_region {\n" * depth + "}\n" * depth + "func.return\n}\n")
    limit = sys.getrecursionlimit()
    line = _one_error_line([str(src)], capsys)
    assert line.startswith(f"{src}:") and f"nested more than {MAX_NESTING} deep" in line
    assert sys.getrecursionlimit() == limit


def test_deeply_nested_attributes_are_one_clean_error(tmp_path, capsys):
    src = tmp_path / "deep_attr.mlir"
    src.write_text('func.func @f() {\n  "func.return"() {a = ' + "[" * 10_000 + "]" * 10_000 + "} : () -> ()\n}\n")
    line = _one_error_line([str(src)], capsys)
    assert line.startswith(f"{src}:2:") and line.endswith("error: input nested too deeply")


def test_python_api_rejects_use_before_def():
    text = "func.func @f(%a: index) {\n  %x = arith.addi %y, %a : index\n  %y = arith.constant 1 : index\n  func.return\n}\n"
    with pytest.raises(TawaError) as info:
        tawa.parse(text, "api.mlir")
    assert str(info.value) == "api.mlir:2:3: error: operand #0 (%y) of 'arith.addi' is used before it is defined"


def test_python_api_rejects_out_of_range_literal():
    text = "func.func @f() {\n  %x = arith.constant 70000.0 : f16\n  func.return\n}\n"
    with pytest.raises(TawaError) as info:
        tawa.parse(text, "api.mlir")
    assert str(info.value) == "api.mlir:2:23: error: literal 70000.0 is out of range of f16"


def test_verify_checks_ir_built_in_python():
    """`verify` also checks IR that no parser saw (a pass's output)."""
    from xdsl.dialects import arith, func
    from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
    from xdsl.ir import Block, Region

    from tawa.diagnostics import verify

    big = arith.ConstantOp(IntegerAttr(2**64, IndexType()))
    body = Block([big, func.ReturnOp()])
    module = ModuleOp([func.FuncOp("f", ((), ()), Region(body))])
    with pytest.raises(TawaError, match=r"integer 18446744073709551616 does not fit in index"):
        verify(module)
    # Ops in the wrong order, as a buggy pass could leave them.
    one = arith.ConstantOp(IntegerAttr(1, IndexType()))
    block = Block([arith.AddiOp(one, one), one, func.ReturnOp()])
    module = ModuleOp([func.FuncOp("g", ((), ()), Region(block))])
    with pytest.raises(TawaError, match=r"operand #0 of 'arith.addi' is used before it is defined"):
        verify(module)


def test_unclosed_string_is_a_quick_error(tmp_path, capsys):
    """xdsl 0.74's string-literal pattern backtracks exponentially on a `"`
    that is not closed before a long line ends (a fuzzer hang)."""
    import time

    src = tmp_path / "quote.mlir"
    src.write_text(GEMM.decode().replace("tensor<128x64xbf16>,", 'tensor<128x64xbf16">,'))
    start = time.perf_counter()
    line = _one_error_line([str(src)], capsys)
    assert time.perf_counter() - start < 5
    assert line.startswith(f"{src}:21:") and line.endswith("error: End of file reached before closing string literal.")


@pytest.mark.parametrize("shape", ["4294967296x4294967296", "18446744073709551616x2"])
def test_tile_too_large_for_the_interpreter_is_located(shape):
    """A tile whose size overflows NumPy (a Python kernel's BLOCK = 2**64)
    is one located error of the interpreter, not an internal one."""
    import numpy as np

    text = ("func.func @k(%C: memref<?xf32>) {\n"
            f"  %z = tile.zeros : tensor<{shape}xf32>\n"
            "  func.return\n}\n")
    with pytest.raises(TawaError) as info:
        tawa.interpret(text, "k", (1,), np.zeros(4, np.float32))
    message = str(info.value)
    assert message.startswith("<input>:2:3: error: tile.zeros: a value too large for the CPU interpreter's memory")
    assert "internal error" not in message and "\n" not in message
