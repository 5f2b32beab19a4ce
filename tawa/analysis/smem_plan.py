"""The shared-memory plan of a kernel: where each aref ring lives.

An analysis, not a pass.  Given the arefs of a kernel and their depths it
computes, without touching the IR, the byte layout of the kernel's dynamic
shared memory:

* every aref of depth D and payload tiles T1..Tn gets one `D x Ti` buffer
  per tile, swizzled with the widest of the 128B, 64B and 32B patterns that
  divides the tile's row (`slot_swizzle`: TMA writes and wgmma reads the
  same pattern, so this is the one place it is chosen; everyone after reads
  it from the buffer's `!nvgpu.smem` type) and aligned to that pattern
  (`SMEM_ALIGNMENT`: 1024, 512 or 256 bytes), and a `full` and an `empty`
  array of D mbarriers; all the rings' buffers come first, then all their
  barriers (8-byte aligned), so that no barrier array pushes the next
  buffer to its alignment: with attention's three rings the padding would
  cost up to 2 KiB, the difference between two K/V stages and three at
  head dim 128;
* then the staging tiles of the TMA-store epilogue (`staging`: one
  `1 x rows x cols` buffer per store that takes it, swizzled like a slot
  of that row width; `tawa.transforms.lower.tma_epilogue`), so that the ring
  depth the pipeline picks leaves room for them;
* buffers are placed in order by a bump allocator;
* the kernel asks for the bytes used plus `SMEM_ALIGN_SLACK` (the dynamic
  base is only 16-byte aligned and is rounded up at run time).

Two clients: `tawa-lower-aref` places the rings where the plan says, and
`tawa-hopper-pipeline` asks, for each candidate ring depth, whether the plan
fits (`SmemPlan.fits`), instead of lowering trial copies of the module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType

from tawa.dialects import aref, nvgpu
from tawa.target.hopper import (
    MAX_SMEM_BYTES,
    MBARRIER_BYTES,
    SMEM_ALIGN_SLACK,
    SMEM_ALIGNMENT,
    SWIZZLES,
    TMA_INNER_BOX_ALIGN,
)
from tawa.transforms.partition.warp_groups import BLOCKED_LAYOUTS
from tawa.transforms.utils import fail


def slot_swizzle(row_bytes: int) -> int | None:
    """The swizzle of a slot whose tile rows have `row_bytes` bytes: the
    widest of 128, 64 and 32 bytes that divides the row (a row is then whole
    swizzle spans, one TMA box per span-wide column chunk), or None when
    none does.  The widest span has the fewest bank conflicts and boxes
    (BLOCK_K = 64 bf16: 128B; 32 bf16: 64B; 16 bf16 or 32 fp8: 32B)."""
    return next((s for s in sorted(SWIZZLES, reverse=True) if s and row_bytes % s == 0), None)


def read_by_threads(create: aref.CreateOp) -> bool:
    """Whether only threads read the slots of the aref `create` makes: its
    kernel has no dots, so its consumers' tiles take blocked layouts (the
    `aref.warp_specialize` that uses it carries `BLOCKED_LAYOUTS`)."""
    for use in create.result.uses:
        op = use.operation
        while op is not None and not isinstance(op, aref.WarpSpecializeOp):
            op = op.parent_op()
        if op is not None:
            return BLOCKED_LAYOUTS in op.attributes
    return False


def thread_slot_swizzle(cols: int, element_bytes: int) -> int | None:
    """The swizzle of a slot of rows of `cols` elements that only threads
    read (`nvgpu.frag_load_shared` into blocked layouts, in kernels without
    dots): none, or None where its TMA boxes (`SmemType.chunk_columns`)
    would not be whole 16-byte units.  Eight neighbouring lanes read 128
    contiguous bytes of a row, which no swizzle makes faster, and an
    unswizzled box may be `MAX_TMA_BOX_DIM` columns wide where a swizzled
    one is a span: a 4x1024 bf16 slot is 4 boxes, not 16 (each box costs
    the producer an instruction and the copy engine a request)."""
    return 0 if nvgpu.unswizzled_chunk_columns(cols) * element_bytes % TMA_INNER_BOX_ALIGN == 0 else None


def row_bands_fit(rows: int, row_bytes: int, bands: int) -> bool:
    """Whether a slot tile of `rows` rows of `row_bytes` bytes splits into
    `bands` row bands that are each a TMA box starting on the slot's
    swizzle pattern: rows exactly one swizzle span wide (one box per band)
    and bands of whole patterns.  What a cluster's CTAs need to multicast
    the tile, each loading one band (`tawa-cluster`).  Example: a 128×64
    bf16 tile (rows of 128 bytes, 128B swizzle) splits into 2 bands of 64
    rows; a 64×128 bf16 tile (rows of 256 bytes) does not."""
    swizzle = slot_swizzle(row_bytes)
    if swizzle is None or row_bytes != swizzle or rows % bands:
        return False
    return (rows // bands) * row_bytes % SMEM_ALIGNMENT[swizzle] == 0


@dataclass(frozen=True)
class Placement:
    """One allocation: its byte offset and what lives there."""

    offset: int
    type: nvgpu.SmemType | nvgpu.MBarrierType


@dataclass(frozen=True)
class RingLayout:
    """The shared-memory form of one aref."""

    depth: int
    tiles: tuple[TensorType, ...]
    buffers: tuple[Placement, ...]
    """One `depth x tile` buffer per payload tile."""
    full: Placement
    empty: Placement
    tx_bytes: int
    """Bytes of one stage: what the producer's TMA loads deliver to `full[s]`."""


@dataclass(frozen=True)
class SmemPlan:
    """The rings of one kernel, keyed by their `aref.create` ops."""

    rings: dict[aref.CreateOp, RingLayout]
    used: int
    staging: tuple[Placement, ...] = ()
    """The TMA-store epilogue's staging tiles, after the rings."""

    @property
    def total(self) -> int:
        """Bytes the kernel asks for: the rings plus the alignment slack."""
        return self.used + SMEM_ALIGN_SLACK

    @property
    def fits(self) -> bool:
        return self.total <= MAX_SMEM_BYTES


class _Bump:
    def __init__(self) -> None:
        self.next = 0

    def place(self, t: nvgpu.SmemType | nvgpu.MBarrierType) -> Placement:
        if isinstance(t, nvgpu.MBarrierType):
            align, size = MBARRIER_BYTES, MBARRIER_BYTES * t.count.data
        else:
            align, size = SMEM_ALIGNMENT[t.swizzle.data], t.num_bytes()
        offset = -(-self.next // align) * align
        self.next = offset + size
        return Placement(offset, t)


def _ring_buffers(create: aref.CreateOp, depth: int, bump: _Bump,
                  who: str) -> tuple[tuple[Placement, ...], tuple[TensorType, ...], int]:
    """Places one ring's tile buffers: (buffers, payload tiles, bytes per stage)."""
    t = create.result.type
    assert isinstance(t, aref.ArefType)
    threads = read_by_threads(create)
    buffers, tiles, tx = [], [], 0
    for payload in t.types:
        assert isinstance(payload, TensorType)
        shape = tuple(payload.get_shape())
        et = payload.get_element_type()
        row_bytes = shape[-1] * nvgpu.element_bytes(et)
        if threads:
            swizzle = thread_slot_swizzle(shape[-1], nvgpu.element_bytes(et))
            rule = f"chunks of whole {TMA_INNER_BOX_ALIGN}-byte units (a TMA box)"
        else:
            swizzle = slot_swizzle(row_bytes)
            rule = "a multiple of " + "/".join(str(s) for s in sorted(SWIZZLES) if s) + " bytes (a swizzle span)"
        if len(shape) != 2 or swizzle is None:
            got = f"{row_bytes}-byte rows" if len(shape) == 2 else f"{len(shape)} dimensions"
            raise fail(create, f"{who}: a {payload} slot is not supported: tiles must be 2-D with rows of {rule}, "
                               f"got {got}")
        smem = nvgpu.SmemType([depth, *shape], et, swizzle)
        buffers.append(bump.place(smem))
        tiles.append(payload)
        tx += smem.num_bytes() // depth
    return tuple(buffers), tuple(tiles), tx


def plan_shared_memory(
    creates: Sequence[aref.CreateOp],
    depth_of: Callable[[aref.CreateOp], int] | None = None,
    who: str = "tawa-lower-aref",
    staging: Sequence[nvgpu.SmemType] = (),
) -> SmemPlan:
    """The plan of these arefs, in order, then of the `staging` tiles.
    `depth_of` overrides the depth written in an aref's type (the pipeline
    asks "what if these rings had D slots?"); `who` names the pass in errors
    about unsupported slots."""
    bump = _Bump()
    depths = {}
    for c in creates:
        t = c.result.type
        assert isinstance(t, aref.ArefType)
        depths[c] = t.depth.data if depth_of is None else depth_of(c)
    # Every ring's tiles first, then every ring's barriers: a barrier array
    # (8 bytes a slot) between two tile buffers would cost the next buffer's
    # alignment (up to 1 KiB) in padding.
    buffers = {c: _ring_buffers(c, depths[c], bump, who) for c in creates}
    rings = {}
    for c in creates:
        full = bump.place(nvgpu.MBarrierType(depths[c]))
        empty = bump.place(nvgpu.MBarrierType(depths[c]))
        placed_buffers, tiles, tx = buffers[c]
        rings[c] = RingLayout(depths[c], tiles, placed_buffers, full, empty, tx)
    placed = tuple(bump.place(t) for t in staging)
    return SmemPlan(rings, bump.next, placed)


def extend_plan(allocations: Sequence[nvgpu.SmemAllocOp], staging: Sequence[nvgpu.SmemType]) -> SmemPlan:
    """Places `staging` tiles after a kernel's existing allocations (the
    rings `tawa-lower-aref` placed), as `plan_shared_memory` would have
    placed them after the same rings: `tawa-stage-stores` adds the
    TMA-store epilogue's tiles this way, `tawa-stage-operands` the 8-bit
    A operands' buffers."""
    bump = _Bump()
    bump.next = max((a.offset.value.data + a.num_bytes() for a in allocations), default=0)
    placed = tuple(bump.place(t) for t in staging)
    return SmemPlan({}, bump.next, placed)
