"""Semantics of the nvgpu ops that reach past the GPU
(`tawa.dialects.nvgpu.system`): the watchdog buffer, system-scope atomics,
stores and fences, `trap` and `park`.  `NvgpuFunctions` takes them in
(`SystemFunctions` is a mix-in of its implementations).

A launch's watchdog buffer is `WATCHDOG_BYTES` of zeros in its global
memory, made at the first `nvgpu.watchdog_buffer`; the simulator runs a
thread's accesses in program order, so the system scope and the fences
change nothing here.  `nvgpu.trap` ends the simulation with an error that
names the trapping thread and, when the buffer holds a valid record, what
the record says; `nvgpu.park` waits for ever (for another thread's trap).
"""

from __future__ import annotations

import weakref

import numpy as np
from xdsl.interpreter import Interpreter, PythonValues, impl

from tawa.backend.ptx.abi import WATCHDOG_BYTES, WATCHDOG_FIELDS, WATCHDOG_VALID
from tawa.dialects import nvgpu
from tawa.interpreters import simt
from tawa.interpreters.cta import GlobalMemory, cta_name, cta_of, lanes_of, task_of
from tawa.interpreters.errors import simulation_error
from tawa.interpreters.simt import lane_value, pack

_BUFFERS: weakref.WeakKeyDictionary[GlobalMemory, np.ndarray] = weakref.WeakKeyDictionary()
"""The watchdog buffer of each launch (keyed by its global memory)."""


def watchdog_record(memory: GlobalMemory) -> dict[str, int] | None:
    """The fields of the launch's watchdog record, if one is valid."""
    buf = _BUFFERS.get(memory)
    if buf is None or int(buf[WATCHDOG_FIELDS.index("valid")]) != WATCHDOG_VALID:
        return None
    return {field: int(buf[i]) for i, field in enumerate(WATCHDOG_FIELDS)}


class SystemFunctions:
    """The implementations (see the module docstring)."""

    @impl(nvgpu.WatchdogBufferOp)
    def run_watchdog_buffer(self, interpreter: Interpreter, op: nvgpu.WatchdogBufferOp, args: PythonValues):
        memory = cta_of(interpreter).memory
        if memory not in _BUFFERS:
            _BUFFERS[memory] = np.zeros(WATCHDOG_BYTES // 4, dtype=np.uint32)
        return (memory.address_of(_BUFFERS[memory]),)

    @impl(nvgpu.AtomicCasSysOp)
    def run_atomic_cas_sys(self, interpreter: Interpreter, op: nvgpu.AtomicCasSysOp, args: PythonValues):
        """The active lanes' compare-and-swaps, one after the other in lane order."""
        memory, idx = cta_of(interpreter).memory, lanes_of(interpreter).indices()
        olds = []
        for lane in idx:
            address, compare, value = (int(lane_value(a, lane)) for a in args)
            at = np.array([address], dtype=np.int64)
            old, outside = memory.gather(at, 4)
            if old is None:
                raise simulation_error(op, f"{op.name}: thread {lane} at {address:#x}, outside every buffer")
            olds.append(int(old[0]))
            if olds[-1] == compare:
                memory.scatter(at, np.array([value]), 4)
        return (pack(olds, idx, cta_of(interpreter).threads),)

    @impl(nvgpu.StoreSysOp)
    def run_store_sys(self, interpreter: Interpreter, op: nvgpu.StoreSysOp, args: PythonValues):
        memory, idx = cta_of(interpreter).memory, lanes_of(interpreter).indices()
        for lane in idx:
            value, address = (int(lane_value(a, lane)) for a in args)
            at = np.array([address + op.offset.value.data], dtype=np.int64)
            if memory.scatter(at, np.array([value & 0xFFFFFFFF]), 4) is not None:
                raise simulation_error(op, f"{op.name}: thread {lane} at {int(at[0]):#x}, outside every buffer")
        return ()

    @impl(nvgpu.FenceScSysOp)
    def run_fence_sc_sys(self, interpreter: Interpreter, op: nvgpu.FenceScSysOp, args: PythonValues):
        return ()

    @impl(nvgpu.TrapOp)
    def run_trap(self, interpreter: Interpreter, op: nvgpu.TrapOp, args: PythonValues):
        cta = cta_of(interpreter)
        thread = int(lanes_of(interpreter).indices()[0])
        message = f"nvgpu.trap in {cta_name(cta)}, thread {thread}: the kernel aborts"
        record = watchdog_record(cta.memory)
        if record is not None:
            message += (f"; the watchdog record: wait {record['wait_id']} timed out in CTA "
                        f"({record['cta_x']}, {record['cta_y']}, {record['cta_z']}), thread {record['thread']}, "
                        f"barrier {record['index']}, parity {record['parity']}")
        raise simulation_error(op, message)

    @impl(nvgpu.ParkOp)
    def run_park(self, interpreter: Interpreter, op: nvgpu.ParkOp, args: PythonValues):
        task_of(interpreter).sync(op, lambda: False, lambda: "(parked until another thread's trap ends the grid)")
        return ()


simt.LANE_AWARE.update({nvgpu.AtomicCasSysOp, nvgpu.StoreSysOp})
simt.BLOCKING.update({nvgpu.ParkOp})
