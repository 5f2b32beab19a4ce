"""Mutated calls of tawa's Python API and command-line tools
(tawa/tools/fuzz.py, docs/testing.md "Fuzzing").

Mutant `i` of seed `s` is one call, built from a valid one (the GEMM of
examples/gemm.mlir or examples/python/gemm.py on 8x8 arrays) with one or two
of its arguments replaced by boundary or ill-typed values, or options
added:

    compile     tawa.compile(module, kernel, **options)
    parse       tawa.parse(text, name)
    interpret   tawa.interpret(module, kernel, grid, *args)
    frontend    KernelFunction.ir(**constexprs) / .interpret(grid, *args, **constexprs)
    tawa-run    tawa-run argv (the CPU simulator after tawa-warp-specialize)
    tawa-opt    tawa-opt argv

The contract: a call returns, or raises a `TawaError` (a tool: exits 1)
whose message is one line `where: error: ...`; never another exception, a
traceback, argparse's exit status 2, or a hang.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tawa.tools import mutations


@dataclass(frozen=True)
class Symbol:
    """A value made when the call runs (a module, an array, a kernel),
    shown by its name."""

    name: str

    def __repr__(self) -> str:
        return self.name


GEMM, GEMM_BYTES, BAD_UTF8, GARBAGE, EMPTY, MODULE = (
    Symbol(n) for n in ("GEMM", "GEMM_BYTES", "BAD_UTF8", "GARBAGE", "EMPTY", "MODULE"))
A, A_F32, A_RANK1, A_EMPTY, A_I8 = (Symbol(n) for n in ("A", "A_F32", "A_RANK1", "A_EMPTY", "A_I8"))
KERNEL = Symbol("KERNEL")

MODULES = (GEMM, GEMM, GEMM, GEMM, GEMM_BYTES, BAD_UTF8, GARBAGE, EMPTY, MODULE, None, 3, ["x"])
KERNELS = ("gemm", "gemm", "gemm", "gemm", "@gemm", "", "nope", None, 3, b"gemm")
OPTION_NAMES = ("stages", "max_stages", "ring_depths", "producer_regs", "consumer_warps", "consumer_regs",
                "defer_stores", "group_m", "order", "persistent", "prepare", "watchdog_ms", "epilogue",
                "once_depth", "overlap", "staging", "cluster", "store_group", "pin_waits", "stage", "", "max-stages",
                "watchdog", "tuning")
OPTION_VALUES = (-1, 0, 1, 2, 3, 4, 7, 24, 2**31, 2**64, 1.5, float("nan"), float("inf"), True, False, None,
                 "", "x", "auto", "tma", [], [1], [2, 2], [-1], {"a": 1}, b"x")
NAMES = ("x.mlir", "x.mlir", "x.mlir", "", None, 3)
GRIDS = ((1, 1), (1, 1), (2, 1), (1,), (0,), (-1,), (1, 2, 3, 4), (), "x", None, (1.5,), (True,))
ARGUMENTS = (None, "x", -1, 0, 2**70, float("nan"), 1.5, A_F32, A_RANK1, A_EMPTY, A_I8, KERNEL)
CONSTEXPRS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "NOPE", "A")
CONSTEXPR_VALUES = (0, -1, 1, 3, 96, 1000, 65536, 2**31, 1e999, 0.5, True, None, "x", [1], (64, 64),
                    float("nan"), KERNEL)
RUN_BASE = ("GEMM_PATH", "gemm", "--shape", "M=8,N=8,K=8", "-p", "tawa-warp-specialize", "--seed", "1")
RUN_VALUES = ("-1", "0", "nan", "1e999", "x", "", "M=-1", "M=99999999999,N=8,K=8", "Q=3", "a,b",
              "tawa-nope", "tawa-pipeline{stages=-1}", "tawa-hopper-pipeline{stages=1}", "2,2", "0,0,0,0",
              "A=8,8", "A=-1,8", "alpha=x")
RUN_OPTIONS = ("--tol", "--ctas", "--grid", "--arg", "--schedule", "--reference", "--gpu", "--nope", "-p",
               "--shape", "--seed")
OPT_FLAGS = (("-p", "tawa-warp-specialize"), ("-p", "tawa-pipeline{stages=-1}"), ("-p", "tawa-nope"),
             ("-p", "tawa-hopper-pipeline{stages=2}"), ("-p", "tawa-warp-specialize{"), ("-t", "ptx"),
             ("-t", "x86-asm"), ("-t", "ptx{"), ("-t", ""), ("--split-input-file",), ("--print-op-generic",),
             ("--time-passes",), ("--verify-diagnostics",), ("--nope",), ("--dump-dir", "DUMP"),
             ("--print-between-passes",), ("-p", ""))


@dataclass
class Call:
    """One call: `family` with its arguments (Symbols made when it runs)."""

    family: str
    args: list[Any]
    kwargs: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        items = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.family}({', '.join(items)})"


def _replace(rng: random.Random, values: list[Any], choices: tuple[Any, ...]) -> list[Any]:
    """`values` with one or two edits: an item replaced, one dropped, one added."""
    values = list(values)
    for _ in range(rng.choice((1, 1, 2))):
        roll = rng.random()
        if roll < 0.7 and values:
            values[rng.randrange(len(values))] = rng.choice(choices)
        elif roll < 0.85 and values:
            del values[rng.randrange(len(values))]
        else:
            values.insert(rng.randrange(len(values) + 1), rng.choice(choices))
    return values


def _options(rng: random.Random) -> dict[str, Any]:
    return {rng.choice(OPTION_NAMES): rng.choice(OPTION_VALUES) for _ in range(rng.choice((0, 1, 1, 2)))}


def make_call(rng: random.Random) -> Call:
    family = rng.choice(("compile", "parse", "interpret", "frontend", "tawa-run", "tawa-opt"))
    if family == "compile":
        return Call(family, [rng.choice(MODULES), rng.choice(KERNELS)], _options(rng))
    if family == "parse":
        return Call(family, [rng.choice(MODULES), rng.choice(NAMES)])
    if family == "interpret":
        args = [A, A, A, 8, 8, 8]
        if rng.random() < 0.8:
            args = _replace(rng, args, ARGUMENTS)
        return Call(family, [rng.choice(MODULES[:6]), rng.choice(KERNELS), rng.choice(GRIDS), *args])
    if family == "frontend":
        constexprs = {rng.choice(CONSTEXPRS): rng.choice(CONSTEXPR_VALUES) for _ in range(rng.choice((1, 1, 2)))}
        if rng.random() < 0.5:
            return Call("frontend.ir", [], constexprs)
        args = _replace(rng, [A, A, A, 8, 8, 8], ARGUMENTS) if rng.random() < 0.5 else [A, A, A, 8, 8, 8]
        return Call("frontend.interpret", [rng.choice(GRIDS[:6]), *args], constexprs)
    if family == "tawa-run":
        argv = list(RUN_BASE)
        for _ in range(rng.choice((1, 1, 2))):
            if rng.random() < 0.5:
                argv[rng.randrange(2, len(argv))] = rng.choice(RUN_VALUES)
            else:
                argv += [rng.choice(RUN_OPTIONS), rng.choice(RUN_VALUES)]
        return Call(family, argv)
    flags = [part for _ in range(rng.choice((1, 2, 3))) for part in rng.choice(OPT_FLAGS)]
    return Call(family, ["GEMM_PATH", *flags])


def make_mutant(seed: int, index: int) -> mutations.Mutant:
    """API mutant `index` of `seed`: a function of the two only."""
    rng = random.Random(f"tawa-fuzz-api:{seed}:{index}")
    call = make_call(rng)
    return mutations.Mutant(index, call.family, [], call.describe().encode(), kind="api", call=call)


# --- running ---------------------------------------------------------------


def _values(workdir: Path) -> dict[str, Any]:
    import ml_dtypes
    import numpy as np

    import tawa

    text = (mutations.EXAMPLES / "gemm.mlir").read_text()
    bf16 = ml_dtypes.bfloat16
    return {
        "GEMM": text, "GEMM_BYTES": text.encode(), "BAD_UTF8": text.encode()[:400] + b"\xff" + text.encode()[400:],
        "GARBAGE": "func.func @gemm( {", "EMPTY": "", "MODULE": tawa.parse(text),
        "A": np.full((8, 8), 0.5, bf16), "A_F32": np.full((8, 8), 0.5, np.float32),
        "A_RANK1": np.full((8,), 0.5, bf16), "A_EMPTY": np.zeros((0, 0), bf16), "A_I8": np.ones((8, 8), np.int8),
        "KERNEL": _python_gemm(), "GEMM_PATH": str(mutations.EXAMPLES / "gemm.mlir"), "DUMP": str(workdir / "dump"),
    }


_PYTHON_GEMM: Any = None


def _python_gemm() -> Any:
    """examples/python/gemm.py's kernel, imported once."""
    global _PYTHON_GEMM
    if _PYTHON_GEMM is None:
        from tawa.frontend.__main__ import load_kernels

        [_PYTHON_GEMM] = load_kernels(str(mutations.EXAMPLES / "python" / "gemm.py"))
    return _PYTHON_GEMM


def _made(value: Any, values: dict[str, Any]) -> Any:
    """The value itself, fresh (arrays are written by the calls)."""
    if isinstance(value, Symbol):
        made = values[value.name]
        return made.copy() if hasattr(made, "copy") and not isinstance(made, str | bytes) else made
    if isinstance(value, str) and value in ("GEMM_PATH", "DUMP"):
        return values[value]
    return value


def runner(call: Call, workdir: Path) -> Any:
    """A tool (argv → exit status) that makes the call: a TawaError is its
    message on stderr and exit status 1; any other exception escapes."""
    import sys

    import tawa
    from tawa.diagnostics import TawaError
    from tawa.tools import tawa_opt, tawa_run

    def tool(argv: list[str]) -> int:
        values = _values(workdir)
        args = [_made(a, values) for a in call.args]
        kwargs = {k: _made(v, values) for k, v in call.kwargs.items()}
        if call.family == "tawa-run":
            return tawa_run.main(args)
        if call.family == "tawa-opt":
            return tawa_opt.main(args)
        try:
            if call.family == "compile":
                tawa.compile(*args, **kwargs)
            elif call.family == "parse":
                tawa.parse(*args)
            elif call.family == "interpret":
                tawa.interpret(*args)
            elif call.family == "frontend.ir":
                _python_gemm().ir(**kwargs)
            else:
                _python_gemm().interpret(*args, **kwargs)
        except TawaError as err:
            print(err, file=sys.stderr)
            return 1
        return 0

    return tool
