"""Source locations and one-line diagnostics.

xdsl's parser does not attach source positions to ops written in custom syntax
and its verifier reports errors by dumping the whole module.  tawa's users get
`file:line:col: error: message` instead: `LocatedParser` records where each op
starts, and `verify` names the first op that does not verify.

Both also reject what xdsl 0.74 lets through or trips over (docs/testing.md,
"Fuzzing"): `LocatedParser` input that is not UTF-8, ops nested more than
`MAX_NESTING` deep, and number literals out of range of their type; `verify`
SSA values used where their definition does not dominate (before it, or from
inside a region that does not enclose the use), index constants wider than
the 64 bits the PTX backend gives `index`, and `scf.for` with a constant step
that is not positive (a loop that never ends on the GPU).
"""

from __future__ import annotations

import bisect
import contextlib
import math
import re
from array import array

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
)
from xdsl.ir import AttributeInvT, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.parser.core import ForwardDeclaredValue, UnresolvedOperand
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input

from tawa.ir_text import FastLexer, FastParser, Locations
from tawa.op_verifier import verifies

MAX_NESTING = 64
"""Deepest nesting of ops in regions that the parser accepts.  Parsing,
verifying, printing and rewriting recurse in Python (about ten frames per
level), so this keeps every pass well inside Python's default recursion limit
of 1000; real kernels nest fewer than ten deep."""

INDEX_RANGE = (-(2**63), 2**64)
"""Values an `index` literal may have: the PTX backend gives index 64 bits
(`.u64` / `.s64` registers), read as signed or unsigned like xdsl's `iN`."""


class TawaError(DiagnosticException):
    """An error in user input, reported as one line `where: error: message`."""

    def __init__(self, message: str, where: str = "tawa"):
        super().__init__(f"{where}: error: {message}")
        self.message = message
        self.where = where
        self.details: list[str] = []
        """Lines printed after the error (a counterexample trace).  Not
        `__notes__`: xDSL's verifier adds a dump of the whole module there."""

    def __str__(self) -> str:
        return "\n".join([super().__str__(), *self.details])


def location_of(op: Operation) -> str | None:
    """`file:line:col` of the op, or of its closest ancestor with a location."""
    node: Operation | None = op
    while node is not None:
        loc = node.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        node = node.parent_op()
    return None


class LineIndex:
    """Line and column of a position in a text, by binary search in the
    offsets where its lines start (found once: one pass over the text, 8
    bytes a line).  xdsl's `Span.get_location` counts the newlines from the
    start of the text at every call, which made parsing quadratic in the
    size of the file."""

    def __init__(self, text: str | bytes):
        newline = "\n" if isinstance(text, str) else b"\n"
        starts = array("q", [0])
        pos = text.find(newline)  # type: ignore[arg-type]
        while pos >= 0:
            starts.append(pos + 1)
            pos = text.find(newline, pos + 1)  # type: ignore[arg-type]
        self.starts = starts

    def line_col(self, pos: int) -> tuple[int, int]:
        """1-based line and column of offset `pos`."""
        line = bisect.bisect_right(self.starts, pos)
        return line, pos - self.starts[line - 1] + 1


class _Lexer(FastLexer):
    """xdsl's lexer with a string-literal pattern that cannot backtrack.
    xdsl 0.74's `"(?:[^"\\...]+|\\...)*"` nests quantifiers: on a string
    that is not closed, matching takes time exponential in the length of the
    rest of the line (a stray `"` hung the parser)."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class LocatedParser(FastParser):
    """A parser that records the source position of every op it parses.

    `line_offset` is added to line numbers (for chunks of a split input file).
    """

    line_offset: int = 0
    _depth: int = 0
    _lines: LineIndex | None = None
    _locations: Locations | None = None
    _bad_utf8: tuple[int, int, int] | None = None
    """(line, column, byte) of the first byte that is not UTF-8."""

    def __init__(self, ctx: Context, input: str | bytes, name: str = "<unknown>"):
        if isinstance(input, bytes):
            try:
                input = input.decode("utf-8")
            except UnicodeDecodeError as err:  # reported by parse_module, which knows line_offset
                start = input.rfind(b"\n", 0, err.start) + 1
                column = len(input[start : err.start].decode("utf-8", "replace")) + 1
                self._bad_utf8 = (input.count(b"\n", 0, err.start) + 1, column, input[err.start])
                input = ""  # not lexed: the lexer reads a first token now, parse_module raises first
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(_Lexer(Input(input, name)))

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        if self._bad_utf8 is not None:
            line, column, byte = self._bad_utf8
            where = f"{self.lexer.input.name}:{line + self.line_offset}:{column}"
            raise TawaError(f"input is not valid UTF-8 (byte 0x{byte:02x})", where)
        try:
            return super().parse_module(allow_implicit_module)
        except RecursionError:  # deeply nested attributes or types
            raise ParseError(self._current_token.span, "input nested too deeply") from None

    def location(self, pos: int) -> tuple[int, int]:
        """Line (in the file: `line_offset` added) and column of offset `pos`."""
        if self._lines is None:
            self._lines = LineIndex(self.lexer.input.content)
        line, col = self._lines.line_col(pos)
        return line + self.line_offset, col

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        # An explicit top-level module does not count: it is the implicit one made visible.
        top_module = self._depth == 0 and self._current_token.text.strip('"') in ("builtin.module", "module")
        if self._depth >= MAX_NESTING:
            raise ParseError(span, f"operations nested more than {MAX_NESTING} deep")
        self._depth += not top_module
        try:
            op = super().parse_operation()
        except VerifyException as err:  # a type or attribute verifier, while parsing
            raise ParseError(span, first_line(err)) from None
        except OverflowError as err:  # a literal that a custom parser could not convert
            raise ParseError(span, f"number out of range: {first_line(err)}") from None
        finally:
            self._depth -= not top_module
        if not isinstance(op.location, FileLineColLoc):
            if self._locations is None:
                self._locations = Locations(span.input.name)
            op.location = self._locations.at(*self.location(span.start))
        return op

    def resolve_operand(self, operand: UnresolvedOperand, type: AttributeInvT) -> SSAValue[AttributeInvT]:
        value = super().resolve_operand(operand, type)
        if isinstance(value, ForwardDeclaredValue) and value.name_hint is None:
            # Named for `verify`, which reports one left unresolved (a use
            # before the region that defines it).
            with contextlib.suppress(ValueError):
                value.name_hint = operand.operand_name
        return value

    def parse_optional_builtin_int_or_float_attr(self) -> IntegerAttr | FloatAttr | None:
        """A number literal, rejected where it does not fit its type: xdsl
        raises OverflowError for f16/f32 and hex literals and rounds bf16/f8
        to inf/NaN."""
        token = self._current_token
        overflow = False
        try:
            attr = super().parse_optional_builtin_int_or_float_attr()
        except OverflowError:
            attr, overflow = None, True
        # The literal and its type as written: `-1.0e39 : bf16` (a sign is a token of its own).
        written = self.lexer.input.content[token.span.start : self._current_token.span.start]
        literal, _, type_text = written.partition(":")
        literal, type_text = "".join(literal.split()), type_text.strip() or "its type"
        if overflow:
            raise ParseError(token.span, f"literal {literal} is out of range of {type_text}")
        if isinstance(attr, FloatAttr) and not math.isfinite(attr.value.data):
            # Only hexadecimal literals spell infinities and NaNs.
            if literal.lstrip("+-")[:2] not in ("0x", "0X"):
                raise ParseError(token.span, f"literal {literal} is out of range of {attr.type}")
        if isinstance(attr, IntegerAttr) and isinstance(attr.type, IndexType):
            if not INDEX_RANGE[0] <= attr.value.data < INDEX_RANGE[1]:
                raise ParseError(token.span, _index_range_message(attr.value.data))
        return attr


def _index_range_message(value: int) -> str:
    return (f"integer {value} does not fit in index (64 bits: "
            f"[{INDEX_RANGE[0]}, {INDEX_RANGE[1]}))")


def parse_error(err: ParseError) -> TawaError:
    """The one-line diagnostic of a parse error."""
    loc = err.span.get_location()
    msg = " ".join(err.msg.split())
    if err.span.start >= len(err.span.input.content.rstrip()):
        # xdsl reports a missing '}' as a missing block label.
        truncated = msg == "in block definition"
        msg = "unexpected end of input (missing '}'?)" if truncated else f"{msg} (at end of input)"
    return TawaError(msg, f"{loc.file}:{loc.line}:{loc.col}")


def parse_module(ctx: Context, text: str | bytes, name: str = "<input>") -> ModuleOp:
    """Parses and verifies a module; raises TawaError with a location on failure."""
    if not isinstance(text, str | bytes):
        raise TawaError(f"expected the text of a module (str or bytes), got {type(text).__name__}", "tawa.parse")
    if not isinstance(name, str):
        raise TawaError(f"the input's name is a str (e.g. \"kernel.mlir\"), got {type(name).__name__}",
                        "tawa.parse")
    try:
        module = LocatedParser(ctx, text, name).parse_module()
    except ParseError as err:
        raise parse_error(err) from None
    except VerifyException as err:  # attribute verifiers run while parsing
        raise TawaError(first_line(err), name) from None
    verify(module)
    return module


def first_line(err: BaseException) -> str:
    """The first line of an exception's message, whitespace collapsed (the
    exception's type name when it has no message): for one-line errors."""
    text = str(err).strip()
    line = " ".join(text.splitlines()[0].split()) if text else ""
    return line or type(err).__name__


def verify(module: Operation) -> None:
    """Verifies `module`; on failure raises TawaError located at the op that
    failed (inner ops are checked before the ops that contain them).  Then
    checks, for every op, what xdsl's verifier does not (`check_op`).
    Dominance comes first: xdsl's verifiers assume it (and trip over a
    value the parser left forward-declared).

    A module that verifies takes one walk (`tawa.op_verifier.verifies`);
    one that does not is verified again by xdsl, for its error."""
    dominance = Dominance()
    seen: set[int] = set()
    """Ids of the ops walked so far: in the block of the op being checked,
    those before it (the walk goes through each block in order)."""

    def dominated(op: Operation) -> None:
        block = op.parent
        for operand in op._operands:
            # The common cases in one look-up: a result of an op before this one in
            # its block, or an argument of its block.
            kind = type(operand)
            if kind is OpResult:
                if operand.op.parent is block and block is not None and id(operand.op) in seen:
                    continue
            elif kind is BlockArgument and operand.block is block and block is not None:
                continue
            if dominance.problem(operand, op):
                raise VerifyException("not dominated")
        seen.add(id(op))

    def checked(op: Operation) -> None:
        if check_op(op):
            raise VerifyException("check_op")

    if verifies(module, dominated, checked):
        return
    dominance = Dominance()
    for op in module.walk():
        for i, operand in enumerate(op.operands):
            problem = dominance.problem(operand, op)
            if problem:
                raise TawaError(f"operand #{i}{_name(operand)} of '{op.name}' {problem}",
                                location_of(op) or "tawa")
    try:
        module.verify()
    except VerifyException as err:
        fallback = first_line(err)
        for op in module.walk(region_first=True):
            try:
                op.verify(verify_nested_ops=False)
            except VerifyException as err:
                msg = first_line(err).removeprefix("Operation does not verify: ")
                where = location_of(op) or "tawa"
                raise TawaError(f"'{op.name}' {msg}" if not msg.startswith(op.name) else msg,
                                where) from None
        raise TawaError(fallback) from None
    for op in module.walk():
        problem = check_op(op)
        if problem:
            raise TawaError(problem, location_of(op) or "tawa")


def check_op(op: Operation) -> str | None:
    """What is wrong with a verified `op` that xdsl's verifier lets through
    (besides dominance), or None."""
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        if isinstance(op.value.type, IndexType) and not INDEX_RANGE[0] <= op.value.value.data < INDEX_RANGE[1]:
            return f"'{op.name}' {_index_range_message(op.value.value.data)}"
    if isinstance(op, scf.ForOp):
        step = op.step.owner
        if isinstance(step, arith.ConstantOp) and isinstance(step.value, IntegerAttr):
            if step.value.value.data <= 0:
                return f"'scf.for' step must be positive, got {step.value.value.data} (the loop would not end)"
    return None


def _name(value: SSAValue) -> str:
    return f" (%{value.name_hint})" if value.name_hint else ""


class Dominance:
    """Whether a value's definition dominates a use.  Within a block, ops
    dominate the ops after them; a value is visible in the regions nested in
    its block; across the blocks of a region, block dominance of the region's
    control-flow graph (computed once per region)."""

    def __init__(self) -> None:
        self._position: dict[Operation, int] = {}
        self._numbered: set[Block] = set()
        self._dominators: dict[Block, set[Block]] = {}

    def problem(self, value: SSAValue, user: Operation) -> str | None:
        """Why `value` cannot be used by `user`, or None."""
        if isinstance(value, ForwardDeclaredValue):  # defined only in a region nested elsewhere
            return "is defined in a region that does not enclose this use"
        if isinstance(value, BlockArgument):
            def_block, def_op = value.block, None
        else:
            def_block, def_op = value.owner.parent_block(), value.owner
        if def_block is None:  # a detached op: nothing to check against
            return None
        # The ancestor of `user` (itself, or an op that contains it) in a block
        # of the region that holds `def_block`.
        node: Operation | None = user
        while node is not None and node.parent_region() is not def_block.parent:
            node = node.parent_op()
        if node is None:
            return "is defined in a region that does not enclose this use"
        use_block = node.parent_block()
        assert use_block is not None
        if use_block is not def_block:
            if def_block not in self.dominators(use_block):
                return "is defined in a block that does not dominate this use"
            return None
        if def_op is None:
            return None
        if def_op is node:  # the op's own result, in the op or its regions
            return "is a result of the op that uses it"
        if self.position(def_op) > self.position(node):
            return "is used before it is defined"
        return None

    def position(self, op: Operation) -> int:
        block = op.parent_block()
        assert block is not None
        if block not in self._numbered:
            self._numbered.add(block)
            for i, o in enumerate(block.ops):
                self._position[o] = i
        return self._position[op]

    def dominators(self, block: Block) -> set[Block]:
        if block not in self._dominators:
            region = block.parent
            assert region is not None
            blocks = list(region.blocks)
            preds: dict[Block, list[Block]] = {b: [] for b in blocks}
            for b in blocks:
                last = b.last_op
                for succ in last.successors if last is not None else ():
                    if succ in preds:
                        preds[succ].append(b)
            dom = {b: set(blocks) for b in blocks}
            dom[blocks[0]] = {blocks[0]}
            changed = True
            while changed:
                changed = False
                for b in blocks[1:]:
                    if not preds[b]:  # unreachable: MLIR does not check its uses either
                        continue
                    new = {b}.union(set.intersection(*(dom[p] for p in preds[b])))
                    if new != dom[b]:
                        dom[b], changed = new, True
            self._dominators.update(dom)
        return self._dominators[block]
