"""Warp groups and register budgets of a tile kernel's partitions.

The decisions `tawa-warp-specialize` records on an `aref.warp_specialize`,
and that later passes read back: how many consumer warp groups a kernel
gets and how many rows of its tiles each owns (`consumer_warp_groups`,
`group_rows`: one per 64 accumulator rows; a kernel without dots, one per
64 rows where that splits its tiles evenly, else one), whether its tiles
take blocked layouts (`BLOCKED_LAYOUTS`), and the `setmaxnreg` budgets that
share out the registers of one CTA between the producer and the consumers
(`register_budgets`; `lone_budget` for a consumer partition alone).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, Region

from tawa.diagnostics import location_of
from tawa.dialects import aref, tile
from tawa.target.hopper import (
    MAX_REGS,
    MAX_TMA_BOX_DIM,
    MIN_REGS,
    REGS_GRANULE,
    SCALAR_REGS_OVERHEAD,
    THREADS_PER_GROUP,
    THREADS_PER_WARP,
    WGMMA_M,
    WGMMA_MAX_N,
    launch_register_cap,
    register_pool,
)
from tawa.transforms.utils import fail

NAME = "tawa-warp-specialize"
"""The pass these decisions belong to (their errors name it)."""
DOTS = (tile.DotOp, tile.DotAsyncOp)
"""The tile ops that run on the tensor cores (a kernel with one has wgmma accumulators)."""

MAX_CONSUMER_GROUPS = MAX_TMA_BOX_DIM // WGMMA_M
"""BLOCK_M is at most 256: the A tile's rows are one TMA box dimension."""
PRODUCER_REGS = 40
"""The producer's budget (CUTLASS's and the verified recipe's): room for the
persistent program loop's grouped-order and coordinate arithmetic."""
LEAN_PRODUCER_REGS = MIN_REGS
"""The producer's budget when 40 would leave the consumers less than
`FULL_ACCUMULATOR_REGS` (FA3 and Triton's workers use 24)."""
FULL_ACCUMULATOR_REGS = WGMMA_M * WGMMA_MAX_N // THREADS_PER_GROUP + SCALAR_REGS_OVERHEAD
"""What a consumer warp group needs for the widest accumulator (64x256xf32:
128 registers) plus addresses and indices: 154."""


BLOCKED_LAYOUTS = "tawa.blocked_layouts"
"""A unit attribute on the `aref.warp_specialize` of a kernel without dots:
the decision that its consumers' tiles take blocked layouts
(`tawa.transforms.lower.blocked_layouts`) and store from registers, not the
`wgmma` family (`tawa-stage-stores` and `tawa-lower-tile` read it)."""


def takes_blocked_layouts(region: Region) -> bool:
    """Whether the partition `region`'s tiles take blocked layouts (its
    `aref.warp_specialize` carries `BLOCKED_LAYOUTS`)."""
    ws = region.parent_op()
    return isinstance(ws, aref.WarpSpecializeOp) and BLOCKED_LAYOUTS in ws.attributes


def has_dots(root: Operation | Region) -> bool:
    """Whether `root` holds a `tile.dot` (its consumers compute wgmma
    accumulators; else its tiles take blocked layouts: "Kernels without
    dots" in docs/passes.md)."""
    return any(isinstance(o, DOTS) for o in root.walk())


def tile_rows(root: Operation | Region) -> int | None:
    """The rows of the wgmma accumulators a consumer computes under `root`
    (None: it has no dots).  They must all have the same rows, a multiple
    of 64 up to 256; otherwise a located error at the first dot that breaks
    the rule.  A kernel without dots has no such rule: its tiles take
    blocked layouts of any rows (`dot_free_warp_groups`)."""
    first: tuple[Operation, int] | None = None
    for dot in (o for o in root.walk() if isinstance(o, DOTS)):
        t = dot.results[0].type
        assert isinstance(t, TensorType)
        rows = t.get_shape()[0]
        if rows % WGMMA_M or not 1 <= rows // WGMMA_M <= MAX_CONSUMER_GROUPS:
            sizes = ", ".join(str(WGMMA_M * g) for g in range(1, MAX_CONSUMER_GROUPS + 1))
            raise fail(dot, f"{NAME}: a {t} accumulator is not supported: its rows "
                            f"(BLOCK_M) must be one of {sizes}, a multiple of the {WGMMA_M} rows of a wgmma")
        if first is None:
            first = (dot, rows)
        elif rows != first[1]:
            raise fail(dot, f"{NAME}: this dot's accumulator has {rows} rows but the dot at "
                            f"{location_of(first[0]) or 'the first dot'} has {first[1]}: the consumer's warp "
                            "groups split the rows of the tile, so every accumulator of a kernel needs the same rows")
    return None if first is None else first[1]


BLOCKED_GROUP_ROWS = WGMMA_M
"""Rows per consumer warp group of a kernel without dots, where its tiles
have that many: a 64xN f32 blocked tile costs N/2 registers a thread, as
an accumulator does."""


def blocked_tile_rows(root: Operation | Region) -> int | None:
    """The rows of the 2-D tiles that a kernel without dots loads and
    stores under `root`, when they all have the same (None: they differ,
    or there are none)."""
    rows = {v.type.get_shape()[0] for op in root.walk()
            for v in ([op.result] if isinstance(op, tile.LoadOp) else [op.value] if isinstance(op, tile.StoreOp) else [])
            if isinstance(v.type, TensorType) and v.type.get_num_dims() == 2}
    return rows.pop() if len(rows) == 1 else None


def dot_free_warp_groups(root: Operation | Region) -> int:
    """Consumer warp groups of a kernel without dots: one per
    `BLOCKED_GROUP_ROWS` rows of its tiles, as many of 1..4 as split them
    evenly (a 128x128 tile: 2 warp groups of 64 rows; 16 or 100 rows: 1).

    Its tiles take blocked layouts of any rows (`nvgpu.blocked_layout`), so
    one warp group can hold a whole tile, and that is the start: a
    memory-bound kernel is limited by the bytes in flight per SM, which
    come from more CTAs per SM (the tile program's BLOCK_M sets the work of
    one), not from more warp groups per CTA; a row whose reduction the
    layout's warps split combines through one warp group's shared scratch
    and named barrier (`nvgpu.frag_reduce_warps`), never across warp
    groups.  More warp groups only share out the registers of a tall tile
    (a 128x128 f32 loop accumulator and the tile added to it would take
    all 256 registers of one); they split the rows, so the tiles must all
    have the same rows, and no reduction may run along the rows (column
    sums would combine across warp groups): else one warp group."""
    rows = blocked_tile_rows(root)
    along_rows = any(isinstance(op, tile.ReduceOp) and op.axis.value.data == 0 for op in root.walk())
    if rows is None or along_rows:
        return 1
    return max(g for g in range(1, MAX_CONSUMER_GROUPS + 1) if g <= max(1, rows // BLOCKED_GROUP_ROWS) and rows % g == 0)


def consumer_warp_groups(kernel: func.FuncOp) -> int:
    """Consumer warp groups for `kernel` by default: one per 64 rows of its
    accumulators (`tile_rows`; warp group c owns rows [64c, 64c + 64)); a
    kernel without dots, `dot_free_warp_groups`."""
    rows = tile_rows(kernel)
    return dot_free_warp_groups(kernel) if rows is None else rows // WGMMA_M


def blocked_group_rows(root: Operation | Region, groups: int, at: Operation, who: str) -> int | None:
    """The rows each of `groups` consumer warp groups of a kernel without
    dots owns of its 2-D tiles (None: one warp group holds them whole);
    several warp groups need tiles of one row count that they split
    evenly, else a located error."""
    if groups == 1:
        return None
    rows = blocked_tile_rows(root)
    if rows is None or rows % groups:
        raise fail(at, f"{who}: {groups} consumer warp groups cannot split the rows of this kernel's tiles "
                       f"evenly ({'their rows differ' if rows is None else f'{rows} rows'}): leave "
                       "consumer-warps out (a kernel without dots takes one warp group per 64 rows where they "
                       "divide its tiles, else one)")
    return rows // groups


def group_rows(region: Region, groups: int, who: str) -> int:
    """Rows of the tile each of the `groups` warp groups of the
    consumer partition `region` owns: 64 by default (`group_rows_of_tile`)."""
    rows = tile_rows(region)
    at = region.parent_op()
    assert at is not None
    return WGMMA_M if rows is None else group_rows_of_tile(rows, groups, at, who)


def group_rows_of_tile(rows: int, groups: int, at: Operation, who: str) -> int:
    """The rows each of `groups` consumer warp groups owns of a `rows`-row
    tile: an equal share, a multiple of the 64 rows of a wgmma (a warp group
    that owns 128 issues one wgmma per 64-row block); else a located error."""
    if rows % groups or (rows // groups) % WGMMA_M:
        raise fail(at, f"{who}: {groups} consumer warp groups cannot split a {rows}-row tile: each needs "
                       f"a multiple of {WGMMA_M} rows (one wgmma per {WGMMA_M}-row block)")
    return rows // groups


def lone_budget(kernel: func.FuncOp, consumer_warps: int, consumer_regs: int | None) -> int:
    """The budget of a consumer partition launched alone (no producer): the
    registers every thread of a CTA of its threads may start with
    (`launch_register_cap`), or `consumer_regs` when given, which may not
    exceed that (no other warp group gives registers up)."""
    cap = launch_register_cap(consumer_warps * THREADS_PER_WARP)
    if consumer_regs is None:
        return cap
    if consumer_regs > cap:
        raise fail(kernel, f"{NAME}: consumer-regs={consumer_regs} is more than the {cap} "
                           f"registers a CTA of {consumer_warps * THREADS_PER_WARP} threads starts with, and "
                           "this kernel has no producer warp group to give registers up (it loads nothing for a dot)")
    return consumer_regs


def register_budgets(kernel: func.FuncOp, producer_warps: int, consumer_warps: int,
                     producer_regs: int | None, consumer_regs: int | None) -> tuple[int, int]:
    """(producer, consumer) `setmaxnreg` budgets; None means derive it.

    The warp groups share the pool the CTA holds at launch
    (`register_pool`): 32 · (Wp · P + Wc · C) ≤ pool.  Derived: P = 40, C the
    most that leaves (a multiple of 8, at most 256); when that C is below
    `FULL_ACCUMULATOR_REGS` the producer drops to 24 if that gives the
    consumers more (three consumer warp groups: 152 → 160, four: 104 → 112).
    With C given and P derived, P is 40 or, if C needs it, down to 24.
    Budgets given explicitly are kept; oversubscribed, they are a located
    error (setmaxnreg.inc would wait for ever)."""
    threads = (producer_warps + consumer_warps) * THREADS_PER_WARP
    pool = register_pool(threads) // THREADS_PER_WARP  # per-lane registers over all warps

    def most(left: int, warps: int, cap: int) -> int:
        return min(cap, left // warps // REGS_GRANULE * REGS_GRANULE)

    p, c = producer_regs, consumer_regs
    if p is None and c is None:
        p, c = PRODUCER_REGS, most(pool - producer_warps * PRODUCER_REGS, consumer_warps, MAX_REGS)
        lean = most(pool - producer_warps * LEAN_PRODUCER_REGS, consumer_warps, MAX_REGS)
        if c < FULL_ACCUMULATOR_REGS and lean > c:
            p, c = LEAN_PRODUCER_REGS, lean
    elif c is None:
        c = most(pool - producer_warps * p, consumer_warps, MAX_REGS)
    elif p is None:
        p = max(LEAN_PRODUCER_REGS, most(pool - consumer_warps * c, producer_warps, PRODUCER_REGS))
    total = THREADS_PER_WARP * (producer_warps * p + consumer_warps * c)
    if total > pool * THREADS_PER_WARP or c < MIN_REGS:
        cap = launch_register_cap(threads)
        raise fail(kernel, f"{NAME}: register budgets oversubscribe the register file: "
                           f"32 x ({producer_warps} x {p} + {consumer_warps} x {c}) = {total} > {cap} x {threads} "
                           f"= {pool * THREADS_PER_WARP} (the registers a CTA of {threads} threads holds at launch)")
    return p, c
