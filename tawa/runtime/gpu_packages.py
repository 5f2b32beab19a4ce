"""The optional GPU packages (the `gpu` extra), imported when first needed:
without them `import tawa` and everything up to the launch still work, and
a launch fails with one line saying what to install."""

from __future__ import annotations

from types import ModuleType

from tawa.runtime.errors import LaunchError


def cupy_module() -> ModuleType:
    """CuPy (device memory, streams, module loading)."""
    try:
        import cupy
    except ImportError as err:
        raise LaunchError(
            f"launching kernels needs CuPy and cuda-bindings (pip install 'tawa[gpu]'): {err}"
        ) from None
    return cupy


def driver_module() -> ModuleType:
    """cuda-bindings' driver API (tensor maps, launches)."""
    try:
        from cuda.bindings import driver
    except ImportError as err:
        raise LaunchError(
            f"tensor maps need cuda-bindings (pip install 'tawa[gpu]'): {err}"
        ) from None
    return driver


__all__ = ["cupy_module", "driver_module"]
