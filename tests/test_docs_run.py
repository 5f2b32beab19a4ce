"""Every command and code block of README.md and docs/*.md runs as written.

One test per block, named `file:line` (the line of its opening fence).  A
block is either a fenced block (its language is the first word of the info
string; later words are flags) or an indented one (four spaces after a line of
prose): `$ ...` makes it `console`, a first word that is a program of this
environment makes it `sh`, anything else `text`.  A marker is an HTML comment
ending the last non-blank line above the block (alone on its line, or closing
a paragraph of prose).

* `python`: executed with `exec` in a fresh namespace, the repository root as
  the working directory.
* `sh`: every line is a command (a trailing `\\` continues it; `#` lines are
  comments), run by the shell in the repository root with the tools beside the
  running interpreter first on PATH (`tawa-opt`, `tawa-run`, `lit`, `pytest`),
  and must exit 0.  `pip install ...` is not run (CI installs before it tests):
  alone it is dropped, `pip install ... && rest` runs `rest`.
* `console`: `$ COMMAND` lines followed by the output the doc shows.  The
  command runs as in `sh`; the output (stdout and stderr together) must
  contain the shown output, where a line `...` (or `# ...`, `// ...`) skips
  any text and a duration (`2.89 s`, `25 ms`) matches any duration.  The
  command must exit 0, or non-zero when the shown output has an `error:`.
* `<!-- source: PATH -->` above a block: its chunks (cut at `...` lines)
  occur in PATH, in order (an excerpt, not run).
* `<!-- output of: COMMAND -->` above a block: COMMAND exits 0 and its
  stdout contains the block's chunks.
* `<!-- doc: gpu -->` (or the flag: ```` ```python gpu ````): the block needs
  a Hopper GPU; its test carries `@pytest.mark.gpu` and the `cuda` fixture,
  which skips it elsewhere with the reason.
* Not run, by language (`mlir`, `ptx`, `text`, and plain blocks without one):
  IR and PTX excerpts, outputs and synopses; or by `<!-- doc: no-run (REASON)
  -->`.  Their tests skip with the reason, so the summary lists them.  A
  block of any other language without a marker fails, as does a `text` block
  that is a console session.

`python tests/test_docs_run.py` prints every block with what its test does.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

NOT_RUN = {
    "mlir": "an IR excerpt",
    "ptx": "a PTX excerpt",
    "text": "text: output, a message or a synopsis",
    "": "plain text: output, a message or a synopsis",
}
RUN = {"python", "sh", "console"}
CUTS = {"...", "# ...", "// ..."}

FENCE = re.compile(r"^```(?P<info>.*)$")
MARKER = re.compile(r"<!--\s*(?P<kind>doc|source|output of):\s*(?P<value>.*?)\s*-->\s*$")
NO_RUN = re.compile(r"no-run \((?P<reason>.+)\)")
LIST_ITEM = re.compile(r"^\s*([-*+]|\d+\.)\s")
DURATION = re.compile(r"\b\d+(\.\d+)? ?(s|ms|µs|us)\b")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    """1-based line of the opening fence (or of an indented block's first line)."""
    lang: str
    flags: tuple[str, ...]
    body: str
    marker: tuple[str, str] | None
    """(kind, value) of the marker comment above the block."""

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def gpu(self) -> bool:
        return "gpu" in self.flags or self.marker == ("doc", "gpu")

    def action(self) -> tuple[str, str]:
        """What the block's test does: `run`, `excerpt`, `output`, `skip`
        (with the reason) or `fail` (with the problem)."""
        kind, value = self.marker or ("", "")
        if kind == "source":
            return "excerpt", value
        if kind == "output of":
            return "output", value
        if kind == "doc" and value != "gpu":
            no_run = NO_RUN.fullmatch(value)
            if no_run is None:
                return "fail", f"unknown marker <!-- doc: {value} -->: use `gpu` or `no-run (REASON)`"
            return "skip", f"not run: {no_run['reason']}"
        if self.lang in RUN:
            return "run", self.lang
        if self.lang in NOT_RUN:
            if self.body.startswith("$ "):
                return "fail", "a console session in a text block: make it ```console (or mark it no-run)"
            return "skip", f"not run: {self.lang or 'no language'} ({NOT_RUN[self.lang]})"
        return "fail", (
            f"a ```{self.lang} block: give it a language of {sorted(RUN | set(NOT_RUN) - {''})} "
            "or a marker <!-- doc: no-run (REASON) -->"
        )


def _marker(lines: list[str], before: int) -> tuple[str, str] | None:
    """The marker ending the last non-blank line before line index `before`."""
    i = before - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    if i < 0:
        return None
    m = MARKER.search(lines[i])
    return (m["kind"], m["value"]) if m else None


def _indented_lang(body: str) -> str:
    first = body.split("\n", 1)[0]
    if first.startswith("$ "):
        return "console"
    word = first.split(maxsplit=1)[0] if first.strip() else ""
    if word and (word in ("python", "python3", "pip") or _tool(word)):
        return "sh"
    return "text"


def _tool(name: str) -> str | None:
    return shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def blocks_of(path: Path) -> list[Block]:
    """The code blocks of a Markdown file, in order."""
    lines = path.read_text().split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence:
            words = fence["info"].split()
            end = i + 1
            while end < len(lines) and lines[end] != "```":
                end += 1
            assert end < len(lines), f"{path}:{i + 1}: unclosed code fence"
            found.append(
                Block(path, i + 1, words[0] if words else "", tuple(words[1:]),
                      "\n".join(lines[i + 1 : end]) + "\n", _marker(lines, i))
            )
            i = end + 1
            continue
        # An indented code block: four spaces after a blank line that follows
        # prose at the margin (in a list, indented text continues the item).
        if lines[i].startswith("    ") and lines[i].strip() and i > 0 and not lines[i - 1].strip():
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            if j >= 0 and not lines[j].startswith(" ") and not LIST_ITEM.match(lines[j]):
                end = i
                while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                    end += 1
                body = "\n".join(line[4:] for line in lines[i:end]).rstrip("\n") + "\n"
                found.append(Block(path, i + 1, _indented_lang(body), (), body, _marker(lines, i)))
                i = end
                continue
        i += 1
    return found


def all_blocks() -> list[Block]:
    return [b for path in DOCS for b in blocks_of(path)]


def environment() -> dict[str, str]:
    """The tools of this environment first on PATH, as an installed user has them."""
    return dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))


def shell(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, shell=True, cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=300, check=False
    )


def commands(body: str) -> list[str]:
    """The logical command lines of an `sh` block (continuations joined,
    comments dropped, installs left to CI)."""
    out: list[str] = []
    pending = ""
    for line in body.split("\n"):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return [c for c in map(without_install, out) if c]


def without_install(command: str) -> str:
    """`pip install X && rest` → `rest`; `pip install X` → `` (CI installs)."""
    if not command.lstrip().startswith("pip install"):
        return command
    _, sep, rest = command.partition("&&")
    return rest.strip() if sep else ""


def sessions(body: str) -> list[tuple[str, str]]:
    """(command, shown output) of each `$ ` line of a console block."""
    out: list[tuple[str, list[str]]] = []
    lines = body.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        assert line.startswith("$ ") or out, f"console output before any `$ ` command: {line!r}"
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + lines[i]
            out.append((command, []))
        else:
            out[-1][1].append(line)
        i += 1
    return [(command, "\n".join(shown)) for command, shown in out]


def chunks(body: str) -> list[str]:
    """The parts of an excerpt between its `...` lines."""
    parts, current = [], []
    for line in body.rstrip("\n").split("\n"):
        if line.strip() in CUTS:
            parts.append("\n".join(current))
            current = []
        else:
            current.append(line)
    parts.append("\n".join(current))
    return [p for p in parts if p.strip()]


def assert_chunks_in(body: str, text: str, where: str, durations: bool = False) -> None:
    """Every chunk of `body` occurs in `text`, in order."""
    if durations:
        body, text = DURATION.sub("<duration>", body), DURATION.sub("<duration>", text)
    at = 0
    for chunk in chunks(body):
        found = text.find(chunk, at)
        assert found >= 0, f"not in {where} (after offset {at}):\n{chunk}\n--- it was:\n{text[at:][:4000]}"
        at = found + len(chunk)


def run_block(block: Block) -> None:
    action, value = block.action()
    if action == "excerpt":
        assert_chunks_in(block.body, (ROOT / value).read_text(), value)
    elif action == "output":
        res = shell(value)
        assert res.returncode == 0, f"{value}: exit {res.returncode}\n{res.stderr}"
        assert_chunks_in(block.body, res.stdout, value)
    elif value == "python":
        code = compile(block.body, block.id, "exec")
        namespace = {"__name__": "__doc_block__"}
        with contextlib.chdir(ROOT), contextlib.redirect_stdout(io.StringIO()):
            exec(code, namespace)  # noqa: S102 - the point: the doc's code, as a reader runs it
    elif value == "sh":
        for command in commands(block.body):
            res = shell(command)
            assert res.returncode == 0, f"{command}: exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-4000:]}"
    elif value == "console":
        for command, shown in sessions(block.body):
            command = without_install(command)
            if not command:
                continue
            res = shell(command)
            fails = any("error:" in line for line in shown.split("\n"))
            assert (res.returncode != 0) == fails, (
                f"{command}: exit {res.returncode}, expected {'non-zero' if fails else '0'}\n{res.stderr[-4000:]}"
            )
            assert_chunks_in(shown, res.stdout + res.stderr, command, durations=True)


SLOW_COMMANDS = ("tawa-hopper-pipeline", "tawa-verify-protocol", "tawa-run ", "tawa.tools.fuzz", "tawa.bench")
"""A block that runs one of these (a kernel through the whole pipeline, a
protocol proof, the fuzzer, a benchmark's models) takes seconds of CPU: its
test is in the slow tier."""


def _param(block: Block):
    runs = block.action()[0] in ("run", "output") and any(w in f"{block.body} {block.marker}" for w in SLOW_COMMANDS)
    marks = [pytest.mark.gpu] if block.gpu else []
    return pytest.param(block, id=block.id, marks=marks + ([pytest.mark.slow] if runs else []))


@pytest.mark.parametrize("block", [_param(b) for b in all_blocks()])
def test_doc_block(block: Block, request: pytest.FixtureRequest):
    action, value = block.action()
    if action == "fail":
        pytest.fail(f"{block.id}: {value}")
    if action == "skip":
        pytest.skip(value)
    if block.gpu:
        request.getfixturevalue("cuda")
    run_block(block)


def test_markers_are_recognized(tmp_path):
    """The extraction itself, on a small document of every kind of block."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "Run it: <!-- doc: no-run (slow) -->\n\n    pytest -n 2\n\n"
        "<!-- doc: gpu -->\n```python\nx = 1\n```\n\n"
        "```python gpu\ny = 2\n```\n\n"
        "```console\n$ tawa-opt --version\ntawa\n```\n\n"
        "```bash\nls\n```\n\n"
        "```\n$ ls\n```\n\n"
        "- a list\n\n    continued item text\n\n"
        "```mlir\n%x = arith.constant 1 : i32\n```\n"
    )
    got = [(b.line, b.lang, b.gpu, b.action()[0]) for b in blocks_of(doc)]
    assert got == [
        (3, "sh", False, "skip"),
        (6, "python", True, "run"),
        (10, "python", True, "run"),
        (14, "console", False, "run"),
        (19, "bash", False, "fail"),
        (23, "", False, "fail"),
        (31, "mlir", False, "skip"),
    ]
    assert commands("pip install -e . && tawa-opt x \\\n  -p y\n# note\npip install z\n") == ["tawa-opt x   -p y"]
    assert sessions("$ a \\\nb\nout 1\n...\n$ c\n") == [("a b", "out 1\n..."), ("c", "")]
    assert_chunks_in("took 2.89 s\n...\nPASS", "x took 0.10 s\ny\nPASS\n", "t", durations=True)
    with pytest.raises(AssertionError):
        assert_chunks_in("PASS\n...\ntook", "took\nPASS", "t")


if __name__ == "__main__":
    for b in all_blocks():
        action, value = b.action()
        print(f"{b.id:32} {b.lang or '-':8} {'gpu ' if b.gpu else ''}{action}: {value}")
