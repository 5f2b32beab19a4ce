"""Kernel parameters packed into host memory as `cuLaunchKernel` takes them.

`cuLaunchKernel(f, grid, block, smem, stream, kernelParams, extra)` reads
parameter i from the address `kernelParams[i]`.  `PackedParams(values)` lays
the values out once, in one buffer, and keeps the `void*` array beside them,
so that a launch is a single driver call with one integer (`address`) for all
parameters.  Packing needs no GPU: it is tested on the CPU by reading the
memory back.

Example: for `gemm(A, B, C, M, N, K)` the ABI has 3 tensor maps (128 bytes,
128-byte aligned), 3 pointers and 3 sizes (`u64`).  The buffer holds the maps
at offsets 0, 128, 256 and the six `u64` at 384, 392, ..., 424; `address`
points at nine pointers: base+0, base+128, ..., base+424.
"""

from __future__ import annotations

import array
import ctypes
import functools
from collections.abc import Sequence

_ALIGN = {1: 1, 2: 2, 4: 4, 8: 8, 128: 128}
"""Alignment of a parameter by its size: natural, and 128 for a tensor map
(`.param .align 128 .b8 [128]`)."""


@functools.lru_cache(maxsize=256)
def _layout(sizes: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """Offsets of parameters of `sizes`, each aligned by its size, and the end."""
    offsets: list[int] = []
    end = 0
    for size in sizes:
        align = _ALIGN.get(size, 8)
        end = -(-end // align) * align
        offsets.append(end)
        end += size
    return tuple(offsets), end


class PackedParams:
    """Parameter values (the bytes of each, as `kernel_arguments` returns
    them: 8 for `u64`, 4 for `u32` and `f32`, 128 for a tensor map) laid out
    in host memory; `address` is the `void**` to pass as `kernelParams`.
    The object owns the memory: keep it alive while a launch may read it
    (the driver copies the parameters during the `cuLaunchKernel` call)."""

    def __init__(self, blobs: Sequence[bytes]):
        sizes = tuple(map(len, blobs))
        offsets, end = _layout(sizes)
        # Over-allocate so the base can be rounded up to 128 bytes.  (bytearray
        # and array.array rather than NumPy: this runs on every checked launch.)
        self.storage = bytearray(end + 128)
        """The memory (never resized: its address is fixed); parameter i's bytes
        start at `storage[shift + offsets[i]]`."""
        raw = ctypes.addressof(ctypes.c_char.from_buffer(self.storage))
        self.shift = -raw % 128
        for off, blob in zip(offsets, blobs):
            self.storage[self.shift + off : self.shift + off + len(blob)] = blob
        self.base = raw + self.shift
        self._pointers = array.array("Q", [self.base + off for off in offsets])
        self.address = self._pointers.buffer_info()[0] if blobs else 0
        """The `kernelParams` argument (0 for a kernel without parameters)."""
        self.sizes = sizes
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.sizes)
