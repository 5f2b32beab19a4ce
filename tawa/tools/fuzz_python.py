"""Mutants of the Python kernels of `examples/python` (tawa/tools/fuzz.py,
docs/testing.md "Fuzzing").

Mutant `i` of seed `s` is one example kernel file with one to three edits
and, for a third of them, command-line options of `python -m tawa.frontend`:

- the edits of `.mlir` mutants that read any text: delete, duplicate or swap
  lines, set an integer or float literal to a boundary value, truncate,
  delete characters, insert a random byte;
- a dtype (`tl.bf16`) made another, `tl.f64` and `tl.index` included;
- a call of a `tl` function made a call of another;
- an identifier replaced by another of the file;
- an expression nested deeply: parentheses, a chain of unary minus or of
  additions, 10 to 3,000 deep (past the front end's and Python's limits);
- a constexpr default set to a boundary value;
- `--constexpr NAME=VALUE` (a constexpr of the file, or not) with a boundary
  value, or `--kernel NAME`.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import tawa.language as tl
from tawa.tools import mutations

EXAMPLES = mutations.EXAMPLES / "python"

DTYPE = re.compile(r"\btl\.(?:" + "|".join(sorted(tl.DTYPES, key=len, reverse=True)) + r")\b")
TL_CALL = re.compile(r"\btl\.(\w+)(?=\()")
IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*\b")
KEYWORDS = {"def", "for", "in", "import", "return", "if", "else", "elif", "as", "and", "or", "not", "is",
            "None", "True", "False", "pass", "from", "lambda", "while", "with", "class", "tl", "tawa"}
CONSTEXPR = re.compile(r"(\w+): tl\.constexpr(?: = ([^,)\n]+))?")
TL_FUNCTIONS = sorted(n for n in dir(tl) if isinstance(getattr(tl, n), tl._Builtin))
BOUNDARIES = ("0", "-1", "1", "3", "7", "96", "1000", "65536", "2**31", "2**64", "1e999", "0.5", "-0.0",
              "True", "None", "'x'", "tl.f32", "tl.i1", "bf16", "[1]", "(64, 64)", "((((", "float('nan')")
DEPTHS = (10, 70, 300, 1000, 3000)


def examples(directory: Path = EXAMPLES) -> dict[str, str]:
    return {p.name: p.read_bytes().decode("latin-1") for p in sorted(directory.glob("*.py"))}


def change_dtype(rng: random.Random, text: str) -> str:
    m = mutations.pick_match(rng, DTYPE, text)
    return mutations.splice(text, m, f"tl.{rng.choice(sorted(tl.DTYPES))}") if m else text


def swap_tl_function(rng: random.Random, text: str) -> str:
    m = mutations.pick_match(rng, TL_CALL, text)
    return mutations.splice(text, m, f"tl.{rng.choice(TL_FUNCTIONS)}") if m else text


def rename_identifier(rng: random.Random, text: str) -> str:
    names = sorted({n for n in IDENTIFIER.findall(text) if n not in KEYWORDS})
    found = [m for m in IDENTIFIER.finditer(text) if m.group() not in KEYWORDS]
    return mutations.splice(text, rng.choice(found), rng.choice(names)) if found else text


def nest_expression(rng: random.Random, text: str) -> str:
    """An identifier of an indented line (a kernel's body) nested deeply."""
    found = [m for m in IDENTIFIER.finditer(text)
             if m.group() not in KEYWORDS and text[text.rfind("\n", 0, m.start()) + 1:m.start()].startswith(" ")]
    if not found:
        return text
    m, depth = rng.choice(found), rng.choice(DEPTHS)
    name = m.group()
    nested = rng.choice([
        "(" * depth + name + ")" * depth,
        "-" * depth + name,
        " + ".join([name] * depth),
    ])
    return mutations.splice(text, m, nested)


def constexpr_default(rng: random.Random, text: str) -> str:
    found = [m for m in CONSTEXPR.finditer(text) if m.group(2)]
    if not found:
        return text
    m = rng.choice(found)
    return text[: m.start(2)] + rng.choice(BOUNDARIES) + text[m.end(2):]


MUTATIONS = {
    f.__name__: f
    for f in (mutations.delete_line, mutations.duplicate_line, mutations.swap_lines, mutations.int_boundary, mutations.float_boundary,
              mutations.truncate, mutations.insert_byte, mutations.delete_chars, change_dtype, swap_tl_function,
              rename_identifier, nest_expression, constexpr_default)
}


def command_line(rng: random.Random, text: str) -> list[str]:
    """Options of `python -m tawa.frontend` for a third of the mutants."""
    roll = rng.random()
    if roll < 0.25:
        names = [m.group(1) for m in CONSTEXPR.finditer(text)] or ["BLOCK"]
        name = rng.choice([*names, "NOPE"])
        return ["--constexpr", f"{name}={rng.choice(BOUNDARIES)}"]
    if roll < 0.33:
        kernels = re.findall(r"^def (\w+)", text, re.MULTILINE) or ["k"]
        return ["--kernel", rng.choice([*kernels, "nope"])]
    return []


def make_mutant(seed: int, index: int, sources: dict[str, str]) -> mutations.Mutant:
    """Python mutant `index` of `seed`: a function of the two (and the examples) only."""
    rng = random.Random(f"tawa-fuzz-python:{seed}:{index}")
    name = rng.choice(sorted(sources))
    text = sources[name]
    applied = []
    for _ in range(rng.choices((1, 2, 3), weights=(7, 2, 1))[0]):
        mutation = rng.choice(sorted(MUTATIONS))
        if text:
            text = MUTATIONS[mutation](rng, text)
            applied.append(mutation)
    argv = command_line(rng, text)
    return mutations.Mutant(index, name, applied, text.encode("latin-1"), kind="python", argv=argv)
