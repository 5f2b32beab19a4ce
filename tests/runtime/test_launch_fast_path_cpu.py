"""The launch fast path without a GPU: parameters packed as cuLaunchKernel
reads them (`tawa.runtime.params`), and the key that decides when a launch
may reuse an earlier one's packed parameters (`launch_key`)."""

from __future__ import annotations

import ctypes
import sys
import types

import numpy as np
import pytest

from tawa.runtime.launch import kernel_arguments, launch_key, tensormap_by_value
from tawa.runtime.params import PackedParams


def read_back(packed: PackedParams, i: int) -> bytes:
    """Parameter i as the driver reads it: through the pointer array."""
    pointer = ctypes.cast(packed.address, ctypes.POINTER(ctypes.c_uint64))[i]
    return ctypes.string_at(pointer, packed.sizes[i])


def test_packed_params_lay_out_every_value_where_its_pointer_says():
    words = list(range(100, 116))
    values = kernel_arguments(
        [("u32", 7), ("tensormap", None), ("u64", 2**64 - 1), ("f32", 1.5), ("tensormap", None), ("u64", 3)],
        encode=lambda spec: tensormap_by_value(words),
    )
    packed = PackedParams(values)
    assert len(packed) == 6 and packed.sizes == (4, 128, 8, 4, 128, 8)
    for i, v in enumerate(values):
        assert read_back(packed, i) == v, i
    pointers = np.ctypeslib.as_array(ctypes.cast(packed.address, ctypes.POINTER(ctypes.c_uint64)), (6,))
    # Natural alignment, 128 bytes for tensor maps (`.param .align 128 .b8 [128]`).
    for ptr, size in zip(pointers.tolist(), packed.sizes):
        assert ptr % (128 if size == 128 else size) == 0
    # No two parameters overlap.
    spans = sorted(zip(pointers.tolist(), packed.sizes))
    assert all(a + n <= b for (a, n), (b, _) in zip(spans, spans[1:]))


def test_packed_params_of_a_kernel_without_parameters():
    assert PackedParams(()).address == 0


class FakeTensor:
    """What the key reads of a torch tensor."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: str = "bfloat16"):
        self.ptr, self.shape, self.dtype = ptr, shape, dtype

    def data_ptr(self) -> int:
        return self.ptr

    def stride(self) -> tuple[int, ...]:
        return tuple(int(np.prod(self.shape[i + 1 :])) for i in range(len(self.shape)))


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> type:
    module = types.ModuleType("torch")
    module.Tensor = FakeTensor  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", module)
    return FakeTensor


def test_launch_key_tells_launches_apart(fake_torch):
    A, B = fake_torch(0x1000, (256, 64)), fake_torch(0x2000, (256, 64))
    key = launch_key([A, B, 256, 64, 1.5], (2, 1))
    assert key is not None and hash(key) is not None
    assert launch_key([A, B, 256, 64, 1.5], (2, 1)) == key
    different = [
        launch_key([B, A, 256, 64, 1.5], (2, 1)),                        # pointers
        launch_key([fake_torch(0x1000, (64, 256)), B, 256, 64, 1.5], (2, 1)),  # shape
        launch_key([fake_torch(0x1000, (256, 64), "float16"), B, 256, 64, 1.5], (2, 1)),  # dtype
        launch_key([A, B, 256, 65, 1.5], (2, 1)),                        # a size
        launch_key([A, B, 256, 64, 2.5], (2, 1)),                        # a scalar
        launch_key([A, B, 256, 64.0, 1.5], (2, 1)),                      # 64 vs 64.0: the type
        launch_key([A, B, 256, 64, 1.5], (1, 2)),                        # the grid
    ]
    assert all(k != key for k in different) and len(set(different)) == len(different)


def test_launch_key_gives_up_on_arguments_without_a_cheap_read(fake_torch):
    A = fake_torch(0x1000, (256, 64))
    assert launch_key([A, np.int64(3)], (1,)) is None      # NumPy scalar: checked in full
    assert launch_key([A, True], (1,)) is None             # bool: the checks reject it
    assert launch_key([object()], (1,)) is None
    assert launch_key([A], [1, 1]) is None                 # a list grid is not hashable
