"""The TMA-store epilogue: which tile stores take it, and what they become.

The thread epilogue (`nvgpu.frag_store`, written out by
`tawa-expand-fragment-stores`) has every consumer thread store its own
fragment to global memory: many narrow stores, and masks on the edges.
The TMA-store epilogue instead stages the converted fragment in shared
memory and lets one thread hand the whole tile to the TMA unit, whose
tensor map clips what falls outside the array (no masks):

    scf.if %elected { nvgpu.tma_store_wait 0 }      // the last store from the tile has read it
    nvgpu.named_barrier_sync 1, 128·G               // ... before anyone overwrites it
    nvgpu.frag_store_shared %v, %staging[%c0, %wg_row0]   // each warp group its 64 rows
    nvgpu.fence_proxy_async                         // the writes, visible to the async proxy
    nvgpu.named_barrier_sync 1, 128·G               // every row written
    scf.if %elected { nvgpu.tma_store %staging[%c0], %tmap_C[%m0, %n0] }   // + commit_group

and, once at the end of the consumer partition, `scf.if %elected {
nvgpu.tma_store_wait 0 }` (shared memory must outlive the store's read).
`%elected` is the partition's first thread: a bulk group belongs to the
thread that commits it, so the same thread issues and waits.  The wait
comes only before the staging tile is next written, so in the persistent
kernel the store of program i drains while program i+1's main loop runs.

**One store per CTA**, not one per warp group: the G consumer warp groups
of a cooperative partition already move in lockstep (they release every
ring slot together, and the producer waits for all of them), so a barrier
over all of them costs little, and one 64·G-row store halves the TMA
instructions and bulk groups of one store per warp group.  Named barrier
`EPILOGUE_BARRIER` (0 is the CTA-wide one) counts the partition's threads.

**When** (`staging_type`): a `tile.store` in a consumer partition of a 2-D
tile of f32, bf16 or f16 to a 2-D or batched 3-D memref, whose rows are a
whole number of swizzle spans (32, 64 or 128 bytes: the staging tile is
swizzled like a ring slot, stored as span-wide column chunks, one TMA box
each) and whose rows and chunk fit a TMA box (at most 256).  Its staging
tile (`1 x rows x cols`, 64 KiB for 128x256 bf16) is charged in the
shared-memory plan after the rings (`smem_plan`); `epilogue=auto` takes
the TMA store only where it fits.  The runtime checks the 16-byte row
alignment a tensor map needs at launch.  Any math may produce the value:
the staging write stores a converted fragment, whatever computed it.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from tawa.dialects import aref, nvgpu, tile
from tawa.dialects.aref import PartitionRole
from tawa.dialects.nvgpu.fragments import LOADABLE
from tawa.target.hopper import MAX_SMEM_BYTES, MAX_TMA_BOX_DIM, THREADS_PER_GROUP
from tawa.transforms.smem_plan import extend_plan, slot_swizzle
from tawa.transforms.utils import const, fail

EPILOGUES = ("auto", "tma", "threads")
"""`epilogue=` values: TMA stores where they fit, TMA stores (an error
where not possible), the thread epilogue."""
EPILOGUE_BARRIER = 1
"""The named barrier of the consumer threads around the staging tile."""


def staging_type(store: tile.StoreOp) -> nvgpu.SmemType | str:
    """The staging tile of a store that can take the TMA-store epilogue, or
    why it cannot."""
    t, mt = store.value.type, store.dest.type
    assert isinstance(t, TensorType) and isinstance(mt, MemRefType)
    shape, et = tuple(t.get_shape()), t.get_element_type()
    if len(shape) != 2:
        return f"it stores a {len(shape)}-D tile (2-D tiles only)"
    if mt.get_num_dims() not in (2, 3):
        return f"its memref has rank {mt.get_num_dims()} (2 or 3 only)"
    if not isinstance(et, LOADABLE):
        return f"it stores {et} elements (f32, bf16 or f16 only)"
    row_bytes = shape[1] * nvgpu.element_bytes(et)
    swizzle = slot_swizzle(row_bytes)
    if swizzle is None:
        return f"its {row_bytes}-byte rows are not a multiple of a 32-byte swizzle span"
    if shape[0] > MAX_TMA_BOX_DIM:
        return f"its {shape[0]} rows exceed a TMA box ({MAX_TMA_BOX_DIM})"
    return nvgpu.SmemType([1, *shape], et, swizzle)


def consumer_stores(ws: aref.WarpSpecializeOp) -> list[tile.StoreOp]:
    """The tile stores of the consumer partitions, in program order."""
    return [
        o for role, _, _, region in ws.partition_specs() if role == PartitionRole.CONSUMER
        for o in region.walk() if isinstance(o, tile.StoreOp)
    ]


def staging_types(ws: aref.WarpSpecializeOp) -> list[nvgpu.SmemType]:
    """The staging tiles the TMA-store epilogue would add to this kernel."""
    return [t for s in consumer_stores(ws) if isinstance(t := staging_type(s), nvgpu.SmemType)]


def stage_stores(
    ws: aref.WarpSpecializeOp, kernel: func.FuncOp, epilogue: str, who: str
) -> dict[tile.StoreOp, tuple[SSAValue, SSAValue]]:
    """Decides which stores of `ws` take the TMA-store epilogue and
    allocates, before `ws`, each one's staging tile (after the kernel's
    rings) and tensor map: store → (staging buffer, tensor map)."""
    if epilogue == "threads":
        return {}
    chosen: list[tuple[tile.StoreOp, nvgpu.SmemType]] = []
    for store in consumer_stores(ws):
        t = staging_type(store)
        if isinstance(t, str):
            if epilogue == "tma":
                raise fail(store, f"{who}: epilogue=tma: this store cannot take the TMA-store epilogue: {t}")
            continue
        chosen.append((store, t))
    if not chosen:
        return {}
    allocs = [o for o in kernel.body.block.ops if isinstance(o, nvgpu.SmemAllocOp)]
    plan = extend_plan(allocs, [t for _, t in chosen])
    if not plan.fits:
        if epilogue == "tma":
            raise fail(kernel, f"{who}: epilogue=tma: the rings and the staging tiles of the TMA-store "
                       f"epilogue need {plan.total} bytes of shared memory, more than the {MAX_SMEM_BYTES} "
                       "a block may use; use fewer stages")
        return {}
    at = InsertPoint.before(ws)
    staged = {}
    tmaps: dict[tuple[SSAValue, nvgpu.TmaDescriptorType], SSAValue] = {}
    for (store, t), placed in zip(chosen, plan.staging):
        buf = nvgpu.SmemAllocOp(placed.offset, t)
        buf.result.name_hint = "staging"
        Rewriter.insert_op(buf, at)
        mt = store.dest.type
        assert isinstance(mt, MemRefType)
        box = (1,) * (mt.get_num_dims() - 2) + t.get_shape()[1:]
        desc_t = nvgpu.TmaDescriptorType(box, t.element_type, t.swizzle.data)
        if (store.dest, desc_t) not in tmaps:
            desc = nvgpu.TmaDescriptorOp.build(operands=[store.dest], result_types=[desc_t])
            if store.dest.name_hint:
                desc.result.name_hint = f"tmap_{store.dest.name_hint}"
            Rewriter.insert_op(desc, at)
            tmaps[(store.dest, desc_t)] = desc.result
        staged[store] = (buf.result, tmaps[(store.dest, desc_t)])
    nvgpu.record_kernel_info(kernel, smem=plan.total)
    return staged


def _elected(first_thread: int, body: list[Operation], at: InsertPoint) -> None:
    """`body` under `if (thread_id == first_thread)`."""
    tid = nvgpu.ThreadIdOp()
    Rewriter.insert_op(tid, at)
    is_first = arith.CmpiOp(tid.result, const(first_thread, at), "eq")
    Rewriter.insert_op([is_first, scf.IfOp(is_first.result, [], Region(Block([*body, scf.YieldOp()])))], at)


def _barrier(threads: int) -> nvgpu.NamedBarrierSyncOp:
    return nvgpu.NamedBarrierSyncOp.build(properties={
        "barrier_id": IntegerAttr(EPILOGUE_BARRIER, 32), "num_threads": IntegerAttr(threads, 32)})


def _store_wait() -> nvgpu.TmaStoreWaitOp:
    """`cp.async.bulk.wait_group.read 0`: this thread's stores have read shared memory."""
    return nvgpu.TmaStoreWaitOp.build(properties={"pending": IntegerAttr(0, 32)})


def emit_tma_store(
    values: SSAValue, staging: SSAValue, tmap: SSAValue, offsets: list[SSAValue], row0: SSAValue,
    first_group: int, groups: int, at: InsertPoint,
) -> None:
    """The TMA-store epilogue of one store (module docstring), at `at`:
    `values` is this warp group's fragment, `row0` its first row in the
    tile, `offsets` the tile's element offsets in the memref."""
    ft, st = values.type, staging.type
    assert isinstance(ft, nvgpu.FragmentType) and isinstance(st, nvgpu.SmemType)
    first_thread, threads = first_group * THREADS_PER_GROUP, groups * THREADS_PER_GROUP
    if ft.element_type != st.element_type:
        conv = nvgpu.FragmentConvertOp.build(operands=[values], result_types=[ft.with_element_type(st.element_type)])
        Rewriter.insert_op(conv, at)
        values = conv.result
    _elected(first_thread, [_store_wait()], at)
    zero = const(0, at)
    Rewriter.insert_op([
        _barrier(threads),
        nvgpu.FragmentStoreSharedOp.build(operands=[values, staging, zero, row0]),
        nvgpu.FenceProxyAsyncOp(),
        _barrier(threads),
    ], at)
    _elected(first_thread, [nvgpu.TmaStoreOp.build(operands=[staging, zero, tmap, offsets])], at)


def drain_at_end(region: Region, first_group: int) -> None:
    """The partition's last TMA store must have read its staging tile before
    the CTA (and its shared memory) ends: one wait at the partition's end."""
    block = region.block
    last = block.last_op
    at = InsertPoint.before(last) if last is not None and last.has_trait(IsTerminator) else InsertPoint.at_end(block)
    _elected(first_group * THREADS_PER_GROUP, [_store_wait()], at)
