"""Running tawa's kernels on Hopper GPUs (docs/runtime.md).

- `compile(module_or_text, kernel, **options) -> Kernel` (also `tawa.compile`):
  IR → PTX through `tawa-hopper-pipeline{options}` and the PTX printer, cached
  in the process;
- `Kernel`: `.ptx`, `.abi` (`tawa.backend.ptx.abi.KernelABI`),
  `kernel(*args, grid=..., stream=None)` launches on CuPy arrays or torch
  tensors; `Kernel.from_ptx(ptx, abi)` wraps PTX from elsewhere;
- `reinterpret(array, "bf16")` passes a CuPy uint16 array as bf16 data.

Parts: `launch` (argument checks and parameter packing, pure Python),
`assemble` (ptxas and the on-disk cubin cache), `cuda` (CuPy /
cuda.bindings: loading, tensor maps, launching; imported on first launch).
"""

from __future__ import annotations

from tawa.runtime.arrays import reinterpret
from tawa.runtime.compiler import CompileError, clear_cache, compile
from tawa.runtime.errors import ArgumentError, LaunchError, TensorMapError
from tawa.runtime.kernel import Kernel
from tawa.runtime.launch import LaunchPlan, TensorMapSpec, plan_launch
from tawa.runtime.ptxas import AssembleError, Cubin, RegisterSpillWarning, SerializedWgmmaWarning, assemble, cache_dir

__all__ = [
    "ArgumentError",
    "AssembleError",
    "CompileError",
    "Cubin",
    "Kernel",
    "LaunchError",
    "LaunchPlan",
    "RegisterSpillWarning",
    "SerializedWgmmaWarning",
    "TensorMapError",
    "TensorMapSpec",
    "assemble",
    "cache_dir",
    "clear_cache",
    "compile",
    "plan_launch",
    "reinterpret",
]
