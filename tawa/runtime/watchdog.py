"""The watchdog's runtime side: the buffer a timed-out wait writes, and the
exception it becomes.

A kernel compiled with `tawa.compile(..., watchdog_ms=2000)` bounds its
mbarrier waits (`tawa-bound-waits`): a wait that does not complete within
the bound writes one record (`abi.WATCHDOG_FIELDS`) into the kernel's
watchdog buffer and executes `trap`.  The trap is a sticky CUDA error: the
launch (or the next synchronize) fails and the CUDA context is unusable
from then on, device memory included.  So the buffer lives in host memory
mapped into the device's address space (`cudaHostAlloc(..., Mapped)`), which
the host can still read, and the launch turns the record into a
`KernelHangError`:

    examples/gemm.mlir:7:1: error: mbarrier wait timed out in block 3, warp group 0 (producer), thread 0:
    barrier 1 of the mbarrier<2> at shared offset 98320, parity 1 (wait 0 of @gemm); the CUDA context is
    unusable now (restart the process); tawa.interpret(module, "gemm", (2, 2), *args) replays this
    launch on the CPU

(one line).  One buffer of `abi.WATCHDOG_BYTES` per loaded kernel (kernel ×
device), zeroed once: only a trapping launch writes it, and after a trap no
launch runs again.  A launch of a watchdog kernel waits for the kernel
(`Watchdog.synchronous`, default True) so that a hang raises at the call;
set it to False (`kernel.load().watchdog.synchronous = False`, after a first
launch) to launch asynchronously, as benchmarks do: a hang then surfaces at
the next launch of the kernel, or through `Watchdog.check`.  Kernels
compiled without the watchdog have no buffer and pay nothing.
"""

from __future__ import annotations

import ctypes
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tawa.backend.ptx.abi import WATCHDOG_BYTES, WATCHDOG_FIELDS, WATCHDOG_VALID
from tawa.runtime.errors import LaunchError
from tawa.runtime.gpu_packages import cupy_module
from tawa.target.hopper import THREADS_PER_GROUP

WORDS = WATCHDOG_BYTES // 4
VALID = WATCHDOG_FIELDS.index("valid")
HOST_ALLOC_PORTABLE, HOST_ALLOC_MAPPED = 0x01, 0x02
"""`cudaHostAllocPortable` (every context may use it) and `cudaHostAllocMapped`."""


class KernelHangError(LaunchError):
    """A wait of a watchdog kernel timed out: the kernel would have hung.
    `record` is the decoded `WaitRecord`, `wait` its wait-table entry
    (location, role, barrier), `kernel` and `grid` the launch."""

    def __init__(self, message: str, where: str, record: WaitRecord, wait: tuple[str, str, str],
                 kernel: str, grid: tuple[int, ...]):
        super().__init__(message, where)
        self.record, self.wait, self.kernel, self.grid = record, wait, kernel, grid


@dataclass(frozen=True)
class WatchdogSpec:
    """What a launch needs to know about a kernel's watchdog: its name and
    wait table (from the ABI; the plan's `("watchdog", spec)` entry)."""

    kernel: str
    waits: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class WaitRecord:
    """A decoded watchdog record: which wait timed out, where."""

    wait_id: int
    cta: tuple[int, int, int]
    thread: int
    index: int
    parity: int

    @property
    def warp_group(self) -> int:
        return self.thread // THREADS_PER_GROUP


def decode(words: Sequence[int]) -> WaitRecord | None:
    """The record in a watchdog buffer's words, or None if none was written."""
    f = dict(zip(WATCHDOG_FIELDS, (int(w) for w in words)))
    if f.get("valid") != WATCHDOG_VALID:
        return None
    return WaitRecord(f["wait_id"], (f["cta_x"], f["cta_y"], f["cta_z"]), f["thread"], f["index"], f["parity"])


def hang_error(spec: WatchdogSpec, record: WaitRecord, grid: tuple[int, ...] = (),
               cuda_error: str | None = None) -> KernelHangError:
    """The exception for `record`, located at the wait's source."""
    if 0 <= record.wait_id < len(spec.waits):
        wait = spec.waits[record.wait_id]
    else:
        wait = (f"@{spec.kernel}", "", f"an unknown barrier (wait id {record.wait_id} is not in the wait table)")
    where, role, barriers = wait
    x, y, z = record.cta
    block = f"block {x}" if y == z == 0 else f"block ({x}, {y}, {z})"
    group = f"warp group {record.warp_group}" + (f" ({role})" if role else "")
    logical = ", ".join(str(g) for g in grid) + ("," if len(grid) == 1 else "")
    replay = f'tawa.interpret(module, "{spec.kernel}", ({logical}), *args) replays this launch on the CPU'
    cause = f" (CUDA: {cuda_error})" if cuda_error else ""
    message = (
        f"mbarrier wait timed out in {block}, {group}, thread {record.thread}: barrier {record.index} of "
        f"the {barriers}, parity {record.parity} (wait {record.wait_id} of @{spec.kernel}); the CUDA context "
        f"is unusable now (restart the process){cause}; {replay}"
    )
    return KernelHangError(message, where, record, wait, spec.kernel, tuple(grid))


class Watchdog:
    """The watchdog buffer of one loaded kernel: `words` is its host view
    (32-bit words), `device_ptr` the address the kernel writes to."""

    def __init__(self, spec: WatchdogSpec, words: Any, device_ptr: int):
        self.spec = spec
        self.words = words
        self.device_ptr = device_ptr
        self.synchronous = True
        """Launches wait for the kernel, so that a hang raises at the call."""

    @classmethod
    def allocate(cls, spec: WatchdogSpec, device: int) -> Watchdog:
        """A zeroed buffer in mapped, pinned host memory on CUDA `device`."""
        rt = cupy_module().cuda.runtime
        with cupy_module().cuda.Device(device):
            host = rt.hostAlloc(WATCHDOG_BYTES, HOST_ALLOC_PORTABLE | HOST_ALLOC_MAPPED)
            # cudaHostGetDevicePointer's answer, which CuPy exposes through the
            # pointer's attributes (with unified addressing: the host address).
            device_ptr = rt.pointerGetAttributes(host).devicePointer or host
        ctypes.memset(host, 0, WATCHDOG_BYTES)
        words = (ctypes.c_uint32 * WORDS).from_address(host)
        dog = cls(spec, words, int(device_ptr))
        weakref.finalize(dog, _free_host, rt, host)
        return dog

    def record(self) -> WaitRecord | None:
        if self.words[VALID] != WATCHDOG_VALID:  # the common case, on every launch: one word read
            return None
        return decode(list(self.words))

    def check(self, grid: tuple[int, ...] = (), cuda_error: str | None = None) -> None:
        """Raises the KernelHangError of a recorded timeout, if any."""
        rec = self.record()
        if rec is not None:
            raise hang_error(self.spec, rec, grid, cuda_error)

    def after_launch(self, stream: Any, grid: tuple[int, ...]) -> None:
        """Waits for the launch (when `synchronous`); a CUDA error becomes the
        KernelHangError of the record, or a LaunchError without one."""
        if not self.synchronous:
            return
        try:
            stream.synchronize()
        except Exception as err:  # CUDARuntimeError / CUDADriverError: the kernel trapped or failed
            self.check(grid, str(err))
            raise LaunchError(
                f"@{self.spec.kernel} failed ({err}) without a watchdog record; the CUDA context is "
                "unusable now (restart the process)"
            ) from None


def _free_host(rt: Any, host: int) -> None:
    try:
        rt.freeHost(host)
    except Exception:  # after a trap the context may be gone; the process ends soon anyway
        pass
