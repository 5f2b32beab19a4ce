"""`tile.load_scalar` → `nvgpu.load_global_scalar`, in every partition.

A scalar load is replicated into each partition that needs its value
(`tawa-warp-specialize`): the producer, whose TMA coordinates it places (a
grouped GEMM's expert, a gather's row), and the consumers, whose stores or
loads it places.  Each lowers the same way, so `tawa-lower-tile` runs this
on the whole `aref.warp_specialize`: the element's byte address from the
memref's base and strides (the kernel addresses it itself,
`KernelABI.addressed`: its rows are contiguous, its other dimensions
`nvgpu.memref_stride` apart), and whether every offset is
inside its dimension (an unsigned compare: an offset is never negative),
which predicates the load: outside, the value is 0 and nothing is read.
Every thread of the partition reads the element; the threads of a warp read
one address, one transaction.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import nvgpu, tile
from tawa.transforms.lower.addressing import element_offset


def lower_scalar_loads(root: Operation) -> None:
    """Lowers every `tile.load_scalar` under `root`."""
    for op in [o for o in root.walk() if isinstance(o, tile.LoadScalarOp)]:
        lower_scalar_load(op)


def lower_scalar_load(op: tile.LoadScalarOp) -> None:
    mt = op.source.type
    assert isinstance(mt, MemRefType)
    new: list[Operation] = []

    def add(o: Operation) -> SSAValue:
        new.append(o)
        return o.results[0]

    def index(value: int) -> SSAValue:
        return add(arith.ConstantOp(IntegerAttr(value, IndexType())))

    dims = [add(memref.DimOp(op.source, index(d))) for d in range(mt.get_num_dims())]
    offsets = list(op.offsets)
    inside = add(arith.CmpiOp(offsets[0], dims[0], "ult"))
    for off, dim in zip(offsets[1:], dims[1:]):
        inside = add(arith.AndIOp(inside, add(arith.CmpiOp(off, dim, "ult"))))
    linear, _ = element_offset(add, op.source, offsets)
    size = index(nvgpu.element_bytes(mt.get_element_type()))
    address = add(arith.AddiOp(add(nvgpu.MemrefBaseOp(op.source)), add(arith.MuliOp(linear, size))))
    load = nvgpu.LoadGlobalScalarOp(address, inside, op.result.type)
    for o in [*new, load]:
        o.location = op.location  # an error about the load names the program's line
    Rewriter.insert_op(new, InsertPoint.before(op))
    load.result.name_hint = op.result.name_hint
    Rewriter.replace_op(op, load)
