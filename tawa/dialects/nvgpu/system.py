"""nvgpu ops that reach past the GPU: the watchdog buffer (host memory
mapped into the device), system-scope stores, atomics and fences on it,
and the ends of a kernel that will not finish (`trap`, and parking the
threads that wait for it).  `tawa-expand-bounded-waits` writes a timed-out
wait's report with them.
"""

from __future__ import annotations

from xdsl.dialects.builtin import I32, I64, IntegerAttr, IntegerType, UnitAttr
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class WatchdogBufferOp(IRDLOperation):
    """The global address of the kernel's watchdog buffer: the parameter
    `tawa.backend.ptx.abi` adds to a kernel with a wait table (host memory
    mapped into the device, which the host can still read after a trap).

    Example: `%buf = nvgpu.watchdog_buffer`
    """

    name = "nvgpu.watchdog_buffer"
    result = result_def(I64)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__(result_types=[IntegerType(64)])


@irdl_op_definition
class AtomicCasSysOp(IRDLOperation):
    """`atom.relaxed.sys.global.cas.b32`: atomically, the 32-bit word at
    global address `address` becomes `value` if it equals `compare`; the
    result is the word before.  System scope: the word may live in host
    memory (the watchdog buffer), so no cache of the GPU may hold it.

    Example: `%old = nvgpu.atomic_cas_sys %buf, %c0, %c1 : i32`
    """

    name = "nvgpu.atomic_cas_sys"
    address = operand_def(I64)
    compare = operand_def(I32)
    value = operand_def(I32)
    result = result_def(I32)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$address `,` $compare `,` $value attr-dict `:` type($result)"

    def __init__(self, address: SSAValue, compare: SSAValue, value: SSAValue):
        super().__init__(operands=[address, compare, value], result_types=[IntegerType(32)])


@irdl_op_definition
class StoreSysOp(IRDLOperation):
    """`st.relaxed.sys.global.u32` (with `release`: `st.release.sys`) of
    the 32-bit `value` at global address `address + offset` (bytes, a
    multiple of 4): a store that the host sees while the kernel still runs;
    `release` orders every earlier write of the thread before it.

    Example: `nvgpu.store_sys %id, %buf[8] : i32`, `nvgpu.store_sys %v, %buf[4] release : i32`
    """

    name = "nvgpu.store_sys"
    value = operand_def(I32)
    address = operand_def(I64)
    offset = prop_def(IntegerAttr[I64])
    release = opt_prop_def(UnitAttr)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$value `,` $address `[` $offset `]` (`release` $release^)? attr-dict `:` type($value)"

    def __init__(self, value: SSAValue, address: SSAValue, offset: int, release: bool = False):
        props: dict = {"offset": IntegerAttr(offset, 64)}
        if release:
            props["release"] = UnitAttr()
        super().__init__(operands=[value, address], properties=props)

    def verify_(self) -> None:
        off = self.offset.value.data
        if off < 0 or off % 4:
            raise VerifyException(f"nvgpu.store_sys offset must be a non-negative multiple of 4, got {off}")


@irdl_op_definition
class FenceScSysOp(IRDLOperation):
    """`fence.sc.sys`: a sequentially consistent fence at system scope; the
    thread's memory accesses before it are seen by the host and every other
    thread before those after it.

    Example: `nvgpu.fence_sc_sys`
    """

    name = "nvgpu.fence_sc_sys"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


@irdl_op_definition
class TrapOp(IRDLOperation):
    """`trap`: aborts the kernel (the whole grid), a sticky error of the
    launch.  Nothing after it runs.

    Example: `nvgpu.trap`
    """

    name = "nvgpu.trap"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


@irdl_op_definition
class ParkOp(IRDLOperation):
    """Sleeps for good, `ns` nanoseconds at a time (`nanosleep` in a loop):
    a thread that another thread's `nvgpu.trap` is about to stop, and that
    must not finish or trap first (the watchdog's threads that lost the
    claim on the buffer, while the winner writes its record).  Nothing after
    it runs.

    Example: `nvgpu.park 1000000`
    """

    name = "nvgpu.park"
    ns = prop_def(IntegerAttr[I32])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$ns attr-dict"

    def __init__(self, ns: int):
        super().__init__(properties={"ns": IntegerAttr(ns, 32)})

    def verify_(self) -> None:
        if self.ns.value.data <= 0:
            raise VerifyException(f"nvgpu.park ns must be positive, got {self.ns.value.data}")
