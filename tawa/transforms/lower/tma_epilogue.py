"""The TMA-store epilogue: which tile stores take it, and what they become.

The thread epilogue (`nvgpu.frag_store`, written out by
`tawa-expand-fragment-stores`) has every consumer thread store its own
fragment to global memory: many narrow stores, and masks on the edges.
The TMA-store epilogue instead stages the converted fragment in shared
memory and lets one thread hand the whole tile to the TMA unit, whose
tensor map clips what falls outside the array (no masks):

    scf.if %elected { nvgpu.tma_store_wait 0 }      // the last store from the tile has read it
    nvgpu.named_barrier_sync 1, 128·G               // ... before anyone overwrites it
    nvgpu.frag_store_shared %v, %staging[%c0, %wg_row0]   // each warp group its rows
    nvgpu.fence_proxy_async                         // the writes, visible to the async proxy
    nvgpu.named_barrier_sync 1, 128·G               // every row written
    scf.if %elected { nvgpu.tma_store %staging[%c0], %tmap_C[%m0, %n0] }   // + commit_group

and, once at the end of the consumer partition, `scf.if %elected {
nvgpu.tma_store_wait 0 }` (shared memory must outlive the store's read).

Three passes build it.  `tawa-stage-stores` (`stage_stores`) decides which
stores take it, with which staging and store group, allocates the staging
buffers and tensor maps, and makes each such `tile.store` an
`nvgpu.staged_store` naming its buffer and map; `tawa-lower-tile` writes
each staged store out as above (`emit_tma_store`, from the buffer's type);
`tawa-drain-stores` (`drain_at_end`) adds the final wait where a partition
issues TMA stores.
`%elected` is the partition's first thread: a bulk group belongs to the
thread that commits it, so the same thread issues and waits.  The wait
comes only before the staging tile is next written, so in the persistent
kernel the store of program i drains while program i+1's main loop runs.

**One store per CTA**, not one per warp group: the G consumer warp groups
of a cooperative partition already move in lockstep (they release every
ring slot together, and the producer waits for all of them), so a barrier
over all of them costs little, and one 64·G-row store halves the TMA
instructions and bulk groups of one store per warp group.  (A warp group
owns 64 rows by default, or a multiple of 64: `tawa-warp-specialize`'s
`group_rows_of_tile`; read "64" below as a warp group's rows.)  Named barrier
`EPILOGUE_BARRIER` (0 is the CTA-wide one) counts the partition's threads.

**Or one store per warp group** (`store-group`): where the consumer
warp groups take turns (`tawa.transforms.lower.pingpong`) they are half a turn
apart by design, and the two barriers over all of them line them up again
at every program's end, in a persistent kernel once per program.  There
each warp group stages and stores its own 64 rows: its own buffers
(`G·B x 64 x cols` for B buffers: warp group g writes buffers
[g·B, g·B + B)), its own named barrier (`group_barrier(g)`, 128 threads)
and its own elected thread (its first, `tid mod 128 == 0`), which stores a
64-row box at row m0 + 64·g:

    scf.if %elected { nvgpu.tma_store_wait 0 }      // my last store has read my buffer
    nvgpu.named_barrier_sync 15 - g, 128            // (per warp group: an scf.if chain)
    nvgpu.frag_store_shared %v, %staging[%g, %c0]
    nvgpu.fence_proxy_async
    nvgpu.named_barrier_sync 15 - g, 128
    scf.if %elected { nvgpu.tma_store %staging[%g], %tmap_O[%m0 + %wg_row0, %n0] }

The shared memory is the same bytes; twice the TMA stores and bulk groups.
`auto` stores per warp group in partitions of 2 or more warp groups with a
loop `tawa-overlap-dots` rotated (whose warp groups `tawa-pingpong` has take
turns), and the stores that run every iteration of a loop of the program
(`in_program_loop`: a barrier over all the warp groups in every iteration
would hold them together), per CTA otherwise; `tawa-hopper-pipeline{pingpong=false}`
asks `tawa-stage-stores` for `cta` instead.

**When** (`staging_type`): a `tile.store` in a consumer partition of a 2-D
tile of f32, bf16 or f16 to a memref of rank 2 to 5 (the leading dimensions
batches, attention's [batch, heads]: boxes of extent 1), whose rows are a
whole number of swizzle spans (32, 64 or 128 bytes: the staging tile is
swizzled like a ring slot, stored as span-wide column chunks, one TMA box
each) and whose rows and chunk fit a TMA box (at most 256).  Its staging
tile (`1 x rows x cols`, 64 KiB for 128x256 bf16) is charged in the
shared-memory plan after the rings (`smem_plan`); `epilogue=auto` takes
the TMA store only where it fits.  The runtime checks the 16-byte row
alignment a tensor map needs at launch.  Any math may produce the value:
the staging write stores a converted fragment, whatever computed it.

**Full, subtiled or single staging** (`staging=auto|full|subtiled|single`): the full
tile (`1 x rows x cols`) costs the GEMM 128x256 a ring stage (64 KiB).  The
subtiled variant stages one span-wide column chunk at a time (one TMA box:
64 columns of bf16) in two alternating buffers (`2 x rows x span`, 32 KiB),
so chunk j's store drains while chunk j+1 is written:

    for each chunk j (its columns [span·j, span·j + span), buffer b = j mod 2):
      scf.if %elected { nvgpu.tma_store_wait P_j }  // the store that last read buffer b
      nvgpu.named_barrier_sync 1, 128·G
      %vj = nvgpu.wgmma_k_slice %v[j]               // a column slice: no data moves
      nvgpu.frag_store_shared %vj, %staging[b, %wg_row0]
      nvgpu.fence_proxy_async
      nvgpu.named_barrier_sync 1, 128·G
      scf.if %elected { nvgpu.tma_store %staging[b], %tmap_C[%m0, %n0 + span·j] }

The full tile is the same loop with one chunk and one buffer; `single`
the same chunks in one buffer (P_j = 0: each chunk waits for the previous
chunk's store to have read the buffer), the least shared memory (16 KiB for
a 128-row bf16 tile): the GEMM 256x128 on two warp groups of 128 rows fits
4 stages with it, 3 with two buffers (docs/perf.md, "fp8 attention; warp
groups that own 128 rows").
`P_j`, the pending count of the wait, is the number of stores this thread
commits after the one that last read buffer b (`_pending`): 1 for every
chunk of an even chunk count (the previous program's last two chunks for
j < 2), 0 for the full tile.  Other stores committed in between only make
more groups newer than that one, so the count stays safe.  `auto` considers
the stagings of `AUTO_STAGINGS` (the full tile, then subtiled): the
first that fits, and with `stages=0` (`tawa-hopper-pipeline`) the one that
allows the deepest ring; where neither fits (with `stages=0`: beside a ring
of 2), the full tile for the stores in a loop of the program and `single`
for the others, then `single` for all (`LAST_STAGINGS`).

**Atomic adds** (`tile.atomic_add` of an f32 tile, e.g. a key block's share
of attention backward's dQ) take the same epilogue: staged alike, their TMA
stores add (`nvgpu.tma_store ... add`, `cp.reduce.async.bulk.tensor
... .add`), one bulk reduction per chunk instead of one `red.global.add.f32`
per element.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, TensorType, UnitAttr
from xdsl.ir import Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from tawa.analysis.smem_plan import extend_plan, slot_swizzle
from tawa.dialects import aref, nvgpu, tile
from tawa.dialects.aref import PartitionRole
from tawa.dialects.nvgpu.fragments import LOADABLE
from tawa.target.hopper import (
    MAX_SMEM_BYTES,
    MAX_TMA_BOX_DIM,
    MAX_TMA_RANK,
    NAMED_BARRIERS,
    THREADS_PER_GROUP,
    WARPS_PER_GROUP,
    WGMMA_MAX_PENDING,
)
from tawa.transforms.lower.pingpong import TURNS
from tawa.transforms.partition.warp_groups import takes_blocked_layouts
from tawa.transforms.pipeline.defer_stores import SHARED_STAGING
from tawa.transforms.pipeline.overlap_dots import OVERLAPPED
from tawa.transforms.pipeline.persistent import PROGRAM_LOOP
from tawa.transforms.utils import const, fail, group_tests, guarded, per_group

EPILOGUES = ("auto", "tma", "threads")
"""`epilogue=` values: TMA stores where they fit, TMA stores (an error
where not possible), the thread epilogue."""
STAGINGS = ("auto", "full", "subtiled", "single", "full-in-loops")
"""`staging=` values: the full tile where it fits, else subtiled; the whole
tile in one buffer; span-wide column chunks in two alternating buffers; the
chunks one after another in a single buffer (each waits for the previous
one's store to have read it: the least shared memory, for a deeper ring);
the full tile for the stores in a loop of the program, single for the others
(`FULL_IN_LOOPS`)."""
AUTO_STAGINGS = ("full", "subtiled")
"""The stagings `staging=auto` considers, in order of preference: the full
tile where it fits beside the ring (explicit stages) and costs no ring stage
(`stages=0`, `tawa-hopper-pipeline`: the deepest ring wins, the first on a
tie), else the subtiled staging.  For the GEMM 128x256 the subtiled staging
keeps 4 stages where the full tile leaves 3: faster in geomean over the
21-shape sweep on the H100 (docs/perf.md, "Subtiled staging")."""
FULL_IN_LOOPS = "full-in-loops"
"""The full tile for the stores that run every iteration of a loop of the
program (a chunk that waited for the previous chunk's store inside each
iteration would stall each), `single` for those that run once per
program."""
LAST_STAGINGS = (FULL_IN_LOOPS, "single")
"""The stagings `staging=auto` falls back to, in order, where neither of
`AUTO_STAGINGS` fits (beside the explicit stages; with `stages=0`, beside a
ring of 2): before the thread epilogue, whose atomic adds in a loop
(attention backward's dQ shares) would be one `red.global` per element."""


def in_program_loop(op: Operation) -> bool:
    """Whether `op` runs every iteration of a loop of its program: it is in
    an `scf.for` that is not a loop over programs (`tawa-persistent`'s
    `PROGRAM_LOOP`)."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, aref.WarpSpecializeOp | func.FuncOp):
        if isinstance(parent, scf.ForOp) and PROGRAM_LOOP not in parent.attributes:
            return True
        parent = parent.parent_op()
    return False
STORE_GROUPS = ("auto", "cta", "warpgroup")
"""`store-group=` values: who stores a staged tile.  `cta`: one thread the
whole tile, after a barrier over all the consumer warp groups; `warpgroup`:
one thread of each warp group its 64 rows, after a barrier over its warp
group; `auto`: per warp group where they ping-pong (a partition of 2 or
more warp groups with a loop `tawa-overlap-dots` rotated) and for the stores
in a loop of the program, else per CTA."""
SUBTILE_BUFFERS = {"subtiled": 2, "single": 1}
"""Buffers of the chunked stagings: `subtiled`'s two let chunk j's store drain
while chunk j+1 is written; `single` waits for it instead."""
EPILOGUE_BARRIER = 1
"""The named barrier of the consumer threads around the staging tile."""
MAX_STORE_GROUPS = (NAMED_BARRIERS - TURNS) // 2
"""Warp groups that can store on their own: each takes one of the named
barriers the ping-pong turns (`TURNS`, counting up) leave free."""


def group_barrier(group: int) -> int:
    """The named barrier of warp group `group` (of its partition) around its
    own staging buffers, with `store-group=warpgroup`: ids count down from
    15, the ping-pong turns count up from `TURNS`."""
    return NAMED_BARRIERS - 1 - group


Store = tile.StoreOp | tile.AtomicAddOp
"""The tile ops that take the TMA-store epilogue: stores, and atomic adds
(`tile.atomic_add` of an f32 tile: the TMA stores add, `nvgpu.tma_store
... add`)."""


def staging_type(store: Store, staging: str = "full", groups: int = 1) -> nvgpu.SmemType | str:
    """The staging buffer of a store that can take the TMA-store epilogue
    (`staging` full: `1 x rows x cols`; subtiled: `2 x rows x span`, one
    buffer where the row is a single span), or why it cannot.  With
    `groups` > 1, the same bytes as `groups` warp groups' own buffers of
    rows / `groups` rows each (`store-group=warpgroup`)."""
    t, mt = store.value.type, store.dest.type
    assert isinstance(t, TensorType) and isinstance(mt, MemRefType)
    shape, et = tuple(t.get_shape()), t.get_element_type()
    if staging == FULL_IN_LOOPS:
        staging = "full" if in_program_loop(store) else "single"
    if len(shape) != 2:
        return f"it stores a {len(shape)}-D tile (2-D tiles only)"
    if isinstance(store.value.owner, tile.TransOp):
        return ("it stores a transposed tile (tile.trans), whose warp groups hold its columns, not its rows: the "
                "threads store it")
    if _released(store):
        return ("a tile.counter_arrive after it releases it to other CTAs, and that release orders the threads' "
                "own stores, not a TMA store's (the async proxy)")
    if _after_arrival(store):
        return ("it runs only where a tile.counter_arrive was the last, and the protocol proof follows the "
                "epilogue's barriers only under conditions it computes")
    if not 2 <= mt.get_num_dims() <= MAX_TMA_RANK:
        return f"its memref has rank {mt.get_num_dims()} (2 to {MAX_TMA_RANK} only)"
    if not isinstance(et, LOADABLE):
        return f"it stores {et} elements (f32, bf16 or f16 only)"
    row_bytes = shape[1] * nvgpu.element_bytes(et)
    swizzle = slot_swizzle(row_bytes)
    if swizzle is None:
        return f"its {row_bytes}-byte rows are not a multiple of a 32-byte swizzle span"
    if shape[0] > MAX_TMA_BOX_DIM:
        return f"its {shape[0]} rows exceed a TMA box ({MAX_TMA_BOX_DIM})"
    buffers, cols = 1, shape[1]
    if staging in SUBTILE_BUFFERS:
        cols = swizzle // nvgpu.element_bytes(et)
        buffers = min(SUBTILE_BUFFERS[staging], shape[1] // cols)
    return nvgpu.SmemType([buffers * groups, shape[0] // groups, cols], et, swizzle)


def _released(store: Store) -> bool:
    """Whether a `tile.counter_arrive` later in the store's block publishes it."""
    op = store.next_op
    while op is not None:
        if isinstance(op, tile.CounterArriveOp):
            return True
        op = op.next_op
    return False


def _after_arrival(store: Store) -> bool:
    """Whether the store sits in an `scf.if` on a `tile.counter_arrive`."""
    op = store.parent_op()
    while op is not None:
        if isinstance(op, scf.IfOp) and isinstance(op.cond.owner, tile.CounterArriveOp):
            return True
        op = op.parent_op()
    return False


def consumer_stores(ws: aref.WarpSpecializeOp, wgmma_only: bool = True) -> list[Store]:
    """The tile stores and atomic adds of the consumer partitions, in program order: of the
    partitions whose tiles are wgmma fragments (those that take blocked
    layouts, in a kernel without dots, store from registers: 16-byte
    vectors of whole rows per warp need no shared-memory round trip), or
    with `wgmma_only` false of every one."""
    return [
        o for role, _, _, region in ws.partition_specs()
        if role == PartitionRole.CONSUMER and (not wgmma_only or not takes_blocked_layouts(region))
        for o in region.walk() if isinstance(o, Store)
    ]


def staging_types(ws: aref.WarpSpecializeOp, staging: str = "full") -> list[nvgpu.SmemType]:
    """The staging buffers the TMA-store epilogue would add to this kernel."""
    return [t for s in consumer_stores(ws) if isinstance(t := staging_type(s, staging), nvgpu.SmemType)]


def store_groups(ws: aref.WarpSpecializeOp, store_group: str, who: str) -> dict[Store, int]:
    """The stores of the consumer partitions of `ws` → how many warp groups
    store their own rows of it: 1 (one store per CTA), or the partition's
    warp groups (`store_group` warpgroup; `auto`: in a partition of 2 or
    more warp groups with a loop `tawa-overlap-dots` rotated, where
    `tawa-pingpong` has them take turns, and for a store in a loop of the
    program, where barriers over all the warp groups every iteration
    would hold them together)."""
    by_store = {}
    for role, warps, _, region in ws.partition_specs():
        if role != PartitionRole.CONSUMER:
            continue
        groups = warps // WARPS_PER_GROUP
        rotated = any(isinstance(o, scf.ForOp) and OVERLAPPED in o.attributes for o in region.walk())
        if groups > MAX_STORE_GROUPS and store_group == "warpgroup":
            raise fail(ws, f"{who}: store-group=warpgroup: {groups} warp groups need more named barriers "
                       f"than a CTA has (at most {MAX_STORE_GROUPS} store on their own)")
        for s in [o for o in region.walk() if isinstance(o, Store)]:
            auto = store_group == "auto" and (rotated or in_program_loop(s))
            own = 1 < groups <= MAX_STORE_GROUPS and (store_group == "warpgroup" or auto)
            by_store[s] = groups if own else 1
    return by_store


def stage_stores(
    ws: aref.WarpSpecializeOp, kernel: func.FuncOp, epilogue: str, who: str, staging: str = "auto",
    store_group: str = "cta",
) -> int:
    """Decides which stores of `ws` take the TMA-store epilogue, and with
    which staging (`auto`: the full tile where it fits, else subtiled) and
    store group (`store_groups`), allocates, before `ws`, each one's
    staging buffer (after the kernel's rings) and tensor map, and makes
    each such `tile.store` an `nvgpu.staged_store` that names them; returns
    how many it staged."""
    if epilogue == "threads":
        return 0
    if epilogue == "tma":
        staged = set(consumer_stores(ws))
        for store in [s for s in consumer_stores(ws, wgmma_only=False) if s not in staged]:
            raise fail(store, f"{who}: epilogue=tma: the stores of a kernel without dots are written by the "
                              "threads from their blocked layouts (whole rows per warp, 16-byte vectors)")
    groups = store_groups(ws, store_group, who)
    stores: list[Store] = []
    for store in consumer_stores(ws):
        why = staging_type(store)
        if isinstance(why, str):
            if epilogue == "tma":
                raise fail(store, f"{who}: epilogue=tma: this store cannot take the TMA-store epilogue: {why}")
            continue
        stores.append(store)
    if not stores:
        return 0
    allocs = [o for o in kernel.body.block.ops if isinstance(o, nvgpu.SmemAllocOp)]
    for variant in (*AUTO_STAGINGS, *LAST_STAGINGS) if staging == "auto" else (staging,):
        chosen = [(s, t) for s in stores if isinstance(t := staging_type(s, variant), nvgpu.SmemType)]
        owners = _owners(chosen)
        plan = extend_plan(allocs, [t for _, t in owners])
        if plan.fits:
            break
    else:
        if epilogue == "tma":
            raise fail(kernel, f"{who}: epilogue=tma: the rings and the staging tiles of the TMA-store "
                       f"epilogue need {plan.total} bytes of shared memory, more than the {MAX_SMEM_BYTES} "
                       "a block may use; use fewer stages")
        return 0
    at = InsertPoint.before(ws)
    tmaps: dict[tuple[SSAValue, nvgpu.TmaDescriptorType], SSAValue] = {}
    buffers: dict[Any, SSAValue] = {}
    for (owner, planned), placed in zip(owners, plan.staging):
        t = staging_type(owner, variant, groups[owner])
        assert isinstance(t, nvgpu.SmemType)
        buf = nvgpu.SmemAllocOp(placed.offset, t)
        buf.result.name_hint = "staging"
        Rewriter.insert_op(buf, at)
        buffers[_buffer_key(owner, planned)] = buf.result
    for store, planned in chosen:
        t = staging_type(store, variant, groups[store])
        assert isinstance(t, nvgpu.SmemType)
        mt = store.dest.type
        assert isinstance(mt, MemRefType)
        box = (1,) * (mt.get_num_dims() - 2) + t.get_shape()[1:]  # one chunk
        desc_t = nvgpu.TmaDescriptorType(box, t.element_type, t.swizzle.data)
        if (store.dest, desc_t) not in tmaps:
            desc = nvgpu.TmaDescriptorOp.build(operands=[store.dest], result_types=[desc_t])
            if store.dest.name_hint:
                desc.result.name_hint = f"tmap_{store.dest.name_hint}"
            Rewriter.insert_op(desc, at)
            tmaps[(store.dest, desc_t)] = desc.result
        staged = nvgpu.StagedStoreOp(store.value, store.dest, store.offsets, buffers[_buffer_key(store, planned)],
                                     tmaps[(store.dest, desc_t)], add=isinstance(store, tile.AtomicAddOp))
        staged.location = store.location
        Rewriter.replace_op(store, staged)
    nvgpu.record_kernel_info(kernel, smem=plan.total)
    return len(chosen)




def _owners(chosen: list[tuple[Store, nvgpu.SmemType]]) -> list[tuple[Store, nvgpu.SmemType]]:
    """The first store of each staging buffer (`_buffer_key`), in order."""
    seen: set[Any] = set()
    owners = []
    for store, t in chosen:
        if _buffer_key(store, t) not in seen:
            seen.add(_buffer_key(store, t))
            owners.append((store, t))
    return owners


def _buffer_key(store: Store, t: nvgpu.SmemType) -> Any:
    """Stores with the same key share a staging buffer: those marked
    `SHARED_STAGING` with the same memref and staging type; every other store
    has its own.  Sharing is safe for stores that one thread commits one
    after another: each chunk's wait counts the stores committed since the
    one that last read its buffer, whichever store site committed them."""
    return (store.dest, t) if SHARED_STAGING in store.attributes else store


def _is_elected(first_group: int, by_group: bool, at: InsertPoint) -> SSAValue:
    """The thread that stores, at `at`: the partition's first
    (`thread_id == 128·first_group`), or with `by_group` each warp group's
    first (`thread_id mod 128 == 0`)."""
    tid = nvgpu.ThreadIdOp()
    Rewriter.insert_op(tid, at)
    first = tid.result
    if by_group:
        lane = arith.RemUIOp(tid.result, const(THREADS_PER_GROUP, at))
        Rewriter.insert_op(lane, at)
        first = lane.result
    is_first = arith.CmpiOp(first, const(0 if by_group else first_group * THREADS_PER_GROUP, at), "eq")
    Rewriter.insert_op(is_first, at)
    return is_first.result


def _elected(elected: SSAValue, body: list[Operation], at: InsertPoint) -> None:
    """`body` under `if (elected)`."""
    Rewriter.insert_op(guarded(elected, body), at)




def _store_wait(pending: int = 0) -> nvgpu.TmaStoreWaitOp:
    """`cp.async.bulk.wait_group.read pending`: all but this thread's
    `pending` newest stores have read shared memory."""
    return nvgpu.TmaStoreWaitOp.build(properties={"pending": IntegerAttr(pending, 32)})


def _pending(chunk: int, chunks: int, buffers: int) -> int:
    """The wait before chunk `chunk` (of `chunks`, written to buffer
    `chunk mod buffers`): the stores this thread commits after the one that
    last read that buffer (of this program, or for the first chunks of the
    previous program of the CTA)."""
    if chunk >= buffers:
        return buffers - 1
    last = max(c for c in range(chunks) if c % buffers == chunk)
    return min(WGMMA_MAX_PENDING, chunks - 1 - last + chunk)


def stores_by_group(staging: SSAValue, groups: int, group_rows: int) -> bool:
    """Whether the warp groups store their own rows into `staging` (its
    buffers hold a warp group's `group_rows` rows, not the partition's
    `group_rows`·`groups`)."""
    st = staging.type
    assert isinstance(st, nvgpu.SmemType)
    return groups > 1 and st.get_shape()[1] == group_rows


def emit_tma_store(
    values: SSAValue, staging: SSAValue, tmap: SSAValue, offsets: list[SSAValue], row0: SSAValue,
    group: SSAValue, first_group: int, groups: int, at: InsertPoint, add: bool = False,
) -> None:
    """The TMA-store epilogue of one store (module docstring), at `at`:
    `values` is this warp group's fragment, `row0` its first row in the
    tile, `group` its index among the partition's `groups` warp groups,
    `offsets` the tile's element offsets in the memref.  The staging
    buffer's type says the chunks (its columns per chunk), the buffers they
    alternate in, and who stores (`stores_by_group`).  With `add` the TMA
    stores add the tile into the box (`tile.atomic_add`'s)."""
    ft, st = values.type, staging.type
    assert isinstance(ft, nvgpu.FragmentType) and isinstance(st, nvgpu.SmemType)
    if ft.element_type != st.element_type:
        ft = ft.with_element_type(st.element_type)
        conv = nvgpu.FragmentConvertOp.build(operands=[values], result_types=[ft])
        Rewriter.insert_op(conv, at)
        values = conv.result
    rows, cols = ft.get_shape()
    by_group = stores_by_group(staging, groups, rows)
    buffers, span = st.get_shape()[0] // (groups if by_group else 1), st.get_shape()[-1]
    chunks = cols // span
    chunk_type = nvgpu.FragmentType([rows, span], ft.element_type, ft.tiled_layout)
    elected = _is_elected(first_group, by_group, at)
    coords = list(offsets)
    if by_group:  # my buffers, my rows, my barrier
        is_group = group_tests(group, groups, at)
        row = arith.AddiOp(offsets[-2], row0)
        Rewriter.insert_op(row, at)
        first_buffer, staging_row, coords[-2] = group, const(0, at), row.result
        if buffers > 1:
            scaled = arith.MuliOp(group, const(buffers, at))
            Rewriter.insert_op(scaled, at)
            first_buffer = scaled.result
            first_buffer.name_hint = "my_buffer"
        row.result.name_hint = "my_row"

        def barrier() -> Operation:
            return per_group(is_group, [[nvgpu.NamedBarrierSyncOp(group_barrier(g), THREADS_PER_GROUP)]
                                        for g in range(groups)])
    else:
        staging_row = row0

        def barrier() -> Operation:
            return nvgpu.NamedBarrierSyncOp(EPILOGUE_BARRIER, groups * THREADS_PER_GROUP)
    for j in range(chunks):
        _elected(elected, [_store_wait(_pending(j, chunks, buffers))], at)
        if not by_group:
            buffer = const(j % buffers, at)
        else:
            buffer = first_buffer
            if j % buffers:
                mine = arith.AddiOp(first_buffer, const(j % buffers, at))
                Rewriter.insert_op(mine, at)
                buffer = mine.result
        chunk = values
        if chunks > 1:
            view = nvgpu.WgmmaKSliceOp(values, j, chunk_type)
            Rewriter.insert_op(view, at)
            chunk = view.result
        Rewriter.insert_op([
            barrier(),
            nvgpu.FragmentStoreSharedOp.build(operands=[chunk, staging, buffer, staging_row]),
            nvgpu.FenceProxyAsyncOp(),
            barrier(),
        ], at)
        chunk_coords = list(coords)
        if j:
            col = arith.AddiOp(coords[-1], const(j * span, at))
            Rewriter.insert_op(col, at)
            chunk_coords[-1] = col.result
        store = nvgpu.TmaStoreOp.build(operands=[staging, buffer, tmap, chunk_coords],
                                       properties={"add": UnitAttr()} if add else {})
        _elected(elected, [store], at)


def drain_at_end(region: Region, first_group: int, by_group: bool = False) -> None:
    """The partition's last TMA store must have read its staging tile before
    the CTA (and its shared memory) ends: one wait at the partition's end,
    by the thread that stores (`by_group`: each warp group's)."""
    block = region.block
    last = block.last_op
    at = InsertPoint.before(last) if last is not None and last.has_trait(IsTerminator) else InsertPoint.at_end(block)
    _elected(_is_elected(first_group, by_group, at), [_store_wait()], at)
