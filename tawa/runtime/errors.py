"""The runtime's errors: each one line, naming what cannot be launched."""

from __future__ import annotations

from tawa.diagnostics import TawaError


class LaunchError(TawaError):
    """A kernel that cannot be launched as asked (grid, device, CUDA errors)."""

    def __init__(self, message: str, where: str = "tawa.launch"):
        super().__init__(message, where)


class ArgumentError(LaunchError):
    """A launch argument that does not match the kernel's signature."""


class TensorMapError(ArgumentError):
    """An array that a tensor map cannot describe (TMA's alignment and size
    rules).  A kernel compiled with `epilogue="auto"` stores its outputs
    through tensor maps where it can; given such an output it launches its
    thread-epilogue twin instead (`tawa.Kernel.__call__`)."""
