"""`Kernel`: a compiled kernel's PTX and calling convention, launchable.

Compiling (IR → PTX, `tawa.compile`) and running (PTX → cubin → GPU) are
separate: a `Kernel` can be made from any PTX text and its `KernelABI` with
`Kernel.from_ptx`, and everything up to the CUDA launch (`plan`) runs
without a GPU.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from tawa.backend.ptx.abi import KernelABI
from tawa.diagnostics import TawaError
from tawa.runtime.errors import TensorMapError
from tawa.runtime.launch import (
    LaunchKeys,
    LaunchPlan,
    Signature,
    arg_names,
    argument_kinds,
    plan_launch,
    signature,
)
from tawa.runtime.ptxas import ARCH, Cubin, RegisterSpillWarning, SerializedWgmmaWarning, assemble

PREPARED_LAUNCHES = 64
"""Prepared launches a kernel keeps, and launch templates (each holds
~0.5 KiB of packed parameters)."""


class _Twin:
    """In `Kernel._prepared`: launches with this key go to the kernel's twin."""

    @staticmethod
    def again() -> bool:
        return False


_TWIN = _Twin()
_SEEN = object()
"""In `Kernel._bound`: a layout launched once, through the checked path."""
_UNBOUND = object()
"""In `Kernel._bound`: a layout whose launches need more than a template
(`Kernel.template` gave None)."""


class Kernel:
    """A compiled tile kernel.

    - `ptx`: the PTX text; `abi`: its calling convention
      (`tawa.backend.ptx.abi.KernelABI`); `name`: the entry's name;
    - `kernel(*args, grid=(gx, gy[, gz]), stream=None)` launches it on the
      logical grid (program ids);
    - `plan(*args, grid=...)` only checks the arguments and packs the
      parameters (no GPU); `assemble()` runs ptxas (cached); `load(device)`
      loads the cubin onto a GPU.
    """

    def __init__(
        self,
        ptx: str,
        abi: KernelABI,
        *,
        options: Mapping[str, Any] | None = None,
        lowered: Any = None,
        arch: str = ARCH,
    ):
        self.ptx = ptx
        self.abi = abi
        self.options = dict(options or {})
        """The options it was compiled with (`tawa.compile(..., **options)`)."""
        self.lowered = lowered
        """The lowered module (xdsl `ModuleOp`) when compiled by tawa, else None."""
        self.arch = arch
        self.arg_names = arg_names(abi)
        self._signature: Signature | None = None
        self._cubin: Cubin | None = None
        self._loaded: dict[int, Any] = {}
        self._prepared: dict[tuple[Any, ...], Any] = {}
        """`tawa.runtime.cuda.PreparedLaunch`es by launch key (oldest dropped first)."""
        self._keys = LaunchKeys(argument_kinds(abi))
        """Reads launch keys (`tawa.runtime.launch.LaunchKeys`)."""
        self._layouts = LaunchKeys(argument_kinds(abi), addresses=False)
        """Reads layout keys: launch keys without the addresses."""
        self._bound: dict[tuple[Any, ...], Any] = {}
        """Launch templates (`BoundLaunch`) by layout key, `_SEEN` or `_UNBOUND`."""
        self.fallback: Callable[[], Kernel] | None = None
        """For a kernel compiled with `epilogue="auto"`: compiles its twin with
        `epilogue="threads"`, launched when an argument is one a tensor map
        cannot describe (`TensorMapError`: an output whose rows are not whole
        16-byte units, say), so `auto` never refuses what `threads` takes."""
        self._twin: Kernel | None = None

    @classmethod
    def from_ptx(cls, ptx: str, abi: KernelABI, *, arch: str = ARCH) -> Kernel:
        """A kernel from PTX text and the ABI of its entry `abi.name`."""
        return cls(ptx, abi, arch=arch)

    @property
    def name(self) -> str:
        return self.abi.name

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items())
        sig = ", ".join(f"%{n}: {t}" for n, t in zip(self.arg_names, self.abi.arg_types))
        return (
            f"<tawa.Kernel @{self.name}({sig}){opts}: {self.abi.threads} threads, "
            f"{self.abi.smem_bytes} B shared memory>"
        )

    def plan(self, *args: Any, grid: Any) -> LaunchPlan:
        """Checks `args` and packs the parameters of a launch over the logical
        `grid` (no GPU needed; raises ArgumentError / LaunchError)."""
        if self._signature is None:
            self._signature = signature(self.abi, self.arg_names)
        return plan_launch(self._signature, args, grid)

    def assemble(self) -> Cubin:
        """The cubin, assembled by ptxas or found in the cache (no GPU needed).
        A `RegisterSpillWarning` says when ptxas spilled registers, a
        `SerializedWgmmaWarning` when it waits for wgmma itself (once per
        kernel object)."""
        if self._cubin is None:
            self._cubin = assemble(self.ptx, self.name, self.arch)
            log = self._cubin.ptx_path.with_suffix(".log")
            if self._cubin.spill_bytes:
                warnings.warn(f"tawa: ptxas spilled {self._cubin.spill_bytes} bytes of registers to local memory "
                              f"in @{self.name}: it runs correctly but slower; give its consumers more registers "
                              "(consumer_regs) or keep fewer fragments live (ptxas -v log: "
                              f"{log})", RegisterSpillWarning, stacklevel=2)
            if self._cubin.serialized_wgmma:
                warnings.warn(f"tawa: ptxas waits for wgmma itself in @{self.name} "
                              f"({', '.join(self._cubin.serialized_wgmma)}): it runs correctly but what was overlapped "
                              "runs in turn; a register a wgmma in flight reads or writes is set by another "
                              f"instruction (ptxas -v log: {log})", SerializedWgmmaWarning, stacklevel=2)
        return self._cubin

    def load(self, device: int | None = None) -> Any:
        """Loads the kernel onto CUDA `device` (default: CuPy's current one);
        returns a `tawa.runtime.cuda.LoadedKernel`."""
        from tawa.runtime import cuda

        dev = cuda.current_device() if device is None else device
        loaded = self._loaded.get(dev)
        if loaded is None:
            cubin = self.assemble()
            loaded = cuda.load(str(cubin.path), self.name, self.abi.smem_bytes, dev)
            self._loaded[dev] = loaded
        return loaded

    def __call__(self, *args: Any, grid: Any, stream: Any = None) -> None:
        """Launches the kernel over the logical `grid` (1 to 3 program-id
        axes), asynchronously on `stream` (default: torch's current stream if
        an argument is a torch tensor, else CuPy's current stream).  Every
        argument is checked before anything is launched.

        A launch with the same arguments as an earlier one (pointers, shapes,
        strides, dtypes, scalars and grid: `tawa.runtime.launch.LaunchKeys`)
        reuses that launch's checked and packed parameters: one key read, one
        dictionary lookup and one driver call.  A launch on new arrays laid
        out like earlier ones (the same key but for the addresses; a model's
        new activations every call) goes through a launch template
        (`template`) made the second time the layout is seen: the addresses
        are written into parameters checked and packed once."""
        key = None
        if stream is None:
            key = self._keys.read(args, grid)
            try:
                prepared = self._prepared[key]  # never stored under None
            except KeyError:
                if self._again_in_layout(args, grid):
                    return
            else:
                if prepared.again():
                    return
                if prepared is _TWIN:
                    assert self._twin is not None
                    self._twin(*args, grid=grid, stream=stream)
                    return
        try:
            plan = self.plan(*args, grid=grid)
        except TensorMapError:
            twin = self._fallback_twin()
            if twin is None:
                raise
            twin(*args, grid=grid, stream=stream)
            if key is not None:
                self._remember(key, _TWIN)
            return
        if plan.empty:
            return
        from tawa.runtime import cuda

        prepared = cuda.launch(self.load(plan.device), plan, stream)
        if key is not None and prepared is not None:
            self._remember(key, prepared)

    def _again_in_layout(self, args: Any, grid: Any) -> bool:
        """Launches through the template of the arguments' layout, made here
        when the layout was launched once before; False, with nothing
        launched, where there is none (the checked path then launches)."""
        read = self._layouts.read(args, grid)
        if read is None:
            return False
        layout, ptrs = read
        bound = self._bound.get(layout)
        if bound is None:
            self._bind(layout, _SEEN)
            return False
        if bound is _UNBOUND:
            return False
        if bound is _SEEN:
            try:
                bound = self.template(*args, grid=grid)
            except TawaError:
                bound = None  # the checked path reports it
            self._bind(layout, _UNBOUND if bound is None else bound)
            if bound is None:
                return False
        return bound.launch(ptrs)

    def _bind(self, layout: tuple[Any, ...], bound: Any) -> None:
        if len(self._bound) >= PREPARED_LAUNCHES and layout not in self._bound:
            self._bound.pop(next(iter(self._bound)))
        self._bound[layout] = bound

    def _fallback_twin(self) -> Kernel | None:
        """The `fallback` twin (compiled on first use), or None when there is
        none or it is this same kernel (its inputs are then the problem,
        reported as they are)."""
        if self.fallback is None:
            return None
        if self._twin is None:
            self._twin = self.fallback()
        return None if self._twin.abi == self.abi else self._twin

    def template(self, *args: Any, grid: Any) -> Any:
        """Checks `args` like a launch and returns a `tawa.runtime.cuda.BoundLaunch`
        that launches the same plan with other arrays of the same shapes,
        strides, dtypes and device: `bound.launch(ptrs)`, one address per
        array argument in argument order (`tawa.runtime.template`).  None
        where a launch needs more than its parameters: no programs, a tensor
        over an empty array (scratch memory), a watchdog.  Nothing is
        launched; the kernel is loaded.  Arguments that only the kernel's
        `fallback` twin takes get the twin's template, as a launch would."""
        try:
            plan = self.plan(*args, grid=grid)
        except TensorMapError:
            twin = self._fallback_twin()
            if twin is None:
                raise
            return twin.template(*args, grid=grid)
        if plan.empty or any(
            kind == "watchdog" or (kind == "tensormap" and value.address is None) for kind, value in plan.params
        ):
            return None
        from tawa.runtime import cuda
        from tawa.runtime.template import array_alignments

        assert self._signature is not None
        arrays = [a for a in self._signature.args if a.kind == "array"]
        return cuda.bind(self.load(plan.device), plan, self._signature.program, [a.index for a in arrays],
                         array_alignments(arrays))

    def _remember(self, key: tuple[Any, ...], prepared: Any) -> None:
        if len(self._prepared) >= PREPARED_LAUNCHES:
            self._prepared.pop(next(iter(self._prepared)))
        self._prepared[key] = prepared
