"""nvgpu ops of one TMA instruction each: `tawa-split-tma-chunks` lowers
`nvgpu.tma_load` / `nvgpu.tma_store` of a tile to one box per column chunk
(the box of the tensor map the runtime builds, `tawa.backend.ptx.abi`: the
tile, or one chunk of it when its rows are wider than the swizzle span),
each with its own coordinates and its place in the stage, and closes a
store's bulk group with its own op.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I16, I64, Float32Type, IndexType, IntegerAttr, StringAttr, UnitAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from tawa.dialects.nvgpu.types import MBarrierType, SmemType, TmaDescriptorType, element_bytes
from tawa.target.hopper import L2_PRIORITIES, MAX_CLUSTER_SIZE


def box_shape(desc: TmaDescriptorType) -> tuple[int, ...]:
    """The TMA box of a descriptor: its tile with the columns of one chunk."""
    return (*desc.get_shape()[:-1], desc.chunk_columns())


def _verify_box(name: str, desc: Attribute, coords: Sequence[SSAValue], smem: Attribute, offset: int) -> None:
    assert isinstance(desc, TmaDescriptorType) and isinstance(smem, SmemType)
    box = box_shape(desc)
    if len(coords) != len(box):
        raise VerifyException(f"{name} expects {len(box)} coordinates, got {len(coords)}")
    if desc.element_type != smem.element_type or desc.swizzle != smem.swizzle:
        raise VerifyException(f"{name}: element type and swizzle of {desc} and {smem} differ")
    rows, cols = smem.get_shape()[-2:]
    w = smem.chunk_columns()
    lead = [d for d in box[:-2] if d != 1]
    if lead or tuple(box[-2:]) != (rows, w):
        raise VerifyException(f"{name}: box {list(box)} is not a {rows}x{w} chunk of the tile of {smem}")
    chunk_bytes = rows * w * element_bytes(smem.element_type)
    if offset < 0 or offset % chunk_bytes or offset >= rows * cols * element_bytes(smem.element_type):
        raise VerifyException(f"{name} offset must be a chunk's place in the stage (a multiple of "
                              f"{chunk_bytes} below {rows * cols * element_bytes(smem.element_type)}), got {offset}")


@irdl_op_definition
class TmaLoadBoxOp(IRDLOperation):
    """One `cp.async.bulk.tensor` global → shared: the descriptor's box
    (`box_shape`: its tile, or a column chunk of it) at element coordinates
    `coords` (outermost first; out-of-bounds elements read 0) lands at byte
    `offset` of stage `stage` of `dest` (the chunk's place) and completes
    its bytes on `barriers[barrier_index]`; `l2` and `multicast` as on
    `nvgpu.tma_load`.  Issued by one thread.

    Example: `nvgpu.tma_load_box %tq[%m0, %c64], %sq[%s] offset 16384, %full[%s] : !nvgpu.tma_desc<128x128xbf16, swizzle = 128>, !nvgpu.smem<2x128x128xbf16, swizzle = 128>, !nvgpu.mbarrier<2>`
    """

    name = "nvgpu.tma_load_box"
    desc = operand_def(TmaDescriptorType)
    coords = var_operand_def(IndexType)
    dest = operand_def(SmemType)
    stage = operand_def(IndexType)
    barriers = operand_def(MBarrierType)
    barrier_index = operand_def(IndexType)
    offset = prop_def(IntegerAttr[I64])
    l2 = opt_prop_def(StringAttr)
    multicast = opt_prop_def(IntegerAttr[I16])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$desc `[` $coords `]` `,` $dest `[` $stage `]` `offset` $offset `,` $barriers `[` $barrier_index `]` "
        "(`l2` $l2^)? (`multicast` $multicast^)? attr-dict `:` type($desc) `,` type($dest) `,` type($barriers)"
    )

    def verify_(self) -> None:
        _verify_box(self.name, self.desc.type, self.coords, self.dest.type, self.offset.value.data)
        if self.l2 is not None and self.l2.data not in L2_PRIORITIES:
            raise VerifyException(f"{self.name} l2 must be one of {', '.join(L2_PRIORITIES)}, got {self.l2.data!r}")
        if self.multicast is not None and not 0 < self.multicast.value.data < 1 << MAX_CLUSTER_SIZE:
            raise VerifyException(
                f"{self.name} multicast must be a non-empty mask of the {MAX_CLUSTER_SIZE} CTA ranks "
                f"a cluster may have, got {self.multicast.value.data}"
            )


@irdl_op_definition
class TmaStoreBoxOp(IRDLOperation):
    """One `cp.async.bulk.tensor` shared → global: the descriptor's box
    read at byte `offset` of stage `stage` of `source` goes to element
    coordinates `coords` (out-of-bounds elements are dropped), as part of
    the issuing thread's bulk group that its next `nvgpu.tma_store_commit`
    closes.  With `add` the box is added into (`cp.reduce.async.bulk.tensor
    ... .add`, f32).

    Example: `nvgpu.tma_store_box %sc[%c0] offset 16384, %tc[%m0, %n64] : !nvgpu.smem<1x128x256xbf16, swizzle = 128>, !nvgpu.tma_desc<128x256xbf16, swizzle = 128>`
    """

    name = "nvgpu.tma_store_box"
    source = operand_def(SmemType)
    stage = operand_def(IndexType)
    desc = operand_def(TmaDescriptorType)
    coords = var_operand_def(IndexType)
    offset = prop_def(IntegerAttr[I64])
    add = opt_prop_def(UnitAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$source `[` $stage `]` `offset` $offset `,` $desc `[` $coords `]` (`add` $add^)? attr-dict "
        "`:` type($source) `,` type($desc)"
    )

    def verify_(self) -> None:
        _verify_box(self.name, self.desc.type, self.coords, self.source.type, self.offset.value.data)
        st = self.source.type
        assert isinstance(st, SmemType)
        if self.add is not None and not isinstance(st.element_type, Float32Type):
            raise VerifyException(f"{self.name} add adds f32 elements, got {st.element_type}")


@irdl_op_definition
class TmaStoreCommitOp(IRDLOperation):
    """`cp.async.bulk.commit_group`: the issuing thread's TMA stores since
    its last commit become one bulk group (what `nvgpu.tma_store_wait`
    counts).

    Example: `nvgpu.tma_store_commit`
    """

    name = "nvgpu.tma_store_commit"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"
