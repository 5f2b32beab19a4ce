"""Source locations and one-line diagnostics.

xdsl's parser does not attach source positions to ops written in custom syntax
and its verifier reports errors by dumping the whole module.  tawa's users get
`file:line:col: error: message` instead: `LocatedParser` records where each op
starts, and `verify` names the first op that does not verify.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException


class TawaError(DiagnosticException):
    """An error in user input, reported as one line `where: error: message`."""

    def __init__(self, message: str, where: str = "tawa"):
        super().__init__(f"{where}: error: {message}")
        self.message = message
        self.where = where


def location_of(op: Operation) -> str | None:
    """`file:line:col` of the op, or of its closest ancestor with a location."""
    node: Operation | None = op
    while node is not None:
        loc = node.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        node = node.parent_op()
    return None


class LocatedParser(Parser):
    """A parser that records the source position of every op it parses.

    `line_offset` is added to line numbers (for chunks of a split input file).
    """

    line_offset: int = 0

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        start = span.get_location()
        try:
            op = super().parse_operation()
        except VerifyException as err:  # a type or attribute verifier, while parsing
            raise ParseError(span, first_line(err)) from None
        if not isinstance(op.location, FileLineColLoc):
            op.location = FileLineColLoc(
                StringAttr(start.file), IntAttr(start.line + self.line_offset), IntAttr(start.col)
            )
        return op


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
    failed (inner ops are checked before the ops that contain them)."""
    try:
        module.verify()
        return
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
    raise TawaError(fallback)
