"""docs/dialects.md is generated from the docstrings and must stay in step."""

from pathlib import Path

from tawa.tools.dialect_docs import render

ROOT = Path(__file__).resolve().parent.parent


def test_dialect_reference_is_current():
    committed = (ROOT / "docs" / "dialects.md").read_text()
    assert committed == render(), (
        "docs/dialects.md is stale: run `python -m tawa.tools.dialect_docs > docs/dialects.md`"
    )
