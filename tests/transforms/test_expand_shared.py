"""`tawa-expand-shared-accesses` (tawa/transforms/prepare/expand_shared.py): the
shared-memory address of every access (a vector, or 16 bytes of it) a thread reads or writes
(`frag_load_shared`, `frag_store_shared`), as the `arith` the pass writes
computes it for that thread and the lowered op's properties complete it,
equals the address the simulator's storage model gives its element
(`tawa.interpreters.nvgpu.tile_addresses`: column chunks, swizzle of the
absolute address), for every thread, value and swizzle span; with one
address per column unit where the swizzle allows (`unit_plan`), one per
vector where it does not."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    ModuleOp,
)
from xdsl.ir import Block, Region

import tawa
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.layouts import blocked_layout
from tawa.dialects.nvgpu.shared_access import access_values
from tawa.interpreters.fragments import fragment_map
from tawa.interpreters.nvgpu import tile_addresses
from tawa.transforms.prepare.expand_shared import ExpandSharedAccessesPass, unit_plan, vector_offsets

_BINARY = {
    arith.AddiOp: np.add, arith.MuliOp: np.multiply, arith.AndIOp: np.bitwise_and,
    arith.XOrIOp: np.bitwise_xor, arith.ShRUIOp: np.right_shift, arith.ShLIOp: np.left_shift,
}


def expanded(frag: nvgpu.FragmentType, smem: nvgpu.SmemType, offset: int, stage: int, row: int,
             load: bool) -> list:
    """The ops of a function that loads (or stores) `frag` at rows from
    `row` of stage `stage` of a buffer at `offset`, after the pass."""
    block = Block()
    ops: list = [
        buf := nvgpu.SmemAllocOp(offset, smem),
        s := arith.ConstantOp(IntegerAttr(stage, IndexType())),
        r := arith.ConstantOp(IntegerAttr(row, IndexType())),
    ]
    if load:
        ops.append(nvgpu.FragmentLoadSharedOp.build(operands=[buf.result, s.result, r.result], result_types=[frag]))
    else:
        zeros = nvgpu.FragmentZerosOp.build(result_types=[frag])
        ops += [zeros, nvgpu.FragmentStoreSharedOp.build(operands=[zeros.results[0], buf.result, s.result, r.result])]
    block.add_ops([*ops, func.ReturnOp()])
    module = ModuleOp([func.FuncOp("k", ((), ()), Region(block))])
    module.verify()
    ExpandSharedAccessesPass().apply(tawa.context(), module)
    module.verify()
    return list(block.ops)


def thread_addresses(ops: list, threads: int = 128) -> tuple[np.ndarray, object]:
    """addrs[thread, value] of the lowered access among `ops`, each thread's
    operands computed by evaluating the pass's arithmetic for it."""
    vals: dict = {}
    tid = np.arange(threads, dtype=np.int64)
    for op in ops:
        if isinstance(op, nvgpu.SmemAllocOp):
            vals[op.result] = op.offset.value.data
        elif isinstance(op, nvgpu.SmemAddressOp):
            vals[op.result] = vals[op.source]
        elif isinstance(op, arith.ConstantOp):
            vals[op.result] = op.value.value.data
        elif isinstance(op, nvgpu.ThreadIdOp):
            vals[op.result] = tid
        elif isinstance(op, arith.IndexCastOp):
            vals[op.result] = vals[op.input]
        elif type(op) in _BINARY:
            vals[op.results[0]] = _BINARY[type(op)](vals[op.operands[0]], vals[op.operands[1]]) & 0xFFFFFFFF
        elif isinstance(op, nvgpu.FragmentLoadSharedAtOp | nvgpu.FragmentStoreSharedAtOp):
            t = op.result.type if isinstance(op, nvgpu.FragmentLoadSharedAtOp) else op.fragment.type
            vec, eb = access_values(t), nvgpu.element_bytes(t.element_type)
            at = [np.broadcast_to(vals[a], tid.shape) for a in op.addresses]
            cols = [at[base] + imm + j * eb
                    for base, imm in zip(op.bases.get_values(), op.offsets.get_values()) for j in range(vec)]
            return np.stack(cols, axis=1), op
        elif not isinstance(op, nvgpu.FragmentZerosOp | func.ReturnOp):
            raise AssertionError(f"unexpected op {op.name}")
    raise AssertionError("no lowered access")


CASES = [
    # (cols, element, swizzle, rows, row0, offset, stage): the GEMM's staging tile, second warp group
    (256, BFloat16Type(), 128, 128, 64, 0, 0),
    (128, Float16Type(), 128, 64, 0, 16384, 1),  # one stage further
    (32, Float16Type(), 64, 64, 0, 512, 0),  # 64B swizzle
    (256, Float32Type(), 128, 128, 64, 0, 0),  # f32: a thread's 8 columns span two 16-byte units
    (16, Float32Type(), 64, 64, 0, 512, 1),  # f32, 64B swizzle
    (16, BFloat16Type(), 32, 128, 64, 256, 0),  # 32B swizzle
    (128, Float8E4M3FNType(), 128, 64, 0, 0, 1),  # fp8 pairs (stores only)
]


@pytest.mark.parametrize("load", [False, True], ids=["store", "load"])
@pytest.mark.parametrize(("cols", "element", "swizzle", "rows", "row0", "offset", "stage"), CASES)
def test_unit_addresses_are_the_storage_addresses(cols, element, swizzle, rows, row0, offset, stage, load):
    if load and nvgpu.element_bytes(element) == 1:
        pytest.skip("frag_load_shared reads f32, bf16 and f16")
    frag = nvgpu.FragmentType([64, cols], element, nvgpu.WGMMA)
    smem = nvgpu.SmemType([2, rows, cols], element, swizzle)
    ops = expanded(frag, smem, offset, stage, row0, load)
    got, op = thread_addresses(ops)
    # One address per 16-byte unit of the span (at most 8), shared by several vectors.
    assert len(op.addresses) <= 8 and len(op.addresses) < len(op.bases)
    stage_bytes = rows * cols * nvgpu.element_bytes(element)
    want = tile_addresses(smem, offset + stage * stage_bytes)
    rows_at, cols_at = fragment_map(frag.tiled_layout, frag.get_shape())
    np.testing.assert_array_equal(got, want[row0 + rows_at, cols_at])


@pytest.mark.parametrize(("smem_shape", "swizzle", "row0"), [
    ([1, 64, 64], 0, 0),  # unswizzled: one address per vector
    ([1, 68, 64], 128, 4),  # rows that are not whole swizzle periods
    ([2, 64, 80], 0, 0),  # unswizzled, a row of 80 columns (one chunk, not a power of two)
])
def test_vector_addresses_where_no_unit_plan(smem_shape, swizzle, row0):
    frag = nvgpu.FragmentType([64, smem_shape[-1]], BFloat16Type(), nvgpu.WGMMA)
    smem = nvgpu.SmemType(smem_shape, BFloat16Type(), swizzle)
    ops = expanded(frag, smem, 1024, smem_shape[0] - 1, row0, True)
    got, op = thread_addresses(ops)
    assert len(op.addresses) == len(vector_offsets(frag)) and set(op.offsets.get_values()) == {0}
    stage_bytes = smem.num_bytes() // smem_shape[0]
    want = tile_addresses(smem, 1024 + (smem_shape[0] - 1) * stage_bytes)
    rows_at, cols_at = fragment_map(frag.tiled_layout, frag.get_shape())
    np.testing.assert_array_equal(got, want[row0 + rows_at, cols_at])


@pytest.mark.parametrize(("rows", "cols", "element", "layout_bytes", "swizzle"), [
    (16, 1024, Float32Type(), 2, 128),  # a bf16 tile's layout read as f32: vectors of 8 f32, two accesses each
    (8, 1024, BFloat16Type(), 2, 128),  # a norm chunk: one 16-byte vector an access
    (64, 128, Float32Type(), 4, 128),  # the split-K reduce program's partials (vectors of 4 f32)
])
def test_blocked_layouts_read_slots_in_16_byte_accesses(rows, cols, element, layout_bytes, swizzle):
    """A slot read into a blocked layout (a loop's streamed tile in a kernel
    without dots): each access at most 16 bytes, every address the storage
    model's, for every thread."""
    frag = nvgpu.FragmentType([rows, cols], element, blocked_layout((rows, cols), layout_bytes))
    smem = nvgpu.SmemType([2, rows, cols], element, swizzle)
    ops = expanded(frag, smem, 0, 1, 0, True)
    got, op = thread_addresses(ops)
    eb = nvgpu.element_bytes(element)
    assert access_values(frag) * eb <= 16 and len(op.bases) == frag.values_per_thread() // access_values(frag)
    want = tile_addresses(smem, rows * cols * eb)
    rows_at, cols_at = fragment_map(frag.tiled_layout, frag.get_shape())
    np.testing.assert_array_equal(got, want[rows_at, cols_at])


def test_no_plan_where_it_does_not_hold():
    frag = nvgpu.FragmentType([64, 64], BFloat16Type(), nvgpu.WGMMA)
    offsets, columns = vector_offsets(frag), {0, 2, 4, 6}
    assert unit_plan(nvgpu.SmemType([1, 64, 64], BFloat16Type(), 0), offsets, columns, 4) is None
    assert unit_plan(nvgpu.SmemType([1, 68, 64], BFloat16Type(), 128), offsets, columns, 4) is None
    assert unit_plan(nvgpu.SmemType([1, 64, 64], BFloat16Type(), 128), offsets, columns, 4) is not None
