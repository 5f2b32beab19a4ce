"""The launch fast path without a GPU: parameters packed as cuLaunchKernel
reads them (`tawa.runtime.params`), the key that decides when a launch may
reuse an earlier one's packed parameters (`LaunchKeys`), and the repeated
launch itself (`Kernel.__call__`, `PreparedLaunch`) with the driver replaced
by a recorder (`LaunchAPI`)."""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.util
import struct
import sys
import types

import numpy as np
import pytest
from xdsl.dialects.builtin import BFloat16Type, Float32Type, IndexType, MemRefType

from tawa.backend.ptx.abi import KernelABI, Param
from tawa.runtime import cuda
from tawa.runtime.cuda import BoundLaunch, LaunchAPI, PreparedLaunch
from tawa.runtime.errors import ArgumentError, LaunchError
from tawa.runtime.kernel import Kernel
from tawa.runtime.launch import LaunchKeys, kernel_arguments, tensormap_by_value
from tawa.runtime.params import PackedParams
from tawa.runtime.template import LaunchTemplate


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
    """What the key and the checks read of a CUDA torch tensor."""

    is_cuda = True

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: str = "bfloat16", strides=None):
        self.ptr, self.shape, self.dtype = ptr, shape, dtype
        self.strides = strides or tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
        self.device = types.SimpleNamespace(index=0)

    def data_ptr(self) -> int:
        return self.ptr

    def get_device(self) -> int:
        return self.device.index

    def stride(self) -> tuple[int, ...]:
        return self.strides

    def element_size(self) -> int:
        return 2

    def is_contiguous(self) -> bool:
        dense = tuple(int(np.prod(self.shape[i + 1 :])) for i in range(len(self.shape)))
        return all(s == d for n, s, d in zip(self.shape, self.strides, dense) if n != 1)


class FakeCupyArray:
    """What the key reads of a CuPy array."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: str = "bfloat16"):
        self.data = types.SimpleNamespace(ptr=ptr, device_id=0)
        self.shape, self.dtype = shape, dtype
        self.strides = FakeTensor(ptr, shape).strides


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> type:
    for name, module in (("torch", types.ModuleType("torch")), ("cupy", types.ModuleType("cupy"))):
        monkeypatch.setitem(sys.modules, name, module)
    sys.modules["torch"].Tensor = FakeTensor  # type: ignore[attr-defined]
    sys.modules["cupy"].ndarray = FakeCupyArray  # type: ignore[attr-defined]
    return FakeTensor


ARRAY, INT, F32 = "array", "int", "f32"


def test_launch_key_tells_launches_apart(fake_torch):
    keys = LaunchKeys([ARRAY, ARRAY, INT, F32])
    A, B = fake_torch(0x1000, (256, 64)), fake_torch(0x2000, (256, 64))
    key = keys([A, B, 256, 1.5], (2, 1))
    assert key is not None and hash(key) is not None
    assert keys([fake_torch(0x1000, (256, 64)), B, 256, 1.5], (2, 1)) == key  # equal reads, other objects
    different = [
        keys([B, A, 256, 1.5], (2, 1)),                                        # pointers
        keys([fake_torch(0x1000, (64, 256)), B, 256, 1.5], (2, 1)),            # shape
        keys([fake_torch(0x1000, (256, 64), strides=(1, 256)), B, 256, 1.5], (2, 1)),  # strides
        keys([fake_torch(0x1000, (256, 64), "float16"), B, 256, 1.5], (2, 1)),  # dtype
        keys([A, B, 257, 1.5], (2, 1)),                                        # a size
        keys([A, B, 256, 2.5], (2, 1)),                                        # a scalar
        keys([A, B, 256, 1.5], (1, 2)),                                        # the grid
        keys([A, B, 256, 1.5], 2),
        keys([FakeCupyArray(0x1000, (256, 64)), B, 256, 1.5], (2, 1)),         # CuPy's stream, not torch's
        keys([A, B, 256, 1], (2, 1)),                                          # an int for f32: the same plan, but
    ]                                                                          # keyed apart (other types)
    assert all(k is not None and k != key for k in different) and len(set(different)) == len(different)
    # The reader of the types seen first still works after other types came.
    assert keys([A, B, 256, 1.5], (2, 1)) == key


def test_launch_key_of_strides_a_plan_ignores(fake_torch):
    """A contiguous tensor's plan depends on its shape only (dense strides are
    taken, whatever the strides of size-1 dimensions): it keys alike."""
    keys = LaunchKeys([ARRAY])
    assert keys([fake_torch(0x1000, (1, 64))], (1,)) == keys([fake_torch(0x1000, (1, 64), strides=(7, 1))], (1,))
    sliced = fake_torch(0x1000, (64, 32), strides=(64, 1))  # x[:, :32]: not contiguous
    assert keys([sliced], (1,)) != keys([fake_torch(0x1000, (64, 32))], (1,))


def test_launch_key_gives_up_on_arguments_without_a_cheap_read(fake_torch):
    keys = LaunchKeys([ARRAY, INT])
    A = fake_torch(0x1000, (256, 64))
    assert keys([A, 3], (1,)) is not None
    assert keys([type("Parameter", (FakeTensor,), {})(0x1000, (256, 64)), 3], (1,)) is not None  # a subclass
    assert keys([A, np.int64(3)], (1,)) is None      # NumPy scalar: checked in full
    assert keys([A, True], (1,)) is None             # bool: the checks reject it
    assert keys([A, 3.0], (1,)) is None              # a float for an int: rejected too
    assert keys([object(), 3], (1,)) is None
    assert keys([A, 3, 4], (1,)) is None             # the wrong number of arguments
    assert keys([A], (1,)) is None
    assert keys([A, 3], [2, 1]) == keys([A, 3], (2, 1))  # the checks take a list grid alike
    for grid in (np.int64(1), (np.int64(1),), (1.0,), (True,), ([1],), (), (1, 1, 1, 1), "ab", None):
        assert keys([A, 3], grid) is None, grid     # checked in full (accepted or refused there)
    assert keys([A, 3], (1,)) != keys([A, 3], 1) != keys([A, 3], (1, 1))
    assert LaunchKeys(["unsupported"])([A], (1,)) is None
    assert LaunchKeys([])([], (1,)) is not None


# --------------------------------------------------------------------------- the launch itself


def scale_kernel() -> Kernel:
    """`@scale(%X: memref<?x?xbf16>, %n: index, %alpha: f32)`, which
    addresses X itself (its row stride is a parameter): no GPU, no PTX
    needed to plan."""
    X = MemRefType(BFloat16Type(), [-1, -1])
    params = (
        Param("arg0_X_ptr", "ptr", 0), Param("arg0_X_dim0", "dim", 0, 0), Param("arg0_X_dim1", "dim", 0, 1),
        Param("arg0_X_stride0", "stride", 0, 0), Param("arg1_n", "index", 1), Param("arg2_alpha", "f32", 2),
    )  # fmt: skip
    return Kernel.from_ptx("", KernelABI("scale", params, (X, IndexType(), Float32Type()), 128, 0, addressed=(0,)))


class Recorder:
    """A LaunchAPI whose `cuLaunchKernel` records its arguments."""

    def __init__(self) -> None:
        self.launches: list[tuple[int, ...]] = []
        self.first_params: list[int] = []
        """The first parameter (a pointer) of each launch, read as the driver would at the call."""
        self.device = 0
        self.stream = 7
        self.refuse = False

    def api(self) -> LaunchAPI:
        def launch_kernel(*args: int) -> None:
            if self.refuse:
                raise RuntimeError("refused")
            self.launches.append(args)
            first = ctypes.cast(args[9], ctypes.POINTER(ctypes.c_uint64))[0]
            self.first_params.append(int.from_bytes(ctypes.string_at(first, 8), "little"))

        return LaunchAPI(launch_kernel, lambda: self.device, RuntimeError, lambda uses_torch, device: lambda: self.stream)


def prepared_for(kernel: Kernel, rec: Recorder, *args, grid) -> PreparedLaunch:
    plan = kernel.plan(*args, grid=grid)
    packed = PackedParams(kernel_arguments(plan.params, encode=None))  # type: ignore[arg-type]
    s = plan.shape
    return PreparedLaunch(0xF00, s.grid, s.block, s.smem_bytes, packed, 0, plan.uses_torch, rec.api())


def test_prepared_launch_reads_the_current_stream_and_device_every_time():
    kernel, rec = scale_kernel(), Recorder()
    X = FakeTensor(0x10000, (4, 8))
    prepared = prepared_for(kernel, rec, X, 32, 2.0, grid=(3, 2))
    assert prepared.again()
    rec.stream = 9  # another stream became current (a stream context, a graph capture)
    assert prepared.again()
    address = prepared.params.address
    assert rec.launches == [(0xF00, 3, 2, 1, 128, 1, 1, 0, 7, address, 0), (0xF00, 3, 2, 1, 128, 1, 1, 0, 9, address, 0)]
    assert [read_back(prepared.params, i) for i in range(6)] == [
        (0x10000).to_bytes(8, "little"), (4).to_bytes(8, "little"), (8).to_bytes(8, "little"), (8).to_bytes(8, "little"),
        (32).to_bytes(8, "little"), struct.pack("<f", 2.0),
    ]  # fmt: skip
    rec.device = 1  # another device is current: nothing launched, the full path takes over
    assert not prepared.again()
    rec.device, rec.refuse = 0, True  # the driver refuses: the full path launches and reports
    assert not prepared.again()
    assert len(rec.launches) == 2
    # With one device in the process (get_device None) there is nothing to check.
    rec.device, rec.refuse = 1, False
    one = PreparedLaunch(0xF00, (1, 1, 1), (128, 1, 1), 0, prepared.params, 0, False,
                         dataclasses.replace(rec.api(), get_device=None))  # fmt: skip
    assert one.again() and len(rec.launches) == 3


def recorded_kernel(monkeypatch: pytest.MonkeyPatch) -> tuple[Kernel, Recorder, list[tuple]]:
    """`scale_kernel()` whose launches and templates go to a `Recorder`, and
    the arguments of each plan it makes (its checked launches)."""
    kernel, rec = scale_kernel(), Recorder()
    planned: list[tuple] = []
    full = kernel.plan

    def plan(*args, grid):
        planned.append(args)
        return full(*args, grid=grid)

    monkeypatch.setattr(kernel, "plan", plan)

    def prepared(plan, params):
        s = plan.shape
        return PreparedLaunch(0xF00, s.grid, s.block, s.smem_bytes, params, 0, plan.uses_torch, rec.api())

    def launch(loaded, plan, stream):  # tawa.runtime.cuda.launch without a GPU
        p = prepared(plan, PackedParams(kernel_arguments(plan.params, None)))
        p(rec.stream)
        return p

    def bind(loaded, plan, program, array_args, alignments):  # tawa.runtime.cuda.bind without a GPU
        template = LaunchTemplate(plan, program, array_args, alignments, None, lambda spec: None)
        return BoundLaunch(template, prepared(plan, template.params))

    monkeypatch.setattr(cuda, "launch", launch)
    monkeypatch.setattr(cuda, "bind", bind)
    monkeypatch.setattr(kernel, "load", lambda device: None)
    return kernel, rec, planned


def test_a_repeated_call_reuses_only_a_launch_of_equal_arguments(fake_torch, monkeypatch):
    kernel, rec, planned = recorded_kernel(monkeypatch)
    X = FakeTensor(0x10000, (4, 8))
    for _ in range(3):
        kernel(X, 32, 2.0, grid=(3,))
    assert len(planned) == 1 and len(rec.launches) == 3  # checked once, launched thrice
    # Each change is planned anew: pointer (the layout's template is made), shape, strides,
    # dtype (a view), scalar, grid.
    kernel(FakeTensor(0x20000, (4, 8)), 32, 2.0, grid=(3,))
    kernel(FakeTensor(0x10000, (8, 4)), 32, 2.0, grid=(3,))
    kernel(FakeTensor(0x10000, (4, 8), strides=(16, 1)), 32, 2.0, grid=(3,))  # a column slice: its rows 16 apart
    assert scale_kernel().plan(*planned[-1], grid=(3,)).params[3] == ("u64", 16)
    with pytest.raises(ArgumentError, match="the stride of its last dimension is 4 bytes"):
        kernel(FakeTensor(0x10000, (4, 8), strides=(16, 2)), 32, 2.0, grid=(3,))
    with pytest.raises(ArgumentError, match="expected bf16 elements"):
        kernel(FakeTensor(0x10000, (4, 8), "float16"), 32, 2.0, grid=(3,))
    kernel(X, 33, 2.0, grid=(3,))
    kernel(X, 32, 2.0, grid=(4,))
    assert len(planned) == 8
    assert rec.first_params == [0x10000] * 3 + [0x20000, 0x10000, 0x10000, 0x10000, 0x10000]
    rec.device = 1  # another device current: the full path
    kernel(X, 32, 2.0, grid=(3,))
    assert len(planned) == 9
    # A grid with an unhashable entry is reported by the checks, not by the lookup.
    with pytest.raises(LaunchError, match="grid must be"):
        kernel(X, 32, 2.0, grid=([3],))


def test_new_arrays_of_a_layout_seen_before_launch_through_its_template(fake_torch, monkeypatch):
    """A model's new activations every call: the same shapes, strides and
    dtypes at new addresses.  The second address makes the layout's template
    (one more plan); every later one only writes its address."""
    kernel, rec, planned = recorded_kernel(monkeypatch)
    addresses = [0x10000 + 0x1000 * i for i in range(6)]
    for ptr in addresses:
        kernel(FakeTensor(ptr, (4, 8)), 32, 2.0, grid=(3,))
    assert len(planned) == 2 and rec.first_params == addresses
    # Another alignment, device or shape is another layout: checked (and refused) as before.
    kernel(FakeTensor(0x30002, (4, 8)), 32, 2.0, grid=(3,))
    with pytest.raises(ArgumentError, match="not aligned to its 2-byte elements"):
        kernel(FakeTensor(0x30001, (4, 8)), 32, 2.0, grid=(3,))
    with pytest.raises(ArgumentError, match="not aligned to its 2-byte elements"):
        kernel(FakeTensor(0x40001, (4, 8)), 32, 2.0, grid=(3,))  # seen: its template fails the checks too
    assert len(planned) == 6 and rec.first_params[-1] == 0x30002
    with pytest.raises(ArgumentError, match="not aligned to its 2-byte elements"):
        kernel(FakeTensor(0x50001, (4, 8)), 32, 2.0, grid=(3,))  # no template is tried again
    assert len(planned) == 7
    host = FakeTensor(0x50000, (4, 8))
    host.is_cuda, host.device = False, types.SimpleNamespace(index=None)
    for _ in range(2):
        with pytest.raises(ArgumentError, match="move it to the GPU"):
            kernel(host, 32, 2.0, grid=(3,))
    # A launch with an explicit stream takes the checked path.
    kernel(FakeTensor(0x60000, (4, 8)), 32, 2.0, grid=(3,), stream=rec.stream)
    assert rec.first_params[-1] == 0x60000


def test_new_strided_views_of_a_layout_launch_through_its_template(fake_torch, monkeypatch):
    """Column slices (rows 16 elements apart) at new addresses every call: the
    layout's template carries the row stride the checked plan packed, and
    only the address is written."""
    kernel, rec, planned = recorded_kernel(monkeypatch)
    addresses = [0x10000 + 0x1000 * i for i in range(4)]
    for ptr in addresses:
        kernel(FakeTensor(ptr, (4, 8), strides=(16, 1)), 32, 2.0, grid=(3,))
    assert len(planned) == 2 and rec.first_params == addresses
    bound = kernel.template(FakeTensor(0x20000, (4, 8), strides=(16, 1)), 32, 2.0, grid=(3,))
    assert [read_back(bound.template.params, i) for i in range(4)] == [
        (0x20000).to_bytes(8, "little"), (4).to_bytes(8, "little"), (8).to_bytes(8, "little"),
        (16).to_bytes(8, "little"),
    ]  # fmt: skip


def test_host_only_benchmark_times_each_step_without_a_gpu():
    from tawa.bench.launch import format_host_table, host_only

    X = MemRefType(BFloat16Type(), [-1, -1])
    params = tuple(p for i in range(3) for p in (Param(f"arg{i}_ptr", "ptr", i), Param(f"arg{i}_dim0", "dim", i, 0),
                                                 Param(f"arg{i}_dim1", "dim", i, 1)))  # fmt: skip
    params += tuple(Param(f"arg{i}", "index", i) for i in range(3, 6))
    gemm = Kernel.from_ptx("", KernelABI("gemm", params, (X, X, X, IndexType(), IndexType(), IndexType()), 384, 0))
    rows, meta = host_only(gemm, (256, 256, 128), calls=3, rounds=2)
    expected = {"again (stub driver)", "stub driver", "plan", "pack"}
    if "torch" in sys.modules or importlib.util.find_spec("torch") is not None:
        expected |= {"key", "lookup", "kernel(...) repeated"}
    assert set(rows) == expected and all(len(v) == 2 and min(v) > 0 for v in rows.values())
    assert not gemm._prepared  # the stubs went into a private copy
    assert "| plan " in format_host_table(rows, meta)
