"""Launch templates: a checked launch whose array addresses change from call to call.

A model calls an operator with new tensors every time: the same shapes,
strides and dtypes, new pointers.  A launch keyed by pointer would check
every argument again for each such call, encode its tensor maps and pack
its parameters (tens to hundreds of µs of host time).  A `LaunchTemplate`
is made once from a checked `LaunchPlan` and launches it with other
addresses: the packed parameters are kept, and each launch writes the new
addresses into them and calls `cuLaunchKernel`.  `Kernel.__call__` makes
one per layout of its arguments (`LaunchKeys(..., addresses=False)`), and
`tawa.torch`'s operators keep one per call.

What a new address changes in the parameters:

- a pointer parameter (`u64`) is the address itself;
- a tensor map (`cuTensorMapEncodeTiled`'s 128 opaque bytes) holds the
  global address somewhere among them.  `address_word(spec, encode)` finds
  where by encoding the map at three addresses and keeping the 8-byte word
  that equals the address each time while every other byte stays the same;
  the template then writes the address there.  If no such word exists (a
  driver that stores the address otherwise), the template encodes that map
  for each launch (through the `TensorMapCache`), which is slower but right.

Example: `gemm(A, B, C, M, N, K)` has tensor maps of A, B and C, pointers
of A, B and C, and M, N, K.  A template made from a launch with some A, B,
C launches any A', B', C' of the same shapes, strides and dtypes on the same
device with `template.launch((A'.data_ptr(), B'.data_ptr(), C'.data_ptr()))`:
six 8-byte writes and one driver call.

The template is valid only for arrays laid out like those it was made from.
Its caller guarantees that (by the arrays' shapes, strides, dtypes and devices); `launch` itself checks what differs between addresses:
their alignment (16 bytes for TMA, the element size otherwise).  A launch it
cannot make returns False, having launched nothing.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Sequence
from typing import Any

from tawa.runtime.launch import TMA_ALIGN, LaunchPlan, TensorMapSpec, kernel_arguments
from tawa.runtime.params import PackedParams

_WORD = struct.Struct("<Q")
_PROBE_OFFSETS = (0x10, 0x1_0000_0000)
"""Address offsets of the probe encodings: one flips a low bit, one a high one."""


def address_word(spec: TensorMapSpec, encode: Callable[[TensorMapSpec], bytes]) -> int | None:
    """The byte offset of the 8-byte word of an encoded tensor map that holds
    `spec`'s global address, or None if the encodings at other addresses
    differ in any other way."""
    assert spec.address is not None
    maps = [encode(spec)]
    addresses = [spec.address]
    for delta in _PROBE_OFFSETS:
        other = spec.address ^ delta
        addresses.append(other)
        maps.append(encode(dataclasses.replace(spec, address=other)))
    for offset in range(0, len(maps[0]), _WORD.size):
        if all(_WORD.unpack_from(m, offset)[0] == a for m, a in zip(maps, addresses)):
            cut = slice(offset, offset + _WORD.size)
            rest = [m[: cut.start] + m[cut.stop :] for m in maps]
            if rest[0] == rest[1] == rest[2]:
                return offset
    return None


class LaunchTemplate:
    """The packed parameters of a checked launch, rewritten for other array
    addresses.

    - `slots`: per array argument (in argument order), the offsets in the
      packed parameters (from `params.base`) where its address goes: its
      pointer parameters and the address words of its tensor maps;
    - `remap`: tensor maps whose address word was not found: (array index,
      parameter index, spec), encoded again for each launch;
    - `masks`: per array argument, the low address bits that must be zero.
    """

    def __init__(
        self,
        plan: LaunchPlan,
        program: Sequence[tuple[Any, ...]],
        array_args: Sequence[int],
        alignments: Sequence[int],
        encode: Callable[[TensorMapSpec], bytes],
        word_of: Callable[[TensorMapSpec], int | None],
    ):
        index = {arg: j for j, arg in enumerate(array_args)}
        self.params = PackedParams(kernel_arguments(plan.params, encode))
        offsets = self.params.offsets
        self.slots: list[list[int]] = [[] for _ in alignments]
        self.remap: list[tuple[int, int, TensorMapSpec]] = []
        for p, step in enumerate(program):
            if step[0] == "ptr":
                self.slots[index[step[1]]].append(offsets[p])
            elif step[0] == "tensormap":
                spec = plan.params[p][1]
                word = word_of(spec)
                if word is None:
                    self.remap.append((index[step[1]], p, spec))
                else:
                    self.slots[index[step[1]]].append(offsets[p] + word)
        self.masks = tuple(a - 1 for a in alignments)
        self._encode = encode
        self._storage = self.params.storage
        shift = self.params.shift
        self._writes = tuple((j, shift + off) for j, slots in enumerate(self.slots) for off in slots)
        self._remap_at = tuple((j, shift + offsets[p], spec) for j, p, spec in self.remap)

    def write(self, ptrs: Sequence[int]) -> bool:
        """Writes the addresses `ptrs` (one per array argument, in argument
        order) into the parameters; False, with nothing written, if one is
        misaligned."""
        for p, mask in zip(ptrs, self.masks):
            if p & mask:
                return False
        pack, storage = _WORD.pack_into, self._storage
        for j, at in self._writes:
            pack(storage, at, ptrs[j])
        for j, at, spec in self._remap_at:
            storage[at : at + 128] = self._encode(dataclasses.replace(spec, address=ptrs[j]))
        return True


def array_alignments(arrays: Sequence[Any]) -> tuple[int, ...]:
    """The address alignment each array argument (`ArgSpec`) needs: TMA's 16
    bytes when it is read or written through a tensor map, else its element
    size."""
    return tuple(TMA_ALIGN if a.tma else a.elem.itemsize for a in arrays)
