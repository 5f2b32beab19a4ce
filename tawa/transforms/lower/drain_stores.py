"""`tawa-drain-stores`: a consumer's TMA stores have read shared memory before it ends.

Runs after `tawa-lower-tile`.  A TMA store reads its staging buffer
asynchronously, and the epilogue waits for that only before the buffer is
next written (`tawa.transforms.lower.tma_epilogue`), so the last store of a
consumer partition may still be reading when the partition ends, and the
CTA's shared memory with it.  In each consumer partition that issues
`nvgpu.tma_store`s, the pass adds one wait at its end, by the thread that
stores:

    scf.if %elected { nvgpu.tma_store_wait 0 }

(`%elected`: the partition's first thread, or where the warp groups store
their own rows each warp group's first; a bulk group belongs to the thread
that commits it.)  Which it is, it reads from the IR: the warp groups store
their own rows where a staging buffer the stores read holds as many rows as
the fragments written to it, a warp group's (`stores_by_group`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Region
from xdsl.passes import ModulePass

from tawa.dialects import nvgpu
from tawa.transforms.lower.partitions import consumer_partitions
from tawa.transforms.lower.tma_epilogue import drain_at_end, stores_by_group

NAME = "tawa-drain-stores"


def staged_by_group(region: Region, groups: int) -> bool | None:
    """Whether the warp groups of the consumer partition `region` (of
    `groups` warp groups) store their own rows; None where it issues no
    TMA store."""
    buffers = {o.source for o in region.walk() if isinstance(o, nvgpu.TmaStoreOp)}
    if not buffers:
        return None
    return any(stores_by_group(w.dest, groups, w.fragment.type.get_shape()[0]) for w in region.walk()
               if isinstance(w, nvgpu.FragmentStoreSharedOp) and w.dest in buffers
               and isinstance(w.fragment.type, nvgpu.FragmentType))


@dataclass(frozen=True)
class DrainStoresPass(ModulePass):
    """Waits, at the end of each consumer partition, until its TMA stores have read shared memory."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for c in list(consumer_partitions(op)):
            by_group = staged_by_group(c.region, c.groups)
            if by_group is not None:
                drain_at_end(c.region, c.first_group, by_group)
