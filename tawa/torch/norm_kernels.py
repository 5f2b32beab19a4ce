"""The compiled kernels behind `tawa.torch`'s normalization operators (no torch needed).

The kernels are the tile programs of examples/python/norms.py (`norms()`
loads them): `rmsnorm`, `layernorm`, `add_rmsnorm` and `rotary`, bf16 in
and out, f32 math.  A program normalizes BLOCK_M whole rows held in one warp group's
registers (`add_rmsnorm` loops over its rows in chunks of BLOCK_N).  The
tile is decided here, per kernel and row width N, from the register file:

* BLOCK_N: the row, rounded up to a power of two (columns past N are
  masked); `add_rmsnorm` takes chunks of `CHUNK` columns (or the row, if
  narrower);
* BLOCK_M: rows for a tile of about `PROGRAM_ELEMENTS` values, and at
  least `MIN_ROWS`, a power of two, never more than `TILE_ELEMENTS` f32
  values; where the compiler's resource check (`tawa-check-resources`)
  finds that the kernel's live values need more registers than a thread
  has, half as many rows, until it fits (a row that does not fit alone is
  a ValueError).  Small programs leave registers for several CTAs per SM
  (`tawa-occupancy` decides how many) and give the grid several programs
  per CTA slot, so that one program's loads overlap another's arithmetic;
  a program of one row pays its fixed cost (the reductions across warps)
  for too few bytes.

Example: N = 1024 → 4×1024 tiles; N = 4096 → 2×4096; N = 16384 → 1×16384.
`add_rmsnorm`, which loops over its rows in chunks, keeps its rows at
`TILE_ELEMENTS` / `CHUNK`; rows of one chunk (N ≤ `CHUNK`) it runs in one
pass, by `add_rmsnorm_row` at the norms' tiles (`program`).  `tile(name, N)` returns the choice and `kernel(name, N)`
the compiled `tawa.Kernel`, both remembered per (kernel, BLOCK_N).  The
elementwise kernels (`swiglu`, `swiglu_bwd`) take tiles of
`ELEMENTWISE_COLUMNS` columns of any row, as many rows as half of
`TILE_ELEMENTS` holds, halved the same way until they fit
(`elementwise_tile`).  The
rotary kernel's rows are positions of one sequence (`rotary_tile`): as
many as divide the sequence length, halved the same way.
"""

from __future__ import annotations

import math
from typing import Any

from tawa.target.hopper import MAX_REGS_PER_THREAD, THREADS_PER_GROUP
from tawa.torch import kernels

KERNELS = {"rmsnorm": "rms_norm", "layernorm": "layer_norm", "add_rmsnorm": "add_rms_norm",
           "add_rmsnorm_row": "add_rms_norm", "rotary": "rotary"}
"""Kernel → the `tawa.torch` operator it serves (the name its errors give)."""
ROW_KERNELS = ("softmax", "rmsnorm", "layernorm", "add_rmsnorm")
"""The kernels whose programs take whole rows (`tile`): the norms, and the
row softmax that `python -m tawa.bench memory` times beside them."""
CHUNK = 1024
"""Columns per iteration of add_rmsnorm's loops over a row."""
ONE_PASS = {"add_rmsnorm": "add_rmsnorm_row"}
"""Row kernels that loop over a row in chunks, and their one-pass twin for
rows of one chunk (`program`): with one chunk the second loop would read back
what the first has just stored and still holds."""
TILE_ELEMENTS = THREADS_PER_GROUP * (MAX_REGS_PER_THREAD + 1) // 2
"""The f32 elements of the largest tile tried: half of one warp group's
registers (128 threads × 128), the rest for the kernel's other values."""
PROGRAM_ELEMENTS = TILE_ELEMENTS // 4
"""The elements a row kernel's program aims at: 32 a thread of a warp group."""
MIN_ROWS = 2
"""Rows a program takes at the least, where they fit `TILE_ELEMENTS`."""
ELEMENTWISE_KERNELS = ("swiglu", "swiglu_bwd")
"""The kernels that treat each element alone: any tile covers any row."""
ELEMENTWISE_COLUMNS = 512
"""Columns of an elementwise kernel's tile."""
_TILES: dict[tuple[Any, ...], dict[str, int]] = {}
_KERNELS: dict[tuple[Any, ...], Any] = {}


def norms() -> Any:
    """The module of examples/python/norms.py (loaded once)."""
    return kernels.python_example("norms")


def program(name: str, N: int) -> str:
    """The tile program of examples/python/norms.py that runs row kernel
    `name` on rows of N: its one-pass twin (`ONE_PASS`) where a row is one
    chunk, else `name`."""
    twin = ONE_PASS.get(name)
    return twin if twin is not None and N <= CHUNK else name


def _chunked(name: str, N: int) -> bool:
    """Whether row kernel `name` loops over rows of N in chunks (it has a
    one-pass twin, and the rows are wider than a chunk)."""
    return program(name, N) in ONE_PASS


def block_n(name: str, N: int) -> int:
    """Columns of `name`'s tile for rows of N."""
    row = 1 << max(0, (N - 1).bit_length())
    return min(row, CHUNK) if _chunked(name, N) else row


def tile(name: str, N: int) -> dict[str, int]:
    """{"BLOCK_M", "BLOCK_N"} of row kernel `name` (a norm, or `softmax`)
    for rows of N (module docstring), for its `program(name, N)`."""
    if name not in ROW_KERNELS:
        raise KeyError(f"no row kernel {name!r} in examples/python/norms.py; known: {', '.join(ROW_KERNELS)}")
    bn = block_n(name, N)
    most = TILE_ELEMENTS // bn
    rows = most if _chunked(name, N) else min(most, max(MIN_ROWS, PROGRAM_ELEMENTS // bn))
    return _fitted(program(name, N), rows, f"a row of N = {N}", BLOCK_N=bn)


def elementwise_tile(name: str) -> dict[str, int]:
    """{"BLOCK_M", "BLOCK_N"} of elementwise kernel `name` (module docstring):
    its inputs live in f32 together, so half of `TILE_ELEMENTS` to start."""
    if name not in ELEMENTWISE_KERNELS:
        raise KeyError(f"no elementwise kernel {name!r}; known: {', '.join(ELEMENTWISE_KERNELS)}")
    return _fitted(name, TILE_ELEMENTS // 2 // ELEMENTWISE_COLUMNS, "an elementwise tile",
                   BLOCK_N=ELEMENTWISE_COLUMNS)


def rotary_tile(S: int, D: int) -> dict[str, int]:
    """{"BLOCK_M", "HALF"} of the rotary kernel for sequences of S positions
    and heads of D channels: rows that are consecutive positions of one
    sequence (BLOCK_M divides S), two tiles of HALF = D/2 columns each."""
    most = S & -S  # the largest power of two dividing S
    return _fitted("rotary", min(most, TILE_ELEMENTS // D), f"heads of D = {D}", HALF=D // 2)


def _fitted(name: str, rows: int, what: str, **constexprs: int) -> dict[str, int]:
    """BLOCK_M (the largest power of two ≤ `rows` whose kernel the resource
    check accepts) with `constexprs`, remembered per kernel, `rows` and
    constexprs (the rotary kernel's rows also depend on the sequence
    length, which its constexprs do not say)."""
    key = (name, rows, *sorted(constexprs.items()))
    hit = _TILES.get(key)
    if hit is None:
        bm = 1 << int(math.log2(max(1, rows)))
        sizes = [{"BLOCK_M": bm >> i, **constexprs} for i in range(bm.bit_length())]
        hit = kernels.first_that_fits(lambda **c: _compile(name, **c), sizes)
        if hit is None:
            raise ValueError(f"tawa.torch.{KERNELS.get(name, name)}: {what} does not fit one program's registers "
                             f"(the {name} kernel with {constexprs})")
        _TILES[key] = hit
    return dict(hit)


def _compile(name: str, **constexprs: int) -> Any:
    key = (name, *sorted(constexprs.items()))
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = getattr(norms(), name).compile(**constexprs)
    return kernel


def kernel(name: str, N: int) -> tuple[Any, int]:
    """The compiled norm kernel `name` for rows of N, and its rows per program."""
    t = tile(name, N)
    return _compile(program(name, N), **t), t["BLOCK_M"]


def elementwise_kernel(name: str) -> tuple[Any, dict[str, int]]:
    """The compiled elementwise kernel `name` and its tile (`elementwise_tile`)."""
    t = elementwise_tile(name)
    return _compile(name, **t), t


def rotary_kernel(S: int, D: int) -> tuple[Any, int]:
    """The compiled rotary kernel for S positions and heads of D, and its rows per program."""
    t = rotary_tile(S, D)
    return _compile("rotary", **t), t["BLOCK_M"]


def clear_cache() -> None:
    """Forgets the tiles and kernels chosen in this process."""
    _TILES.clear()
    _KERNELS.clear()
