"""Compiled code of dataclass methods, kept on disk between processes.

Defining a dataclass compiles the source of its generated methods
(`__init__`, `__repr__`, `__eq__`, ...): `dataclasses` builds their text and
`exec`s it.  xDSL's attributes, constraints and op definitions are
dataclasses, as are many of tawa's passes and patterns: hundreds of classes,
and compiling their methods is a large part of every start of `tawa-opt`
(docs/perf.md, "Compile time").  The text depends only on the class, so the
code compiled from it is the same in every process; this module keeps it, as
`.pyc` files keep a module's code.

`install()` gives the `dataclasses` module its own `exec`: given a source
string, it runs the code object compiled from exactly that string, compiled
with what `exec` would use (file name `<string>`, no inherited `__future__`
flags, the interpreter's optimization level), from a table loaded from
`$TAWA_CACHE_DIR` (default `~/.cache/tawa`) `/code/dataclasses.<python>.marshal`.  Only
the classes of tawa's and xDSL's modules are kept (their number is bounded by
the code; classes made by a program around tawa are compiled as before).
Texts compiled in this process and missing from the file are added to it at
exit, written under a temporary name and renamed, so processes can share it.
A missing, unreadable or foreign file is an empty table; `$TAWA_CODE_CACHE=0`
leaves `dataclasses` as it is.
"""

from __future__ import annotations

import atexit
import builtins
import marshal
import os
import sys
from types import CodeType
from typing import Any

_KEPT_PACKAGES = ("tawa", "xdsl")
"""Modules whose dataclasses' code is kept: `__name__` is one of these or below one."""

_MAX_ENTRIES = 20000
"""Bound on the table; past it, new texts are compiled but not kept."""

_table: dict[str, CodeType] = {}
_added = 0  # texts compiled in this process and not yet in the file


def _path() -> str:
    root = os.environ.get("TAWA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tawa")
    tag = f"{sys.implementation.cache_tag}-O{sys.flags.optimize}"
    return os.path.join(os.path.expanduser(root), "code", f"dataclasses.{tag}.marshal")


def _load(path: str) -> dict[str, CodeType]:
    try:
        with open(path, "rb") as f:
            table = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, CodeType)}


def _kept(globals_: Any) -> bool:
    name = globals_.get("__name__", "") if isinstance(globals_, dict) else ""
    return isinstance(name, str) and name.split(".", 1)[0] in _KEPT_PACKAGES


def _exec(source: Any, globals_: Any = None, locals_: Any = None, /) -> None:
    """`exec` as `dataclasses` calls it: `exec(text, module globals, namespace)`."""
    global _added
    if isinstance(source, str) and _kept(globals_):
        code = _table.get(source)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            if len(_table) < _MAX_ENTRIES:
                _table[source] = code
                _added += 1
        source = code
    builtins.exec(source, globals_, locals_)


def _save() -> None:
    if not _added:
        return
    path = _path()
    try:
        merged = {**_load(path), **_table}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(marshal.dumps(merged))
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass  # an unwritable cache only costs the next process the compilations


def install() -> None:
    """Gives `dataclasses` the cached `exec` (once per process; see the module docstring)."""
    import dataclasses

    if os.environ.get("TAWA_CODE_CACHE", "1") == "0" or getattr(dataclasses, "exec", None) is _exec:
        return
    _table.update(_load(_path()))
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # shadows the builtin for that module only
    atexit.register(_save)
