"""Register layouts: which thread of a warp group holds which element of a tile.

One algebra describes every register layout tawa uses, after JAX Mosaic
GPU's `TiledLayout`.  A layout is

* a **tiling**: a sequence of tile shapes applied one after the other — the
  first tile splits the logical shape into (tiles, elements of a tile), each
  later tile splits the trailing dimensions of the previous one further;
* which of the resulting **tiled dimensions** are spread over the 4 **warps**
  of the warp group, which over the 32 **lanes** of a warp, and which one is
  the **vector** held together (two adjacent f32 values, or one packed pair
  of bf16 values in a 32-bit register);
* every other tiled dimension is a **register** dimension: each thread holds
  all of its indices.

Tiled dimensions are named by negative indices counted from the end, so a
layout does not depend on the tile's size (one `wgmma` layout serves 64x8 up
to 64x256 accumulators).  A `Replicated(n)` warp or lane dimension spreads
copies: n threads hold the same elements (the result of a row reduction is
held by all 4 lanes of a quad).

Worked example: the wgmma accumulator, `WGMMA`, on a 64x256 f32 tile.
The tiling (64,8)(16,8)(8,8)(1,2) turns the shape (64, 256) into

    index:  -10  -9  -8  -7  -6  -5  -4  -3  -2  -1
    size:     1  32   4   1   2   1   8   4   1   2
    axis:   row col row col row col row col row col
    stride:  64   8  16   8   8   8   1   2   1   1     (elements along axis)

(the first tile leaves 1 x 32 tiles of 64x8; the second splits a 64x8 tile
into 4 x 1 blocks of 16x8; and so on down to 1x2 vectors).  Warp dimension
-8 (size 4, stride 16 rows): warp w holds rows [16w, 16w + 16).  Lane
dimensions (-4, -3), major first: lane = 4·(row within 8) + (column pair), so
lane l holds row l/4 and columns 2·(l%4), 2·(l%4)+1 of each 8x8 block.
Vector dimension -1: the 2 adjacent columns.  The remaining dimensions,
-9 (32 column blocks of 8) and -6 (2 row halves, +8 rows), are the thread's
registers: 32 x 2 vectors of 2 = 128 values, value i = 4·(i/4) + 2·h + v.
So element (r, c) is held by thread 32·(r%64/16) + 4·(r%8) + (c%8)/2 as its
value 4·(c/8) + 2·((r%16)/8) + c%2 — the PTX ISA's accumulator figure, and
what the H100 here returned (`shared/reference/hopper-verified.md` §1 row 9):

    row(t, i) = 16·(t/32) + (t%32)/4 + 8·((i/2)%2)
    col(t, i) = 8·(i/4) + 2·(t%4) + i%2

Reducing it along the columns (`WGMMA.reduce(1)`) drops every column
dimension: what was lane dimension -3 becomes `Replicated(4)` (the 4 lanes
of a quad hold the same rows, after butterfly shuffles with lane masks 1 and
2), and the registers keep the 2 row halves: `WGMMA_ROW`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, cached_property

from tawa.target.hopper import THREADS_PER_WARP, WARPS_PER_GROUP


@dataclass(frozen=True)
class Replicated:
    """A warp or lane dimension along which `times` threads hold copies."""

    times: int

    def __str__(self) -> str:
        return f"*{self.times}"


Dim = int | Replicated


@dataclass(frozen=True)
class TiledDim:
    """One dimension of a tiled shape: `size` indices, each `stride`
    elements apart along logical `axis`."""

    size: int
    axis: int
    stride: int


@dataclass(frozen=True)
class ThreadTerm:
    """A thread-dependent part of an element coordinate:
    `((source_index // divisor) % size) · stride`, where source_index is the
    warp's index in the warp group or the lane's index in the warp."""

    source: str  # "warp" or "lane"
    divisor: int
    size: int
    stride: int


@dataclass(frozen=True)
class Reduction:
    """How `layout.reduce(axis)` combines a fragment: each result value
    combines the source values `sources[i]` of the same thread, then the
    threads whose lanes differ by each of `lane_masks` exchange and combine
    (butterfly shuffles), then — where the layout's warps split the axis —
    the warps that hold the same result elements combine their partial
    results through shared memory (`warp_digits`, `partner_warps`)."""

    layout: TiledLayout
    sources: tuple[tuple[int, ...], ...]
    lane_masks: tuple[int, ...]
    warp_digits: tuple[tuple[int, int], ...] = ()
    """(divisor, size) of each warp dimension along the reduced axis: the
    digit `(warp // divisor) % size` of a warp's index says which part of
    the axis it holds.  Empty: the reduction stays within each warp."""

    @property
    def warps(self) -> int:
        """How many warps hold partial results of each result element (1:
        no shared-memory step)."""
        return math.prod(size for _, size in self.warp_digits)

    def partner_warps(self, warp: int) -> tuple[int, ...]:
        """The warps (of 0..3) whose partial results `warp` combines, its own
        included, in the order every one of them folds them (so that every
        copy of a result element has the same bits): `warp` with its digits
        along the axis set to 0, 1, ... in mixed radix, the last digit
        fastest."""
        base = warp - sum((warp // d) % n * d for d, n in self.warp_digits)
        out = [base]
        for d, n in self.warp_digits:
            out = [w + k * d for w in out for k in range(n)]
        return tuple(out)


FOLD_CHAINS = 4
"""Partial results a thread keeps while it combines its values of one row
(`fold_steps`): one running max or sum would make every step wait for the
last (a chain of 31 dependent `max` at a 128-column wgmma row); four chains
and a tree make it 7 + 2 steps deep."""


def fold_steps(n: int, chains: int = FOLD_CHAINS) -> tuple[tuple[int, int], ...]:
    """The order in which a thread combines its n values x[0..n-1] of one
    result value (a group of `Reduction.sources`): each step (a, b) sets
    x[a] = x[a] ⊕ x[b], and the result is x[0].  Value i goes to chain
    i mod `chains` in order, then the chains combine pairwise.  n = 8:

        (0, 4) (1, 5) (2, 6) (3, 7)     four chains of two
        (0, 2) (1, 3)                   then a tree
        (0, 1)

    The PTX printer emits these steps and the CPU simulator folds in the
    same order, so a sum has the same bits in both."""
    k = min(chains, n)
    steps = [(i % k, i) for i in range(k, n)]
    while k > 1:
        half = (k + 1) // 2
        steps += [(i - half, i) for i in range(half, k)]
        k = half
    return tuple(steps)


@dataclass(frozen=True)
class TiledLayout:
    """A register layout of a warp group (see the module docstring)."""

    tiling: tuple[tuple[int, ...], ...]
    warp_dims: tuple[Dim, ...]
    lane_dims: tuple[Dim, ...]
    vector_dim: int

    def __post_init__(self) -> None:
        rank = len(self.tiling[0]) if self.tiling else 0
        if not self.tiling or any(not t or len(t) > rank for t in self.tiling):
            raise ValueError(f"a tiling needs tiles of at most the first tile's rank, got {self.tiling}")
        for prev, t in zip(self.tiling, self.tiling[1:]):
            for p, d in zip(prev[len(prev) - len(t):], t):
                if d <= 0 or p % d:
                    raise ValueError(f"tile {t} does not divide the trailing dims of {prev}")
        n = self.tiled_rank
        named = [d for d in (*self.warp_dims, *self.lane_dims, self.vector_dim) if isinstance(d, int)]
        if any(not -n <= d < 0 for d in named) or len(set(named)) != len(named):
            raise ValueError(f"warp, lane and vector dims must be distinct indices in [-{n}, -1]")

    # ------------------------------------------------------------------ shape

    @property
    def rank(self) -> int:
        return len(self.tiling[0])

    @property
    def tiled_rank(self) -> int:
        return self.rank + sum(len(t) for t in self.tiling)

    @cache
    def tiled_dims(self, shape: tuple[int, ...]) -> tuple[TiledDim, ...]:
        """The tiled shape of a `shape` tile: its dimensions, outermost first."""
        if len(shape) != self.rank:
            raise ValueError(f"a rank-{self.rank} layout cannot hold a {_fmt(shape)} tile")
        dims = [TiledDim(n, a, 1) for a, n in enumerate(shape)]
        for tile in self.tiling:
            head, tail = dims[: len(dims) - len(tile)], dims[len(dims) - len(tile):]
            for d, t in zip(tail, tile):
                if d.size % t:
                    raise ValueError(f"{_fmt(shape)} is not a multiple of the tile {_fmt(tile)}")
            outer = [TiledDim(d.size // t, d.axis, d.stride * t) for d, t in zip(tail, tile)]
            inner = [TiledDim(t, d.axis, d.stride) for d, t in zip(tail, tile)]
            dims = head + outer + inner
        return tuple(dims)

    def check_shape(self, shape: tuple[int, ...]) -> None:
        """Raises ValueError unless the layout can hold a `shape` tile."""
        self.tiled_dims(shape)

    @cached_property
    def register_dims(self) -> tuple[int, ...]:
        """Indices (negative) of the register dimensions, outermost first."""
        taken = {d for d in (*self.warp_dims, *self.lane_dims, self.vector_dim) if isinstance(d, int)}
        return tuple(i for i in range(-self.tiled_rank, 0) if i not in taken)

    def registers_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Sizes of the register dimensions: each thread holds one vector per index."""
        dims = self.tiled_dims(shape)
        return tuple(dims[i].size for i in self.register_dims)

    def vector_length(self, shape: tuple[int, ...]) -> int:
        return self.tiled_dims(shape)[self.vector_dim].size

    def values_per_thread(self, shape: tuple[int, ...]) -> int:
        """Elements each thread holds: value i is element i % V of vector i // V
        (V = vector length), vectors in row-major order of the register dims."""
        return math.prod(self.registers_shape(shape)) * self.vector_length(shape)

    def copies(self) -> int:
        """How many threads hold each value: the product of the `Replicated`
        warp and lane dimensions (1: every thread its own values; a 1x1000
        f32 blocked tile: 64, its 1000 columns splitting over 2 lanes only)."""
        return math.prod(d.times for d in (*self.warp_dims, *self.lane_dims) if isinstance(d, Replicated))

    def _thread_sizes(self, shape: tuple[int, ...], dims: tuple[Dim, ...]) -> list[int]:
        tiled = self.tiled_dims(shape)
        return [d.times if isinstance(d, Replicated) else tiled[d].size for d in dims]

    def check_warp_group(self, shape: tuple[int, ...]) -> None:
        """Raises ValueError unless the layout spreads `shape` over exactly the
        4 warps x 32 lanes of one warp group."""
        warps = math.prod(self._thread_sizes(shape, self.warp_dims))
        lanes = math.prod(self._thread_sizes(shape, self.lane_dims))
        if warps != WARPS_PER_GROUP or lanes != THREADS_PER_WARP:
            raise ValueError(
                f"the layout spreads {_fmt(shape)} over {warps} warps x {lanes} lanes, "
                f"not the {WARPS_PER_GROUP} x {THREADS_PER_WARP} of a warp group"
            )

    # ------------------------------------------------------------------ the element map

    @cache
    def thread_terms(self, shape: tuple[int, ...], axis: int) -> tuple[ThreadTerm, ...]:
        """The thread-dependent part of coordinate `axis` of every element a
        thread holds, as a sum of terms (replicated dims contribute nothing)."""
        tiled = self.tiled_dims(shape)
        terms = []
        for source, dims in (("warp", self.warp_dims), ("lane", self.lane_dims)):
            sizes = self._thread_sizes(shape, dims)
            for k, d in enumerate(dims):
                divisor = math.prod(sizes[k + 1:])
                if isinstance(d, int) and tiled[d].axis == axis and tiled[d].size > 1:
                    terms.append(ThreadTerm(source, divisor, tiled[d].size, tiled[d].stride))
        return tuple(terms)

    @cache
    def value_offsets(self, shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
        """The register-dependent part of coordinate `axis` of value i of
        every thread: coordinate = Σ thread terms + value_offsets[i]."""
        tiled = self.tiled_dims(shape)
        regs = [tiled[i] for i in self.register_dims]
        vec = tiled[self.vector_dim]
        out = []
        for flat in range(math.prod(d.size for d in regs)):
            base, rest = 0, flat
            for d in reversed(regs):
                rest, idx = divmod(rest, d.size)
                base += idx * d.stride if d.axis == axis else 0
            for v in range(vec.size):
                out.append(base + (v * vec.stride if vec.axis == axis else 0))
        return tuple(out)

    def thread_coords(self, shape: tuple[int, ...], thread: int, value: int) -> tuple[int, ...]:
        """The element (one coordinate per axis) that `thread` (0..127 of the
        warp group) holds as its value `value`."""
        warp, lane = divmod(thread, THREADS_PER_WARP)
        coords = []
        for axis in range(self.rank):
            c = self.value_offsets(shape, axis)[value]
            for t in self.thread_terms(shape, axis):
                index = warp if t.source == "warp" else lane
                c += (index // t.divisor) % t.size * t.stride
            coords.append(c)
        return tuple(coords)

    def element_map(self, shape: tuple[int, ...]) -> dict[tuple[int, ...], list[tuple[int, int]]]:
        """Every element → the (thread, value) pairs holding it (brute force;
        for tests and the CPU interpreter)."""
        out: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        offsets = [self.value_offsets(shape, a) for a in range(self.rank)]
        terms = [self.thread_terms(shape, a) for a in range(self.rank)]
        warps = math.prod(self._thread_sizes(shape, self.warp_dims))
        for thread in range(warps * THREADS_PER_WARP):
            warp, lane = divmod(thread, THREADS_PER_WARP)
            base = [
                sum(((warp if t.source == "warp" else lane) // t.divisor) % t.size * t.stride for t in ts)
                for ts in terms
            ]
            for value in range(len(offsets[0])):
                key = tuple(b + o[value] for b, o in zip(base, offsets))
                out.setdefault(key, []).append((thread, value))
        return out

    # ------------------------------------------------------------------ derived layouts

    def _drop_axis(self, axis: int) -> tuple[tuple[tuple[int, ...], ...], dict[int, int]]:
        """The tiling without `axis`, and old → new index of the kept dims."""
        if self.rank < 2:
            raise ValueError("a 1-D layout has no axis to drop")
        axes = []  # axis of every tiled dim, outermost first
        axes += range(self.rank)
        for tile in self.tiling:
            axes += range(self.rank - len(tile), self.rank)
        kept = [i - len(axes) for i, a in enumerate(axes) if a != axis]
        remap = {old: new - len(kept) for new, old in enumerate(kept)}
        tiling = tuple(
            tuple(t for a, t in zip(range(self.rank - len(tile), self.rank), tile) if a != axis)
            for tile in self.tiling
        )
        if any(not t for t in tiling):
            raise ValueError(f"dropping axis {axis} leaves an empty tile in {self.tiling}")
        return tiling, remap

    def reduced_layout(self, shape: tuple[int, ...], axis: int) -> TiledLayout:
        """The layout of a `shape` tile with `axis` removed: every dimension
        along `axis` goes away, and the warps and lanes that spread it hold
        copies (`Replicated`).  A row vector broadcast over the columns of a
        fragment is held in this layout."""
        tiled = self.tiled_dims(shape)
        tiling, remap = self._drop_axis(axis)

        def keep(d: Dim) -> Dim:
            if isinstance(d, Replicated):
                return d
            return Replicated(tiled[d].size) if tiled[d].axis == axis else remap[d]

        vector = remap.get(self.vector_dim, -1)
        layout = TiledLayout(tiling, tuple(map(keep, self.warp_dims)), tuple(map(keep, self.lane_dims)), vector)
        out_shape = tuple(n for a, n in enumerate(shape) if a != axis)
        if tiled[self.vector_dim].axis == axis and layout.vector_length(out_shape) != 1:
            raise ValueError("the reduced layout's vector dimension must have size 1")
        return layout

    def reduce(self, shape: tuple[int, ...], axis: int, across_warps: bool = False) -> Reduction:
        """A reduction of a `shape` tile along `axis`: the result layout,
        which source values each result value combines (within a thread), the
        lane shuffles that finish it within a warp and, with `across_warps`,
        the warps whose partial results combine through shared memory
        (`Reduction.warp_digits`).  Without it, warp dimensions along `axis`
        are a ValueError ("crosses warps")."""
        tiled = self.tiled_dims(shape)
        warp_sizes = self._thread_sizes(shape, self.warp_dims)
        digits = tuple(
            (math.prod(warp_sizes[k + 1:]), tiled[d].size) for k, d in enumerate(self.warp_dims)
            if isinstance(d, int) and tiled[d].axis == axis and tiled[d].size > 1
        )
        if digits and not across_warps:
            raise ValueError(f"reducing axis {axis} of {_fmt(shape)} crosses warps")
        layout = self.reduced_layout(shape, axis)
        out_shape = tuple(n for a, n in enumerate(shape) if a != axis)
        # Values of one thread with equal coordinates off `axis` combine.
        by_key: dict[tuple[int, ...], list[int]] = {}
        for i, key in enumerate(zip(*(self.value_offsets(shape, a) for a in range(self.rank) if a != axis))):
            by_key.setdefault(key, []).append(i)
        dst = zip(*(layout.value_offsets(out_shape, a) for a in range(layout.rank)))
        groups = tuple(tuple(by_key.get(key, ())) for key in dst)
        lane_sizes = self._thread_sizes(shape, self.lane_dims)
        masks = []
        for k, d in enumerate(self.lane_dims):
            if isinstance(d, int) and tiled[d].axis == axis:
                stride = math.prod(lane_sizes[k + 1:])
                masks += [stride << b for b in range(int(math.log2(tiled[d].size)))]
        return Reduction(layout, groups, tuple(masks), digits)

    def broadcast_sources(self, shape: tuple[int, ...], axis: int, reduced: TiledLayout) -> tuple[int, ...]:
        """For a `shape` tile in this layout that repeats a tile of `reduced`
        layout along `axis`: which value of the reduced fragment each value
        copies (the same thread holds it: no data moves)."""
        if reduced != self.reduced_layout(shape, axis):
            raise ValueError(f"{reduced} is not the reduction of {self} along axis {axis}")
        out_shape = tuple(n for a, n in enumerate(shape) if a != axis)
        src = zip(*(self.value_offsets(shape, a) for a in range(self.rank) if a != axis))
        first: dict[tuple[int, ...], int] = {}
        for j, key in enumerate(zip(*(reduced.value_offsets(out_shape, a) for a in range(reduced.rank)))):
            first.setdefault(key, j)
        return tuple(first[k] for k in src)

    def slice_values(self, shape: tuple[int, ...], axis: int, start: int, size: int) -> tuple[int, ...]:
        """Which values of a `shape` fragment form, in the same threads and
        this same layout, its sub-tile [start, start + size) along `axis`:
        value i of the slice is value `slice_values(...)[i]` of the source (no
        data moves).  ValueError if the slice is not held that way (a start
        or size that splits the layout's thread tiles)."""
        sub = tuple(size if a == axis else n for a, n in enumerate(shape))
        if any(self.thread_terms(sub, a) != self.thread_terms(shape, a) for a in range(self.rank)):
            raise ValueError(f"a {_fmt(sub)} slice of {_fmt(shape)} is spread over other threads")
        src = {k: i for i, k in enumerate(zip(*(self.value_offsets(shape, a) for a in range(self.rank))))}
        out = []
        for key in zip(*(self.value_offsets(sub, a) for a in range(self.rank))):
            moved = tuple(c + start if a == axis else c for a, c in enumerate(key))
            if moved not in src:
                raise ValueError(f"[{start}, {start + size}) along axis {axis} is not a sub-tile of {_fmt(shape)}")
            out.append(src[moved])
        return tuple(out)

    def __str__(self) -> str:
        tiles = "".join(f"({','.join(map(str, t))})" for t in self.tiling)
        warps = ", ".join(map(str, self.warp_dims))
        lanes = ", ".join(map(str, self.lane_dims))
        return f"{tiles}, warps = [{warps}], lanes = [{lanes}], vector = {self.vector_dim}"


def _fmt(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


# --------------------------------------------------------------------------- named layouts

WGMMA = TiledLayout(((64, 8), (16, 8), (8, 8), (1, 2)), warp_dims=(-8,), lane_dims=(-4, -3), vector_dim=-1)
"""The wgmma accumulator of one warp group (64xN, N a multiple of 8), and the
wgmma A operand in registers (16-bit values, packed in pairs)."""

WGMMA_ROW = TiledLayout(((64,), (16,), (8,), (1,)), warp_dims=(-4,), lane_dims=(-2, Replicated(4)), vector_dim=-1)
"""One value per row of a `WGMMA` tile (its reduction along the columns):
thread t holds rows 16·(t/32) + (t%32)/4 and that + 8, as do the other 3
lanes of its quad."""

WGMMA_COL = TiledLayout(((8,), (8,), (8,), (2,)), warp_dims=(Replicated(4),), lane_dims=(Replicated(8), -2), vector_dim=-1)
"""One value per column of a `WGMMA` tile (its reduction along the rows):
thread t holds columns 8j + 2·(t%4) and that + 1 for every j, as do the
threads of the same lane%4 in every warp."""


WGMMA_T = TiledLayout(((8, 64), (8, 16), (8, 8), (1, 2)), warp_dims=(-7,), lane_dims=(-4, -3), vector_dim=-1)
"""The transpose of a 16-bit `WGMMA` fragment: an Nx64 tile (N a multiple of
8), what `nvgpu.frag_transpose` makes of a 64xN one by transposing each 8x8
block of it in the registers of its warp (`movmatrix.trans`).

Worked example: the 64xN bf16 fragment holds, in packed register k = 2·j + h,
the 8x8 block at rows 16·w + 8·h, columns 8·j of the tile X, lane l the pair
X[16·w + 8·h + l/4][8·j + 2·(l%4) + v] (v = 0, 1).  `movmatrix.trans` gives
lane l the pair of the transposed block in the same place of an 8x8
fragment, Xᵀ's block row l/4, columns 2·(l%4) + v: that is
Xᵀ[8·j + l/4][16·w + 8·h + 2·(l%4) + v].  The tiling
(8,64)(8,16)(8,8)(1,2) of the shape (N, 64) spells exactly that:

    index:  -10  -9  -8  -7  -6  -5  -4  -3  -2  -1
    size:   N/8   1   1   4   1   2   8   4   1   2
    axis:   row col row col row col row col row col
    stride:   8  64   8  16   8   8   1   2   1   1

warp dimension -7 (the warp's 16 columns), lane dimensions (-4, -3) (row
within 8, column pair), vector -1; the registers (-10: the 8-row block j,
-5: the half h) are numbered as `WGMMA`'s were, value 4·j + 2·h + v, so the
transpose keeps every register's index.  The pairs run along Xᵀ's rows
again: Xᵀ stores as any fragment does, by vectors of two columns."""


def wgmma_layout(groups: int) -> TiledLayout:
    """The accumulator of `groups` warp groups side by side along the rows
    (64·groups x N; group g holds rows [64g, 64g + 64)).  For one group it
    is `WGMMA`.  tawa's IR keeps one fragment per warp group; this layout
    describes the whole CTA tile for analyses."""
    if groups == 1:
        return WGMMA
    return TiledLayout(
        ((64 * groups, 8), (64, 8), (16, 8), (8, 8), (1, 2)),
        warp_dims=(-10, -8), lane_dims=(-4, -3), vector_dim=-1,
    )


VECTOR_BYTES = 16
"""Bytes of one thread's vector in a blocked layout: the widest global load
or store one instruction makes (`ld.global.v4.b32`)."""


def blocked_layout(shape: tuple[int, int], element_bytes: int) -> TiledLayout:
    """A layout for a 2-D tile that never meets a wgmma (an elementwise or
    normalization kernel): each thread holds vectors of 16 contiguous bytes
    of one row (shorter where the row length has no such factor), the 32 lanes of a warp lie along the columns first (a warp
    reads whole 512-byte row segments), the 4 warps along the rows first
    (so a row's reduction stays within a warp: shuffles only), and what is
    left repeats in registers.  Lanes and warps take the powers of two that
    divide the rows and vectors of a row (a 3x64 tile: one row of lanes,
    the 3 rows in registers); threads with nothing left to hold keep copies
    (`Replicated`): a tile smaller than a warp group's vectors.

    Worked example: a 16x1024 bf16 tile (an RMSNorm chunk of 16 rows).
    Vectors of V = 8 columns; 1024/8 = 128 vectors a row, so the 32 lanes
    take 32 of them (256 columns) and the 4 warps 4 rows.  The tiling
    (4, 256)(1, 256)(1, 8) turns (16, 1024) into

        index:  -8  -7  -6  -5  -4  -3  -2  -1
        size:    4   4   4   1   1  32   1   8
        axis:  row col row col row col row col
        stride:  4 256   1   8   1   8   1   1

    warp w holds rows w, w + 4, w + 8, w + 12 (dims -6 and -8), lane l
    columns 8l to 8l + 7 of each 256-column block (dims -3 and -1), and a
    thread 4 x 4 vectors of 8: 128 values.  Reducing along the columns
    drops dims -7, -3 and -1: every lane of a warp holds the same 4 rows
    after butterfly shuffles over lane masks 1, 2, 4, 8, 16.
    """
    rows, cols = shape
    if rows < 1 or cols < 1:
        raise ValueError(f"a {rows}x{cols} tile has no blocked layout")
    vector = min(max(1, VECTOR_BYTES // element_bytes), _pow2_dividing(cols))
    lanes_c = min(THREADS_PER_WARP, _pow2_dividing(cols // vector))
    lanes_r = min(THREADS_PER_WARP // lanes_c, _pow2_dividing(rows))
    warps_r = min(WARPS_PER_GROUP, _pow2_dividing(rows // lanes_r))
    warps_c = min(WARPS_PER_GROUP // warps_r, _pow2_dividing(cols // (vector * lanes_c)))
    spare_lanes = THREADS_PER_WARP // (lanes_c * lanes_r)
    spare_warps = WARPS_PER_GROUP // (warps_r * warps_c)
    tiling = ((warps_r * lanes_r, warps_c * lanes_c * vector), (lanes_r, lanes_c * vector), (1, vector))
    warp_dims: tuple[Dim, ...] = (-6, -5) + ((Replicated(spare_warps),) if spare_warps > 1 else ())
    lane_dims: tuple[Dim, ...] = (-4, -3) + ((Replicated(spare_lanes),) if spare_lanes > 1 else ())
    return TiledLayout(tiling, warp_dims=warp_dims, lane_dims=lane_dims, vector_dim=-1)


def _pow2_dividing(n: int) -> int:
    """The largest power of two that divides n (n > 0)."""
    return n & -n


NAMED_LAYOUTS: dict[str, TiledLayout] = {"wgmma": WGMMA, "wgmma_row": WGMMA_ROW, "wgmma_col": WGMMA_COL,
                                          "wgmma_t": WGMMA_T}
"""Layouts that fragment types spell by name (`!nvgpu.frag<64x256xf32, wgmma>`)."""


def layout_name(layout: TiledLayout) -> str | None:
    for name, named in NAMED_LAYOUTS.items():
        if named == layout:
            return name
    return None
