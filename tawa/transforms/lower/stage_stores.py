"""`tawa-stage-stores`: the consumer stores that take the TMA-store epilogue.

Runs after `tawa-lower-aref` (the rings are in shared memory) and before
`tawa-lower-tile`.  For each `aref.warp_specialize` it decides which
`tile.store`s of the consumer partitions take the TMA-store epilogue
(`epilogue`), with which staging (`staging`) and who stores them
(`store-group`), allocates their staging buffers after the kernel's rings
and a tensor map per memref and box, records the kernel's shared-memory
size, and makes each such store an `nvgpu.staged_store` that names its
buffer and map:

    tile.store %c, %C[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>
    →
    %staging = nvgpu.smem_alloc offset(...) : !nvgpu.smem<2x128x64xbf16, swizzle = 128>
    %tmap_C = nvgpu.tma_descriptor %C : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>
    ...
    nvgpu.staged_store %c, %C[%m0, %n0] via %staging, %tmap_C : ...

The buffer's type carries every decision (`nvgpu.staged_store`): the whole
tile or span-wide column chunks, how many buffers, the partition's rows or a
warp group's.  `tawa-lower-tile` writes each staged store out, and
`tawa-drain-stores` adds the final wait.  The rules are those of
`tawa.transforms.lower.tma_epilogue` (`stage_stores`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tawa.dialects import aref
from tawa.transforms.lower.partitions import check_arefs_lowered
from tawa.transforms.lower.tma_epilogue import EPILOGUES, STAGINGS, STORE_GROUPS, stage_stores
from tawa.transforms.utils import check_choice, kernel_of

NAME = "tawa-stage-stores"


@dataclass(frozen=True)
class StageStoresPass(ModulePass):
    """Decides the consumer stores that take the TMA-store epilogue and allocates their staging buffers."""

    name = NAME

    epilogue: str = "auto"
    """`auto` (TMA stores where the staging buffers fit in shared memory),
    `tma` (every store, an error where not possible) or `threads` (none:
    each thread stores its fragment)."""
    staging: str = "auto"
    """The TMA-store epilogue's staging: `full` (the whole tile in one
    buffer), `subtiled` (span-wide column chunks in two alternating
    buffers), `single` (the chunks in one buffer), `full-in-loops` (full
    for the stores in a loop of the program, single for the others) or
    `auto` (the first of `AUTO_STAGINGS`, then of `LAST_STAGINGS`, that
    fits)."""
    store_group: str = "auto"
    """Who stores a staged tile: `cta` (one thread, after a barrier over all
    the consumer warp groups), `warpgroup` (one thread of each warp group,
    its own rows) or `auto` (per warp group in a partition of 2 or more
    warp groups with a loop `tawa-overlap-dots` rotated, where
    `tawa-pingpong` has them take turns, and for the stores in a loop of
    the program; else per CTA)."""

    def __post_init__(self) -> None:
        check_choice("epilogue", self.epilogue, EPILOGUES, NAME)
        check_choice("staging", self.staging, STAGINGS, NAME)
        check_choice("store_group", self.store_group, STORE_GROUPS, NAME)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel = kernel_of(ws, NAME)
            check_arefs_lowered(ws, NAME)
            stage_stores(ws, kernel, self.epilogue, NAME, self.staging, self.store_group)
