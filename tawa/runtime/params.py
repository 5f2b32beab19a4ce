"""Kernel parameters packed into host memory as `cuLaunchKernel` takes them.

`cuLaunchKernel(f, grid, block, smem, stream, kernelParams, extra)` reads
parameter i from the address `kernelParams[i]`.  `PackedParams(values)` lays
the values out once, in one buffer, and keeps the `void*` array beside them,
so that a launch is a single driver call with one integer (`address`) for all
parameters.  Packing is pure NumPy: it is tested on the CPU by reading the
memory back.

Example: for `gemm(A, B, C, M, N, K)` the ABI has 3 tensor maps (128 bytes,
128-byte aligned), 3 pointers and 3 sizes (`u64`).  The buffer holds the maps
at offsets 0, 128, 256 and the six `u64` at 384, 392, ..., 424; `address`
points at nine pointers: base+0, base+128, ..., base+424.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_ALIGN = {1: 1, 2: 2, 4: 4, 8: 8, 128: 128}
"""Alignment of a parameter by its size: natural, and 128 for a tensor map
(`.param .align 128 .b8 [128]`)."""


class PackedParams:
    """Parameter values (`np.uint64`, `np.uint32`, `np.float32`, or a
    128-byte `np.void` tensor map, as `kernel_arguments` returns them) laid out
    in host memory; `address` is the `void**` to pass as `kernelParams`.
    The object owns the memory: keep it alive while a launch may read it
    (the driver copies the parameters during the `cuLaunchKernel` call)."""

    def __init__(self, values: Sequence[Any]):
        offsets: list[int] = []
        end = 0
        blobs = [np.asarray(v).tobytes() for v in values]
        for blob in blobs:
            align = _ALIGN.get(len(blob), 8)
            end = -(-end // align) * align
            offsets.append(end)
            end += len(blob)
        # Over-allocate so the base can be rounded up to 128 bytes.
        self._storage = np.zeros(end + 128, dtype=np.uint8)
        raw = self._storage.ctypes.data
        shift = -raw % 128
        for off, blob in zip(offsets, blobs):
            self._storage[shift + off : shift + off + len(blob)] = np.frombuffer(blob, dtype=np.uint8)
        self.base = raw + shift
        self._pointers = np.array([self.base + off for off in offsets] or [0], dtype=np.uint64)
        self.address = int(self._pointers.ctypes.data) if values else 0
        """The `kernelParams` argument (0 for a kernel without parameters)."""
        self.sizes = tuple(len(b) for b in blobs)
        self.offsets = tuple(offsets)

    def __len__(self) -> int:
        return len(self.sizes)
