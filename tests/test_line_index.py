"""Source locations in linear time (tawa/diagnostics.py, `LineIndex`): the
parser finds each op's line by binary search in line offsets indexed once
per file, never by counting newlines from the start of the file (which made
parsing quadratic: docs/testing.md, "Parsing large modules")."""

from __future__ import annotations

import random
from pathlib import Path

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.utils.lexer import Input, Span

from tawa.diagnostics import LineIndex, LocatedParser
from tawa.ir import context

GEMM = (Path(__file__).resolve().parent.parent / "examples" / "gemm.mlir").read_text()


def test_line_index_agrees_with_xdsl_at_every_position():
    text = "ab\n\n  cdé\n\nlast line without newline · ᵀ"
    index = LineIndex(text)
    for pos in range(len(text) + 1):
        loc = Span(pos, pos, Input(text, "t")).get_location()
        assert index.line_col(pos) == (loc.line, loc.col), pos


def test_line_index_on_bytes_and_edges():
    assert LineIndex("").line_col(0) == (1, 1)
    assert LineIndex("\n\n").line_col(2) == (3, 1)
    index = LineIndex(b"x\ny\n")
    assert [index.line_col(p) for p in range(5)] == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1)]


def test_line_index_is_one_offset_per_line():
    rng = random.Random(0)
    lines = ["x" * rng.randrange(40) for _ in range(20_000)]
    text = "\n".join(lines)
    index = LineIndex(text)
    assert len(index.starts) == len(lines)
    for line in rng.sample(range(1, len(lines) + 1), 200):
        start = index.starts[line - 1]
        assert index.line_col(start + len(lines[line - 1])) == (line, len(lines[line - 1]) + 1)


def test_parser_never_counts_lines_from_the_start(monkeypatch):
    """Every op of a many-function module is located, and xdsl's
    `Span.get_location` (a count of the newlines before the position) is not
    called once per op."""
    copies = 50
    text = "".join(GEMM.replace("@gemm(", f"@gemm_{i}(") for i in range(copies))
    calls = []
    original = Span.get_location
    monkeypatch.setattr(Span, "get_location", lambda self: calls.append(1) or original(self))
    module = LocatedParser(context(), text, "many.mlir").parse_module()
    assert calls == []
    lines_per_copy = GEMM.count("\n")
    dots = [op for op in module.walk() if op.name == "tile.dot"]
    assert len(dots) == copies
    [(first, text_of_dot)] = [(n, ln) for n, ln in enumerate(GEMM.split("\n"), 1) if "tile.dot" in ln]
    column = len(text_of_dot) - len(text_of_dot.lstrip()) + 1  # where `%d = tile.dot` starts
    for i, op in enumerate(dots):
        assert isinstance(op.location, FileLineColLoc)
        assert (op.location.line.data, op.location.column.data) == (first + i * lines_per_copy, column)
