"""The runtime's side of the dot dtypes, without a GPU: which arrays a tf32 and
a mixed-fp8 kernel accept and the tensor maps it plans for them (fp8 as
UINT8 bytes, f32 as FLOAT32: TMA copies the bits, the tensor core reads f32
as tf32)."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import pytest

import tawa
from tawa.runtime import ArgumentError, reinterpret

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("dot_dtype_cases", ROOT / "tests" / "transforms" / "dot_dtype_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


class FakeCupyArray:
    """An object with a `__cuda_array_interface__`, like a CuPy array."""

    def __init__(self, shape, typestr, ptr):
        self.shape, self.typestr, self.ptr = tuple(shape), typestr, ptr

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, False), "strides": None, "version": 3}


FakeCupyArray.__module__ = "cupy._core.core"


@cache
def kernel(a: str, b: str, c: str) -> tawa.Kernel:
    return tawa.compile(cases.gemm_text(a, b, c), "gemm", stages=4)


def tensor_maps(plan) -> list:
    return [v for k, v in plan.params if k == "tensormap"]


def test_tf32_kernel_takes_f32_arrays():
    M, N, K = 256, 512, 96
    k = kernel("f32", "f32", "bf16")
    args = [FakeCupyArray((M, K), "<f4", 0x1000_0000), FakeCupyArray((N, K), "<f4", 0x2000_0000),
            FakeCupyArray((M, N), "<u2", 0x3000_0000), M, N, K]
    args[2] = reinterpret(args[2], "bf16")
    a_map, b_map = tensor_maps(k.plan(*args, grid=cases.grid(M, N)))[:2]
    assert a_map.data_type == b_map.data_type == "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"
    assert a_map.box == (32, 128) and b_map.box == (32, 256)  # 32 f32 = one 128-byte span of K
    assert a_map.strides == (K * 4,)
    with pytest.raises(ArgumentError, match=r"expected f32 elements, got a float16 CuPy array"):
        k.plan(FakeCupyArray((M, K), "<f2", 0x1000_0000), *args[1:], grid=cases.grid(M, N))


def test_mixed_fp8_kernel_takes_fp8_bytes():
    M, N, K = 256, 512, 256
    k = kernel("f8E4M3FN", "f8E5M2", "bf16")
    a, b = FakeCupyArray((M, K), "|u1", 0x1000_0000), FakeCupyArray((N, K), "|u1", 0x2000_0000)
    c = reinterpret(FakeCupyArray((M, N), "<u2", 0x3000_0000), "bf16")
    with pytest.raises(ArgumentError, match=r"reinterpret\(x, 'f8E5M2'\)"):
        k.plan(reinterpret(a, "f8E4M3FN"), b, c, M, N, K, grid=cases.grid(M, N))
    with pytest.raises(ArgumentError, match=r"expected f8E5M2 elements"):
        k.plan(reinterpret(a, "f8E4M3FN"), reinterpret(b, "f8E4M3FN"), c, M, N, K, grid=cases.grid(M, N))
    plan = k.plan(reinterpret(a, "f8E4M3FN"), reinterpret(b, "f8E5M2"), c, M, N, K, grid=cases.grid(M, N))
    a_map, b_map = tensor_maps(plan)[:2]
    assert a_map.data_type == b_map.data_type == "CU_TENSOR_MAP_DATA_TYPE_UINT8"
    assert a_map.box == (128, 128) and b_map.box == (128, 256)
