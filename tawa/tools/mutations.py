"""The mutations of `python -m tawa.tools.fuzz` (tawa/tools/fuzz.py): edits
of the shipped examples' text (delete, duplicate or swap a line, a
boundary literal, another type, dimension, tile size or op, a cut, a random
byte), the `Mutant` they make, and `make_mutant`, a function of the seed and
the index only.  `tawa.tools.fuzz_python` and `tawa.tools.fuzz_api` build
their mutants from these too.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Mutants are latin-1 text, so that any byte is one character (a random byte
# stays a byte; a UTF-8 comment may be cut in the middle of a character).

SSA = re.compile(r"%[A-Za-z_][\w$.]*|%\d+")
INT = re.compile(r"(?<![\w%#.\-])-?\d+(?![\w.])")
FLOAT = re.compile(r"(?<![\w%#.])-?\d+\.\d*(?:e[+-]?\d+)?|0x[0-9A-Fa-f]+")
DIM = re.compile(r"(?<=[<x])\d+(?=x)")
TYPE = re.compile(r"\b(?:bf16|f16|f32|f64|f8E4M3FN|f8E5M2|i1|i8|i16|i32|i64|index)\b")
OP = re.compile(r"\b(arith|math|tile|scf|func)\.(\w+)")

INT_BOUNDARIES = ("0", "-1", "1", "2147483648", "9223372036854775808", "4294967296", "-9223372036854775809", "255", "65536")
FLOAT_BOUNDARIES = ("1.0e39", "-1.0e39", "65536.0", "3.5e38", "1.0e-50", "0.0", "-0.0", "nan", "inf",
                    "0x7FC00000", "0x7F800000", "0xFFFF", "0x1FFFFFFFFF")
TYPES = ("bf16", "f16", "f32", "f8E4M3FN", "f8E5M2", "i1", "i8", "i32", "i64", "index")
DIMS = ("0", "1", "8", "16", "32", "48", "64", "96", "128", "192", "256", "512", "1000")
OPS = {
    "arith": ("addi", "subi", "muli", "divsi", "divui", "remsi", "maxsi", "minui", "addf", "subf",
              "mulf", "divf", "maximumf", "constant", "truncf", "extf", "cmpi", "select", "index_cast"),
    "math": ("exp", "exp2", "sqrt", "absf", "log"),
    "tile": ("load", "store", "dot", "zeros", "program_id", "reduce", "broadcast", "exp2"),
    "scf": ("for", "yield", "if"),
    "func": ("return", "func", "call"),
}


def _lines(text: str) -> list[str]:
    return text.split("\n")


def pick_match(rng: random.Random, pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    found = list(pattern.finditer(text))
    return rng.choice(found) if found else None


def splice(text: str, m: re.Match[str], new: str) -> str:
    return text[: m.start()] + new + text[m.end():]


def delete_line(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def duplicate_line(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return "\n".join(lines)


def swap_lines(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def rename_ssa(rng: random.Random, text: str) -> str:
    names = sorted(set(SSA.findall(text)))
    m = pick_match(rng, SSA, text)
    return splice(text, m, rng.choice(names)) if m else text


def int_boundary(rng: random.Random, text: str) -> str:
    m = pick_match(rng, INT, text)
    return splice(text, m, rng.choice(INT_BOUNDARIES)) if m else text


def float_boundary(rng: random.Random, text: str) -> str:
    m = pick_match(rng, FLOAT, text)
    if m is None:  # the examples have few float literals: make one
        m = pick_match(rng, INT, text)
    return splice(text, m, rng.choice(FLOAT_BOUNDARIES)) if m else text


def change_type(rng: random.Random, text: str) -> str:
    m = pick_match(rng, TYPE, text)
    return splice(text, m, rng.choice(TYPES)) if m else text


def change_type_everywhere(rng: random.Random, text: str) -> str:
    m = pick_match(rng, TYPE, text)
    return re.sub(rf"\b{m.group()}\b", rng.choice(TYPES), text) if m else text


def change_dim(rng: random.Random, text: str) -> str:
    m = pick_match(rng, DIM, text)
    return splice(text, m, rng.choice(DIMS)) if m else text


def change_tile_size(rng: random.Random, text: str) -> str:
    """A tile size changed consistently: in every shape and index constant."""
    m = pick_match(rng, DIM, text)
    if m is None:
        return text
    old, new = m.group(), rng.choice(DIMS)
    text = re.sub(rf"(?<=[<x]){old}(?=x)", new, text)
    return re.sub(rf"arith\.constant {old} : index", f"arith.constant {new} : index", text)


def truncate(rng: random.Random, text: str) -> str:
    return text[: rng.randrange(len(text) + 1)]


def insert_byte(rng: random.Random, text: str) -> str:
    i = rng.randrange(len(text) + 1)
    return text[:i] + chr(rng.randrange(256)) + text[i:]


def delete_chars(rng: random.Random, text: str) -> str:
    i = rng.randrange(len(text))
    return text[:i] + text[i + rng.randint(1, 4):]


def swap_op(rng: random.Random, text: str) -> str:
    m = pick_match(rng, OP, text)
    return splice(text, m, f"{m.group(1)}.{rng.choice(OPS[m.group(1)])}") if m else text


MUTATIONS: dict[str, Callable[[random.Random, str], str]] = {
    f.__name__: f
    for f in (delete_line, duplicate_line, swap_lines, rename_ssa, int_boundary, float_boundary,
              change_type, change_type_everywhere, change_dim, change_tile_size, truncate,
              insert_byte, delete_chars, swap_op)
}


HOPPER_OPTIONS = ("", "", "", "stages=1", "stages=2", "stages=3", "stages=4", "persistent=false",
                  "stages=2 persistent=false")
"""Options of tawa-hopper-pipeline a mutant is compiled with (a third: the defaults)."""


@dataclass
class Mutant:
    index: int
    example: str
    mutations: list[str]
    data: bytes
    hopper_options: str = ""
    kind: str = "mlir"
    """Which input it is (`INPUTS`): a .mlir module, a Python kernel file, an API call."""
    argv: list[str] = field(default_factory=list)
    """Python kernels: options of `python -m tawa.frontend`."""
    call: Any = None
    """API calls: the `tawa.tools.fuzz_api.Call`."""

    def describe(self) -> str:
        if self.kind == "api":
            return f"api #{self.index} {self.data.decode()}"
        options = f" {{{self.hopper_options}}}" if self.hopper_options else ""
        argv = f" {' '.join(self.argv)}" if self.argv else ""
        kind = "" if self.kind == "mlir" else f"{self.kind} "
        return f"{kind}#{self.index} {self.example} [{', '.join(self.mutations)}]{options}{argv}"

    @property
    def suffix(self) -> str:
        return {"mlir": ".mlir", "python": ".py", "api": ".txt"}[self.kind]


def examples(directory: Path = EXAMPLES) -> dict[str, str]:
    return {p.name: p.read_bytes().decode("latin-1") for p in sorted(directory.glob("*.mlir"))}


def make_mutant(seed: int, index: int, sources: dict[str, str]) -> Mutant:
    """Mutant `index` of `seed`: a function of the two (and the examples) only."""
    rng = random.Random(f"tawa-fuzz:{seed}:{index}")
    name = rng.choice(sorted(sources))
    text = sources[name]
    applied = []
    for _ in range(rng.choices((1, 2, 3), weights=(7, 2, 1))[0]):
        mutation = rng.choice(sorted(MUTATIONS))
        if text:
            text = MUTATIONS[mutation](rng, text)
            applied.append(mutation)
    return Mutant(index, name, applied, text.encode("latin-1"), rng.choice(HOPPER_OPTIONS))


