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

from tawa.target.hopper import ARCH
from tawa.tools import fuzz_api, fuzz_python
from tawa.tools.mutations import Mutant, examples, make_mutant

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
        return [classify("api", *_call(fuzz_api.runner(mutant.call, workdir), [], timeout))]
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
