"""docs/writing-a-pass.md shows the repository as it is.

tests/test_docs_run.py runs and checks every block of the guide as it does
for all docs (`<!-- source: PATH -->` excerpts occur in PATH, `<!-- output
of: COMMAND -->` blocks in the command's output, `console` and `sh` blocks
run).  The guide asks more, checked here:

* every `python` / `mlir` block is an excerpt or an output (it has one of
  those two markers): the guide shows real code only;
* the blocks taken from the pass's module, put together, are the whole module.
"""

from __future__ import annotations

from pathlib import Path

from test_docs_run import blocks_of

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "writing-a-pass.md"
PASS_MODULE = "tawa/transforms/tile/exp_to_exp2.py"


def test_every_code_block_is_marked():
    blocks = blocks_of(GUIDE)
    assert {b.lang for b in blocks} <= {"python", "mlir", "console", "sh"}, [b.lang for b in blocks]
    for b in blocks:
        if b.lang in ("python", "mlir"):
            assert b.action()[0] in ("excerpt", "output"), f"{b.id}: no source marker above:\n{b.body}"


def test_the_pass_blocks_are_the_pass_module():
    parts = [b.body.rstrip("\n") for b in blocks_of(GUIDE) if b.marker == ("source", PASS_MODULE)]
    assert "\n\n\n".join(parts) + "\n" == (ROOT / PASS_MODULE).read_text()
