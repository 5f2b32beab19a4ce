"""A seeded mutation fuzzer of tawa's input handling (docs/testing.md, "Fuzzing").

    python -m tawa.tools.fuzz --seed 0 --count 3000 [--inputs mlir,python,api]
        [--pipeline hopper,ws,interp] [--ptxas]

Three kinds of input (`--inputs`; `--count` mutants of each):

    mlir     an example of `examples/` with one to three random edits (delete,
             duplicate or swap lines; replace an SSA name by another; set an
             integer or float literal to a boundary value; change an element
             type, a shape dimension or a tile size throughout; truncate;
             insert a random byte; swap an op for another of its dialect)
    python   a kernel file of `examples/python`, edited alike, and with
             `python -m tawa.frontend` options (tawa.tools.fuzz_python)
    api      a call of tawa.compile, tawa.parse, tawa.interpret, a Python
             kernel's methods, tawa-run or tawa-opt with bad arguments
             (tawa.tools.fuzz_api)

Mutant `i` of seed `s` depends on `(s, i)` only, so a finding is reproduced
by `--seed s --first i --count 1 --inputs KIND --save DIR`.

Each mutant runs in this process.  A .mlir mutant, and the IR a Python
mutant's front end prints (`frontend`, then `py-hopper`, ...), go through
the selected pipelines:

    parse    tawa-opt FILE                                  (parse and verify)
    ws       tawa-opt FILE -p tawa-warp-specialize
    hopper   tawa-opt FILE -p tawa-hopper-pipeline -t ptx   (two thirds of the mutants
             with options: stages=1..4, persistent=false)
    interp   tawa.interpret of the first kernel on a 2x1 grid, on small
             arrays made from its signature (the CPU interpreter)

An API call runs once (`api`).  Each outcome is classified:

    ok         exit 0 (a call that returned)
    located    exit 1 with a line `file:line:col: error: ...`
    refused    api only: one line `where: error: ...` about an argument
    unlocated  exit 1 without a located error line
    internal   "internal error", a traceback, or an exception escaping the
               tool (api: any exception but a TawaError, any exit status
               but 0 and 1)
    hang       still running after --timeout seconds (SIGALRM)
    slow       interp and api only: still running after --timeout seconds;
               not a bug by itself (a mutated loop bound can ask for 2**56
               iterations, which the GPU would run as long), reported but not failing
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tawa.target.hopper import ARCH

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BAD = ("unlocated", "internal", "hang", "rejected")
"""Outcomes that are bugs of tawa (the fuzzer exits 1 on any)."""

INPUTS = ("mlir", "python", "api")
"""What the mutants are: `.mlir` modules, Python kernel files
(`tawa.tools.fuzz_python`), calls of the API and tools (`tawa.tools.fuzz_api`)."""

ERROR_LINE = re.compile(r"^[^\n]*?\S: error: ", re.MULTILINE)
"""A one-line error `where: error: ...` (an API call's `tawa.compile: error:`)."""

LOCATED = re.compile(r"^\S+:\d+:\d+: error: ", re.MULTILINE)

PIPELINES: dict[str, list[str]] = {
    "parse": [],
    "ws": ["-p", "tawa-warp-specialize"],
    "hopper": ["-p", "tawa-hopper-pipeline", "-t", "ptx"],
    "interp": [],  # tawa-run, see _run_interp
}
"""What a .mlir mutant, or the IR of a Python mutant, runs through."""

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
    """The outcome of a run.  `api` runs may also end `refused`: one line
    `where: error: ...` without a file location (a bad argument); any exit
    status but 0 and 1 (argparse's 2) is internal there."""
    lines = [line for line in stderr.splitlines() if "error" in line]
    first = lines[0] if lines else (stderr.strip().splitlines() or [""])[-1]
    if status == "hang":
        kind = "slow" if pipeline.endswith("interp") or pipeline == "api" else "hang"
        return Outcome(pipeline, kind, "no result within the time limit")
    if status == "internal" or "internal error" in stderr or "Traceback" in stderr:
        return Outcome(pipeline, "internal", first)
    if status == 0:
        return Outcome(pipeline, "ok", stdout=stdout)
    located = [line for line in stderr.splitlines() if LOCATED.match(line)]
    if located:
        return Outcome(pipeline, "located", located[0])
    if pipeline == "api":
        if status == 1 and not stderr and stdout.rstrip().endswith("\nFAIL"):
            return Outcome(pipeline, "ok", stdout=stdout)  # tawa-run ran; its comparison failed
        if status != 1:
            return Outcome(pipeline, "internal", f"exit status {status}: {first}")
        if ERROR_LINE.match(stderr):
            return Outcome(pipeline, "refused", first)
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
    """The outcomes of `mutant`.  A .mlir mutant runs through `pipelines`; a
    Python one through the front end (`frontend`), then its IR, when it
    printed some, through `pipelines` (`py-hopper`, ...); an API call once
    (`api`)."""
    if mutant.kind == "api":
        from tawa.tools.fuzz_api import runner

        return [classify("api", *_call(runner(mutant.call, workdir), [], timeout))]
    path = workdir / f"mutant{mutant.index}{mutant.suffix}"
    path.write_bytes(mutant.data)
    prefix = ""
    outcomes = []
    if mutant.kind == "python":
        from tawa.frontend.__main__ import main as frontend

        front = classify("frontend", *_call(frontend, [str(path), *mutant.argv], timeout))
        outcomes.append(front)
        if front.kind != "ok" or not front.stdout.strip():
            return outcomes
        path = workdir / f"mutant{mutant.index}.mlir"
        path.write_text(front.stdout)
        prefix = "py-"
    outcomes += [classify(prefix + p, *_call(*_pipeline(p, path, mutant.hopper_options), timeout))
                 for p in pipelines if p != "frontend"]
    return outcomes


def _pipeline(pipeline: str, path: Path, hopper_options: str) -> tuple[Callable[[list[str]], int], list[str]]:
    """The tool and arguments that run `pipeline` on the module at `path`."""
    from tawa.tools import tawa_opt

    argv = [str(path), *PIPELINES[pipeline]]
    if pipeline == "hopper" and hopper_options:
        argv[2] = f"tawa-hopper-pipeline{{{hopper_options}}}"
    return (_interpret if pipeline == "interp" else tawa_opt.main), argv


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
        kinds = ("ok", "located", "refused", "slow", *BAD)
        rows = [f"{'pipeline':10}" + "".join(f"{k:>11}" for k in kinds)]
        for p in pipelines:
            rows.append(f"{p:10}" + "".join(f"{self.counts[p, k]:>11}" for k in kinds))
        return "\n".join(rows)


def mutants(inputs: Sequence[str], seed: int, first: int, count: int) -> Iterator[Mutant]:
    """Mutants `first .. first+count-1` of `seed` of each of `inputs`."""
    from tawa.tools import fuzz_api, fuzz_python

    sources = {"mlir": examples(), "python": fuzz_python.examples()}
    for index in range(first, first + count):
        for kind in inputs:
            if kind == "mlir":
                yield make_mutant(seed, index, sources["mlir"])
            elif kind == "python":
                yield fuzz_python.make_mutant(seed, index, sources["python"])
            else:
                yield fuzz_api.make_mutant(seed, index)


def fuzz(seed: int, count: int, pipelines: Sequence[str], first: int = 0, timeout: float = 20.0,
         ptxas: str | None = None, save: Path | None = None,
         log: Callable[[str], None] | None = None, ptxas_limit: int | None = None,
         inputs: Sequence[str] = ("mlir",)) -> Campaign:
    """Runs mutants `first .. first+count-1` of `seed` of each of `inputs`;
    returns their outcomes.  With `ptxas`, the PTX of the exit-0 outcomes of
    hopper (and py-hopper) is assembled (the first `ptxas_limit`, or all)."""
    campaign = Campaign()
    with tempfile.TemporaryDirectory(prefix="tawa-fuzz-") as tmp:
        workdir = Path(tmp)
        for mutant in mutants(inputs, seed, first, count):
            for outcome in run_mutant(mutant, pipelines, workdir, timeout):
                if (ptxas and outcome.pipeline.endswith("hopper") and outcome.kind == "ok"
                        and (ptxas_limit is None or campaign.assembled < ptxas_limit)):
                    campaign.assembled += 1
                    why = ptxas_rejects(outcome.stdout, workdir, ptxas)
                    if why:
                        outcome = Outcome(outcome.pipeline, "rejected", why)
                campaign.add(mutant, outcome)
                if outcome.kind in BAD:
                    if log:
                        log(f"{outcome.kind}: {outcome.pipeline} {mutant.describe()}: {outcome.message}")
                    if save:
                        save.mkdir(parents=True, exist_ok=True)
                        (save / f"s{seed}_{mutant.index}{mutant.suffix}").write_bytes(mutant.data)
    return campaign


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.tools.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--first", type=int, default=0, help="index of the first mutant")
    parser.add_argument("--pipeline", default="hopper,ws,interp",
                        help=f"comma-separated, of {', '.join(PIPELINES)} (for .mlir mutants and the IR "
                             "of Python ones)")
    parser.add_argument("--inputs", default=",".join(INPUTS),
                        help=f"comma-separated, of {', '.join(INPUTS)}: --count mutants of each")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per mutant and pipeline")
    parser.add_argument("--ptxas", nargs="?", const="ptxas", default=None,
                        help="assemble the PTX of hopper's exit-0 mutants (optionally: the ptxas to use)")
    parser.add_argument("--save", type=Path, default=None, help="write the bad mutants here")
    args = parser.parse_args(argv)
    pipelines = [p for p in args.pipeline.split(",") if p]
    for p in pipelines:
        if p not in PIPELINES:
            parser.error(f"unknown pipeline '{p}' (choose from {', '.join(PIPELINES)})")
    inputs = [i for i in args.inputs.split(",") if i]
    for i in inputs:
        if i not in INPUTS:
            parser.error(f"unknown input '{i}' (choose from {', '.join(INPUTS)})")
    start = time.perf_counter()
    campaign = fuzz(args.seed, args.count, pipelines, args.first, args.timeout, args.ptxas, args.save,
                    log=lambda line: print(line, flush=True), inputs=inputs)
    print(f"{args.count} mutants of seed {args.seed} of {', '.join(inputs)} "
          f"in {time.perf_counter() - start:.1f} s")
    print(campaign.summary())
    return 1 if campaign.bad else 0


if __name__ == "__main__":
    sys.exit(main())
