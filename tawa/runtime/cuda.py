"""Loading cubins, building tensor maps and launching, through CuPy and
`cuda.bindings` (imported on first use: `import tawa` never needs them).

- `load(cubin, name, smem_bytes, device)`: `cupy.RawModule(path=...)`,
  `get_function(name)`, and the function's max dynamic shared memory raised
  to `smem_bytes` when above the 48 KiB default.  (`cupy.RawModule(code=ptx)`
  would hand PTX to the CUDA C++ compiler: it does not work for PTX.)
- `encode_tensor_map(spec)`: `cuda.bindings.driver.cuTensorMapEncodeTiled`,
  as the 128 bytes passed by value; `TensorMapCache` memoizes it per
  spec (pointer, dims, strides, dtype, box, swizzle...).
- `launch(loaded, plan, stream)`: resolves the stream, fills in scratch
  buffers for tensor maps over empty tensors and the watchdog buffer of
  watchdog kernels (`tawa.runtime.watchdog`), packs the parameters
  (`tawa.runtime.params`) and launches; the `PreparedLaunch` it returns
  launches the same plan again with one driver call;
- `bind(loaded, plan, ...)`: a `BoundLaunch`, the plan relaunched with other
  array addresses (`tawa.runtime.template`).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tawa.runtime.errors import LaunchError
from tawa.runtime.gpu_packages import cupy_module, driver_module
from tawa.runtime.launch import (
    SCRATCH_BYTES,
    LaunchPlan,
    TensorMapSpec,
    kernel_arguments,
    tensormap_by_value,
)
from tawa.runtime.params import PackedParams
from tawa.runtime.template import LaunchTemplate, address_word
from tawa.runtime.watchdog import Watchdog, WatchdogSpec
from tawa.target.hopper import ARCH

DEFAULT_SMEM = 48 * 1024
MIN_CC = (9, 0)  # the compute capability of ARCH


# --------------------------------------------------------------------------- tensor maps


def encode_tensor_map(spec: TensorMapSpec, driver: Any = None) -> bytes:
    """`cuTensorMapEncodeTiled(spec)` as a 128-byte by-value kernel argument."""
    if spec.address is None:
        raise LaunchError("internal error: a scratch tensor map has no address yet")
    d = driver if driver is not None else driver_module()
    u64, u32 = d.cuuint64_t, d.cuuint32_t
    err, tmap = d.cuTensorMapEncodeTiled(
        getattr(d.CUtensorMapDataType, spec.data_type),
        spec.rank,
        spec.address,
        [u64(x) for x in spec.dims],
        [u64(x) for x in spec.strides],
        [u32(x) for x in spec.box],
        [u32(x) for x in spec.element_strides],
        getattr(d.CUtensorMapInterleave, spec.interleave),
        getattr(d.CUtensorMapSwizzle, spec.swizzle),
        getattr(d.CUtensorMapL2promotion, spec.l2_promotion),
        getattr(d.CUtensorMapFloatOOBfill, spec.oob_fill),
    )
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise LaunchError(
            f"cuTensorMapEncodeTiled failed ({name}) for argument {spec.arg}: address "
            f"{spec.address:#x}, dims {list(spec.dims)}, byte strides {list(spec.strides)}, "
            f"box {list(spec.box)}, {spec.swizzle} (innermost first)"
        )
    return tensormap_by_value(tmap.opaque)


class TensorMapCache:
    """Encoded tensor maps by spec (1.9 µs each to encode; a launch with two
    maps saves about 4 µs).  A map holds only address, sizes and layout, so
    an entry stays valid when its memory is freed and reallocated."""

    def __init__(self, maxsize: int = 4096, driver: Any = None):
        self.maxsize = maxsize
        self.driver = driver
        self._maps: OrderedDict[TensorMapSpec, bytes] = OrderedDict()

    def __call__(self, spec: TensorMapSpec) -> bytes:
        hit = self._maps.get(spec)
        if hit is not None:
            self._maps.move_to_end(spec)
            return hit
        value = encode_tensor_map(spec, self.driver)
        self._maps[spec] = value
        if len(self._maps) > self.maxsize:
            self._maps.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._maps)

    def clear(self) -> None:
        self._maps.clear()


TENSOR_MAPS = TensorMapCache()


# --------------------------------------------------------------------------- loading


@dataclass
class LoadedKernel:
    module: Any
    """The `cupy.RawModule` (kept alive with the function)."""
    function: Any
    device: int
    name: str = ""
    watchdog: Any = None
    """The `tawa.runtime.watchdog.Watchdog` of a watchdog kernel, from its first launch."""
    handle: int = 0
    """The `CUfunction` (what `cuLaunchKernel` takes)."""


def current_device() -> int:
    return int(cupy_module().cuda.runtime.getDevice())


def check_device(device: int) -> None:
    """LaunchError unless `device` is a Hopper (sm_90) GPU."""
    cp = cupy_module()
    cc = cp.cuda.Device(device).compute_capability  # e.g. '90'
    major, minor = int(cc[:-1]), int(cc[-1])
    if (major, minor) != MIN_CC:
        raise LaunchError(
            f"tawa's kernels are built for {ARCH} (Hopper); CUDA device {device} is sm_{cc}"
        )


def load(cubin_path: str, name: str, smem_bytes: int, device: int) -> LoadedKernel:
    """Loads kernel `name` from a cubin onto `device`."""
    cp = cupy_module()
    check_device(device)
    with cp.cuda.Device(device):
        ensure_context(device)
        try:
            module = cp.RawModule(path=str(cubin_path))
            function = module.get_function(name)
        except Exception as err:  # CUDADriverError and friends
            raise LaunchError(f"cannot load @{name} from {cubin_path}: {err}") from None
        if smem_bytes > DEFAULT_SMEM:
            limit = cp.cuda.Device(device).attributes.get("MaxSharedMemoryPerBlockOptin")
            if limit is not None and smem_bytes > limit:
                raise LaunchError(
                    f"@{name} needs {smem_bytes} bytes of shared memory; device {device} "
                    f"allows {limit} per CTA"
                )
            try:
                function.max_dynamic_shared_size_bytes = smem_bytes
            except Exception as err:
                raise LaunchError(
                    f"cannot give @{name} {smem_bytes} bytes of dynamic shared memory: {err}"
                ) from None
        handle = int(function.kernel.ptr)  # the RawKernel's Function on this device
    return LoadedKernel(module, function, device, name, handle=handle)


# --------------------------------------------------------------------------- launching

_EXTERNAL_STREAMS: dict[tuple[int, int], Any] = {}


def _external_stream(handle: int, device: int) -> Any:
    cp = cupy_module()
    if handle == 0:
        return cp.cuda.Stream.null
    key = (handle, device)
    s = _EXTERNAL_STREAMS.get(key)
    if s is None:
        # CuPy 14 deprecates ExternalStream in favour of Stream.from_external
        # (stream-protocol objects); ExternalStream still works on 13 and 14.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            s = _EXTERNAL_STREAMS[key] = cp.cuda.ExternalStream(handle, device)
    return s


def resolve_stream(stream: Any, plan: LaunchPlan, device: int) -> Any:
    """The CuPy stream to launch on.

    - None: torch's current stream when some argument is a torch tensor,
      else CuPy's current stream;
    - a CuPy stream; a torch stream (anything with `.cuda_stream`); or a raw
      `cudaStream_t` handle as an int (0: the legacy default stream).
    """
    cp = cupy_module()
    if stream is None:
        torch = sys.modules.get("torch")
        if plan.uses_torch and torch is not None:
            return _external_stream(int(torch.cuda.current_stream(device).cuda_stream), device)
        return cp.cuda.get_current_stream()
    if isinstance(stream, (cp.cuda.Stream, cp.cuda.ExternalStream)):
        return stream
    handle = getattr(stream, "cuda_stream", stream)
    if isinstance(handle, int | np.integer) and not isinstance(handle, bool):
        return _external_stream(int(handle), device)
    raise LaunchError(
        f"stream must be None, a CuPy or torch stream, or a cudaStream_t handle; got {type(stream).__name__}"
    )


_NUM_SMS: dict[int, int] = {}


def num_sms(device: int) -> int:
    """Multiprocessors of CUDA device `device` (cached)."""
    if device not in _NUM_SMS:
        cp = cupy_module()
        _NUM_SMS[device] = int(cp.cuda.Device(device).attributes["MultiProcessorCount"])
    return _NUM_SMS[device]


@dataclass(frozen=True)
class LaunchAPI:
    """The calls a prepared launch makes: CuPy's (`cupy_api()`) on a GPU;
    `python -m tawa.bench launch --host-only` passes stand-ins."""

    launch_kernel: Callable[..., Any]
    """`cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra)`."""
    get_device: Callable[[], int] | None
    """The current CUDA device; None when the process sees one device (it
    is always current: nothing to check)."""
    error: type[BaseException]
    """What `launch_kernel` raises when the driver refuses."""
    current_stream: Callable[[bool, int], Callable[[], int]]
    """`current_stream(uses_torch, device)`: a function returning the raw
    handle of the stream a launch with no `stream=` goes on."""


@functools.cache
def cupy_api() -> LaunchAPI:
    cp = cupy_module()
    runtime = cp.cuda.runtime
    get_device = None if runtime.getDeviceCount() == 1 else runtime.getDevice
    return LaunchAPI(cp.cuda.driver.launchKernel, get_device, cp.cuda.driver.CUDADriverError, _current_stream_reader)


class PreparedLaunch:
    """A launch with its parameters packed: launching it is one driver call
    (`cuLaunchKernel` through CuPy's thin binding: a Cython function of C
    integers, cheaper than ctypes or cuda-bindings' generic wrappers).
    `Kernel.__call__` keeps the prepared launches of reusable plans by launch
    key, so a repeated launch skips the checks, the packing and the
    tensor-map encoding.  Everything a repeated launch calls is looked up
    here, once."""

    def __init__(
        self,
        function: int,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        smem_bytes: int,
        params: PackedParams,
        device: int,
        uses_torch: bool,
        api: LaunchAPI | None = None,
    ):
        api = api if api is not None else cupy_api()
        self.function = function
        """The `CUfunction` handle."""
        self.grid, self.block, self.smem_bytes = grid, block, smem_bytes
        self.params = params
        self.device = device
        self._launch_kernel = api.launch_kernel
        self._get_device = api.get_device
        self._driver_error = api.error
        self._current_stream = api.current_stream(uses_torch, device)
        self._address = params.address

    def __call__(self, stream: int) -> None:
        """Launches on the raw `cudaStream_t` handle `stream`."""
        gx, gy, gz = self.grid
        bx, by, bz = self.block
        self._launch_kernel(self.function, gx, gy, gz, bx, by, bz, self.smem_bytes, stream, self._address, 0)

    def again(self) -> bool:
        """Launches on the current stream (torch's when an argument was a
        torch tensor, else CuPy's), read anew on every call so that stream
        contexts and CUDA-graph capture are followed; False, with nothing
        launched, when that cannot be done this cheaply: another device is
        current, or the driver refuses (the full path then launches and
        reports)."""
        get_device = self._get_device
        if get_device is not None and get_device() != self.device:
            return False
        # Arguments spelled out: cheaper than unpacking a tuple of them.
        gx, gy, gz = self.grid
        bx, by, bz = self.block
        try:
            self._launch_kernel(
                self.function, gx, gy, gz, bx, by, bz, self.smem_bytes, self._current_stream(), self._address, 0
            )
        except self._driver_error:
            return False
        return True


def _current_stream_reader(uses_torch: bool, device: int) -> Callable[[], int]:
    """A function returning the raw handle of the stream a launch with no
    `stream=` goes on, as `resolve_stream` chooses it, without making stream
    objects."""
    torch = sys.modules.get("torch")
    if uses_torch and torch is not None:
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return functools.partial(raw, device)
        return lambda: torch.cuda.current_stream(device).cuda_stream
    current = cupy_module().cuda.get_current_stream
    return lambda: current().ptr


def launch(
    loaded: LoadedKernel, plan: LaunchPlan, stream: Any = None, tensor_maps: Any = None
) -> PreparedLaunch | None:
    """Launches `loaded` as planned (the plan's arguments already checked).
    Returns the prepared launch when launching it again with the same plan
    is the same launch (no scratch buffers, no watchdog), else None."""
    cp = cupy_module()
    encode = tensor_maps if tensor_maps is not None else TENSOR_MAPS
    with cp.cuda.Device(loaded.device):
        ensure_context(loaded.device)
        s = resolve_stream(stream, plan, loaded.device)
        params = plan.params
        scratch = None
        empties = [i for i, (k, v) in enumerate(params) if k == "tensormap" and v.address is None]
        if empties:
            # Tensor maps over empty tensors read from/write to private zeros (see launch.py).
            with s:
                scratch = cp.zeros(SCRATCH_BYTES * len(empties), dtype=cp.uint8)
            fixed = list(params)
            for j, i in enumerate(empties):
                spec = fixed[i][1]
                address = int(scratch.data.ptr) + SCRATCH_BYTES * j
                fixed[i] = ("tensormap", dataclasses.replace(spec, address=address))
            params = tuple(fixed)
        dog = _watchdog(loaded, params)
        if dog is not None:
            dog.check(plan.shape.grid)  # a hang of an earlier, asynchronous launch
            params = tuple(("u64", dog.device_ptr) if k == "watchdog" else (k, v) for k, v in params)
        shape = plan.shape
        prepared = PreparedLaunch(
            loaded.handle,
            shape.launch_grid(num_sms(loaded.device)) if shape.persistent else shape.grid,
            shape.block,
            shape.smem_bytes,
            PackedParams(kernel_arguments(params, encode)),
            loaded.device,
            plan.uses_torch,
        )
        try:
            prepared(int(s.ptr))
        except cp.cuda.driver.CUDADriverError as err:
            if dog is not None:
                dog.check(plan.shape.grid, str(err))
            raise LaunchError(f"launching @{loaded.name} failed: {err}") from None
        if dog is not None:
            dog.after_launch(s, plan.shape.grid)
        reusable = scratch is None and dog is None
        del scratch  # freed in stream order: the pool reuses it only after the kernel
    return prepared if reusable else None


def ensure_context(device: int) -> None:
    """Makes `device`'s primary context current on this thread where none
    is.  The CUDA runtime binds it at a thread's first runtime call, and
    CuPy's device switch only when the device changes; a thread whose first
    CUDA work is tawa's (the driver API: loading, tensor maps,
    `cuLaunchKernel`; autograd's backward thread where tawa's attention is
    the first node, a user's worker thread) has no current context, and the
    driver refuses.  The primary context is the one torch and CuPy use.
    The checked paths call it (`load`, `launch`, `bind`); a prepared
    launch's `again` on such a thread fails and falls back to them."""
    d = driver_module()
    err, current = d.cuCtxGetCurrent()
    if int(err) == 0 and int(current) != 0:
        return
    err, dev = d.cuDeviceGet(device)
    if int(err) == 0:
        err, ctx = d.cuDevicePrimaryCtxRetain(dev)
    if int(err) == 0:
        err, = d.cuCtxSetCurrent(ctx)
    if int(err) != 0:
        raise LaunchError(f"cannot make device {device}'s primary context current: {getattr(err, 'name', err)}")


def _watchdog(loaded: LoadedKernel, params: Any) -> Any:
    """The loaded kernel's watchdog buffer if it takes one (allocated on first
    use).  The ABI puts the watchdog parameter last: one look at the end."""
    if not params or params[-1][0] != "watchdog":
        return None
    abi = params[-1][1]
    if loaded.watchdog is None:
        loaded.watchdog = Watchdog.allocate(WatchdogSpec(abi.name, abi.waits), loaded.device)
    return loaded.watchdog


# --------------------------------------------------------------------------- templates


class BoundLaunch:
    """A `LaunchTemplate` and the `PreparedLaunch` over its parameters:
    `launch(ptrs)` writes the addresses and launches on the current stream
    (`PreparedLaunch.again`); False, with nothing launched, when it cannot
    (a misaligned address, another current device, the driver refusing)."""

    def __init__(self, template: LaunchTemplate, prepared: PreparedLaunch):
        self.template = template
        self.prepared = prepared
        self._write = template.write
        self._again = prepared.again

    def launch(self, ptrs: Any) -> bool:
        return self._write(ptrs) and self._again()


def _address_word(spec: TensorMapSpec) -> int | None:
    return address_word(spec, encode_tensor_map)


def bind(loaded: LoadedKernel, plan: LaunchPlan, program: Any, array_args: Any, alignments: Any) -> BoundLaunch:
    """The template of `plan` (checked; no scratch buffers, no watchdog) on
    `loaded`, ready to launch with other addresses (`tawa.runtime.template`)."""
    ensure_context(loaded.device)
    template = LaunchTemplate(plan, program, array_args, alignments, TENSOR_MAPS, _address_word)
    shape = plan.shape
    prepared = PreparedLaunch(
        loaded.handle,
        shape.launch_grid(num_sms(loaded.device)) if shape.persistent else shape.grid,
        shape.block,
        shape.smem_bytes,
        template.params,
        loaded.device,
        plan.uses_torch,
    )
    return BoundLaunch(template, prepared)
