"""docs/writing-a-pass.md shows the repository as it is.

Each fenced block of the guide is checked:

* `python` / `mlir` blocks follow an HTML comment naming where they come from:
  `<!-- source: PATH -->` (a file) or `<!-- output of: COMMAND -->`.  A line
  `...`, `# ...` or `// ...` cuts a block into chunks; each chunk must occur
  there, in order.  The blocks taken from the pass's module, put together,
  must be the whole module.
* `console` blocks are `$ COMMAND` and its output (chunks as above); the
  command is run (stdout and stderr together) and the chunks must occur in
  its output, in order.
* `sh` blocks are commands that must succeed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "writing-a-pass.md"
PASS_MODULE = "tawa/transforms/exp_to_exp2.py"
CUTS = {"...", "# ...", "// ..."}

# A fenced block, with the non-empty line before it (a marker comment or not).
BLOCK = re.compile(
    r"(?:^(?P<before>[^\n]*)\n)?^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
MARKER = re.compile(r"<!-- (source|output of): (.*) -->")


def blocks() -> list[tuple[str, str, str]]:
    """(language, body, marker line) of every fenced block of the guide."""
    text = GUIDE.read_text()
    return [
        (m["lang"], m["body"], (m["before"] or "").strip())
        for m in BLOCK.finditer(text)
    ]


def run(command: str) -> subprocess.CompletedProcess[str]:
    # The tools of this environment (tawa-opt, lit, pytest), as a user would have them.
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    return subprocess.run(
        command,
        check=False,
        shell=True,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_chunks_in(body: str, text: str, where: str) -> None:
    chunks, current = [], []
    for line in body.rstrip("\n").split("\n"):
        if line.strip() in CUTS:
            chunks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    chunks.append("\n".join(current))
    at = 0
    for chunk in (c for c in chunks if c):
        found = text.find(chunk, at)
        assert found >= 0, f"not in {where} (after offset {at}):\n{chunk}"
        at = found + len(chunk)


def test_every_code_block_is_marked():
    langs = [lang for lang, _, _ in blocks()]
    assert set(langs) <= {"python", "mlir", "console", "sh"}, langs
    for lang, body, before in blocks():
        if lang in ("python", "mlir"):
            assert MARKER.fullmatch(before), f"no source marker above:\n{body}"


def test_the_pass_blocks_are_the_pass_module():
    parts = [
        body.rstrip("\n")
        for _, body, before in blocks()
        if before == f"<!-- source: {PASS_MODULE} -->"
    ]
    assert "\n\n\n".join(parts) + "\n" == (ROOT / PASS_MODULE).read_text()


@pytest.mark.parametrize(
    "index", [i for i, b in enumerate(blocks()) if MARKER.fullmatch(b[2])]
)
def test_excerpt(index):
    _, body, before = blocks()[index]
    kind, where = MARKER.fullmatch(before).groups()  # type: ignore[union-attr]
    if kind == "source":
        assert_chunks_in(body, (ROOT / where).read_text(), where)
    else:
        res = run(where)
        assert res.returncode == 0, res.stderr
        assert_chunks_in(body, res.stdout, where)


@pytest.mark.parametrize(
    "index", [i for i, b in enumerate(blocks()) if b[0] == "console"]
)
def test_console(index):
    _, body, _ = blocks()[index]
    command, _, output = body.partition("\n")
    assert command.startswith("$ ")
    res = run(command[2:])
    assert_chunks_in(output, res.stdout + res.stderr, command)


@pytest.mark.parametrize("index", [i for i, b in enumerate(blocks()) if b[0] == "sh"])
def test_commands(index):
    _, body, _ = blocks()[index]
    for command in body.strip().splitlines():
        res = run(command)
        assert res.returncode == 0, f"{command}:\n{res.stdout}\n{res.stderr}"
