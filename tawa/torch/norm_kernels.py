"""The compiled kernels behind `tawa.torch`'s normalization operators (no torch needed).

The kernels are the tile programs of examples/python/norms.py (`norms()`
loads them): `rmsnorm`, `layernorm`, `add_rmsnorm` and `rotary`, bf16 in
and out, f32 math.  A program normalizes BLOCK_M whole rows held in one warp
group's registers; where a row does not fit them, its chunked program loops
over its rows in chunks of BLOCK_N columns (`PROGRAMS`), so rows of any
width run.  The tile is decided here, per kernel, row width N and row count
M, from the register file and the SMs:

* BLOCK_N: the row, rounded up to a whole number of `ROW_UNIT` columns
  (a warp's 16-byte vectors across its 32 lanes) for each warp along the
  row (tiles of fewer than 4 rows share a row among warps), or to a power
  of two where that is less (narrow rows); columns past N are masked.
  The blocked layout repeats the warp's vectors along the row (768 columns:
  three vectors a lane), so every lane holds as many columns as every other
  and no lane holds columns that are all past the row, which a power of two
  (1024 for 768) would give a quarter of the lanes; a chunked program
  takes chunks of `CHUNK` columns of `CHUNK_ROWS` rows;
* BLOCK_M: the rows that keep the most bytes in flight per SM.  A program
  loads its tile, reduces it and stores it, so an SM's loads in flight are
  those of its resident CTAs: CTAs per SM × BLOCK_M × N, the CTAs being
  what `tawa-occupancy` fits beside each other from the register file (a
  larger tile needs more registers a thread, so fewer of its CTAs fit).
  Each power of two up to `TILE_ELEMENTS` f32 values the resource check
  (`tawa-check-resources`) accepts is compiled (a kernel without dots has
  no protocol to prove: its compile is short) and the one with the most
  rows in flight is taken, counting them up to half of the rows an SM has to do for M rows
  (past that the SM's programs run in one round, no program's loads
  overlapping another's reduction); at a tie, the one with more CTAs, whose
  reductions and stores overlap the others' loads in finer steps.  Tiles of
  at least `PROGRAM_ELEMENTS` values come first, where one fits and M rows
  still give every SM a program at that tile (a program's fixed cost wants
  that many values to spread over), then tiles whose warps own whole rows
  that still do; a call of a few dozen rows is done in one round of
  programs, and its time is one program's, shorter the fewer values each
  thread has (`_program_size`).  A tile
  whose kernel ptxas spills is passed over for the next (`_spill_free`):
  the compiler's register estimate can fall short of what ptxas keeps live
  across a loop.

Example, M large: N = 1024 → 8×1024 tiles (4 CTAs an SM: 32 rows in flight,
against 5 × 4 and 2 × 16); N = 4096 → 4×4096 for RMSNorm (2 × 4 against
3 × 2) but 1×4096 for LayerNorm (4 × 1 ties 2 × 2: more CTAs).  M = 4096,
N = 1024 (32 rows an SM, 16 counted) → 4×1024 (5 × 4 ≥ 16, the most CTAs of
the tiles of 4096 values or more).
Every row kernel runs in one pass wherever a whole row fits (`program`:
the resource check decides; `add_rmsnorm` by `add_rmsnorm_row`); only wider
rows take the chunked program (the softmax's online: a running maximum
and rescaled sum), one row a program in chunks of `CHUNK` columns
(`CHUNK_ROWS`), which its consumers load themselves (`CHUNKED_OPTIONS`).
`tile(name, N, M)` returns the choice and
`kernel(name, N, M)` the compiled `tawa.Kernel`; the tiles that fit, with
their CTAs per SM, are remembered per kernel and candidates.  The
elementwise kernels (`swiglu`, `swiglu_bwd`) take tiles of at most
`ELEMENTWISE_COLUMNS` columns of a row: the whole row where it is that
narrow, else the whole number of `ROW_UNIT`s that pads the row least (768
columns: three programs of 256, not two of 512 with half of the second
masked), as many rows as half of `TILE_ELEMENTS` holds, halved while M
rows would leave SMs without a program, and the same way until they fit
(`elementwise_tile`).  The
rotary kernel's rows are positions of one sequence (`rotary_tile`): as
many as divide the sequence length, halved the same way.
"""

from __future__ import annotations

import math
from typing import Any

from tawa.dialects.nvgpu.layouts import VECTOR_BYTES
from tawa.target.hopper import MAX_REGS_PER_THREAD, SM_COUNT, THREADS_PER_GROUP, THREADS_PER_WARP, WARPS_PER_GROUP
from tawa.torch import kernels

KERNELS = {"rmsnorm": "rms_norm", "rmsnorm_chunked": "rms_norm", "layernorm": "layer_norm",
           "layernorm_chunked": "layer_norm", "add_rmsnorm": "add_rms_norm", "add_rmsnorm_row": "add_rms_norm",
           "rotary": "rotary"}
"""Kernel → the `tawa.torch` operator it serves (the name its errors give)."""
ROW_KERNELS = ("softmax", "rmsnorm", "layernorm", "add_rmsnorm")
"""The kernels whose programs take whole rows (`tile`): the norms, and the
row softmax that `python -m tawa.bench memory` times beside them."""
PROGRAMS = {"softmax": ("softmax", "softmax_chunked"), "rmsnorm": ("rmsnorm", "rmsnorm_chunked"),
            "layernorm": ("layernorm", "layernorm_chunked"), "add_rmsnorm": ("add_rmsnorm_row", "add_rmsnorm")}
"""Row kernel → (its one-pass program, its chunked program): the
one pass wherever a whole row fits one program's registers (`program`),
the loops over a row's chunks of `CHUNK` columns only beyond (they read the
row twice: add_rmsnorm's second loop reads back the S its first stored, a
fifth tensor's traffic, where the one pass normalizes the registers it
stored from)."""
TILE_ELEMENTS = THREADS_PER_GROUP * (MAX_REGS_PER_THREAD + 1) // 2
"""The f32 elements of the largest tile tried: half of one warp group's
registers (128 threads × 128), the rest for the kernel's other values."""
PROGRAM_ELEMENTS = TILE_ELEMENTS // 4
"""The fewest values a row kernel's program takes where a tile that large
fits: each program pays a fixed cost (its weight rows' loads, the
reductions across lanes and warps, a turn of the program loop) that
smaller tiles do not amortize."""
CHUNK_ROWS = 1
"""Rows of a chunked program's tile.  Its loops read each row twice, so
the rows all SMs hold between the loops are what the second loop finds
in L2 (4 rows of 32768 bf16 an SM are 34 MB over 132 SMs, most of the
50 MB L2): the fewer rows a program holds, the more of its second loop
hits.  Every tile of a chunked program holds about the same values per
SM (more rows a tile, fewer of its CTAs fit), so the tile's shape
decides: one row of `CHUNK` columns was the fastest tile or close to it
(docs/perf.md "Memory-bound kernels")."""
CHUNK = TILE_ELEMENTS // 2 // CHUNK_ROWS
"""Columns per iteration of the chunked programs' loops over a row: the
tile of `CHUNK_ROWS` rows takes half of `TILE_ELEMENTS`, the rest of the
registers for the loops' carried vectors (LayerNorm's chunk statistics,
the softmax's running maximum) and the chunk being normalized."""
CHUNKED_OPTIONS = {"epilogue": "threads"}
"""`tawa-hopper-pipeline` options of the chunked programs: their consumers
load the chunks themselves (`tawa-warp-specialize{stream-loads=false}`),
with no TMA producer, so several CTAs share an SM (`tawa-occupancy`) and
the block scheduler starts each program in the first free slot; a
producer streaming the chunks would hold the SM with one CTA (its
`setmaxnreg` shares out one CTA's registers), and at the same tile
neither way wins throughout: what the producer costs is the CTAs it
excludes (measured over widths 24576 to 65536: docs/perf.md
"Memory-bound kernels")."""
ELEMENTWISE_KERNELS = ("swiglu", "swiglu_bwd")
"""The kernels that treat each element alone: any tile covers any row."""
ELEMENTWISE_COLUMNS = 512
"""The most columns of an elementwise kernel's tile."""
ROW_UNIT = THREADS_PER_WARP * VECTOR_BYTES // 2
"""Columns of bf16 that one warp's 16-byte vectors span, a vector a lane
(`tawa.dialects.nvgpu.layouts.blocked_layout`): a tile row of a whole
number of them gives every lane the same number of vectors."""
_TILES: dict[tuple[Any, ...], Any] = {}
_KERNELS: dict[tuple[Any, ...], Any] = {}


def norms() -> Any:
    """The module of examples/python/norms.py (loaded once)."""
    return kernels.python_example("norms")


def program(name: str, N: int) -> str:
    """The tile program of examples/python/norms.py that runs row kernel
    `name` on rows of N (`PROGRAMS`): the one-pass program where a whole
    row fits one program's registers (`_whole_rows` finds a tile the
    resource check accepts), else the chunked one where there is one; a
    kernel of one program (SwiGLU's) is its own."""
    one_pass, chunked = PROGRAMS.get(name, (name, None))
    return one_pass if chunked is None or _whole_rows(one_pass, N) is not None else chunked


def _row_columns(N: int, rows: int = WARPS_PER_GROUP) -> int:
    """BLOCK_N of a tile of `rows` whole rows of N (a power of two): N
    rounded up to a whole number of `ROW_UNIT`s for each warp that the
    blocked layout lays along a row, or to a power of two where that is
    less.  The layout gives the 4 warps rows first and the rest columns: a
    tile of one row shares it among 4 warps, so its BLOCK_N is a multiple of
    4 units (a row of 27 units would leave three warps holding copies)."""
    unit = ROW_UNIT * (WARPS_PER_GROUP // math.gcd(WARPS_PER_GROUP, rows))
    return min(1 << max(0, (N - 1).bit_length()), -(-N // unit) * unit)


def _elementwise_columns(N: int) -> int:
    """BLOCK_N of an elementwise kernel on rows of N: the whole row
    (`_row_columns`) where it is at most `ELEMENTWISE_COLUMNS`, else the
    whole number of `ROW_UNIT`s up to that which pads the row least, the
    wider at a tie."""
    if N <= ELEMENTWISE_COLUMNS:
        return _row_columns(N, TILE_ELEMENTS)
    widths = range(ELEMENTWISE_COLUMNS // ROW_UNIT * ROW_UNIT, 0, -ROW_UNIT)
    return min(widths, key=lambda bn: -(-N // bn) * bn)


def tile(name: str, N: int, M: int | None = None) -> dict[str, int]:
    """{"BLOCK_M", "BLOCK_N"} of row kernel `name` (a norm, or `softmax`)
    for M rows of N (module docstring; M None: rows enough to fill every
    SM), for its `program(name, N)`."""
    if name not in ROW_KERNELS:
        raise KeyError(f"no row kernel {name!r} in examples/python/norms.py; known: {', '.join(ROW_KERNELS)}")
    chosen = program(name, N)
    if chosen == PROGRAMS[name][1]:
        # No more rows a program than leave every SM a program for M rows.
        rows = CHUNK_ROWS if M is None else min(CHUNK_ROWS, _rows_per_sm(M))
        return _fitted(chosen, rows, f"a row of N = {N}", BLOCK_N=CHUNK)
    hit = _whole_rows(chosen, N, M)
    assert hit is not None, "program() takes the one-pass program only where a whole row fits"
    return hit


def _rows_per_sm(M: int) -> int:
    """The rows of M each SM has to do when the programs share them out."""
    return -(-M // SM_COUNT)


def _whole_rows(name: str, N: int, M: int | None = None) -> dict[str, int] | None:
    """The tile of kernel `name` that holds whole rows of N (BLOCK_N the
    rows' `_row_columns`) with the most rows in flight per SM for M rows
    (module docstring), or None where not even one row fits; the tiles that
    fit are remembered per kernel and candidate tiles."""
    sizes = []
    while (bm := 1 << len(sizes)) * _row_columns(N, bm) <= TILE_ELEMENTS:
        sizes.append({"BLOCK_M": bm, "BLOCK_N": _row_columns(N, bm)})
    key = (name, "whole rows", *(tuple(c.values()) for c in sizes))
    if key not in _TILES:
        _TILES[key] = [(c, k.abi.ctas_per_sm) for c, k in kernels.those_that_fit(lambda **c: _compile(name, **c), sizes)]
    fits = _TILES[key]
    if not fits:
        return None
    # Rows in flight count up to half of the rows an SM has to do: past that
    # an SM's programs run in one round, no program's loads overlapping
    # another's reduction and store.
    cap = math.inf if M is None else _rows_per_sm(M) / 2
    ranked = sorted(fits, key=lambda fit: (*_program_size(fit[0], M), min(fit[1] * fit[0]["BLOCK_M"], cap), fit[1]),
                    reverse=True)
    return _spill_free(name, [c for c, _ in ranked])


def _program_size(tile: dict[str, int], M: int | None) -> tuple[bool, bool]:
    """How a program of `tile` for M rows ranks by its size, best first.
    Where M rows give every SM a program at the tile: one of
    `PROGRAM_ELEMENTS` values or more, whose fixed cost is spread over that
    many; else one whose warps own whole rows (a tile of fewer rows than
    warps splits each row among them, and they combine their sums through
    shared memory and a barrier).  Where they do not, neither: a few dozen
    rows are done in one round of programs, and a smaller tile spreads them
    over more SMs and gives each thread fewer values, which no other
    program's loads hide."""
    bm = tile["BLOCK_M"]
    if M is not None and -(-M // bm) < SM_COUNT:
        return False, False
    amortized = bm * tile["BLOCK_N"] >= PROGRAM_ELEMENTS
    return amortized, not amortized and bm >= WARPS_PER_GROUP


def elementwise_tile(name: str, N: int, M: int | None = None) -> dict[str, int]:
    """{"BLOCK_M", "BLOCK_N"} of elementwise kernel `name` on M rows of N
    (module docstring; M None: rows enough to fill every SM): its inputs
    live in f32 together, so half of `TILE_ELEMENTS` to start, fewer rows
    where M rows would leave SMs without a program."""
    if name not in ELEMENTWISE_KERNELS:
        raise KeyError(f"no elementwise kernel {name!r}; known: {', '.join(ELEMENTWISE_KERNELS)}")
    bn = _elementwise_columns(N)
    rows = TILE_ELEMENTS // 2 // bn
    if M is not None:
        while rows > 1 and -(-M // rows) * -(-N // bn) < SM_COUNT:
            rows //= 2
    return _fitted(name, rows, "an elementwise tile", BLOCK_N=bn)


def rotary_tile(S: int, D: int) -> dict[str, int]:
    """{"BLOCK_M", "HALF"} of the rotary kernel for sequences of S positions
    and heads of D channels: rows that are consecutive positions of one
    sequence (BLOCK_M divides S), two tiles of HALF = D/2 columns each."""
    most = S & -S  # the largest power of two dividing S
    return _fitted("rotary", min(most, TILE_ELEMENTS // D), f"heads of D = {D}", HALF=D // 2)


def _fitted(name: str, rows: int, what: str, **constexprs: int) -> dict[str, int]:
    """`_fit`, or a ValueError naming `what` does not fit where nothing does."""
    hit = _fit(name, rows, **constexprs)
    if hit is None:
        raise ValueError(f"tawa.torch.{KERNELS.get(name, name)}: {what} does not fit one program's registers "
                         f"(the {name} kernel with {constexprs})")
    return hit


def _fit(name: str, rows: int, **constexprs: int) -> dict[str, int] | None:
    """BLOCK_M (the largest power of two ≤ `rows` whose kernel the resource
    check accepts and ptxas assembles without spills) with `constexprs`, or None where none is accepted;
    remembered per kernel, `rows` and constexprs (the rotary kernel's rows
    also depend on the sequence length, which its constexprs do not say)."""
    key = (name, rows, *sorted(constexprs.items()))
    if key not in _TILES:
        bm = 1 << int(math.log2(max(1, rows)))
        sizes = [{"BLOCK_M": bm >> i, **constexprs} for i in range(bm.bit_length())]
        fits = [c for c, _ in kernels.those_that_fit(lambda **c: _compile(name, **c), sizes)]
        _TILES[key] = _spill_free(name, fits)
    hit = _TILES[key]
    return None if hit is None else dict(hit)


def _spill_free(name: str, ranked: list[dict[str, int]]) -> dict[str, int] | None:
    """The first of `ranked` (tiles the resource check accepts, best first)
    whose kernel ptxas assembles without spills (`kernels.spills`); the
    last where all spill (correct, only slower), None where there is none."""
    return next((c for c in ranked if not kernels.spills(_compile(name, **c))), ranked[-1] if ranked else None)


CHUNKED_PROGRAMS = frozenset(chunked for _, chunked in PROGRAMS.values())
"""The programs that loop over a row's chunks (`PROGRAMS`)."""


def options(name: str) -> dict[str, str] | None:
    """The `tawa-hopper-pipeline` options that program `name` of
    examples/python/norms.py is compiled with: `CHUNKED_OPTIONS` for a
    chunked program, None (the defaults) for the others."""
    return CHUNKED_OPTIONS if name in CHUNKED_PROGRAMS else None


def _compile(name: str, **constexprs: int) -> Any:
    key = (name, *sorted(constexprs.items()))
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = getattr(norms(), name).compile(options=options(name), **constexprs)
    return kernel


def kernel(name: str, N: int, M: int | None = None) -> tuple[Any, int]:
    """The compiled norm kernel `name` for M rows of N (`tile`), and its rows per program."""
    t = tile(name, N, M)
    return _compile(program(name, N), **t), t["BLOCK_M"]


def elementwise_kernel(name: str, N: int, M: int | None = None) -> tuple[Any, dict[str, int]]:
    """The compiled elementwise kernel `name` for M rows of N and its tile (`elementwise_tile`)."""
    t = elementwise_tile(name, N, M)
    return _compile(name, **t), t


def rotary_kernel(S: int, D: int) -> tuple[Any, int]:
    """The compiled rotary kernel for S positions and heads of D, and its rows per program."""
    t = rotary_tile(S, D)
    return _compile("rotary", **t), t["BLOCK_M"]


def clear_cache() -> None:
    """Forgets the tiles and kernels chosen in this process."""
    _TILES.clear()
    _KERNELS.clear()
