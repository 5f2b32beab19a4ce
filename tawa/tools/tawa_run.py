"""`tawa-run`: run a tile kernel on random inputs on the CPU and check it.

    tawa-run examples/gemm.mlir gemm --shape M=200,N=136,K=72
    tawa-run examples/attention_fwd.mlir attention_fwd_causal --shape B=2,S=200

Knows two kinds of kernels, recognised by their signature:

- GEMM: `(A, B, C: rank-2 memrefs, M, N, K: index)`, C = A·Bᵀ when the
  kernel's `tile.dot` has `rhs_transposed` (B is N×K), else C = A·B (B is
  K×N).  Dimensions M, N, K (default 200, 136, 72).
- attention forward: `(Q, K, V, O: rank-3 memrefs, seq_len: index,
  sm_scale: f32)`, O = softmax(Q·Kᵀ·sm_scale)·V over [B, S, D] arrays, causal
  when the kernel's name contains "causal".  Dimensions B (batch·heads), S
  (sequence length), D (head dim; default: the kernel's); defaults 2, 200.

The launch grid comes from the tile shape of the kernel's output store
(`--grid` overrides it).  Inputs are standard normal numbers rounded to the
kernel's element type; the output is compared with a float64 NumPy reference
computed from those same inputs.  Prints the relative Frobenius error and
exits 1 when it exceeds `--tol` (default: 1e-2, or 1e-1 for f8 outputs).
Bad input is one line `where: error: message` and exit status 1.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, IndexType, MemRefType

import tawa
from tawa.diagnostics import TawaError
from tawa.dialects import tile
from tawa.interpreters import find_kernel, interpret
from tawa.interpreters.dtypes import dtype_of

PROG = "tawa-run"


def _error(message: str, where: str = PROG) -> NoReturn:
    raise TawaError(message, where)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 1
        _error(message)


def _parse_pairs(text: str, what: str) -> dict[str, int]:
    pairs: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        name, eq, value = item.partition("=")
        try:
            number = int(value)
        except ValueError:
            number = -1
        if not eq or not name.strip() or number < 1:
            _error(f"{what}: expected NAME=POSITIVE_INT,..., got '{text}'")
        pairs[name.strip()] = number
    return pairs


def _parse_grid(text: str) -> tuple[int, ...]:
    try:
        grid = tuple(int(x) for x in text.split(","))
    except ValueError:
        grid = ()
    if not 1 <= len(grid) <= 3 or any(g < 0 for g in grid):
        _error(f"--grid: expected 1 to 3 comma-separated non-negative integers, got '{text}'")
    return grid


def _store_tile_shape(kernel: func.FuncOp) -> tuple[int, ...]:
    stores = [op for op in kernel.walk() if isinstance(op, tile.StoreOp)]
    if not stores:
        _error(f"@{kernel.sym_name.data} has no tile.store to derive the grid from; use --grid")
    return tuple(stores[-1].value.type.get_shape())


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _kind(kernel: func.FuncOp) -> str | None:
    types = list(kernel.function_type.inputs.data)

    def memrefs(n: int, rank: int) -> bool:
        return all(isinstance(t, MemRefType) and t.get_num_dims() == rank for t in types[:n])

    if len(types) == 6 and memrefs(3, 2) and all(isinstance(t, IndexType) for t in types[3:]):
        return "gemm"
    if (
        len(types) == 6
        and memrefs(4, 3)
        and isinstance(types[4], IndexType)
        and isinstance(types[5], Float32Type)
    ):
        return "attention"
    return None


def _rel_error(got: np.ndarray, want: np.ndarray) -> float:
    diff = np.linalg.norm(got.astype(np.float64) - want)
    norm = np.linalg.norm(want)
    return float(diff / norm) if norm else float(diff)


def run(
    path: str,
    kernel_name: str,
    shape: dict[str, int],
    grid: tuple[int, ...] | None,
    seed: int,
    tol: float | None,
) -> tuple[str, bool]:
    """Runs the kernel; returns the report line and whether it passed."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as err:
        _error(f"cannot open input: {err.strerror}", path)
    module = tawa.parse(text, path)
    kernel = find_kernel(module, kernel_name)
    name = f"@{kernel.sym_name.data}"
    kind = _kind(kernel)
    if kind is None:
        _error(
            f"{name}: tawa-run knows GEMM kernels (A, B, C: rank-2 memrefs, M, N, K: index) "
            "and attention kernels (Q, K, V, O: rank-3 memrefs, seq_len: index, sm_scale: f32)"
        )
    types = kernel.function_type.inputs.data
    in_dt, out_dt = dtype_of(types[0]), dtype_of(types[3 if kind == "attention" else 2])
    tile_shape = _store_tile_shape(kernel)
    rng = np.random.default_rng(seed)

    if kind == "gemm":
        dims = {"M": 200, "N": 136, "K": 72}
        _check_keys(shape, dims, name)
        dims.update(shape)
        m, n, k = dims["M"], dims["N"], dims["K"]
        transposed = any(
            op.rhs_transposed is not None for op in kernel.walk() if isinstance(op, tile.DotOp)
        )
        a = _random(rng, (m, k), in_dt)
        b = _random(rng, (n, k) if transposed else (k, n), dtype_of(types[1]))
        c = np.full((m, n), np.nan, dtype=out_dt)
        args: tuple = (a, b, c, m, n, k)
        launch = grid or (math.ceil(m / tile_shape[-2]), math.ceil(n / tile_shape[-1]))
        b64 = b.astype(np.float64)
        want = a.astype(np.float64) @ (b64.T if transposed else b64)
        out = c
    else:
        dims = {"B": 2, "S": 200, "D": tile_shape[-1]}
        _check_keys(shape, dims, name)
        dims.update(shape)
        bh, s, d = dims["B"], dims["S"], dims["D"]
        q, kk, v = (_random(rng, (bh, s, d), dtype_of(t)) for t in types[:3])
        o = np.full((bh, s, d), np.nan, dtype=out_dt)
        scale = 1.0 / math.sqrt(d)
        args = (q, kk, v, o, s, scale)
        launch = grid or (math.ceil(s / tile_shape[-2]), bh)
        want = _attention_reference(q, kk, v, scale, "causal" in kernel.sym_name.data)
        out = o

    start = time.perf_counter()
    interpret(module, kernel.sym_name.data, launch, *args)
    seconds = time.perf_counter() - start
    err = _rel_error(out, want)
    bound = tol if tol is not None else (1e-1 if out_dt.itemsize == 1 else 1e-2)
    ok = err <= bound
    dims_text = ",".join(f"{key}={value}" for key, value in dims.items())
    grid_text = "x".join(str(g) for g in launch)
    line = (
        f"{name} {dims_text} grid {grid_text} seed {seed}: relative Frobenius error "
        f"{err:.2e} vs float64 NumPy ({'ok' if ok else 'FAILED'}, bound {bound:.0e}; "
        f"{seconds:.2f} s on the CPU)"
    )
    return line, ok


def _check_keys(shape: dict[str, int], dims: dict[str, int], name: str) -> None:
    for key in shape:
        if key not in dims:
            _error(f"--shape: unknown dimension '{key}' for {name} (known: {', '.join(dims)})")


def _attention_reference(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: bool
) -> np.ndarray:
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = q64 @ k64.transpose(0, 2, 1) * scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v64


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tawa-run` script; returns the exit status."""
    parser = _Parser(
        prog=PROG,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help="a .mlir file of tile kernels")
    parser.add_argument("kernel", help="the kernel (function) name, e.g. gemm")
    parser.add_argument("--shape", default="", help="problem sizes, e.g. M=200,N=136,K=72")
    parser.add_argument("--grid", default=None, help="launch grid, e.g. 2,1 (default: derived)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: fresh)")
    parser.add_argument("--tol", type=float, default=None, help="relative error bound")
    try:
        args = parser.parse_args(argv)
        shape = _parse_pairs(args.shape, "--shape")
        grid = _parse_grid(args.grid) if args.grid is not None else None
        seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
        line, ok = run(args.file, args.kernel, shape, grid, seed, args.tol)
        print(line)
        return 0 if ok else 1
    except TawaError as err:
        print(str(err).splitlines()[0], file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
    except Exception as err:  # an internal bug: still one line unless asked
        if os.environ.get("TAWA_TRACEBACK"):
            raise
        text = " ".join(str(err).split()) or type(err).__name__
        print(
            f"{PROG}: error: internal error: {type(err).__name__}: {text} "
            "(set TAWA_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
    return 1


if __name__ == "__main__":
    sys.exit(main())
