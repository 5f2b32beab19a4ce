"""Launch templates without a GPU (`tawa.runtime.template`): where an encoded
tensor map keeps its address, and a checked launch's parameters rewritten
for other arrays of the same layout."""

from __future__ import annotations

import ctypes
import dataclasses
import struct

import pytest
from xdsl.dialects.builtin import BFloat16Type, IndexType, MemRefType

from tawa.backend.ptx.abi import KernelABI, Param
from tawa.runtime.kernel import Kernel
from tawa.runtime.launch import TensorMapSpec
from tawa.runtime.template import LaunchTemplate, address_word, array_alignments


def fake_encoder(where: int, shift: int = 0):
    """A stand-in for cuTensorMapEncodeTiled: 16 words, the address (shifted
    right by `shift`) in word `where`, the dims and box elsewhere; and the
    list of specs it was asked to encode."""
    calls: list[TensorMapSpec] = []

    def encode(spec: TensorMapSpec) -> bytes:
        calls.append(spec)
        words = [0x5A5A] * 16
        words[where] = spec.address >> shift
        words[(where + 1) % 16] = spec.dims[0] | spec.box[0] << 32
        return struct.pack("<16Q", *words)

    return encode, calls


SPEC = TensorMapSpec("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 0x7F00_0000_1000, (64, 256), (128,), (64, 128), (1, 1),
                     "CU_TENSOR_MAP_SWIZZLE_128B")  # fmt: skip


@pytest.mark.parametrize("where", [0, 3, 15])
def test_address_word_is_found_where_the_encoding_keeps_the_address(where):
    encode, calls = fake_encoder(where)
    assert address_word(SPEC, encode) == 8 * where
    # Probed at three addresses that differ in a low and in a high bit.
    assert {c.address for c in calls} == {SPEC.address, SPEC.address ^ 0x10, SPEC.address ^ 0x1_0000_0000}


def test_no_address_word_when_the_encoding_transforms_the_address():
    encode, _ = fake_encoder(2, shift=4)
    assert address_word(SPEC, encode) is None


def copy_kernel() -> Kernel:
    """`@copy(%X: memref<?x?xbf16>, %Y: memref<?x?xbf16>, %n: index)`: X read
    through a tensor map, Y through its pointer."""
    X = MemRefType(BFloat16Type(), [-1, -1])
    params = (
        Param("arg0_X_tmap", "tensormap", 0, box=(128, 64), swizzle=128),
        Param("arg1_Y_ptr", "ptr", 1), Param("arg1_Y_dim0", "dim", 1, 0), Param("arg1_Y_dim1", "dim", 1, 1),
        Param("arg0_X_ptr", "ptr", 0), Param("arg2_n", "index", 2),
    )  # fmt: skip
    return Kernel.from_ptx("", KernelABI("copy", params, (X, X, IndexType()), 128, 0))


class Tensor:
    """What the checks read of a CUDA torch tensor."""

    is_cuda = True
    dtype = "bfloat16"
    device = type("device", (), {"index": 0})()

    def __init__(self, ptr: int, shape: tuple[int, int]):
        self.ptr, self.shape = ptr, shape

    def data_ptr(self) -> int:
        return self.ptr

    def stride(self) -> tuple[int, int]:
        return (self.shape[1], 1)

    def element_size(self) -> int:
        return 2

    def is_contiguous(self) -> bool:
        return True


def read_param(template: LaunchTemplate, i: int) -> bytes:
    pointer = ctypes.cast(template.params.address, ctypes.POINTER(ctypes.c_uint64))[i]
    return ctypes.string_at(pointer, template.params.sizes[i])


def u64(b: bytes, offset: int = 0) -> int:
    return struct.unpack_from("<Q", b, offset)[0]


def template_of(kernel: Kernel, encode, word_of, *args, grid) -> LaunchTemplate:
    plan = kernel.plan(*args, grid=grid)
    sig = kernel._signature
    arrays = [a for a in sig.args if a.kind == "array"]
    return LaunchTemplate(plan, sig.program, [a.index for a in arrays], array_alignments(arrays), encode, word_of)


def test_template_writes_new_addresses_into_pointers_and_tensor_maps():
    kernel = copy_kernel()
    encode, calls = fake_encoder(5)
    X, Y = Tensor(0x10000, (256, 64)), Tensor(0x20000, (256, 64))
    template = template_of(kernel, encode, lambda spec: address_word(spec, encode), X, Y, 7, grid=(2,))
    assert template.masks == (15, 1)  # X through TMA: 16 bytes; Y addressed by the kernel: its elements
    before = [read_param(template, i) for i in range(6)]
    assert u64(before[0], 40) == 0x10000 and u64(before[1]) == 0x20000 and u64(before[4]) == 0x10000
    encoded = len(calls)
    assert template.write((0x30000, 0x40002))
    after = [read_param(template, i) for i in range(6)]
    assert u64(after[0], 40) == 0x30000 and u64(after[1]) == 0x40002 and u64(after[4]) == 0x30000
    # Only the addresses changed: sizes, the scalar, the rest of the tensor map are the plan's.
    assert after[0][:40] + after[0][48:] == before[0][:40] + before[0][48:]
    assert after[2:4] == before[2:4] and after[5] == before[5]
    assert len(calls) == encoded  # nothing encoded: the address word was patched
    # A misaligned address writes nothing: the caller takes the checked path.
    assert not template.write((0x50008, 0x60000))
    assert not template.write((0x50000, 0x60001))
    assert [read_param(template, i) for i in range(6)] == after


def test_template_encodes_maps_whose_address_word_is_unknown():
    kernel = copy_kernel()
    encode, calls = fake_encoder(2, shift=4)
    X, Y = Tensor(0x10000, (256, 64)), Tensor(0x20000, (256, 64))
    template = template_of(kernel, encode, lambda spec: address_word(spec, encode), X, Y, 7, grid=(2,))
    assert len(template.remap) == 1
    assert template.write((0x30000, 0x40000))
    assert calls[-1] == dataclasses.replace(calls[0], address=0x30000)
    assert u64(read_param(template, 0), 16) == 0x30000 >> 4 and u64(read_param(template, 4)) == 0x30000
