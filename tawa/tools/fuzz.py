"""A seeded mutation fuzzer of tawa's input handling (docs/testing.md, "Fuzzing").

    python -m tawa.tools.fuzz --seed 0 --count 3000 [--pipeline hopper,ws,interp] [--ptxas]

Each mutant is an example of `examples/` with one to three random edits
(delete, duplicate or swap lines; replace an SSA name by another; set an
integer or float literal to a boundary value; change an element type, a shape
dimension or a tile size throughout; truncate; insert a random byte; swap an
op for another of its dialect).  Mutant `i` of seed `s` depends on `(s, i)`
only, so a finding is reproduced by `--seed s --first i --count 1 --save DIR`.

Each mutant runs in this process through the selected pipelines:

    parse    tawa-opt FILE                                  (parse and verify)
    ws       tawa-opt FILE -p tawa-warp-specialize
    hopper   tawa-opt FILE -p tawa-hopper-pipeline -t ptx   (two thirds of the mutants
             with options: stages=1..4, persistent=false)
    interp   tawa.interpret of the first kernel on a 2x1 grid, on small
             arrays made from its signature (the CPU interpreter)

and each outcome is classified:

    ok         exit 0
    located    exit 1 with a line `file:line:col: error: ...`
    unlocated  exit 1 without a located error line
    internal   "internal error", or an exception escaping the tool
    hang       still running after --timeout seconds (SIGALRM)
    slow       interp only: still running after --timeout seconds; not a bug
               by itself (a mutated loop bound can ask for 2**56 iterations,
               which the GPU would run as long), reported but not failing
    rejected   with --ptxas: hopper exit 0 but `ptxas -arch=sm_90a` rejects the PTX

Prints a summary (and each bad outcome); exits 1 when any outcome is
unlocated, internal, hang or rejected.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tawa.target.hopper import ARCH

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BAD = ("unlocated", "internal", "hang", "rejected")
"""Outcomes that are bugs of tawa (the fuzzer exits 1 on any)."""

LOCATED = re.compile(r"^\S+:\d+:\d+: error: ", re.MULTILINE)

PIPELINES: dict[str, list[str]] = {
    "parse": [],
    "ws": ["-p", "tawa-warp-specialize"],
    "hopper": ["-p", "tawa-hopper-pipeline", "-t", "ptx"],
    "interp": [],  # tawa-run, see _run_interp
}

# --- mutations -------------------------------------------------------------
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


def _pick_match(rng: random.Random, pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    found = list(pattern.finditer(text))
    return rng.choice(found) if found else None


def _splice(text: str, m: re.Match[str], new: str) -> str:
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
    m = _pick_match(rng, SSA, text)
    return _splice(text, m, rng.choice(names)) if m else text


def int_boundary(rng: random.Random, text: str) -> str:
    m = _pick_match(rng, INT, text)
    return _splice(text, m, rng.choice(INT_BOUNDARIES)) if m else text


def float_boundary(rng: random.Random, text: str) -> str:
    m = _pick_match(rng, FLOAT, text)
    if m is None:  # the examples have few float literals: make one
        m = _pick_match(rng, INT, text)
    return _splice(text, m, rng.choice(FLOAT_BOUNDARIES)) if m else text


def change_type(rng: random.Random, text: str) -> str:
    m = _pick_match(rng, TYPE, text)
    return _splice(text, m, rng.choice(TYPES)) if m else text


def change_type_everywhere(rng: random.Random, text: str) -> str:
    m = _pick_match(rng, TYPE, text)
    return re.sub(rf"\b{m.group()}\b", rng.choice(TYPES), text) if m else text


def change_dim(rng: random.Random, text: str) -> str:
    m = _pick_match(rng, DIM, text)
    return _splice(text, m, rng.choice(DIMS)) if m else text


def change_tile_size(rng: random.Random, text: str) -> str:
    """A tile size changed consistently: in every shape and index constant."""
    m = _pick_match(rng, DIM, text)
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
    m = _pick_match(rng, OP, text)
    return _splice(text, m, f"{m.group(1)}.{rng.choice(OPS[m.group(1)])}") if m else text


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

    def describe(self) -> str:
        options = f" {{{self.hopper_options}}}" if self.hopper_options else ""
        return f"#{self.index} {self.example} [{', '.join(self.mutations)}]{options}"


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


# --- running ---------------------------------------------------------------


class Hang(BaseException):
    """Raised by SIGALRM: a BaseException, so no `except Exception` swallows it."""


@dataclass
class Outcome:
    pipeline: str
    kind: str
    message: str = ""
    stdout: str = ""


@contextlib.contextmanager
def _time_limit(seconds: float):
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _call(tool: Callable[[list[str]], int], argv: list[str], timeout: float) -> tuple[int | str, str, str]:
    """(exit status, or 'hang' or 'internal'; stdout; stderr) of a tool run in-process."""
    out, err = io.StringIO(), io.StringIO()
    limit = sys.getrecursionlimit()
    try:
        with _time_limit(timeout), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status: int | str = tool(argv)
    except Hang:
        status = "hang"
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException as exc:  # escaped the tool's own error handling
        status = "internal"
        err.write(f"{type(exc).__name__}: {exc}\n")
    finally:
        sys.setrecursionlimit(limit)
    return status, out.getvalue(), err.getvalue()


def classify(pipeline: str, status: int | str, stdout: str, stderr: str) -> Outcome:
    lines = [line for line in stderr.splitlines() if "error" in line]
    first = lines[0] if lines else (stderr.strip().splitlines() or [""])[-1]
    if status == "hang":
        kind = "slow" if pipeline == "interp" else "hang"
        return Outcome(pipeline, kind, "no result within the time limit")
    if status == "internal" or "internal error" in stderr:
        return Outcome(pipeline, "internal", first)
    if status == 0:
        return Outcome(pipeline, "ok", stdout=stdout)
    located = [line for line in stderr.splitlines() if LOCATED.match(line)]
    if located:
        return Outcome(pipeline, "located", located[0])
    return Outcome(pipeline, "unlocated", first)


def _interpret(argv: list[str]) -> int:
    """Parses `argv[0]` and runs its first kernel on the CPU on small arrays
    made from its signature, like a tool: a TawaError is one line on stderr and
    exit status 1.  Checks no result (a mutant computes something else)."""
    import numpy as np
    from xdsl.dialects import func
    from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType

    import tawa
    from tawa.diagnostics import TawaError
    from tawa.interpreters.dtypes import dtype_of

    try:
        module = tawa.parse(Path(argv[0]).read_bytes(), argv[0])
        kernels = [op for op in module.walk() if isinstance(op, func.FuncOp) and not op.is_declaration]
        if not kernels:
            return 0
        kernel = kernels[0]
        args: list[object] = []
        for t in kernel.function_type.inputs.data:
            if isinstance(t, MemRefType):
                shape = [d if d >= 0 else (2 if i == 0 and t.get_num_dims() == 3 else 40)
                         for i, d in enumerate(t.get_shape())]
                args.append(np.full(shape, 0.5, dtype_of(t.element_type)))
            elif isinstance(t, IndexType | IntegerType):
                args.append(40)
            else:
                args.append(0.5)
        tawa.interpret(module, kernel.sym_name.data, (2, 1), *args)
        return 0
    except TawaError as err:
        print(str(err).splitlines()[0], file=sys.stderr)
        return 1


def run_mutant(mutant: Mutant, pipelines: Sequence[str], workdir: Path, timeout: float) -> list[Outcome]:
    from tawa.tools import tawa_opt

    path = workdir / f"mutant{mutant.index}.mlir"
    path.write_bytes(mutant.data)
    outcomes = []
    for pipeline in pipelines:
        tool = _interpret if pipeline == "interp" else tawa_opt.main
        argv = [str(path), *PIPELINES[pipeline]]
        if pipeline == "hopper" and mutant.hopper_options:
            argv[2] = f"tawa-hopper-pipeline{{{mutant.hopper_options}}}"
        outcomes.append(classify(pipeline, *_call(tool, argv, timeout)))
    return outcomes


def ptxas_rejects(ptx: str, workdir: Path, ptxas: str = "ptxas") -> str | None:
    """ptxas's first error line if it rejects `ptx`, else None."""
    from tawa.runtime.ptxas import first_error

    src = workdir / "kernel.ptx"
    src.write_text(ptx)
    proc = subprocess.run([ptxas, f"-arch={ARCH}", "-o", str(workdir / "kernel.cubin"), str(src)],
                          capture_output=True, text=True, timeout=300)
    return first_error(proc.stdout + proc.stderr) if proc.returncode else None


@dataclass
class Campaign:
    counts: Counter = field(default_factory=Counter)
    bad: list[tuple[Mutant, Outcome]] = field(default_factory=list)
    assembled: int = 0
    """Exit-0 PTX outputs given to ptxas."""

    def add(self, mutant: Mutant, outcome: Outcome) -> None:
        self.counts[outcome.pipeline, outcome.kind] += 1
        if outcome.kind in BAD:
            self.bad.append((mutant, outcome))

    def summary(self) -> str:
        pipelines = sorted({p for p, _ in self.counts})
        kinds = ("ok", "located", "slow", *BAD)
        rows = [f"{'pipeline':10}" + "".join(f"{k:>11}" for k in kinds)]
        for p in pipelines:
            rows.append(f"{p:10}" + "".join(f"{self.counts[p, k]:>11}" for k in kinds))
        return "\n".join(rows)


def fuzz(seed: int, count: int, pipelines: Sequence[str], first: int = 0, timeout: float = 20.0,
         ptxas: str | None = None, save: Path | None = None,
         log: Callable[[str], None] | None = None, ptxas_limit: int | None = None) -> Campaign:
    """Runs mutants `first .. first+count-1` of `seed`; returns their outcomes.
    With `ptxas`, the PTX of hopper's exit-0 outcomes is assembled (the
    first `ptxas_limit` of them, or all)."""
    sources = examples()
    campaign = Campaign()
    with tempfile.TemporaryDirectory(prefix="tawa-fuzz-") as tmp:
        workdir = Path(tmp)
        for index in range(first, first + count):
            mutant = make_mutant(seed, index, sources)
            for outcome in run_mutant(mutant, pipelines, workdir, timeout):
                if (ptxas and outcome.pipeline == "hopper" and outcome.kind == "ok"
                        and (ptxas_limit is None or campaign.assembled < ptxas_limit)):
                    campaign.assembled += 1
                    why = ptxas_rejects(outcome.stdout, workdir, ptxas)
                    if why:
                        outcome = Outcome("hopper", "rejected", why)
                campaign.add(mutant, outcome)
                if outcome.kind in BAD:
                    if log:
                        log(f"{outcome.kind}: {outcome.pipeline} {mutant.describe()}: {outcome.message}")
                    if save:
                        save.mkdir(parents=True, exist_ok=True)
                        (save / f"s{seed}_{mutant.index}.mlir").write_bytes(mutant.data)
    return campaign


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.tools.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--first", type=int, default=0, help="index of the first mutant")
    parser.add_argument("--pipeline", default="hopper,ws,interp",
                        help=f"comma-separated, of {', '.join(PIPELINES)}")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per mutant and pipeline")
    parser.add_argument("--ptxas", nargs="?", const="ptxas", default=None,
                        help="assemble the PTX of hopper's exit-0 mutants (optionally: the ptxas to use)")
    parser.add_argument("--save", type=Path, default=None, help="write the bad mutants here")
    args = parser.parse_args(argv)
    pipelines = [p for p in args.pipeline.split(",") if p]
    for p in pipelines:
        if p not in PIPELINES:
            parser.error(f"unknown pipeline '{p}' (choose from {', '.join(PIPELINES)})")
    start = time.perf_counter()
    campaign = fuzz(args.seed, args.count, pipelines, args.first, args.timeout, args.ptxas, args.save,
                    log=lambda line: print(line, flush=True))
    print(f"{args.count} mutants of seed {args.seed} in {time.perf_counter() - start:.1f} s")
    print(campaign.summary())
    return 1 if campaign.bad else 0


if __name__ == "__main__":
    sys.exit(main())
