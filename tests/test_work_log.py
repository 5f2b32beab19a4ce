"""The source speaks of the code, not of the project's history: no session
or issue numbers, dates or measured speed ratios in tawa/, tests/ and
README.md.  The reason for a decision stays beside the code; the number
that supports it goes to docs/perf.md, which keeps the dated history.

What counts: the words session or issue followed by a number (a data
file's session tag too), ISO dates of the 2020s, ratios written with a
decimal point and x or × ("1.05x", "0.8×"), and "N% faster / slower".  Tile shapes ("128x256") and
hardware facts are not ratios.  Test fixtures that need a date use one of
the year 2000.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK_LOG = re.compile(
    r"\b[Ss]essions? \d+|\bsession\d+|\b[Ii]ssues? #?\d+|\b202\d-\d\d-\d\d\b"
    r"|\d\.\d+ ?[x×](?![0-9A-Za-z])|\d+(\.\d+)?% (faster|slower)"
)
SUFFIXES = {".py", ".mlir", ".md", ".toml", ".cfg", ".txt", ".sh"}


def sources() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in ("tawa", "tests"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in SUFFIXES and p.is_file()
                  and "__pycache__" not in p.parts and "Output" not in p.parts]
    return sorted(files)


def test_no_work_log_in_the_source():
    hits = []
    for path in sources():
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if WORK_LOG.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not hits, ("session/issue numbers, dates or measured ratios in the source (move the number to "
                      "docs/perf.md, keep the reason):\n" + "\n".join(hits))


def test_the_pattern_finds_what_it_should():
    session, issue = "session", "issue"  # spelled apart: this file is source too
    found = [f"{session} 12", f"{session.title()}s 7–8", f"gemm-sweep-{session}19.json", f"{issue} 11's sweep",
             "on 2026-11-25", "1.047x faster", "0.80× cuBLAS", "12% faster"]
    kept = ["128x256 tiles", "4 stages, not 3", "2x2 cluster", "0x10 offset", "year 2000-01-01", "x1.5"]
    assert all(WORK_LOG.search(text) for text in found)
    assert not any(WORK_LOG.search(text) for text in kept)
