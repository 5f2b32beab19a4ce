"""The docs are in step with the code: docs/dialects.md is generated from the
docstrings, and the Python names and repository paths the docs mention exist.
(tests/test_docs_run.py runs their commands and code blocks.)"""

import glob
import importlib
import re
from pathlib import Path

import pytest

from tawa.tools.dialect_docs import render

ROOT = Path(__file__).resolve().parent.parent


def test_dialect_reference_is_current():
    committed = (ROOT / "docs" / "dialects.md").read_text()
    assert committed == render(), (
        "docs/dialects.md is stale: run `python -m tawa.tools.dialect_docs > docs/dialects.md`"
    )


# Names in backquotes that are not Python objects: IR attributes of a kernel
# (`tawa.grid`, `tawa.shapes`) and the `where` of one-line errors.
NOT_OBJECTS = {"tawa.grid", "tawa.shapes", "tawa.launch", "tawa.assemble"}
DOTTED = re.compile(r"`(tawa(?:\.[A-Za-z_]\w*)+)")
# A file (with an extension) or a folder (with its trailing slash): `tawa/cuBLAS` is a ratio.
PATH = re.compile(r"(?<![\w/.-])((?:tawa|tests|examples|docs|\.ci)/[\w/*{},-]*(?:\.[\w{},]*\w|/))")
# docs/dialects.md is generated from the dialects' docstrings, checked by
# tests/test_dialect_reference_is_current; the prose here is written by hand.
WRITTEN = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "dialects.md")]


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _expand(path: str) -> list[str]:
    """`a/{b,c}.mlir` → `a/b.mlir`, `a/c.mlir` (the brace form docs use)."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [x for alt in m[1].split(",") for x in _expand(path[: m.start()] + alt + path[m.end() :])]


@pytest.mark.parametrize("doc", WRITTEN, ids=lambda p: p.name)
def test_named_python_objects_exist(doc: Path):
    """Every `tawa.module.name` the docs name is importable (docs follow renames)."""
    names = sorted(set(DOTTED.findall(doc.read_text())) - NOT_OBJECTS)
    assert [n for n in names if not _resolves(n)] == []


@pytest.mark.parametrize("doc", WRITTEN, ids=lambda p: p.name)
def test_named_files_exist(doc: Path):
    """Every repository path the docs name (`tests/x.py`, `examples/*.mlir`) exists."""
    missing = [
        p
        for named in sorted(set(PATH.findall(doc.read_text())))
        for p in _expand(named)
        if not (glob.glob(str(ROOT / p)) if "*" in p else (ROOT / p).exists())
    ]
    assert missing == []
