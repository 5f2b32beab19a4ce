"""Misuses of `tawa.compile` raise `TawaError` subclasses with one line:
never a Python exception from deep inside, and options are checked where
they are given, before the module is parsed (docs/runtime.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tawa
from tawa.diagnostics import TawaError
from tawa.runtime.compiler import CompileError

GEMM = (Path(__file__).resolve().parents[2] / "examples" / "gemm.mlir").read_text()


def _one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text, text
    return text


def test_bytes_that_are_not_utf8():
    with pytest.raises(TawaError) as info:
        tawa.compile(b"\xff\xfe func.func", "gemm")
    assert _one_line(info.value) == "<input>:1:1: error: input is not valid UTF-8 (byte 0xff)"
    with pytest.raises(TawaError) as info:
        tawa.compile(GEMM.encode() + b"\n\xe9", "gemm")
    assert _one_line(info.value) == f"<input>:{GEMM.count(chr(10)) + 2}:1: error: input is not valid UTF-8 (byte 0xe9)"


@pytest.mark.parametrize("kernel", [None, 3, b"gemm"])
def test_kernel_name_is_a_str(kernel):
    with pytest.raises(CompileError) as info:
        tawa.compile(GEMM, kernel)  # type: ignore[arg-type]
    assert _one_line(info.value) == ("tawa.compile: error: the kernel is named by a str (e.g. \"gemm\"), "
                                     f"got {type(kernel).__name__}")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"stages": -1}, "stages must be 0 (decided per kernel) or at least 1, got -1"),
        ({"producer_regs": 7}, "producer-regs must be a multiple of 8 in [24, 256], got 7"),
        ({"consumer_regs": 100000}, "consumer-regs must be a multiple of 8 in [24, 256], got 100000"),
        ({"epilogue": "tmaa"}, "epilogue must be one of"),
        ({"staging": "half"}, "staging must be one of auto, full, subtiled, single, full-in-loops, got 'half'"),
        ({"stages": True}, "option stages=True: stages is not a flag (its type: int)"),
        ({"watchdog_ms": False}, "option watchdog_ms=False: watchdog_ms is not a flag (its type: int)"),
    ],
)
def test_options_are_checked_before_the_module_is_parsed(options, message):
    """The text does not even parse: the option's error comes first, naming
    the option (stages=-1 used to fail deep in the pipeline, unlocated:
    `nvgpu.smem needs positive static dims, got [-1, 128, 64]`)."""
    with pytest.raises(CompileError) as info:
        tawa.compile("not a module {", "gemm", **options)
    line = _one_line(info.value)
    assert line.startswith("tawa.compile: error: ") and message in line


@pytest.mark.parametrize("text, name, message", [
    (3, "x.mlir", "expected the text of a module (str or bytes), got int"),
    (None, "x.mlir", "expected the text of a module (str or bytes), got NoneType"),
    (GEMM, None, "the input's name is a str (e.g. \"kernel.mlir\"), got NoneType"),
])
def test_parse_arguments(text, name, message):
    with pytest.raises(TawaError) as info:
        tawa.parse(text, name)
    assert _one_line(info.value) == f"tawa.parse: error: {message}"
    with pytest.raises(TawaError):
        tawa.parse(tawa.parse(GEMM))  # a module is not its text


def test_interpret_kernel_name_is_a_str():
    with pytest.raises(TawaError) as info:
        tawa.interpret(GEMM, None, (1, 1))
    assert _one_line(info.value) == ("tawa.interpret: error: the kernel is named by a str (e.g. \"gemm\"), "
                                     "got NoneType")


def test_tawa_error_is_public():
    """`except tawa.TawaError` catches every error of the API."""
    assert tawa.TawaError is TawaError and issubclass(CompileError, tawa.TawaError)
    with pytest.raises(tawa.TawaError):
        tawa.compile(GEMM, "nope")
