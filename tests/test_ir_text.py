"""tawa's fast reading and writing of IR text (tawa/ir_text.py) gives what
xdsl's own lexer, parser and printer give: the same tokens and errors, the
same IR, the same text.  And parsing, verifying and printing take time
linear in the size of the module (docs/testing.md, "Parsing large modules")."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr
from xdsl.parser import Parser
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from tawa.diagnostics import LocatedParser, verify
from tawa.ir import context
from tawa.ir_format import class_format
from tawa.ir_text import FastLexer, FastParser, FastPrinter, Locations

ROOT = Path(__file__).resolve().parent.parent
GEMM = (ROOT / "examples" / "gemm.mlir").read_text()


def _chunks() -> list[tuple[str, str]]:
    """Every module of the examples and of the FileCheck tests (split at
    `// -----`), named `path#index`."""
    files = sorted(f for f in [*ROOT.glob("examples/*.mlir"), *ROOT.glob("tests/filecheck/**/*.mlir")]
                   if "Output" not in f.parts)  # lit's scratch files
    return [(f"{f.relative_to(ROOT)}#{i}", chunk)
            for f in files for i, chunk in enumerate(f.read_text().split("// -----"))]


CHUNKS = _chunks()
SAMPLE = 8
"""The fast tier compares every SAMPLE-th module; the slow tier all."""


def _sampled(chunks: list[tuple[str, str]]) -> list:
    return [pytest.param(name, text, id=name, marks=[] if i % SAMPLE == 0 else [pytest.mark.slow])
            for i, (name, text) in enumerate(chunks)]

TRICKY = [
    "{-# dialect_resources: {} #-}", "#-}", "a...b", "0x1F 0xi32 0x 1.5e3 1.e+ 2.E-7 3.", "-1 -> - >",
    '@"sym" @_x.y$z @9', "%0:2 %x#1 %_.-$ ^bb0 !alias #map #-x !1", "é ùx _ x.y", "a/b /", "// only a comment",
    "x // comment\n// another\n  y", "\t\v\f\r\n", '"a\\"b" "\\n\\t\\41" "é"', "%", "@1", ".x", "$", "?|*+=",
    "tensor<128x64xbf16>", "memref<?x?xbf16, strided<[1, ?], offset: ?>>", "ab\u00a0cd", "x\u2028y", "٣",
]


def _tokens(lexer_class: type[MLIRLexer], text: str) -> list[tuple[object, int, int, str]] | str:
    """The tokens of `text`, or the error that stops the lexer."""
    lexer = lexer_class(Input(text, "t"))
    out: list[tuple[object, int, int, str]] = []
    try:
        while True:
            token = lexer.lex()
            out.append((token.kind, token.span.start, token.span.end, token.text))
            if token.kind is MLIRTokenKind.EOF:
                return out
    except ParseError as err:
        return f"{out} then {err}"


@pytest.mark.parametrize("text", [chunk for _, chunk in CHUNKS[::SAMPLE]] + TRICKY)
def test_fast_lexer_gives_xdsls_tokens(text: str):
    assert _tokens(FastLexer, text) == _tokens(MLIRLexer, text)


def _outcome(parser_class: type[Parser], text: str) -> str:
    """The module printed generically (every attribute and type spelled
    out) and custom, or the error of the parse (or of the printing of a
    module that does not verify)."""
    try:
        module = parser_class(context(), text, "t.mlir").parse_module()
        generic, custom = io.StringIO(), io.StringIO()
        Printer(stream=generic, print_generic_format=True).print_op(module)
        Printer(stream=custom).print_op(module)
    except Exception as err:  # a ParseError, or what a verifier or printer raises
        return f"{type(err).__name__}: {err}"
    return generic.getvalue() + custom.getvalue()


@pytest.mark.parametrize("name, text", _sampled(CHUNKS))
def test_fast_parser_reads_what_xdsl_reads(name: str, text: str):
    """The same IR or the same error, for every module the tests have."""
    assert _outcome(FastParser, text) == _outcome(Parser, text)


def _structure(module) -> list:
    """Every op as what it holds: its class, its operands (by the op or
    block that defines them), result types and uses, properties,
    attributes, regions and blocks, and where it sits."""
    ops = list(module.walk())
    index = {id(op): i for i, op in enumerate(ops)}
    blocks = {id(b): i for i, b in enumerate(b for op in ops for r in op.regions for b in r.blocks)}

    def owner(value):
        if isinstance(value, ForwardDeclaredValue):  # left by a use in a region that does not see the definition
            return ("forward", str(value.type))
        o = value.owner
        return ("op", index[id(o)], value.index) if id(o) in index else ("block", blocks[id(o)], value.index)

    return [(type(op), [owner(v) for v in op.operands], [(index[id(u.operation)], u.index) for v in op.operands
                                                          for u in [*v.uses] if u.operation is op],
             [(r.type, r.index, r.name_hint, sorted((index[id(u.operation)], u.index) for u in r.uses))
              for r in op.results],
             dict(op.properties), dict(op.attributes), op.location,
             [[(blocks[id(b)], [(a.type, a.name_hint, len(list(a.uses))) for a in b.args], len(list(b.ops)))
               for b in r.blocks] for r in op.regions],
             None if op.parent is None else blocks[id(op.parent)], [blocks[id(b)] for b in op.successors]) for op in ops]


@pytest.mark.parametrize("name, text", _sampled(CHUNKS))
def test_fast_parser_builds_what_xdsl_builds(name: str, text: str):
    """The same ops, operand uses and all (`tawa.ir_format.build` makes ops
    in declarative formats without xdsl's generic builder)."""
    try:
        expected = Parser(context(), text, "t.mlir").parse_module()
    except Exception as err:  # the same error: test_fast_parser_reads_what_xdsl_reads
        expected = err
    try:
        got = FastParser(context(), text, "t.mlir").parse_module()
    except Exception as err:
        got = err
    if isinstance(expected, Exception) or isinstance(got, Exception):
        assert type(got) is type(expected)
    else:
        assert _structure(got) == _structure(expected)


def test_declarative_formats_are_read_by_tawa():
    """The ops of examples/gemm.mlir that have a declarative format are the
    ones `parse_with_format` reads (else the comparisons above test only xdsl)."""
    module = FastParser(context(), GEMM).parse_module()
    formats = {op.name for op in module.walk() if class_format(type(op)) is not None}
    assert {"arith.constant", "arith.muli", "tile.load", "tile.dot", "scf.yield", "func.return"} <= formats


@pytest.mark.parametrize("text", [
    "%0 = \"test.op\"() : () -> tensor<4xf32>\n%1 = \"test.op\"() : () -> tensor<4xf32>",
    "%0 = \"test.op\"() : () -> tensor<4xf32>\n%1 = \"test.op\"() : () -> tensor<4x f32>",
    "%0 = \"test.op\"() : () -> tensor<4xf32>\n%1 = \"test.op\"() : () -> tensor <4xf32>",
    "%0 = \"test.op\"() : () -> tensor<4xf32>\n%1 = \"test.op\"() : () -> tensor<4xf32",
    "%0 = \"test.op\"() : () -> tensor<4xf32>\n%1 = \"test.op\"() : () -> tensor<4xf33>",
    "%0 = \"test.op\"() : () -> tensor<0x4xf32>\n%1 = \"test.op\"() : () -> tensor<-1x4xf32>",
    "%0 = \"test.op\"() : () -> memref<4xf32, strided<[1]>>\n%1 = \"test.op\"() : () -> memref<4xf32>",
    "%0 = \"test.op\"() : () -> vector<4xi32>\n%1 = \"test.op\"() : () -> vector<4xi32>, vector<4xi32>",
    "%0 = \"test.op\"() : () -> tuple<i32, tuple<f32>>\n%1 = \"test.op\"() : () -> tuple<i32, tuple<f32>>",
    "%0 = \"test.op\"() : () -> !nvgpu.mbarrier<2>\n%1 = \"test.op\"() : () -> !nvgpu.mbarrier<2>",
    "%0 = \"test.op\"() : () -> !nvgpu.mbarrier<2>\n%1 = \"test.op\"() : () -> !nvgpu.mbarrier<-2>",
    "%0 = \"test.op\"() : () -> i32\n%1 = \"test.op\"() : () -> i32<4>",
    "%0 = \"test.op\"() : () -> index\n%1 = \"test.op\"() : () -> (index, i32) -> i1",
    "!t = tensor<4xf32>\n%0 = \"test.op\"() : () -> !t\n%1 = \"test.op\"() : () -> tensor<4xf32>",
    *(f'"test.op"() {{a = {x}, b = {y}}} : () -> ()' for x, y in [
        ("1 : i8", "1 : i8"), ("100 : i8", "300 : i8"), ("-1 : index", "- 1 : index"), ("-1 : index", "-1 : index"),
        ("0x10 : i32", "0x10 : i32"), ("1.5 : f32", "1.5 : bf16"), ("1.5 : f32", "1.5 :f32"), ("2 : i32", "2 : i32<4>"),
        ("0x7F800000 : f32", "0x7F800000 : f32"), ("1 : f16", "1.0e9 : f16"), ("true", "1 : i1"), ("3 : index", "3 : i")]),
])
def test_fast_parser_types_read_once_are_read_right(text: str):
    """A type's or a typed number's text is read once and then taken from
    the table: the same IR, and the same error where the second spelling is
    wrong."""
    assert _outcome(FastParser, text) == _outcome(Parser, text)


FORMAT_ERRORS = [
    "%a = arith.constant 1 : index\n%b = arith.addi %a, %a : i32",
    "%a = arith.constant 1 : i32\n%b = arith.addf %a, %a : i32",
    "%a = arith.constant 1 : index\n%b = arith.select %a, %a, %a : index",
    "%a = arith.constant 1 : index\n%b = arith.cmpi foo, %a, %a : index",
    "%a = arith.constant 1 : index\n%b = arith.addi %a, %a {overflowFlags = 3 : i32} : index",
    "%a = arith.constant 1 : index\n%b = arith.addi %a, %a {overflowFlags = #arith.overflow<nsw>} : index",
    "%a = arith.constant 1 : index\n%b = arith.addi %a, %a overflow<nuw> : index",
    "%a = arith.constant 1 : index\n%b = arith.addi %a %a : index",
    "%a = arith.constant 1 : index\n%b = arith.addi %a, %a",
    "%a = arith.constant 1 : index\n%b, %c = arith.addi %a, %a : index",
    "%c = arith.constant 1.0 : i32",
    "%c = arith.constant 1 : i32 loc(unknown)",
    "%c = arith.constant {value = 1 : i32} 1 : i32",
    "%p = tile.program_id 5",
    "%p = tile.program_id x",
    "%z = tile.zeros : tensor<4xf32>\n%x = tile.load %z[%z] : tensor<4xf32> -> tensor<4xf32>",
    "%z = tile.zeros : i32",
    "%a = arith.constant 1 : index\n%b = arith.truncf %a : index to f16",
    "%a = arith.constant 1.0 : f32\n%b = arith.truncf %a : f32 to f16\n%c = arith.truncf %a : f16 to f32",
    "%a = arith.constant 1 : index\n%b = arith.addi %a, %undefined : index",
    "%a = arith.constant 1 : index\n%b = arith.addi %a#1, %a : index",
    "func.func @f(%x: index) -> index {\n  func.return %x, %x : index, index\n}",
    "func.func @f(%x: index) -> index {\n  func.return %x : index, index\n}",
    "func.func @f(%x: index) {\n  func.return %x, %x : index\n}",
    "func.func @f(%x: index) {\n  scf.yield\n}",
]


@pytest.mark.parametrize("text", FORMAT_ERRORS)
def test_fast_parser_reads_declarative_formats_as_xdsl_does(text: str):
    """Ops in declarative formats, right and wrong: the same IR or the same
    error (`tawa.ir_format` checks what it read its own way first)."""
    assert _outcome(FastParser, text) == _outcome(Parser, text)


@pytest.mark.parametrize("results", ["%a", "%a:2", "%a, %b", "%a : 2", "%a %b", "%a,", "%a:x", "%a#1"])
def test_fast_parser_reads_result_lists_as_xdsl_does(results: str):
    text = f'{results} = "test.op"() : () -> (i32, i32)\n%c = "test.op"(%a) : (i32) -> i32'
    assert _outcome(FastParser, text) == _outcome(Parser, text)


def test_locations_are_xdsls():
    locations = Locations("f.mlir")
    for line, column in [(1, 1), (3, 7), (3, 7), (10**6, 200)]:
        loc = locations.at(line, column)
        assert loc == FileLineColLoc(StringAttr("f.mlir"), IntAttr(line), IntAttr(column))
        assert hash(loc) == hash(FileLineColLoc(StringAttr("f.mlir"), IntAttr(line), IntAttr(column)))


def test_each_distinct_type_is_one_object():
    copies = 3
    text = "".join(GEMM.replace("@gemm(", f"@gemm_{i}(") for i in range(copies))
    module = FastParser(context(), text).parse_module()
    types = [r.type for op in module.walk() for r in op.results if "tensor<128x64xbf16>" == str(r.type)]
    assert len(types) == copies and all(t is types[0] for t in types)


@pytest.mark.parametrize("name, text", _sampled(CHUNKS))
def test_fast_printer_prints_what_xdsl_prints(name: str, text: str):
    try:  # located: print_debuginfo prints each op's location
        module = LocatedParser(context(), text, name).parse_module()
    except Exception:  # an invalid module: nothing to print
        return
    for generic in (False, True):
        for debuginfo in (False, True):
            expected, got = io.StringIO(), io.StringIO()
            try:
                Printer(stream=expected, print_generic_format=generic, print_debuginfo=debuginfo).print_op(module)
            except Exception:  # IR that does not verify
                continue
            FastPrinter(stream=got, print_generic_format=generic, print_debuginfo=debuginfo).print_op(module)
            assert got.getvalue() == expected.getvalue(), name


def _cpu_seconds_per_byte(copies: int) -> float:
    """CPU time of parsing, verifying and printing `copies` renamed copies
    of examples/gemm.mlir, per byte of text: the least of two runs."""
    text = "".join(GEMM.replace("@gemm(", f"@gemm_{i}(") for i in range(copies))
    ctx = context()
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        module = LocatedParser(ctx, text, "big.mlir").parse_module()
        verify(module)
        FastPrinter(stream=io.StringIO()).print_op(module)
        best = min(best, time.process_time() - start)
    return best / len(text)


@pytest.mark.slow
def test_parse_verify_print_take_linear_time():
    """Four times the text costs four times as much, not sixteen: the time
    per byte of a module four times as large is within twice that of the
    smaller one (quadratic work, such as locating each op by counting the
    lines before it, would make it four times)."""
    small = _cpu_seconds_per_byte(400)  # about half a megabyte
    large = _cpu_seconds_per_byte(1600)
    assert large < 2 * small, f"{large / small:.2f} times the time per byte at four times the size"
