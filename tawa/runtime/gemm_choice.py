"""GEMM problems, their configurations and the cost model's choice.

    from tawa.runtime.gemm_choice import GemmProblem, heuristic

    problem = GemmProblem(M, N, K)              # bf16 C = A·Bᵀ, B N×K
    choice = heuristic(problem)                 # the cost model's fastest (no GPU)
    kernel = choice.compile()                   # tawa.compile(gemm_source(choice.config), ...)
    kernel(A, B, C, M, N, K, grid=choice.grid(M, N))

A `Choice` is a tile program (`tawa.kernels.GemmConfig`, split-K
included) and the options of `tawa-hopper-pipeline` (stages, group_m,
persistent, cluster); `choice.compile()` is a `tawa.Kernel`, or a
`tawa.runtime.splitk.SplitKGemm` for a split configuration, both called as
`kernel(A, B, C, M, N, K, grid=choice.grid(M, N))`.

The candidates of a problem (`ranked`, `candidates`) are a `Space`'s tile
shapes × BLOCK_K × split-K × stages × group-m × persistent × cluster × ...,
less what the compiler rejects by rule (`tawa.kernels.gemm.unsupported`)
or by its shared-memory plan, tiles larger than the problem (a smaller
tile of the space covers it), B tiles read MN-major (K×N, `"kn"`) whose
rows are not whole 128-byte swizzle spans (`swizzled_block_ns`), splits of
K into slices shorter than `MIN_SPLIT_K_STEPS` steps, and group-m values
that cannot differ (the grid has no more rows of tiles).  `heuristic` estimates each candidate of
`DEFAULT_SPACE` with the cost model (`tawa.analysis.gemm_cost`: rounds of
the persistent schedule, the k-step's tensor, shared-memory, L2 and
latency terms, epilogue, prologue, DRAM, split-K's reduction) and takes the
fastest (`fastest`).  `tawa.runtime.autotune` times the model's first few
on the GPU.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from tawa.analysis.smem_plan import row_bands_fit, slot_swizzle
from tawa.diagnostics import TawaError
from tawa.kernels.gemm import (
    BLOCK_M_CHOICES,
    BLOCK_N_CHOICES,
    GemmConfig,
    block_k_for,
    element_bytes,
    gemm_grid,
    gemm_source,
    unsupported,
)
from tawa.target.hopper import SM_COUNT, SWIZZLES, WARPS_PER_GROUP, WGMMA_M, WGMMA_MAX_N, WGMMA_N_STEP

GEMM_MAX_STAGES = 8
"""The deepest ring a GEMM configuration's `stages=0` takes
(`tawa-hopper-pipeline{max-stages}`; the compiler's own default is 4).
Small tiles are memory-bound, and their producer must run far enough ahead
to cover the epilogue.  Measured on the H100 against cuBLAS in the same
run (docs/perf.md, "Deep rings for small GEMM tiles"): 64×128 tiles at
64×8192×8192 and 1024³, and 128×128 at 256×8192×8192, reached cuBLAS with 8
(or all that fit) stages where 4 fell short; 64×64 ran no faster with 12
than with 8.  cuBLAS's own kernels there keep 8 stages of 128×64 and 13 of
64×64."""
WHERE = "tawa.autotune"


class AutotuneError(TawaError):
    """No candidate could be built and timed, or a problem outside the space."""

    def __init__(self, message: str, where: str = WHERE):
        super().__init__(message, where)


# --------------------------------------------------------------------------- problems and choices


@dataclass(frozen=True)
class GemmProblem:
    """A GEMM to run: C (M×N) = A (M×K) · B, B N×K (`b_layout="nk"`,
    C = A·Bᵀ) or K×N (`"kn"`); A stored K×M and read transposed in place
    with `a_layout="km"`; `batch` for a batched GEMM (leading dims)."""

    M: int
    N: int
    K: int
    a_dtype: str = "bf16"
    b_dtype: str | None = None
    """Defaults to a_dtype."""
    c_dtype: str = "bf16"
    b_layout: str = "nk"
    batch: int | None = None
    a_layout: str = "mk"

    @property
    def types(self) -> tuple[str, str, str]:
        return (self.a_dtype, self.b_dtype or self.a_dtype, self.c_dtype)

    def config(self, block_m: int, block_n: int, block_k: int, split_k: int = 1) -> GemmConfig:
        """The problem's tile program with these tile sizes (and K split)."""
        a, b, c = self.types
        return GemmConfig(block_m, block_n, block_k, a, b, c, self.b_layout, self.batch is not None, split_k,
                          a_layout=self.a_layout)

    @property
    def transposable(self) -> bool:
        """Whether configurations that compute Cᵀ = B·Aᵀ are offered
        (`GemmConfig.transposed`): an unbatched A·Bᵀ into 16-bit C whose M
        is the smaller side and fits one tile's columns (at most wgmma's
        widest N), where a plain tile would pad it to whole 64-row blocks."""
        return (self.batch is None and self.a_layout == "mk" and self.b_layout == "nk"
                and self.c_dtype != "f32" and 0 < self.M < self.N and self.M <= WGMMA_MAX_N)

    def mirrored(self) -> GemmProblem:
        """Cᵀ = B·Aᵀ as a problem of its own: what a transposed configuration
        computes (the cost model's view of it)."""
        a, b, _ = self.types
        return replace(self, M=self.N, N=self.M, a_dtype=b, b_dtype=a)

    def bucket(self) -> tuple[int, ...]:
        """M, N, K (and the batch) each rounded up to a power of two."""
        sizes = (self.M, self.N, self.K) + (() if self.batch is None else (self.batch,))
        return tuple(1 << max(0, s - 1).bit_length() for s in sizes)

    def bucketed(self) -> GemmProblem:
        """The problem at its bucket's sizes (what a cache entry is tuned for)."""
        sizes = self.bucket()
        return replace(self, M=sizes[0], N=sizes[1], K=sizes[2], batch=None if self.batch is None else sizes[3])

    def programs(self, config: GemmConfig) -> int:
        """Programs of `config`'s grid: tiles of C (× batch, × split_k)."""
        tiles = -(-self.M // config.block_m) * -(-self.N // config.block_n)
        return tiles * (self.batch or 1) * config.split_k

    def k_steps(self, config: GemmConfig) -> int:
        """Steps of BLOCK_K along K (unsplit)."""
        return -(-self.K // config.block_k)


@dataclass(frozen=True)
class Choice:
    """A configuration: the tile program and the pipeline's options."""

    config: GemmConfig
    stages: int = 0
    """Ring depth; 0: the deepest that fits in shared memory, up to
    `GEMM_MAX_STAGES`."""
    group_m: int = 8
    persistent: bool = True
    cluster: int = 1
    """CTAs per cluster sharing B tiles (`tawa-cluster`); 1: none."""
    defer_stores: bool = False
    """Each program's tile stored under the next program's first dot
    (`tawa-defer-stores`; persistent kernels)."""
    group_rows: int = WGMMA_M
    """Rows of the tile each consumer warp group owns: 64 (one wgmma per
    k-step), or 128 (two, one per 64-row block: a 256x128 tile on two warp
    groups, cuBLAS's cooperative tile)."""

    @property
    def consumer_warps(self) -> int | None:
        """`consumer_warps` of the pipeline: None (one warp group per 64
        rows) unless the warp groups own more rows."""
        if self.group_rows == WGMMA_M:
            return None
        return self.config.block_m // self.group_rows * WARPS_PER_GROUP

    def reshaped(self, group_rows: int = WGMMA_M) -> Choice:
        """This choice of 64-row warp groups with warp groups of
        `group_rows` rows, its tile reshaped so that each warp group keeps
        its 64 x BLOCK_N accumulator's size: each owns `group_rows` x (64 ·
        BLOCK_N / `group_rows`).  128x256 becomes 256x128 (group_rows 128)."""
        if self.group_rows != WGMMA_M:
            raise ValueError(f"reshaped: {self.id} is not a choice of 64-row warp groups")
        c = self.config
        groups = c.block_m // WGMMA_M
        config = c.replace(block_m=groups * group_rows, block_n=c.block_n * WGMMA_M // group_rows)
        return replace(self, config=config, group_rows=group_rows)

    @property
    def options(self) -> dict[str, Any]:
        """Keyword options of `tawa.compile` (`tawa-hopper-pipeline`)."""
        return {"stages": self.stages, "max_stages": GEMM_MAX_STAGES, "group_m": self.group_m,
                "persistent": self.persistent, **({"cluster": self.cluster} if self.cluster > 1 else {}),
                **({"defer_stores": True} if self.defer_stores else {}),
                # One staging buffer per warp group makes room for a deeper ring: the 256x128 tile
                # of 128-row warp groups gets 4 stages, not 3 (docs/perf.md, "fp8 attention").
                **({"staging": "single"} if self.consumer_warps else {}),
                **({"consumer_warps": self.consumer_warps} if self.consumer_warps else {})}

    @property
    def id(self) -> str:
        return (f"{self.config.id} stages={self.stages or 'auto'} group_m={self.group_m}"
                + ("" if self.persistent else " persistent=false")
                + (f" cluster={self.cluster}" if self.cluster > 1 else "")
                + (" defer-stores" if self.defer_stores else "")
                + (f" group-rows={self.group_rows}" if self.group_rows != WGMMA_M else ""))

    def source(self) -> str:
        return gemm_source(self.config)

    def compile(self) -> Any:
        """The `tawa.Kernel`, or a `tawa.runtime.splitk.SplitKGemm` (split
        kernel + reduction) for a split configuration; compiled once per
        process (`tawa.compile` caches)."""
        from tawa.runtime.splitk import gemm_kernel

        return gemm_kernel(self.config, **self.options)

    def grid(self, M: int, N: int, batch: int | None = None) -> tuple[int, ...]:
        return gemm_grid(self.config, M, N, batch)

    def as_dict(self) -> dict[str, Any]:
        return {"config": self.config.as_dict(), **self.options,
                **({"group_rows": self.group_rows} if self.group_rows != WGMMA_M else {})}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Choice:
        if int(data.get("teams", 1)) != 1:  # an entry from before teams of consumers were removed: stale
            raise ValueError(f"teams={data['teams']}: teams of consumers are no longer compiled")
        return cls(GemmConfig(**data["config"]), int(data["stages"]), int(data["group_m"]), bool(data["persistent"]),
                   int(data.get("cluster", 1)), bool(data.get("defer_stores", False)),
                   int(data.get("group_rows", WGMMA_M)))


@dataclass(frozen=True)
class Space:
    """What `candidates` combines: tiles (BLOCK_M, BLOCK_N), bytes of K per
    step (BLOCK_K = bytes / element size), K splits, and pipeline options."""

    tiles: tuple[tuple[int, ...], ...] = (
        (128, 256), (256, 128, 2 * WGMMA_M),
        *((bm, bn) for bm in (192, 128, 64) for bn in reversed(BLOCK_N_CHOICES) if (bm, bn) != (128, 256)),
    )
    """(BLOCK_M, BLOCK_N), or (BLOCK_M, BLOCK_N, rows per consumer warp
    group) for a tile that takes only those (`group_rows`): 256x128 on two
    warp groups of 128 rows, cuBLAS's cooperative tile, whose ring is 4
    deep where four warp groups of 64 rows leave room for 3.  By default
    one or two warp groups' rows by every BLOCK_N of `BLOCK_N_CHOICES`
    (multiples of 16): the cost model cuts the columns to the problem
    (fewer padded columns, tiles in whole waves), as cuBLAS's tiles of 64,
    88, 104 or 136 columns are."""
    k_bytes: tuple[int, ...] = (128,)
    split_k: tuple[int, ...] = (1, 0)
    """Slices of K: 1 unsplit, S > 1 that many (where each keeps
    `MIN_SPLIT_K_STEPS` steps), 0 the split `split_for` gives the tile (only
    where it splits: grids that leave SMs idle, K long enough)."""
    stages: tuple[int, ...] = (0,)
    group_m: tuple[int, ...] = (8,)
    persistent: tuple[bool, ...] = (True,)
    cluster: tuple[int, ...] = (1, 2)
    """CTAs per cluster (persistent kernels with at least that many rows of
    tiles): the cost model takes 2 where B's L2 traffic bounds the k-step
    (rows that are not whole L2 sectors apart)."""
    defer_stores: tuple[bool, ...] = (False,)
    """Whether to defer each program's store (persistent kernels)."""
    group_rows: tuple[int, ...] = (WGMMA_M,)
    """Rows each consumer warp group owns (`Choice.group_rows`)."""
    transposed: tuple[bool, ...] = (False, True)
    """Whether to compute the product as Cᵀ = B·Aᵀ (`GemmConfig.transposed`),
    offered where the problem is `transposable`: tiles of 64 or 128 of B's
    rows by the multiple of `WGMMA_N_STEP` columns that holds all of M
    (split in K as the other tiles are; no clusters, warp groups of 64 rows).  The columns come from A's
    rows, which TMA loads K-major in any number, so they need not be whole
    `BLOCK_N_STEP`s: no column of the tile lies past M where M is a multiple
    of 8.  Narrower columns, M over several tiles, are not offered: not
    measured."""


DEFAULT_SPACE = Space()
"""Tile shapes at the deepest ring that fits, each also split-K where
`split_for` splits it: one compile per tile (and split) that suits the problem."""
WIDE_SPACE = Space(k_bytes=(64, 128), split_k=(1, 0, 2, 4), stages=(0, 3), group_m=(4, 8, 16), cluster=(1, 2),
                   defer_stores=(False, True), group_rows=(WGMMA_M, 2 * WGMMA_M))
"""Also 64-byte K steps, splits of 2 and 4, a 3-deep ring, other group-m
values, 2-CTA clusters, deferred stores, and warp groups that own 128 rows."""


# --------------------------------------------------------------------------- the heuristic

MIN_SPLIT_K_STEPS = 8
"""K-steps each slice of a split keeps at least: a slice is one pass of the
producer's ring filled and drained, and its partial sum one more round trip
of an f32 tile through memory; the model is not asked about shorter ones."""
MAX_SPLIT_K = 16
"""Most slices of K a split makes: the workspace holds split_k f32
partials of C, written and read once each."""
HEURISTIC_TILES = ((128, 256), (128, 128), (64, 128))
"""Tiles largest first, for callers that walk down to a smaller tile when
the chosen one cannot take their kernel (an epilogue whose live tiles do
not fit its registers); the heuristic itself ranks `DEFAULT_SPACE`."""


def _fit(size: int, choices: Iterable[int]) -> int:
    """The smallest choice that covers `size` (the largest when none does)."""
    ordered = sorted(choices)
    return next((c for c in ordered if c >= size), ordered[-1])


def _check_problem(problem: GemmProblem) -> None:
    for name in ("M", "N", "K"):
        if getattr(problem, name) < 0:
            raise AutotuneError(f"{name} = {getattr(problem, name)} is negative")
    why = unsupported(problem.config(128, 128, block_k_for(problem.a_dtype)))
    if why:
        raise AutotuneError(f"no GEMM configuration for {problem}: {why}")


def split_for(problem: GemmProblem, config: GemmConfig, sms: int = SM_COUNT, params: Any = None) -> int:
    """Slices of K for `config` (unsplit) on `problem`: the S (2 ≤ S ≤
    `MAX_SPLIT_K`, each slice at least `MIN_SPLIT_K_STEPS` K-steps) whose
    split the cost model (`tawa.analysis.gemm_cost`) estimates fastest, if
    that beats the unsplit tile; else 1 (also for a batched problem, a
    configuration already split, or one that cannot be split)."""
    from tawa.analysis.gemm_cost import estimate, ring_stages

    if problem.batch is not None or config.split_k != 1:
        return 1
    most = min(MAX_SPLIT_K, problem.k_steps(config) // MIN_SPLIT_K_STEPS)
    if most < 2 or unsupported(config.replace(split_k=2)) is not None:
        return 1
    try:
        best, best_time = 1, estimate(problem, Choice(config), sms, params).total
        # A split's ring is at most GEMM_MAX_STAGES deep and the model never makes a deeper ring
        # slower: where no split beats the unsplit tile even so, none is planned (the shared-memory
        # plan compiles the program: most of the heuristic's time on a new shape).
        if all(estimate(problem, Choice(config.replace(split_k=split)), sms, params, stages=GEMM_MAX_STAGES).total
               >= best_time for split in range(2, most + 1)):
            return 1
        stages = ring_stages(Choice(config.replace(split_k=2)))  # one shared-memory plan for every S
    except TawaError:
        return 1
    for split in range(2, most + 1):
        time = estimate(problem, Choice(config.replace(split_k=split)), sms, params, stages=stages).total
        if time < best_time:
            best, best_time = split, time
    return best


def swizzled_block_ns(problem: GemmProblem) -> tuple[int, ...]:
    """The BLOCK_N values of `BLOCK_N_CHOICES` that suit `problem`'s B
    layout: all where B is read K-major (N×K: BLOCK_K spans the swizzle);
    where it is read MN-major (K×N) the widths whose slot rows take the
    widest swizzle (`slot_swizzle`, 128 bytes: 64 bf16 columns).  A
    narrower one gets a 32- or 64-byte swizzle, so one TMA box per span
    (eleven a stage for 176 columns against three for 192) and shared-memory
    reads that conflict more; the cost model prices neither, and such tiles
    measured far slower than whole spans (docs/perf.md, "Weight gradients
    and K×N B")."""
    if problem.b_layout == "nk":
        return BLOCK_N_CHOICES
    eb = element_bytes(problem.types[1])
    widest = max(SWIZZLES)
    return tuple(n for n in BLOCK_N_CHOICES if slot_swizzle(n * eb) == widest)


def _configs(problem: GemmProblem, space: Space, sms: int, params: Any) -> list[tuple[GemmConfig, int | None]]:
    """The space's tile programs that suit `problem` (module docstring),
    each with the warp-group rows its tile entry fixes (None: the space's)."""
    block_ns = swizzled_block_ns(problem)
    fit_m, fit_n = _fit(problem.M, BLOCK_M_CHOICES), _fit(problem.N, block_ns)
    configs: list[tuple[GemmConfig, int | None]] = []

    def add(config: GemmConfig, rows: int | None) -> None:
        """`config` at each of the space's splits that suits the problem."""
        for split in space.split_k:
            if split == 0:
                split = split_for(problem, config, sms, params)
            elif split > 1 and (problem.batch is not None
                                or problem.k_steps(config) < split * MIN_SPLIT_K_STEPS):
                continue  # slices too short to pay for their partial sums
            split_config = config.replace(split_k=split)
            if unsupported(split_config) is None and (split_config, rows) not in configs:
                configs.append((split_config, rows))

    for tile, k_bytes in itertools.product(space.tiles, space.k_bytes):
        bm, bn = tile[0], tile[1]
        if bm > fit_m or bn > fit_n or bn not in block_ns:  # a smaller tile of the space covers the problem
            continue
        add(problem.config(bm, bn, block_k_for(problem.a_dtype, k_bytes)), tile[2] if len(tile) > 2 else None)
    if True in space.transposed and problem.transposable:
        bn = -(-problem.M // WGMMA_N_STEP) * WGMMA_N_STEP  # the columns that hold all of M
        for bm, k_bytes in itertools.product((2 * WGMMA_M, WGMMA_M), space.k_bytes):
            add(problem.config(bm, bn, block_k_for(problem.a_dtype, k_bytes)).replace(transposed=True), WGMMA_M)
    return configs


def _b_bands_fit(config: GemmConfig, cluster: int) -> bool:
    """Whether B's slot tile ([BLOCK_N, BLOCK_K] read as [N, K], [BLOCK_K,
    BLOCK_N] as [K, N]) splits into `cluster` bands a cluster can multicast."""
    rows, cols = ((config.block_n, config.block_k) if config.b_layout == "nk" else
                  (config.block_k, config.block_n))
    return row_bands_fit(rows, cols * element_bytes(config.b_dtype), cluster)


def space_choices(problem: GemmProblem, space: Space = DEFAULT_SPACE, sms: int = SM_COUNT,
                  params: Any = None) -> list[Choice]:
    """The space's configurations for `problem` (module docstring: what is
    pruned), in the space's order, without estimates (but the split-K slices
    `split_for` decides with the model's `params`)."""
    _check_problem(problem)
    result: dict[Choice, None] = {}  # ordered, without repeats
    for config, fixed_rows in _configs(problem, space, sms, params):
        rows = gemm_grid(config, problem.M, problem.N, problem.batch)[0]
        # group-m values at or above the grid's rows order the tiles alike: keep the least of them.
        group_ms = sorted(set(space.group_m))
        covering = [g for g in group_ms if g >= rows]
        group_ms = [g for g in group_ms if g < rows] + covering[:1]
        for stages, group_m, persistent, cluster, defer, group_rows in itertools.product(
                space.stages, group_ms, space.persistent, space.cluster, space.defer_stores,
                space.group_rows if fixed_rows is None else (fixed_rows,)):
            if config.block_m % group_rows or group_rows * config.block_n > WGMMA_M * WGMMA_MAX_N:
                continue  # whole warp groups, each at most the widest accumulator (128 registers)
            if cluster > 1 and (not persistent or rows < cluster or config.transposed
                                or not _b_bands_fit(config, cluster)):
                continue  # clusters need a persistent kernel, rows of tiles to share B along, and B tiles
                # that split into one band per CTA (`tawa-cluster` multicasts nothing else); a transposed
                # tile's shared operand is A, which the model does not price
            if defer and not persistent:
                continue  # a deferred store rides the loop over programs
            result[Choice(config, stages, group_m, persistent, cluster, defer, group_rows)] = None
    return list(result)


def ranked(problem: GemmProblem, space: Space = DEFAULT_SPACE, sms: int = SM_COUNT,
           params: Any = None) -> list[tuple[Choice, Any]]:
    """The space's configurations for `problem`, each with the cost model's
    `Estimate` (`tawa.analysis.gemm_cost`, with `params`: default the
    H100's), fastest first; on a tie (the
    DRAM floor bounds both) the one whose main loops and epilogues are
    shorter, which has more room to overlap them with its loads, then the
    space's order; configurations the compiler rejects (its shared-memory
    plan) are left out."""
    from tawa.analysis.gemm_cost import estimate

    scored = []
    for choice in space_choices(problem, space, sms, params):
        try:
            scored.append((choice, estimate(problem, choice, sms, params)))
        except TawaError:
            continue
    return sorted(scored, key=lambda pair: (pair[1].total, pair[1].main + pair[1].epilogue))


def fastest(problem: GemmProblem, space: Space = DEFAULT_SPACE, sms: int = SM_COUNT,
            params: Any = None) -> Choice | None:
    """`ranked(...)[0]`'s choice (None where the compiler rejects every
    candidate), without the ring depths of candidates that cannot win: each
    is first estimated at the deepest ring it may get (its `stages`, or
    `GEMM_MAX_STAGES`), which the model never makes slower than its real
    one, and only those whose bound is not past the best exact estimate so
    far have their ring planned (a compile of the program's front: most of
    the heuristic's time on a new shape)."""
    from tawa.analysis.gemm_cost import estimate

    choices = space_choices(problem, space, sms, params)
    bounds = sorted(((estimate(problem, c, sms, params, stages=c.stages or GEMM_MAX_STAGES).total, i)
                     for i, c in enumerate(choices)))
    best: tuple[float, float, int] | None = None
    for bound, i in bounds:
        if best is not None and bound > best[0]:
            break  # this one and those after it are slower than the best even at their deepest rings
        try:
            e = estimate(problem, choices[i], sms, params)
        except TawaError:
            continue
        best = min(best or (e.total, e.main + e.epilogue, i), (e.total, e.main + e.epilogue, i))
    return None if best is None else choices[best[2]]


def heuristic(problem: GemmProblem, sms: int = SM_COUNT, split: bool = False, transposed: bool = True,
              params: Any = None) -> Choice:
    """The configuration the cost model (`tawa.analysis.gemm_cost`)
    estimates fastest for `problem` on `sms` SMs, of `DEFAULT_SPACE`'s
    candidates (`ranked`, `fastest`), without timing: the tile shapes, K in 128-byte
    steps, the deepest ring that fits, group-m 8, persistent.  With `split`
    the candidates include each tile split in K where the model says a
    split pays (`split_for`), as `tawa.torch.matmul` asks; by default none
    is split (the fused-epilogue kernels built on this choice need the
    whole sum over K); without `transposed` none computes Cᵀ = B·Aᵀ (nor
    can those kernels, whose epilogue reads C's rows and columns as such).
    `python -m tawa.bench gemm --explain MxNxK` prints the candidates,
    their estimates and the choice."""
    space = DEFAULT_SPACE if split else replace(DEFAULT_SPACE, split_k=(1,))
    if not transposed:
        space = replace(space, transposed=(False,))
    best = fastest(problem, space, sms, params)
    if best is None:
        raise AutotuneError(f"no GEMM configuration for {problem}: the compiler rejects every candidate")
    return best


# --------------------------------------------------------------------------- candidates


def candidates(problem: GemmProblem, space: Space = DEFAULT_SPACE, sms: int = SM_COUNT,
               params: Any = None) -> list[Choice]:
    """The space's configurations that suit `problem` (see the module
    docstring for what is pruned), the heuristic's first, then the others
    as the cost model ranks them."""
    first = heuristic(problem, sms, params=params)
    return [first] + [c for c, _ in ranked(problem, space, sms, params) if c != first]


def compiler_rejects(config: GemmConfig, options: dict[str, Any]) -> str | None:
    """What the compiler's checks say about `config` compiled with `options`
    (tawa-check-resources and the passes before it, not the protocol proof
    nor the PTX: ~0.1 s), or None when they pass."""
    from tawa.ir import context, parse
    from tawa.transforms.hopper_pipeline import HopperPipelinePass

    try:
        pipeline = HopperPipelinePass.of(**options, prepare=False)
        module = parse(gemm_source(config), f"{config.id}.mlir")
        ctx = context()
        pipeline.specialize_pass().apply(ctx, module)
        for p in pipeline.planned_steps(module):
            if p.name != "tawa-verify-protocol":
                p.apply(ctx, module)
    except TawaError as err:
        return str(err).splitlines()[0]
    return None


__all__ = [
    "DEFAULT_SPACE",
    "GEMM_MAX_STAGES",
    "HEURISTIC_TILES",
    "MAX_SPLIT_K",
    "MIN_SPLIT_K_STEPS",
    "WIDE_SPACE",
    "AutotuneError",
    "Choice",
    "GemmProblem",
    "Space",
    "candidates",
    "compiler_rejects",
    "fastest",
    "heuristic",
    "ranked",
    "space_choices",
    "split_for",
]
