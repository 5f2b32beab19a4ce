"""Building contexts and parsing tawa IR from Python."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.universe import Universe

from tawa.diagnostics import parse_module
from tawa.dialects import get_all_dialects


def context() -> Context:
    """A context with xdsl's dialects and tawa's (tile, aref, nvgpu), all lazy."""
    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str | bytes, name: str = "<input>") -> ModuleOp:
    """Parses and verifies a module of tawa IR.

    Raises `tawa.diagnostics.TawaError` (`name:line:col: error: ...`) when the
    text does not parse or the IR does not verify.
    """
    return parse_module(context(), text, name)
