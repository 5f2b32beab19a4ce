"""`tawa-run`: run any tile kernel on random inputs and check a pipeline's output.

    tawa-run examples/gemm.mlir gemm --shape M=200,N=136,K=72
    tawa-run examples/attention_fwd.mlir attention_fwd --shape seq_len=200 --arg Q=2,seq_len,128
    tawa-run examples/gemm_scale_relu.mlir gemm_scale_relu --shape M=64,N=64,K=64 \\
        --arg alpha=0.5 -p tawa-warp-specialize

The arguments come from the kernel's signature (memrefs, then index sizes,
then scalars, as in examples/): sizes by name from `--shape`; each memref's
shape from how the kernel indexes it (tawa.tools.kernel_args) or from
`--arg X=d0,d1,...`; float scalars random in [0.5, 1.5) unless given
(`--arg alpha=0.5`).  Memrefs that a `tile.store` writes start as NaN, those
also read by a `tile.load` start random like the inputs.  The grid is
`--grid`, else the kernel's `tawa.grid` attribute, else derived from the
memref dimensions indexed by program ids.

The reference is `tawa.interpret` of the tile program (FILE, or
`--reference TILE_FILE` for pipelined IR); the result is `tawa.interpret` of
FILE after `-p PIPELINE` (default `tawa-hopper-pipeline{prepare=false}` for a
tile program, none for pipelined IR), or with `--gpu` the kernel compiled by
`tawa.compile` and run on the GPU.  Every written memref is compared:
bit-exact, or relative Frobenius error ≤ `--tol` (default 1e-2).  Prints a
summary ending in PASS or FAIL; exit status 0 or 1.  Bad input is one line
`where: error: message` and exit status 1.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

import tawa
from tawa.diagnostics import TawaError, first_line, location_of, verify
from tawa.dialects import tile
from tawa.interpreters import find_kernel, interpret
from tawa.interpreters.dtypes import dtype_of, is_float_type
from tawa.interpreters.schedule import POLICIES, Schedule
from tawa.tools.kernel_args import analyze, derive_grid, iter_params, resolve_shapes
from tawa.transforms.levels import check_level, level_of

PROG = "tawa-run"
DEFAULT_PIPELINE = "tawa-hopper-pipeline{prepare=false}"
DEFAULT_TOL = 1e-2
SCALAR_RANGE = (0.5, 1.5)
"""Random float scalars: away from 0 and from sign changes (α, scales)."""
MAX_ARRAY_BYTES = 4 << 30
"""The most memory the arrays of one run may take (each is made twice, for
the reference and the result, in float64 on the way): a mistyped --shape
is an error, not a MemoryError (the CPU interpreter could not get through
arrays this large anyway)."""


def _error(message: str, where: str = PROG) -> NoReturn:
    raise TawaError(message, where)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 1
        _error(message)


# --------------------------------------------------------------------------- options


def _parse_shape(text: str) -> dict[str, int]:
    pairs: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        name, eq, value = item.partition("=")
        try:
            number = int(value)
        except ValueError:
            number = -1
        if not eq or not name.strip().isidentifier() or number < 0:
            _error(f"--shape: expected NAME=INT,... (INT ≥ 0), got '{text}'")
        pairs[name.strip()] = number
    return pairs


def _parse_grid(text: str) -> tuple[int, ...]:
    try:
        grid = tuple(int(x) for x in text.split(","))
    except ValueError:
        grid = ()
    if not 1 <= len(grid) <= 3 or any(g < 1 for g in grid):  # an empty grid computes nothing to compare
        _error(f"--grid: expected 1 to 3 comma-separated positive integers, got '{text}'")
    return grid


def _parse_args(items: Sequence[str]) -> dict[str, str]:
    given: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name or not value:
            _error(f"--arg: expected NAME=VALUE, got '{item}'")
        given[name] = value
    return given


def _dim(text: str, sizes: Mapping[str, int], what: str) -> int | str | None:
    """One dimension of `--arg X=...`: an integer, a --shape name, or ? / _ (inferred)."""
    text = text.strip()
    if text in ("?", "_"):
        return None
    if text.lstrip("-").isdigit():
        if int(text) < 0:
            _error(f"{what}: dimensions must be ≥ 0, got {text}")
        return int(text)
    if text in sizes:
        return text
    known = ", ".join(sizes) or "none"
    _error(f"{what}: '{text}' is neither an integer nor a --shape name (given: {known})")


def _eval(expr: str, sizes: Mapping[str, int], what: str) -> int:
    """An integer expression of the `tawa.grid` attribute: integers, size
    names, + - * //, ceildiv(a, b), min(...), max(...)."""

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in sizes:
                _error(f"{what}: '{node.id}' is not a size (given: {', '.join(sizes) or 'none'})")
            return sizes[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            rhs = ev(node.right)
            if isinstance(node.op, ast.FloorDiv) and rhs == 0:
                _error(f"{what}: division by zero in '{expr}'")
            return _BINOPS[type(node.op)](ev(node.left), rhs)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            args = [ev(a) for a in node.args]
            if node.func.id == "ceildiv" and len(args) == 2 and args[1] != 0:
                return -(-args[0] // args[1])
            if node.func.id in ("min", "max") and args:
                return min(args) if node.func.id == "min" else max(args)
        _error(f"{what}: cannot evaluate '{expr}' (integers, sizes, + - * //, ceildiv, min, max)")

    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        _error(f"{what}: cannot parse '{expr}'")
    return ev(tree.body)


_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
}


# --------------------------------------------------------------------------- the run


@dataclass
class Setup:
    """Everything the two runs share: arguments, grid, roles."""

    kernel: func.FuncOp
    args: list[Any]
    grid: tuple[int, ...]
    grid_source: str
    outputs: list[int]
    read_too: set[int]
    sizes: dict[str, int]
    scalars: dict[str, Any] = field(default_factory=dict)

    def fresh(self) -> list[Any]:
        """The arguments with fresh copies of the written arrays."""
        return [a.copy() if i in self.outputs else a for i, a in enumerate(self.args)]


def prepare(kernel: func.FuncOp, shape: dict[str, int], given: dict[str, str],
            grid: tuple[int, ...] | None, rng: np.random.Generator) -> Setup:
    """Random arguments for `kernel` from the options."""
    params = list(iter_params(kernel))
    names = [n for _, n, _ in params]
    for arg in given:
        if arg not in names:
            _error(f"--arg: @{kernel.sym_name.data} has no argument '{arg}' (arguments: {', '.join(names)})")
    shapes_attr = kernel.attributes.get("tawa.shapes")
    shape_texts = {k: v.data for k, v in shapes_attr.data.items()} if isinstance(shapes_attr, DictionaryAttr) else {}
    grid_attr = kernel.attributes.get("tawa.grid")
    sizes = _sizes(kernel, shape, given, [*shape_texts.values(), str(grid_attr or "")])
    analysis = analyze(kernel)
    dims = {
        i: _given_dims(n, t, given.get(n, shape_texts.get(n)), sizes)
        for i, n, t in params if isinstance(t, MemRefType) and (n in given or n in shape_texts)
    }
    grid_source = "--grid"
    if grid is None and grid_attr is not None:
        grid, grid_source = _grid_attribute(kernel, grid_attr, sizes), "tawa.grid"
    shapes = resolve_shapes(analysis, sizes, dims, grid)
    if grid is None:
        grid, grid_source = derive_grid(analysis, shapes), "derived"

    _check_size(shapes, params)
    args: list[Any] = []
    scalars: dict[str, Any] = {}
    for i, n, t in params:
        if isinstance(t, MemRefType):
            written_only = i in analysis.writes and i not in analysis.reads
            args.append((_poison if written_only else partial(_random, rng))(shapes[i], dtype_of(t)))
        elif isinstance(t, IndexType):
            args.append(sizes[n])
        else:
            scalars[n] = _scalar(t, given.get(n), rng, n)
            args.append(scalars[n])
    outputs = sorted(analysis.writes)
    return Setup(kernel, args, tuple(grid), grid_source, outputs, analysis.writes & analysis.reads, sizes, scalars)


def _sizes(kernel: func.FuncOp, shape: dict[str, int], given: dict[str, str], attrs: list[str]) -> dict[str, int]:
    """The --shape names and the size arguments (from --shape or --arg), all
    present; every --shape name a size argument or used by --arg or by the
    kernel's attributes (`attrs`: their text)."""
    name = f"@{kernel.sym_name.data}"
    params = list(iter_params(kernel))
    sizes = dict(shape)
    for _, n, t in params:
        if isinstance(t, IndexType) and n in given:
            dim = _dim(given[n], sizes, f"--arg {n}")
            if dim is None:
                _error(f"--arg {n}: give a value")
            value = sizes[dim] if isinstance(dim, str) else dim
            if n in sizes and sizes[n] != value:
                _error(f"--arg {n}={given[n]} contradicts --shape {n}={sizes[n]}")
            sizes[n] = value
    size_params = [n for _, n, t in params if isinstance(t, IndexType)]
    missing = [n for n in size_params if n not in sizes]
    if missing:
        _error(f"{name}: missing size{'s' * (len(missing) > 1)} {', '.join(missing)}: give "
               f"--shape {','.join(f'{n}=...' for n in missing)}", location_of(kernel) or PROG)
    used = set(size_params) | {w for text in [*given.values(), *attrs] for w in re.findall(r"[A-Za-z_]\w*", text)}
    for n in shape:
        if n not in used:
            _error(f"--shape: '{n}' is neither a size argument of {name} ({', '.join(size_params) or 'none'}) "
                   "nor used by --arg")
    return sizes


def _given_dims(name: str, t: MemRefType, text: str, sizes: Mapping[str, int]) -> list[int | str | None]:
    """The dimensions of `--arg NAME=TEXT` (or of the tawa.shapes entry)."""
    parts = text.split(",")
    if len(parts) != t.get_num_dims():
        _error(f"--arg {name}={text}: {name} is {t} (rank {t.get_num_dims()}), got {len(parts)} "
               f"dimension{'s' * (len(parts) != 1)}")
    return [_dim(p, sizes, f"--arg {name}") for p in parts]


def _grid_attribute(kernel: func.FuncOp, attr: Any, sizes: Mapping[str, int]) -> tuple[int, ...]:
    """The grid of the kernel's `tawa.grid` attribute: 1 to 3 expression strings."""
    name = f"@{kernel.sym_name.data}"
    exprs = [e.data for e in attr.data if isinstance(e, StringAttr)] if isinstance(attr, ArrayAttr) else []
    if not 1 <= len(exprs) <= 3 or len(exprs) != len(attr.data):
        _error(f"{name}: tawa.grid must be an array of 1 to 3 strings, got {attr}", location_of(kernel) or PROG)
    grid = tuple(_eval(e, sizes, f"{name} tawa.grid") for e in exprs)
    if any(g < 0 for g in grid):
        _error(f"{name}: tawa.grid gives a negative extent: {grid}", location_of(kernel) or PROG)
    return grid


def _scalar(t: Any, text: str | None, rng: np.random.Generator, name: str) -> Any:
    if isinstance(t, IntegerType) and t.width.data == 1:
        if text is None:
            return bool(rng.integers(0, 2))
        if text.lower() not in ("true", "false", "1", "0"):
            _error(f"--arg {name}={text}: expected true or false for {t} argument {name}")
        return text.lower() in ("true", "1")
    if isinstance(t, IntegerType):
        if text is None:
            return int(rng.integers(1, 9))
        try:
            return int(text)
        except ValueError:
            _error(f"--arg {name}={text}: expected an integer for {t} argument {name}")
    if is_float_type(t):
        if text is None:
            return float(np.float32(rng.uniform(*SCALAR_RANGE)))
        try:
            return float(text)
        except ValueError:
            _error(f"--arg {name}={text}: expected a number for {t} argument {name}")
    _error(f"argument {name}: tawa-run cannot make values of type {t}")


def _check_size(shapes: Mapping[int, tuple[int, ...]], params: list[tuple[int, str, Any]]) -> None:
    """An error when the memrefs' arrays would take more than MAX_ARRAY_BYTES."""
    total = 0
    for i, _, t in params:
        if isinstance(t, MemRefType):
            elements = 1
            for d in shapes[i]:
                elements *= d
            total += elements * np.dtype(dtype_of(t)).itemsize
    if total > MAX_ARRAY_BYTES:
        arrays = ", ".join(f"{n}[{'x'.join(map(str, shapes[i]))}]" for i, n, t in params if isinstance(t, MemRefType))
        _error(f"--shape: the arrays ({arrays}) would take {total / 2**30:.3g} GiB, more than the "
               f"{MAX_ARRAY_BYTES >> 30} GiB tawa-run makes")


def _random(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dt, np.integer):
        return rng.integers(-8, 8, size=shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _poison(shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    if dt == np.bool_:
        return np.zeros(shape, dtype=dt)
    if np.issubdtype(dt, np.integer):
        return np.full(shape, np.iinfo(dt).min, dtype=dt)
    return np.full(shape, np.nan, dtype=dt)


def apply_pipeline(module: ModuleOp, spec: str) -> None:
    """Runs pass pipeline `spec` (tawa-opt's -p syntax) on `module` in place,
    checking each pass's input level as tawa-opt does."""
    from xdsl.passes import PassPipeline
    from xdsl.transforms import get_all_passes as xdsl_passes

    from tawa.transforms import get_all_passes

    def between(prev: Any, mod: ModuleOp, nxt: Any) -> None:
        verify(mod)
        if nxt is not None:
            check_level(nxt.name, mod)

    try:
        pipeline = PassPipeline.parse_spec({**xdsl_passes(), **get_all_passes()}, spec, between)
    except (ValueError, ArgSpecParseError) as err:
        _error(f"-p: invalid pass pipeline '{spec}': {' '.join(str(err).split())}")
    pipeline.apply(tawa.context(), module)


def _on_gpu(module: ModuleOp, setup: Setup) -> list[Any]:
    """Compiles the kernel with tawa.compile, runs it on the GPU on copies of
    the arguments, returns them with the outputs copied back."""
    try:
        import torch
    except ImportError:
        _error("--gpu needs torch (and cupy and cuda-bindings: pip install -e '.[gpu]')")
    if not torch.cuda.is_available():
        _error("--gpu: torch sees no CUDA GPU")
    kernel = tawa.compile(module, setup.kernel.sym_name.data)
    host = setup.fresh()
    device = [_to_torch(a, torch) if isinstance(a, np.ndarray) else a for a in host]
    kernel(*device, grid=setup.grid)
    torch.cuda.synchronize()
    return [_from_torch(d, h) if isinstance(h, np.ndarray) else h for d, h in zip(device, host)]


def _to_torch(a: np.ndarray, torch: Any) -> Any:
    """A CUDA tensor with the bits of `a` (bf16 and fp8 through integer views)."""
    special = {"bfloat16": (np.int16, torch.bfloat16), "float8_e4m3fn": (np.uint8, torch.float8_e4m3fn),
               "float8_e5m2": (np.uint8, torch.float8_e5m2)}
    if a.dtype.name in special:
        raw, dt = special[a.dtype.name]
        return torch.from_numpy(np.ascontiguousarray(a).view(raw)).view(dt).cuda()
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def _from_torch(t: Any, like: np.ndarray) -> np.ndarray:
    import torch

    raw = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[like.dtype.itemsize]
    bits = t.detach().cpu().contiguous().view(raw).numpy()
    return bits.view(like.dtype).reshape(like.shape)


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Comparison:
    exact: bool
    error: float
    mismatched_nan: int
    """Elements non-finite in one result but not in the other."""
    reference_nan: int
    """NaN in the reference: elements the tile program did not write."""

    def ok(self, tol: float) -> bool:
        return self.reference_nan == 0 and (self.exact or (self.mismatched_nan == 0 and self.error <= tol))


def compare(got: np.ndarray, want: np.ndarray) -> Comparison:
    exact = got.shape == want.shape and got.tobytes() == want.tobytes()
    g, w = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(g) & np.isfinite(w)
    same_special = ~finite & ((g == w) | (np.isnan(g) & np.isnan(w)))
    mismatched = int((~finite & ~same_special).sum())
    diff = np.linalg.norm(g[finite] - w[finite])
    norm = np.linalg.norm(w[finite])
    error = float(diff / norm) if norm else float(diff)
    return Comparison(exact, error, mismatched, int(np.isnan(w).sum()))


# --------------------------------------------------------------------------- main


def _read(path: str) -> ModuleOp:
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as err:
        _error(f"cannot open input: {err.strerror}", path)
    return tawa.parse(text, path)


def _find(module: ModuleOp, name: str, path: str) -> func.FuncOp:
    try:
        return find_kernel(module, name)
    except TawaError as err:
        # At the module's first op (the first kernel's line), as tawa-opt locates a whole-module error.
        first = next(iter(module.body.block.ops), module)
        _error(err.message.replace("the module defines", f"{path} defines"), location_of(first) or path)


def _describe_array(name: str, a: np.ndarray, role: str) -> str:
    return f"{name} {a.dtype.name}[{'x'.join(map(str, a.shape))}] {role}"


def run(options: argparse.Namespace) -> bool:
    """One tawa-run: prints the summary, returns whether it passed."""
    shape = _parse_shape(options.shape)
    given = _parse_args(options.arg)
    grid = _parse_grid(options.grid) if options.grid is not None else None
    seed = options.seed if options.seed is not None else int.from_bytes(os.urandom(4), "little")
    if options.gpu and options.pipeline is not None:
        _error("--gpu compiles with tawa.compile (the whole Hopper pipeline); -p is for CPU runs")
    module = _read(options.file)
    kernel = _find(module, options.kernel, options.file)
    reference = _read(options.reference) if options.reference else module
    ref_kernel = _find(reference, options.kernel, options.reference or options.file)
    if [p.type for p in ref_kernel.args] != [p.type for p in kernel.args]:
        _error(f"@{kernel.sym_name.data} has another signature than in {options.file}", options.reference)
    if not any(isinstance(op, tile.LoadOp | tile.StoreOp) for op in ref_kernel.walk()):
        _error(f"@{kernel.sym_name.data} has no tile.load or tile.store to read its arguments from "
               "(IR after tawa-lower-tile?): give the tile program with --reference TILE_FILE",
               location_of(ref_kernel) or PROG)
    tile_level = level_of(kernel)[0] == 0
    spec = options.pipeline if options.pipeline is not None else (DEFAULT_PIPELINE if tile_level else "")

    setup = prepare(ref_kernel, shape, given, grid, np.random.default_rng(seed))
    name = setup.kernel.sym_name.data
    want = setup.fresh()
    start = time.perf_counter()
    interpret(reference, name, setup.grid, *want)
    timing = [time.perf_counter() - start]
    start = time.perf_counter()
    if options.gpu:
        got = _on_gpu(module, setup)
        how = "tawa.compile, on the GPU"
    else:
        lowered = module.clone()
        if spec:
            apply_pipeline(lowered, spec)
        got = setup.fresh()
        schedule = Schedule(options.schedule, seed=seed)
        interpret(lowered, name, setup.grid, *got, schedule=schedule, ctas=options.ctas)
        how = (f"-p {spec}" if spec else "the input as given") + (
            ", CPU simulator" if spec or not tile_level else ", CPU interpreter"
        )
    timing.append(time.perf_counter() - start)

    lines = _summary(options, setup, seed, tile_level, how, timing)
    passed = bool(setup.outputs)
    if not setup.outputs:
        lines.append("  (the kernel writes no memref: nothing to compare)")
    for i in setup.outputs:
        c = compare(got[i], want[i])
        ok = c.ok(options.tol)
        passed &= ok
        text = "bit-exact" if c.exact else f"relative Frobenius error {c.error:.2e} (bound {options.tol:.0e})"
        if c.mismatched_nan:
            text += f", {c.mismatched_nan} elements NaN or inf in one result only"
        if c.reference_nan:
            text += f", {c.reference_nan} elements NaN in the reference (unwritten? grid too small?)"
        lines.append(f"  {setup.kernel.args[i].name_hint or f'arg{i}':<9} {text}: {'ok' if ok else 'FAILED'}")
    lines.append("PASS" if passed else "FAIL")
    print("\n".join(lines))
    return passed


def _summary(options: argparse.Namespace, setup: Setup, seed: int, tile_level: bool, how: str,
             timing: list[float]) -> list[str]:
    """The lines before the comparison: kernel, sizes, arrays, scalars, grid, the two runs."""
    arrays = [
        _describe_array(n, setup.args[i], "in/out" if i in setup.read_too else "out" if i in setup.outputs else "in")
        for i, n, t in iter_params(setup.kernel) if isinstance(t, MemRefType)
    ]
    lines = [
        f"{PROG} @{setup.kernel.sym_name.data} ({options.file}), seed {seed}",
        "  sizes     " + (" ".join(f"{k}={v}" for k, v in setup.sizes.items()) or "none"),
        "  arrays    " + ", ".join(arrays),
    ]
    if setup.scalars:
        lines.append("  scalars   " + " ".join(f"{k}={v:.6g}" for k, v in setup.scalars.items()))
    lines.append(f"  grid      {'x'.join(map(str, setup.grid))} ({setup.grid_source})")
    note = "" if options.reference or tile_level else (
        " (pipelined IR: --reference TILE_FILE checks it against the tile program)"
    )
    lines.append(f"  reference tawa.interpret of {options.reference or options.file}: {timing[0]:.2f} s{note}")
    lines.append(f"  result    {how}: {timing[1]:.2f} s")
    return lines


def _at_least(low: float, kind: type = int) -> Any:
    """An argparse type: a finite `kind` ≥ `low`."""

    def convert(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value != value or value in (float("inf"), float("-inf")) or value < low:
            what = "an integer" if kind is int else "a finite number"
            raise argparse.ArgumentTypeError(f"expected {what} ≥ {low:g}, got '{text}'")
        return value

    convert.__name__ = kind.__name__  # argparse names the type in its messages
    return convert


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tawa-run` script; returns the exit status."""
    parser = _Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", help="a .mlir file: a tile program, or pipelined IR (see --reference)")
    parser.add_argument("kernel", help="the kernel (function) name, e.g. gemm")
    parser.add_argument("--shape", default="", metavar="NAME=INT,...",
                        help="the kernel's size arguments by name (and names used by --arg)")
    parser.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                        help="a memref's shape (A=M,K or A=128,?) or a scalar (alpha=0.5); repeatable")
    parser.add_argument("--grid", default=None, metavar="X[,Y[,Z]]",
                        help="launch grid (default: tawa.grid attribute, else derived)")
    parser.add_argument("-p", "--pipeline", default=None, metavar="PIPELINE",
                        help=f"passes for the result (default: {DEFAULT_PIPELINE} on a tile program)")
    parser.add_argument("--reference", default=None, metavar="TILE_FILE",
                        help="the tile program to compute the reference with (default: FILE)")
    parser.add_argument("--seed", type=_at_least(0), default=None, help="random seed (default: fresh)")
    parser.add_argument("--tol", type=_at_least(0, float), default=DEFAULT_TOL,
                        help="relative error bound (default 1e-2)")
    parser.add_argument("--schedule", default="random", choices=POLICIES,
                        help="how the simulator interleaves warp groups (random: seeded by --seed)")
    parser.add_argument("--ctas", type=_at_least(1), default=None, help="CTAs of a persistent kernel in the simulator (clusters of a clustered one)")
    parser.add_argument("--gpu", action="store_true", help="run the compiled kernel on the GPU instead")
    try:
        return 0 if run(parser.parse_args(argv)) else 1
    except TawaError as err:
        print(str(err).splitlines()[0], file=sys.stderr)
    except DiagnosticException as err:
        print(f"{PROG}: error: {first_line(err)}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
    except Exception as err:  # an internal bug: still one line unless asked
        if os.environ.get("TAWA_TRACEBACK"):
            raise
        text = " ".join(str(err).split()) or type(err).__name__
        print(f"{PROG}: error: internal error: {type(err).__name__}: {text} "
              "(set TAWA_TRACEBACK=1 for the traceback)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
