"""`tawa-defer-stores`: a persistent consumer stores program i's tile under program i+1's first dot.

In a persistent GEMM the consumer warp groups run, per program, the main
loop (wgmma after wgmma on the tensor cores) and then the epilogue (convert
the accumulator, stage it in shared memory, hand it to the TMA unit), during
which the tensor cores idle: on the H100 that is a large part of the kernel
when K is short (docs/perf.md, "Where the GEMM's last percent goes").  This
pass moves the store of program i's tile into program i+1's main loop, right
after the first dot of its first iteration is issued, so that the staging
writes, barriers and TMA store run while that dot occupies the tensor cores.
The converted tile travels to the next program through the persistent loop:

    scf.for %t = ... iter_args(%pc = 0, %pm = 0, %pn = 0, %have = false) {
      %acc = scf.for %k = %lb to %K step %s iter_args(...) {
        ... %d = tile.dot_async ...
        scf.if (%k == %lb and %have) { tile.store %pc, %C[%pm, %pn] }   // the last program's tile
        ...
      }
      scf.if (not (%lb < %K) and %have) { tile.store %pc, %C[%pm, %pn] } // a loop that ran no step
      %c = ... %acc ...
      scf.yield %c, %m0, %n0, true
    }
    scf.if %have_last { tile.store %c_last, %C[%m_last, %n_last] }

The stores happen in the same order, each from one whole tile, so the
staging protocol of the TMA-store epilogue is unchanged
(`tawa-verify-protocol` proves it as for any kernel); only their time moves.
The cost is the converted tile's registers (64 per thread for a 128x256
bf16 tile over two warp groups), live through the next program's main loop.

**When** (`deferrable`): a consumer partition whose body is the persistent
loop over programs (`tawa-persistent`) with no loop-carried values, whose
loop body ends with its only `tile.store`, after exactly one loop that
issues a `tile.dot_async` (the main loop), whose stored tile has 16-bit
elements (the converted accumulator: half its registers; an f32 tile would
double the consumer's), and whose stored memref no op of the kernel reads
(a deferred store must not pass a load of what it writes).
Anything else is left as it is.  Runs after `tawa-persistent`, before
`tawa-assign-stage-phase`; `tawa-hopper-pipeline{defer-stores}`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    IndexType,
    IntegerAttr,
    ModuleOp,
    TensorType,
    UnitAttr,
    i1,
)
from xdsl.ir import Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawa.dialects import aref, tile
from tawa.dialects.aref import PartitionRole
from tawa.transforms.utils import guarded, kernel_of, zeros_of

SHARED_STAGING = "tawa.shared_staging"
"""A unit attribute on stores that share one staging buffer with the other
stores of the same memref that carry it (this pass splits one store into
several sites, of which one runs per program)."""

NAME = "tawa-defer-stores"
HALF_FLOATS = BFloat16Type | Float16Type
"""The stored tiles it carries: an accumulator converted to 16 bits."""


@dataclass(frozen=True)
class Deferrable:
    """A persistent program loop whose tile store can move (`deferrable`)."""

    programs: scf.ForOp
    main_loop: scf.ForOp
    first_dot: tile.DotAsyncOp
    store: tile.StoreOp


def deferrable(region: Region, kernel: Operation) -> Deferrable | None:
    """The program loop, main loop, its first dot and the store of a consumer
    partition that `tawa-defer-stores` applies to, or None (module docstring)."""
    block = region.block
    loops = [o for o in block.ops if isinstance(o, scf.ForOp)]
    if len(loops) != 1 or loops[0].iter_args:
        return None
    programs = loops[0]
    stores = [o for o in region.walk() if isinstance(o, tile.StoreOp)]
    body = list(programs.body.block.ops)
    if len(stores) != 1 or len(body) < 2 or body[-2] is not stores[0]:
        return None
    store = stores[0]
    value_type = store.value.type
    if not isinstance(value_type, TensorType) or not isinstance(value_type.get_element_type(), HALF_FLOATS):
        return None  # an f32 tile would hold as many registers as the accumulator beside it
    mains = [o for o in body if isinstance(o, scf.ForOp)
             and any(isinstance(d, tile.DotAsyncOp) for d in o.body.block.ops)]
    if len(mains) != 1 or body.index(mains[0]) > body.index(store):
        return None
    main = mains[0]
    first_dot = next(d for d in main.body.block.ops if isinstance(d, tile.DotAsyncOp))
    if any(isinstance(o, tile.LoadOp) and o.source == store.dest for o in kernel.walk()):
        return None
    return Deferrable(programs, main, first_dot, store)


def _store_if(cond: SSAValue, value: SSAValue, dest: SSAValue, offsets: list[SSAValue]) -> scf.IfOp:
    """`scf.if %cond { tile.store %value, %dest[offsets] }`, the store sharing
    its staging buffer with the other sites of the deferred store."""
    store = tile.StoreOp.build(operands=[value, dest, offsets], attributes={SHARED_STAGING: UnitAttr()})
    return guarded(cond, [store])


def defer(d: Deferrable) -> None:
    """Rewrites `d` as the module docstring shows."""
    programs, main, store = d.programs, d.main_loop, d.store
    dest = store.dest
    value_type = store.value.type
    assert isinstance(value_type, TensorType)
    at = InsertPoint.before(programs)
    # The carried tile starts as zeros (never stored): f32 zeros converted to
    # the stored 16-bit type, as the consumer converts its accumulator.
    zeros, start = zeros_of(value_type)
    c0 = arith.ConstantOp(IntegerAttr(0, IndexType()))
    no = arith.ConstantOp(IntegerAttr(0, i1))
    yes = arith.ConstantOp(IntegerAttr(1, i1))
    Rewriter.insert_op([*zeros, c0, no, yes], at)
    inits = [start, *[c0.result] * len(store.offsets), no.result]

    # The loop-carried tile, its offsets and whether there is one.
    block = programs.body.block
    carried = [block.insert_arg(t, len(block.args)) for t in [value_type, *[IndexType()] * len(store.offsets), i1]]
    prev_value, prev_offsets, have = carried[0], carried[1:-1], carried[-1]
    yield_op = block.last_op
    assert isinstance(yield_op, scf.YieldOp)
    Rewriter.replace_op(yield_op, scf.YieldOp(store.value, *store.offsets, yes.result))

    # In the main loop's first step, right after its first dot is issued.
    k = main.body.block.args[0]
    after_dot = InsertPoint.after(d.first_dot)
    first = arith.CmpiOp(k, main.lb, "eq")
    go = arith.AndIOp(first.result, have)
    Rewriter.insert_op([first, go], after_dot)
    Rewriter.insert_op(_store_if(go.result, prev_value, dest, prev_offsets), InsertPoint.after(go))

    # A main loop that ran no step: store the previous tile after it.
    ran = arith.CmpiOp(main.lb, main.ub, "slt")
    idle = arith.XOrIOp(ran.result, yes.result)
    late = arith.AndIOp(idle.result, have)
    Rewriter.insert_op([ran, idle, late], InsertPoint.after(main))
    Rewriter.insert_op(_store_if(late.result, prev_value, dest, prev_offsets), InsertPoint.after(late))
    Rewriter.erase_op(store)

    # The new program loop, and the last program's store after it.
    region = programs.detach_region(programs.body)
    new = scf.ForOp(programs.lb, programs.ub, programs.step, inits, region)
    Rewriter.replace_op(programs, new, new_results=[])
    last_value, last_offsets, last_have = new.results[0], list(new.results[1:-1]), new.results[-1]
    Rewriter.insert_op(_store_if(last_have, last_value, dest, last_offsets), InsertPoint.after(new))


@dataclass(frozen=True)
class DeferStoresPass(ModulePass):
    """Stores each program's tile under the next program's first dot (module docstring)."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel = kernel_of(ws, NAME)
            for role, _, _, region in ws.partition_specs():
                if role == PartitionRole.CONSUMER:
                    found = deferrable(region, kernel)
                    if found is not None:
                        defer(found)
