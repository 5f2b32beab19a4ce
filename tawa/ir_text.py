"""Reading and writing IR text at a rate that makes a large module practical
(docs/testing.md, "Parsing large modules"), with the results of xdsl's own
lexer, parser and printer.

xdsl's lexer tries its cases one after another in Python for every token,
and its parser reads a type such as `tensor<128x64xbf16>` token by token,
splitting `128x64xbf16` into its dimensions by lexing it again.
`FastLexer` reads the common tokens with one regular expression (anything
else goes to xdsl's lexer, so errors and rare tokens are xdsl's own).
`FastParser` reads a type or a typed number whose text it has seen before
from a table: a parser's types and attributes are immutable, and the same
text always gives the same one.  `FastPrinter` writes each piece straight
to its stream (xdsl's printer calls `print` for every piece) and a type it
has printed before from a table.
"""

from __future__ import annotations

import gc
import re
from io import StringIO

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, FloatAttr, IntAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue, TypeAttribute
from xdsl.parser import Parser
from xdsl.parser.core import UnresolvedOperand
from xdsl.parser.generic_parser import ParserState
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.lexer import Span, Token
from xdsl.utils.mlir_lexer import KIND_BY_PUNCTUATION_SPELLING, MLIRLexer, MLIRToken, MLIRTokenKind

from tawa.ir_format import class_format, parse_with_format, print_with_format

_K = MLIRTokenKind

_SUFFIX_ID = r"(?:[0-9]+|[a-zA-Z$._-][a-zA-Z0-9$._-]*)"
_HOT_TOKEN = re.compile(
    # whitespace and comments as xdsl skips them (possessive: a token that
    # is not one of these cases costs no backtracking)
    r"(?:[ \t\n\r\f\v]++|//[^\n]*+)*+"
    r"(?:(?P<BARE_IDENT>[a-zA-Z_][a-zA-Z0-9_$.]*+)"
    rf"|(?P<PERCENT_IDENT>%{_SUFFIX_ID})"
    rf"|(?P<CARET_IDENT>\^{_SUFFIX_ID})"
    rf"|(?P<EXCLAMATION_IDENT>!{_SUFFIX_ID})"
    rf"|(?P<HASH_IDENT>#(?!-\}}){_SUFFIX_ID})"
    r"|(?P<AT_IDENT>@[a-zA-Z_][a-zA-Z0-9_$.]*+)"
    r"|(?P<ARROW>->)"
    r"|(?P<punct>[:,()}\[\]<>=+/*?|-]|\{(?!-\#))"
    r"|(?P<hex>0x[0-9a-fA-F]++)"
    r"|(?P<FLOAT_LIT>[0-9]++\.[0-9]*+(?:[eE][+-]?[0-9]+)?+)"
    r"|(?P<INTEGER_LIT>[0-9]++))"
)
"""The tokens that make up nearly all of a module, each in the spelling
xdsl's lexer gives it the same kind; string literals, `...`, `{-#`,
non-ASCII identifiers, the end of the input and errors are not here."""

_KIND_OF_GROUP = {name: kind for name, kind in _K.__members__.items()} | {"hex": _K.INTEGER_LIT}
_KIND_OF_INDEX: list[MLIRTokenKind | None] = [None] * (_HOT_TOKEN.groups + 1)
"""The kind of the token that each group of `_HOT_TOKEN` matches (None:
punctuation, whose kind its text gives)."""
for _name, _index in _HOT_TOKEN.groupindex.items():
    _KIND_OF_INDEX[_index] = None if _name == "punct" else _KIND_OF_GROUP[_name]
_KIND_OF_PUNCT = {spelling: kind for spelling, kind in
                  (("{", _K.L_BRACE), ("-", _K.MINUS), *((c, _K.get_punctuation_kind_from_name(c))  # type: ignore[arg-type]
                                                         for c in ":,()}[]<>=+/*?|"))}

_new = object.__new__
_set = object.__setattr__


class _Token(Token):
    """A token whose text is read once, when it is lexed (xdsl's `Token.text`
    slices the input at every use)."""

    __slots__ = ("text",)  # shadows Token.text, a property


class FastLexer(MLIRLexer):
    """xdsl's MLIR lexer, with the common tokens read by one regular
    expression; the same tokens, spans and errors."""

    def lex(self) -> MLIRToken:
        input = self.input
        match = _HOT_TOKEN.match(input.content, self.pos)
        if match is None:
            return super().lex()
        index = match.lastindex  # the token's group: the others are not capturing
        start, end = match.span(index)  # the token ends the match
        self.pos = end
        text = match.group(index)
        # A frozen Span made as its __init__ would, without its checks per field.
        span = _new(Span)
        _set(span, "__dict__", {"start": start, "end": end, "input": input, "line_offset": 0})
        token = _new(_Token)
        kind = _KIND_OF_INDEX[index]  # type: ignore[index]
        token.kind = _KIND_OF_PUNCT[text] if kind is None else kind
        token.span = span
        token.text = text
        return token


_TYPE_BODY = re.compile(r"<[^-\"/\n(){}%^@]*>")
"""A candidate body of a parametrized type, from its `<` to a `>`: nothing
that can hide a `>` (`->`, a string, a comment) and no SSA value."""

_TYPED_NUMBER = re.compile(
    r"-?(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*(?:[eE][+-]?[0-9]+)?)?)[ \t]*:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*(?![a-zA-Z0-9_$.<])"
)
"""A number literal and its one-token type, on one line."""

_PARAMETRIZED_TYPES = frozenset({"tensor", "memref", "vector", "complex", "tuple"})
"""The builtin types written `name<...>`."""


class FastParser(Parser):
    """xdsl's parser that reads each distinct type (`tensor<...>`,
    `memref<...>`, `!dialect.type<...>`, `index`) and each distinct typed
    number (`0 : index`) once, and takes the next token in fewer steps.
    Errors are xdsl's: any case that is not the expected one goes to
    xdsl's method."""

    _types: dict[str, TypeAttribute] | None = None
    _numbers: dict[str, IntegerAttr | FloatAttr] | None = None

    def __init__(self, ctx: Context, input: str | bytes, name: str = "<unknown>"):
        super().__init__(ctx, input, name)
        self._parser_state = ParserState(FastLexer(self.lexer.input))  # type: ignore[arg-type]

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """xdsl's, with Python's cycle collector paused: a parse makes
        objects that live on, and each full collection walks every object
        made so far (docs/testing.md gives its share of a large parse)."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return super().parse_module(allow_implicit_module)
        finally:
            if enabled:
                gc.enable()

    def parse_operation(self) -> Operation:
        """xdsl's, with an op in a declarative format read by
        `tawa.ir_format.parse_with_format`."""
        op_loc = self._parser_state.current_token.span
        bound_results = self._parse_op_result_list()
        op_name = self._parse_optional_token(_K.BARE_IDENT)
        if op_name is None:  # the generic format
            self._resume_from(op_loc.start)
            return super().parse_operation()
        op_type = self._get_op_by_name(op_name.text)
        dialect_stack = self._parser_state.dialect_stack
        dialect_stack.append(op_type.dialect_name())
        form = class_format(op_type)
        op = op_type.parse(self) if form is None else parse_with_format(self, form)
        dialect_stack.pop()
        if (location := self.parse_optional_location()) is not None:
            op.location = location
        n_bound_results = sum(r[1] for r in bound_results)
        if n_bound_results != 0 and len(op.results) != n_bound_results:
            self.raise_error(f"Operation has {len(op.results)} results, but was given {n_bound_results} to bind.",
                             at_position=op_loc)
        res_idx = 0
        for res_span, res_size in bound_results:
            self._register_ssa_definition(res_span.text[1:], op.results[res_idx : res_idx + res_size], res_span)
            res_idx += res_size
        return op

    def parse_optional_unresolved_operand(self) -> UnresolvedOperand | None:
        """`%name`, the common case, in one step; `%name#1` by xdsl's."""
        state = self._parser_state
        token = state.current_token
        if token.kind is not _K.PERCENT_IDENT:
            return None
        following = state.current_token = state.lexer.lex()
        if following.kind is _K.HASH_IDENT:
            self._resume_from(token.span.start)
            return super().parse_optional_unresolved_operand()
        return UnresolvedOperand(token.span, 0)

    def parse_unresolved_operand(self, msg: str = "operand expected") -> UnresolvedOperand:
        operand = self.parse_optional_unresolved_operand()
        return operand if operand is not None else super().parse_unresolved_operand(msg)

    def parse_type(self) -> TypeAttribute:
        parsed = self.parse_optional_type()
        return parsed if parsed is not None else super().parse_type()  # xdsl's error

    def parse_optional_attr_dict(self) -> dict[str, Attribute]:
        if self._parser_state.current_token.kind is not _K.L_BRACE:
            return {}
        return super().parse_optional_attr_dict()

    def parse_optional_location(self):  # type: ignore[override]
        if self._parser_state.current_token.text != "loc":
            return None
        return super().parse_optional_location()

    def _consume_token(self, expected_kind: MLIRTokenKind | None = None) -> MLIRToken:
        state = self._parser_state
        token = state.current_token
        if expected_kind is not None and token.kind is not expected_kind:
            return super()._consume_token(expected_kind)  # xdsl's assertion
        state.current_token = state.lexer.lex()
        return token

    def _parse_optional_token(self, expected_kind: MLIRTokenKind) -> MLIRToken | None:
        state = self._parser_state
        token = state.current_token
        if token.kind is expected_kind:
            state.current_token = state.lexer.lex()
            return token
        return None

    def parse_optional_punctuation(self, punctuation):  # type: ignore[override]
        kind = KIND_BY_PUNCTUATION_SPELLING.get(punctuation)
        if kind is None:
            return super().parse_optional_punctuation(punctuation)  # xdsl's assertion
        state = self._parser_state
        if state.current_token.kind is kind:
            state.current_token = state.lexer.lex()
            return punctuation
        return None

    def parse_punctuation(self, punctuation, context_msg: str = ""):  # type: ignore[override]
        state = self._parser_state
        if state.current_token.kind is KIND_BY_PUNCTUATION_SPELLING.get(punctuation):
            state.current_token = state.lexer.lex()
            return punctuation
        return super().parse_punctuation(punctuation, context_msg)  # xdsl's error

    def parse_optional_characters(self, text: str) -> str | None:
        state = self._parser_state
        if state.current_token.text == text:
            state.current_token = state.lexer.lex()
            return text
        return None

    def _parse_op_result_list(self) -> list[tuple[Span, int]]:
        """`%name =`, the common case, in two tokens; any other list by xdsl's."""
        state = self._parser_state
        token = state.current_token
        if token.kind is not _K.PERCENT_IDENT:
            return []
        following = state.lexer.lex()
        if following.kind is _K.EQUAL:
            state.current_token = state.lexer.lex()
            return [(token.span, 1)]
        self._resume_from(token.span.start)
        return super()._parse_op_result_list()

    def parse_optional_builtin_int_or_float_attr(self) -> IntegerAttr | FloatAttr | None:
        """A number literal with its type (`0 : index`, `1.0 : f32`), each
        distinct text read once."""
        token = self._parser_state.current_token
        if token.kind is not _K.INTEGER_LIT and token.kind is not _K.MINUS and token.kind is not _K.FLOAT_LIT:
            return super().parse_optional_builtin_int_or_float_attr()
        span = token.span
        content = span.input.content
        match = _TYPED_NUMBER.match(content, span.start)
        if match is None:
            return super().parse_optional_builtin_int_or_float_attr()
        end = match.end()
        numbers = self._numbers
        if numbers is None:
            numbers = self._numbers = {}
        text = match.group()
        cached = numbers.get(text)
        if cached is not None:
            self._resume_from(end)
            return cached
        parsed = super().parse_optional_builtin_int_or_float_attr()
        next_start = self._parser_state.current_token.span.start
        if parsed is not None and next_start >= end and not content[end:next_start].strip():
            numbers[text] = parsed
        return parsed

    def parse_optional_type(self) -> TypeAttribute | None:
        token = self._parser_state.current_token
        kind = token.kind
        if kind is not _K.BARE_IDENT and kind is not _K.EXCLAMATION_IDENT:
            return super().parse_optional_type()
        span = token.span
        content = span.input.content
        end = span.end
        if content.startswith("<", end):  # tensor<...>, !dialect.type<...>
            end = _balanced_end(content, end)
            if end < 0 or (kind is _K.BARE_IDENT and token.text not in _PARAMETRIZED_TYPES):
                return super().parse_optional_type()
        elif kind is not _K.BARE_IDENT or token.text in _PARAMETRIZED_TYPES:
            # `!name` may be an alias, or a dialect type whose parameters
            # follow after a space: always parsed.
            return super().parse_optional_type()
        # Else a one-token builtin type (index, i32, bf16, none): its parse
        # reads that token and nothing after it.
        types = self._types
        if types is None:
            types = self._types = {}
        text = content[span.start : end]
        cached = types.get(text)
        if cached is not None:
            if end == span.end:
                self._consume_token()
            else:
                self._resume_from(end)
            return cached
        parsed = super().parse_optional_type()
        # Kept only if the parse read exactly that text.
        next_start = self._parser_state.current_token.span.start
        if parsed is not None and next_start >= end and not content[end:next_start].strip():
            types[text] = parsed
        return parsed


def _balanced_end(content: str, pos: int) -> int:
    """The end of the `<...>` that starts at `pos` (after its matching `>`),
    or -1 where there is none that `_TYPE_BODY` accepts."""
    match = _TYPE_BODY.match(content, pos)
    if match is None:
        return -1
    body = match.group()
    close = body.find(">")
    while body.count("<", 0, close) != body.count(">", 0, close + 1):
        close = body.find(">", close + 1)
        if close < 0:
            return -1
    return pos + close + 1


class Locations:
    """`FileLineColLoc`s of one file, made without re-checking their
    parameters (a string and two integers, as the file name and `LineIndex`
    give them); the name and the small numbers are made once."""

    def __init__(self, name: str):
        self.name = StringAttr(name)
        self.ints: dict[int, IntAttr] = {}

    def at(self, line: int, column: int) -> FileLineColLoc:
        ints = self.ints
        line_attr = ints.get(line)
        if line_attr is None:  # an IntAttr of a positive int, which its verifier accepts
            line_attr = _new(IntAttr)
            _set(line_attr, "data", line)
        column_attr = ints.get(column)
        if column_attr is None:
            column_attr = ints[column] = IntAttr(column)
        loc = _new(FileLineColLoc)
        _set(loc, "filename", self.name)
        _set(loc, "line", line_attr)
        _set(loc, "column", column_attr)
        return loc


_opens_scope: dict[type[Operation], bool] = {}
"""Whether ops of a class in a declarative format are isolated from above
(their traits are the class's)."""


class FastPrinter(Printer):
    """xdsl's printer, writing pieces without a newline straight to its
    stream and a type's text from a table: the same output."""

    _types: dict[int, tuple[Attribute, str]] | None = None
    """Printed text of types, by identity (a parsed module shares one object
    per distinct type); the type is kept so that its id stays its own."""

    _MAX_TYPES = 4096

    def print_string(self, text: str, *, indent: int | None = None) -> None:
        stream = self.stream
        if stream is None or "\n" in text:
            super().print_string(text, indent=indent)
            return
        self._current_column += len(text)
        stream.write(text)

    def print_ssa_value(self, value: SSAValue) -> str:
        """xdsl's, with the name of a value printed before found in one look-up."""
        name = self._ssa_values.get(value)
        if name is None:
            return super().print_ssa_value(value)
        self.print_string("%" + name)
        return name

    def print_op(self, op: Operation) -> None:
        """xdsl's, with an op in a declarative format printed by
        `tawa.ir_format.print_with_format`, and whether an op class opens a
        scope of names found once."""
        op_type = type(op)
        form = class_format(op_type)
        if form is None or self.print_generic_format or op in self.diagnostic.op_messages:
            super().print_op(op)
            return
        scope = _opens_scope.get(op_type)
        if scope is None:
            scope = _opens_scope[op_type] = bool(op.get_traits_of_type(IsolatedFromAbove))
        self._print_results(op)
        if scope:
            self.enter_scope()
        self.print_string(op.name)
        print_with_format(self, form, op)
        if self.print_debuginfo:
            self.print_string(" ")
            self.print_attribute(op.location)
        if scope:
            self.exit_scope()

    def print_attribute(self, attribute: Attribute) -> None:
        if not isinstance(attribute, TypeAttribute) or self.stream is None:
            super().print_attribute(attribute)
            return
        types = self._types
        if types is None:
            types = self._types = {}
        entry = types.get(id(attribute))
        if entry is not None and entry[0] is attribute:
            self._current_column += len(entry[1])
            self.stream.write(entry[1])
            return
        stream, self.stream = self.stream, StringIO()
        try:
            super().print_attribute(attribute)
            text = self.stream.getvalue()
        finally:
            self.stream = stream
        stream.write(text)
        if "\n" not in text:
            if len(types) >= self._MAX_TYPES:
                types.clear()
            types[id(attribute)] = (attribute, text)
