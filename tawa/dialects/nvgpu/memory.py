"""nvgpu ops on shared memory: allocation, mbarriers, TMA copies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I16,
    I32,
    I64,
    Float32Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
)
from xdsl.ir import (
    Attribute,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException

from tawa.dialects.nvgpu.types import MBarrierType, SmemType, TmaDescriptorType, element_bytes
from tawa.target.hopper import (
    L2_PRIORITIES,
    MAX_CLUSTER_SIZE,
    MAX_MBARRIER_COUNT,
    MAX_TMA_BOX_DIM,
    MBARRIER_BYTES,
    SMEM_ALIGNMENT,
)

# --------------------------------------------------------------------------- helpers


def _positive_prop(value: int, limit: int, what: str) -> None:
    if not 0 < value <= limit:
        raise VerifyException(f"{what} must be in [1, {limit}], got {value}")


# --------------------------------------------------------------------------- memory


@irdl_op_definition
class SmemAllocOp(IRDLOperation):
    """Names the buffer at byte `offset` of the kernel's dynamic shared memory.

    The offset must respect the buffer's alignment: 1024 bytes for 128B
    swizzle (512 / 256 for 64B / 32B), 128 bytes for unswizzled tiles and 8
    bytes for mbarriers.

    Example: `%a = nvgpu.smem_alloc offset(0) : !nvgpu.smem<4x128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.smem_alloc"
    offset = prop_def(IntegerAttr[I64])
    result = result_def(base(SmemType) | base(MBarrierType))
    traits = traits_def(Pure())
    assembly_format = "`offset` `(` $offset `)` attr-dict `:` type($result)"

    def __init__(self, offset: int, type: SmemType | MBarrierType):
        super().__init__(properties={"offset": IntegerAttr(offset, 64)}, result_types=[type])

    def alignment(self) -> int:
        t = self.result.type
        if isinstance(t, MBarrierType):
            return MBARRIER_BYTES
        assert isinstance(t, SmemType)
        return SMEM_ALIGNMENT[t.swizzle.data]

    def num_bytes(self) -> int:
        t = self.result.type
        if isinstance(t, MBarrierType):
            return MBARRIER_BYTES * t.count.data
        assert isinstance(t, SmemType)
        return t.num_bytes()

    def verify_(self) -> None:
        off = self.offset.value.data
        if off < 0 or off % self.alignment():
            raise VerifyException(
                f"nvgpu.smem_alloc offset {off} must be a non-negative multiple of "
                f"{self.alignment()} for {self.result.type}"
            )


@irdl_op_definition
class SmemAddressOp(IRDLOperation):
    """The 32-bit shared::cta address of a buffer's first byte (for address
    arithmetic in `arith`, e.g. a wgmma descriptor's start address).

    Example: `%a = nvgpu.smem_address %sa : !nvgpu.smem<4x128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.smem_address"
    source = operand_def(SmemType)
    result = result_def(I32)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source)"

    def __init__(self, source: SSAValue):
        super().__init__(operands=[source], result_types=[IntegerType(32)])


# --------------------------------------------------------------------------- mbarriers


class _MBarrierOp(IRDLOperation):
    """Common fields: `barriers[index]` selects one mbarrier of an array."""

    barriers = operand_def(MBarrierType)
    index = operand_def(IndexType)


@irdl_op_definition
class MBarrierInitOp(_MBarrierOp):
    """`mbarrier.init`: phase 0, expecting `count` arrivals per phase.  Executed
    by one thread, before a fence and a CTA-wide barrier.

    Example: `nvgpu.mbarrier_init %full[%i], 1 : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_init"
    count = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$barriers `[` $index `]` `,` $count attr-dict `:` type($barriers)"

    def verify_(self) -> None:
        _positive_prop(self.count.value.data, MAX_MBARRIER_COUNT, "mbarrier_init count")


@irdl_op_definition
class MBarrierArriveOp(IRDLOperation):
    """`mbarrier.arrive`: one arrival of the executing thread.  With `cta`,
    the arrival lands on the barrier at the same shared-memory offset in the
    CTA of that rank in the thread's cluster (`mapa` to its shared::cluster
    address, then `mbarrier.arrive.shared::cluster`, release at CTA scope as
    CUTLASS emits it: `.release.cluster` costs a GPU-wide membar per arrive,
    ../shared/reference/hopper-verified.md pitfall 1); its own rank is allowed.

    Example: `nvgpu.mbarrier_arrive %empty[%s] : !nvgpu.mbarrier<4>`
    `nvgpu.mbarrier_arrive %empty[%s] cta(%r) : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_arrive"
    barriers = operand_def(MBarrierType)
    index = operand_def(IndexType)
    cta = opt_operand_def(IndexType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$barriers `[` $index `]` (`cta` `(` $cta^ `)`)? attr-dict `:` type($barriers)"


@irdl_op_definition
class MBarrierArriveExpectTxOp(_MBarrierOp):
    """`mbarrier.arrive.expect_tx`: one arrival, and `bytes` more bytes of
    asynchronous transactions (TMA) expected before the phase can complete.

    Example: `nvgpu.mbarrier_arrive_expect_tx %full[%s], 49152 : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_arrive_expect_tx"
    bytes = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$barriers `[` $index `]` `,` $bytes attr-dict `:` type($barriers)"

    def verify_(self) -> None:
        _positive_prop(self.bytes.value.data, MAX_MBARRIER_COUNT, "expect_tx bytes")


@irdl_op_definition
class MBarrierTryWaitParityOp(_MBarrierOp):
    """`mbarrier.try_wait.parity`: true once the phase with parity `parity`
    (0 or 1) of the barrier has completed.  It may also return false after a
    time limit, so callers loop.

    Example: `%done = nvgpu.mbarrier_try_wait_parity %full[%s], %ph : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_try_wait_parity"
    barriers = operand_def(MBarrierType)  # redeclared: keeps (barriers, index, parity) order
    index = operand_def(IndexType)
    parity = operand_def(IndexType)
    result = result_def(i1)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$barriers `[` $index `]` `,` $parity attr-dict `:` type($barriers)"
    )


@irdl_op_definition
class MBarrierWaitParityOp(_MBarrierOp):
    """Blocks until the phase with parity `parity` has completed: a loop on
    `mbarrier.try_wait.parity` (acquire semantics: TMA writes that completed
    the phase are visible afterwards).

    The bounded form (`tawa-bound-waits`, the watchdog) carries `wait_id`, its
    entry in the kernel's wait table (`#nvgpu.kernel<..., waits = [...]>`),
    and `timeout_ns`: a wait still unsatisfied `timeout_ns` nanoseconds
    (`%globaltimer`) after its first failed try records (CTA, thread, index,
    parity, wait id) in the kernel's watchdog buffer and traps
    (`tawa.backend.ptx.abi.WATCHDOG_FIELDS`), as the ops that
    `tawa-expand-bounded-waits` writes it out into do.

    Examples: `nvgpu.mbarrier_wait_parity %full[%s], %ph : !nvgpu.mbarrier<4>`,
    `nvgpu.mbarrier_wait_parity %full[%s], %ph watchdog(3, 2000000000 ns) : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_wait_parity"
    barriers = operand_def(MBarrierType)  # redeclared: keeps (barriers, index, parity) order
    index = operand_def(IndexType)
    parity = operand_def(IndexType)
    wait_id = opt_prop_def(IntegerAttr[I32])
    timeout_ns = opt_prop_def(IntegerAttr[I64])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$barriers `[` $index `]` `,` $parity "
        "(`watchdog` `(` $wait_id^ `,` $timeout_ns `ns` `)`)? attr-dict `:` type($barriers)"
    )

    def verify_(self) -> None:
        if (self.wait_id is None) != (self.timeout_ns is None):
            raise VerifyException("nvgpu.mbarrier_wait_parity needs both wait_id and timeout_ns, or neither")
        if self.wait_id is not None and self.wait_id.value.data < 0:
            raise VerifyException(f"nvgpu.mbarrier_wait_parity wait_id must be >= 0, got {self.wait_id.value.data}")
        if self.timeout_ns is not None and self.timeout_ns.value.data <= 0:
            raise VerifyException(
                f"nvgpu.mbarrier_wait_parity timeout_ns must be positive, got {self.timeout_ns.value.data}"
            )


@irdl_op_definition
class MBarrierTimedWaitParityOp(IRDLOperation):
    """The spin of a bounded wait (`tawa-expand-bounded-waits` makes it of
    a watchdog wait): `mbarrier.try_wait.parity` until the phase with
    parity `parity` (0 or 1, 32 bits, as the instruction takes it) has
    completed, or until `timeout_ns` nanoseconds of `%globaltimer` have
    passed since its first failed try (the timer is read only once a try
    failed); true when it timed out.  Acquire semantics when it did not,
    as `nvgpu.mbarrier_wait_parity`.

    Example: `%late = nvgpu.mbarrier_timed_wait_parity %full[%s], %ph32, 2000000000 ns : !nvgpu.mbarrier<4>`
    """

    name = "nvgpu.mbarrier_timed_wait_parity"
    barriers = operand_def(MBarrierType)
    index = operand_def(IndexType)
    parity = operand_def(I32)
    timeout_ns = prop_def(IntegerAttr[I64])
    result = result_def(i1)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$barriers `[` $index `]` `,` $parity `,` $timeout_ns `ns` attr-dict `:` type($barriers)"

    def __init__(self, barriers: SSAValue, index: SSAValue, parity: SSAValue, timeout_ns: int):
        super().__init__(operands=[barriers, index, parity], properties={"timeout_ns": IntegerAttr(timeout_ns, 64)},
                         result_types=[i1])

    def verify_(self) -> None:
        if self.timeout_ns.value.data <= 0:
            raise VerifyException(f"{self.name} timeout_ns must be positive, got {self.timeout_ns.value.data}")


@irdl_op_definition
class SmemTileOp(IRDLOperation):
    """The tile held in stage `stage` of `source`, read in place (no copy).

    The bridge between `tawa-lower-aref` (which turns the values an
    `aref.get` returns into the slot they were written to) and
    `tawa-lower-tile` (which feeds such tiles to wgmma through descriptors);
    none survives lowering.

    Example: `%a = nvgpu.smem_tile %sa[%s] : !nvgpu.smem<4x128x64xbf16, swizzle = 128> -> tensor<128x64xbf16>`
    """

    name = "nvgpu.smem_tile"
    source = operand_def(SmemType)
    stage = operand_def(IndexType)
    result = result_def(TensorType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$source `[` $stage `]` attr-dict `:` type($source) `->` type($result)"

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        assert isinstance(src, SmemType) and isinstance(res, TensorType)
        if tuple(res.get_shape()) != src.get_shape()[1:] or res.get_element_type() != src.element_type:
            raise VerifyException(
                f"nvgpu.smem_tile result must be one stage of {src}, got {res}"
            )


@irdl_op_definition
class StagedStoreOp(IRDLOperation):
    """`tile.store` of `value` to the box at `offsets` of `dest` (elements
    outside `dest` are dropped) that takes the TMA-store epilogue: the tile
    is written to the shared-memory buffer `staging` and leaves by TMA stores
    through the tensor map `tmap`.

    The bridge between `tawa-stage-stores` (which decides the stores that
    take the epilogue, their staging and who stores them, and allocates the
    buffers and maps) and `tawa-lower-tile` (which writes the epilogue out:
    `tawa.transforms.lower.tma_epilogue`); none survives lowering.  The
    buffer's type says the staging: `B x r x c` is B buffers of r rows and c
    columns, c the tile's columns (the whole tile) or one swizzle span (the
    tile in span-wide column chunks, one TMA box each, alternating over the
    B buffers), r the tile's rows (one store per CTA) or a warp group's rows
    (each warp group of the consumer partition stages and stores its own
    rows, in B / G buffers of its own).  Stores that name the same buffer
    share it.  With `add` it is `tile.atomic_add`'s: the tile is added into
    the box (the TMA stores reduce, `nvgpu.tma_store ... add`).

    Example: `nvgpu.staged_store %c, %C[%m0, %n0] via %staging, %tmap_C : tensor<128x256xbf16>, memref<?x?xbf16>, !nvgpu.smem<2x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.staged_store"
    value = operand_def(TensorType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    staging = operand_def(SmemType)
    tmap = operand_def(TmaDescriptorType)
    add = opt_prop_def(UnitAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$value `,` $dest `[` $offsets `]` `via` $staging `,` $tmap (`add` $add^)? attr-dict "
        "`:` type($value) `,` type($dest) `,` type($staging) `,` type($tmap)"
    )

    def __init__(self, value: SSAValue, dest: SSAValue, offsets: Sequence[SSAValue], staging: SSAValue,
                 tmap: SSAValue, add: bool = False):
        super().__init__(operands=[value, dest, offsets, staging, tmap],
                         properties={"add": UnitAttr()} if add else {})

    def verify_(self) -> None:
        vt, mt, st = self.value.type, self.dest.type, self.staging.type
        assert isinstance(vt, TensorType) and isinstance(mt, MemRefType) and isinstance(st, SmemType)
        shape = tuple(vt.get_shape())
        if len(shape) != 2 or any(n < 1 for n in shape):
            raise VerifyException(f"{self.name} stores a static 2-D tile, got {vt}")
        if len(self.offsets) != mt.get_num_dims():
            raise VerifyException(f"{self.name} expects {mt.get_num_dims()} offsets for {mt}, got {len(self.offsets)}")
        if not vt.get_element_type() == mt.get_element_type() == st.element_type:
            raise VerifyException(f"{self.name}: the tile {vt}, the memref {mt} and the staging buffer {st} must "
                                  "have one element type")
        if len(st.get_shape()) != 3:
            raise VerifyException(f"{self.name} stages through buffers of 2-D tiles (`B x rows x cols`), got {st}")
        rows, cols = st.get_shape()[1:]
        if shape[0] % rows or shape[1] % cols:
            raise VerifyException(f"{self.name}: the staging buffer {st} holds no whole rows and column chunks of "
                                  f"the tile {vt}")
        _verify_tma_tile(self.tmap.type, self.offsets, st, self.name)
        _verify_add(self, st)


@irdl_op_definition
class StagedOperandOp(IRDLOperation):
    """The tile `value`, read by a wgmma from the shared-memory buffer
    `buffer` after the consumer threads wrote it there: each warp group of
    the consumer partition its own rows.

    The bridge between `tawa-stage-operands` (which gives a dot's operand
    computed in registers a buffer where wgmma reads it from shared memory
    only: an 8-bit or transposed A, any B) and `tawa-lower-tile` (which
    writes the fragment and reads it through a wgmma descriptor:
    `tawa.transforms.lower.operand_staging`); none survives lowering.  A
    dot's lhs has `buffer` `G x r x K`: one tile per warp group of the
    partition's G, of r rows each (G·r the tile's rows) and the tile's K
    columns.  A dot's rhs has `B x K x N`: the whole tile, once or in two
    buffers that alternate (B = 2).

    Example: `%p_staged = nvgpu.staged_operand %p via %operand : tensor<128x64xf8E4M3FN>, !nvgpu.smem<2x64x64xf8E4M3FN, swizzle = 64>`
    """

    name = "nvgpu.staged_operand"
    T: ClassVar = VarConstraint("T", base(TensorType))
    value = operand_def(T)
    buffer = operand_def(SmemType)
    result = result_def(T)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$value `via` $buffer attr-dict `:` type($value) `,` type($buffer)"

    def __init__(self, value: SSAValue, buffer: SSAValue):
        super().__init__(operands=[value, buffer], result_types=[value.type])

    def verify_(self) -> None:
        vt, bt = self.value.type, self.buffer.type
        assert isinstance(vt, TensorType) and isinstance(bt, SmemType)
        if len(bt.get_shape()) != 3:
            raise VerifyException(f"{self.name} stages into one 2-D tile per warp group (`G x rows x K`), got {bt}")
        groups, rows, k = bt.get_shape()
        whole = tuple(vt.get_shape()) == (rows, k) and groups in (1, 2)  # an rhs, in one or two buffers
        if not whole and tuple(vt.get_shape()) != (groups * rows, k) or vt.get_element_type() != bt.element_type:
            raise VerifyException(f"{self.name}: {bt} holds {groups} tiles of {rows}x{k} {bt.element_type}, one "
                                  f"per warp group or the whole tile in one or two buffers: not the rows of {vt}")


# --------------------------------------------------------------------------- TMA


def _box_matches_tile(box: Sequence[int], tile: Sequence[int]) -> bool:
    """A TMA box matches a tile when they agree after dropping the box's
    leading extent-1 dimensions (a 1x128x128 box fills a 128x128 tile)."""
    box = list(box)
    while len(box) > len(tile) and box[0] == 1:
        box.pop(0)
    return tuple(box) == tuple(tile)


@irdl_op_definition
class TmaDescriptorOp(IRDLOperation):
    """Declares that the kernel argument `source` is accessed through a TMA
    tensor map with the result's box and swizzle.  The runtime builds the map
    (`cuTensorMapEncodeTiled`) and passes it as a 128-byte kernel parameter.

    Example: `%ta = nvgpu.tma_descriptor %A : memref<?x?xbf16> -> !nvgpu.tma_desc<128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.tma_descriptor"
    source = operand_def(MemRefType)
    result = result_def(TmaDescriptorType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def verify_(self) -> None:
        src, desc = self.source.type, self.result.type
        assert isinstance(src, MemRefType) and isinstance(desc, TmaDescriptorType)
        box = desc.get_shape()
        if len(box) != src.get_num_dims():
            raise VerifyException(
                f"nvgpu.tma_descriptor box rank {len(box)} differs from the memref rank "
                f"{src.get_num_dims()}"
            )
        if desc.element_type != src.get_element_type():
            raise VerifyException(
                f"nvgpu.tma_descriptor element type {desc.element_type} differs from the "
                f"memref's {src.get_element_type()}"
            )
        # A swizzled tile wider than its swizzle span is TMA-copied a column chunk at a time
        # (`tawa-split-tma-chunks`): the map's box is one chunk.
        chunk = (*box[:-1], desc.chunk_columns())
        if any(d > MAX_TMA_BOX_DIM for d in chunk):
            raise VerifyException(
                f"nvgpu.tma_descriptor box dims must be at most {MAX_TMA_BOX_DIM}, got {list(chunk)}"
            )
        if (box[-1] * element_bytes(desc.element_type)) % 16:
            raise VerifyException(
                "nvgpu.tma_descriptor inner box dimension must span a multiple of 16 bytes"
            )


def _verify_tma_tile(desc: Attribute, coords: Sequence[SSAValue], smem: Attribute, what: str) -> None:
    assert isinstance(desc, TmaDescriptorType) and isinstance(smem, SmemType)
    box = desc.get_shape()
    if len(coords) != len(box):
        raise VerifyException(f"{what} expects {len(box)} coordinates, got {len(coords)}")
    if not _box_matches_tile(box, smem.get_shape()[1:]):
        raise VerifyException(
            f"{what}: box {list(box)} does not match the shared-memory tile "
            f"{list(smem.get_shape()[1:])}"
        )
    if desc.element_type != smem.element_type or desc.swizzle != smem.swizzle:
        raise VerifyException(
            f"{what}: element type and swizzle of {desc} and {smem} differ"
        )


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """`cp.async.bulk.tensor` global → shared: copies the box at element
    coordinates `coords` (outermost first; out-of-bounds elements read 0) into
    stage `stage` of `dest`, and completes the transaction bytes on
    `barriers[barrier_index]`.  Issued by one thread.  With `l2`, the load
    carries an L2 eviction priority for the lines it brings in
    (`L2_PRIORITIES`: `evict_first` for data no other CTA will read, so that
    it does not displace data others will); a hint, which changes no value.
    With `multicast` (a mask of CTA ranks in the issuing thread's cluster),
    the box lands at the same shared-memory offset in every CTA of the mask,
    and each completes its bytes on its own barrier at `barriers`' offset
    (`.multicast::cluster`): the CTAs of a cluster that read the same tile
    fetch it from L2 once.

    Example:
    `nvgpu.tma_load %ta[%m0, %k], %sa[%s], %full[%s] : !nvgpu.tma_desc<128x64xbf16, swizzle = 128>, !nvgpu.smem<4x128x64xbf16, swizzle = 128>, !nvgpu.mbarrier<4>`
    `nvgpu.tma_load %tq[%b, %m0, %c0], %sq[%s], %full[%s] l2 "evict_first" : ...`
    `nvgpu.tma_load %tb[%n, %k], %sb[%h], %full[%s] multicast 3 : ...`
    """

    name = "nvgpu.tma_load"
    desc = operand_def(TmaDescriptorType)
    coords = var_operand_def(IndexType)
    dest = operand_def(SmemType)
    stage = operand_def(IndexType)
    barriers = operand_def(MBarrierType)
    barrier_index = operand_def(IndexType)
    l2 = opt_prop_def(StringAttr)
    multicast = opt_prop_def(IntegerAttr[I16])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$desc `[` $coords `]` `,` $dest `[` $stage `]` `,` $barriers `[` $barrier_index `]` "
        "(`l2` $l2^)? (`multicast` $multicast^)? attr-dict `:` type($desc) `,` type($dest) `,` type($barriers)"
    )

    def verify_(self) -> None:
        _verify_tma_tile(self.desc.type, self.coords, self.dest.type, "nvgpu.tma_load")
        if self.l2 is not None and self.l2.data not in L2_PRIORITIES:
            raise VerifyException(
                f"nvgpu.tma_load l2 must be one of {', '.join(L2_PRIORITIES)}, got {self.l2.data!r}"
            )
        if self.multicast is not None and not 0 < self.multicast.value.data < 1 << MAX_CLUSTER_SIZE:
            raise VerifyException(
                f"nvgpu.tma_load multicast must be a non-empty mask of the {MAX_CLUSTER_SIZE} CTA ranks "
                f"a cluster may have, got {self.multicast.value.data}"
            )


@irdl_op_definition
class TmaStoreOp(IRDLOperation):
    """`cp.async.bulk.tensor` shared → global, then `cp.async.bulk.commit_group`:
    writes stage `stage` of `source` to the box at `coords` (out-of-bounds
    elements are dropped: the tensor map clips them), one box per span-wide
    column chunk, as one bulk group of the issuing thread.  Issued by one
    thread after the writers' proxy fences and a barrier; the stage must not
    be written again until that thread's `nvgpu.tma_store_wait` (then a
    barrier) says the group has read it.  With `add` the box is added into
    instead (`cp.reduce.async.bulk.tensor ... .add`: each element's add is
    atomic, as `tile.atomic_add`'s are).

    Example:
    `nvgpu.tma_store %sc[%c0], %tc[%m0, %n0] : !nvgpu.smem<1x128x64xbf16, swizzle = 128>, !nvgpu.tma_desc<128x64xbf16, swizzle = 128>`
    """

    name = "nvgpu.tma_store"
    source = operand_def(SmemType)
    stage = operand_def(IndexType)
    desc = operand_def(TmaDescriptorType)
    coords = var_operand_def(IndexType)
    add = opt_prop_def(UnitAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$source `[` $stage `]` `,` $desc `[` $coords `]` (`add` $add^)? attr-dict `:` type($source) `,` type($desc)"
    )

    def verify_(self) -> None:
        _verify_tma_tile(self.desc.type, self.coords, self.source.type, "nvgpu.tma_store")
        _verify_add(self, self.source.type)


@irdl_op_definition
class TmaStoreWaitOp(IRDLOperation):
    """`cp.async.bulk.wait_group.read`: waits until at most `pending` of the
    executing thread's TMA store groups (the newest) may still read shared
    memory; the older ones' sources may be overwritten.

    Example: `nvgpu.tma_store_wait 0`
    """

    name = "nvgpu.tma_store_wait"
    pending = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$pending attr-dict"

    def verify_(self) -> None:
        if not 0 <= self.pending.value.data <= 7:
            raise VerifyException(
                f"nvgpu.tma_store_wait pending must be in [0, 7], got {self.pending.value.data}"
            )


def _verify_add(op: IRDLOperation, source: Attribute) -> None:
    """A TMA store that adds (`add`) adds f32 elements (the reduction's
    type is the tensor map's)."""
    assert isinstance(source, SmemType)
    if op.properties.get("add") is not None and not isinstance(source.element_type, Float32Type):
        raise VerifyException(f"{op.name} add adds f32 elements, got {source.element_type}")
