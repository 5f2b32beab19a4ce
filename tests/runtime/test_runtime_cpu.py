"""The runtime without a GPU: compile (with a stand-in backend), argument
checks, parameter packing, tensor-map arguments, ptxas and its cache.

The stand-in backend is a `tawa-hopper-pipeline` pass that only annotates the
kernel the way the lowering does (threads, shared memory, one
`nvgpu.tma_descriptor` for A and one for B) and a printer that prints an
empty PTX entry with the ABI's parameters, which ptxas assembles.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

import tawa
from tawa.backend.ptx.abi import KernelABI, kernel_abi
from tawa.diagnostics import TawaError
from tawa.dialects import nvgpu
from tawa.dialects.nvgpu import record_kernel_info
from tawa.runtime import RegisterSpillWarning, compiler, cuda
from tawa.runtime import ptxas as assemble_mod
from tawa.runtime.arrays import array_info, dense_strides, is_dense_row_major, reinterpret
from tawa.runtime.errors import ArgumentError, LaunchError
from tawa.runtime.launch import (
    TensorMapSpec,
    arg_names,
    kernel_arguments,
    l2_promotion,
    plan_launch,
    tensormap_by_value,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GEMM = (EXAMPLES / "gemm.mlir").read_text()
THREADS = 384
BOXES = [(128, 64), (256, 64)]


# --------------------------------------------------------------------------- stand-ins


@dataclass(frozen=True)
class FakeHopperPipeline(ModulePass):
    """Annotates kernels like the lowering: threads, smem, TMA descriptors."""

    name = "tawa-hopper-pipeline"

    stages: int = 3
    fail: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.fail:
            raise PassFailedException("tawa-hopper-pipeline: something is wrong\nsecond line")
        for kernel in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            record_kernel_info(kernel, threads=THREADS, smem=self.stages * 49152 + 1024)
            block = kernel.body.block
            memrefs = [a for a in block.args if isinstance(a.type, MemRefType)]
            descs = [
                nvgpu.TmaDescriptorOp.create(
                    operands=[arg],
                    result_types=[nvgpu.TmaDescriptorType(box, arg.type.get_element_type(), 128)],
                )
                for arg, box in zip(memrefs, BOXES)
            ]
            Rewriter.insert_op(descs, InsertPoint.at_start(block))


def stub_ptx(abi: KernelABI, body: str = "ret;") -> str:
    params = ",\n".join(f"\t{p.ptx_decl}" for p in abi.params)
    return (
        ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
        f".visible .entry {abi.name}(\n{params}\n)\n.maxntid {abi.threads}, 1, 1\n{{\n\t{body}\n}}\n"
    )


def fake_print_ptx(module: ModuleOp) -> str:
    kernels = [o for o in module.walk() if isinstance(o, func.FuncOp)]
    return "\n".join(stub_ptx(kernel_abi(k)) for k in kernels)


@pytest.fixture
def backend(monkeypatch):
    """The stand-in backend, and a fresh compile cache."""
    passes = {"tawa-hopper-pipeline": lambda: FakeHopperPipeline}
    monkeypatch.setattr(compiler, "available_passes", lambda: passes)
    monkeypatch.setattr(compiler, "print_ptx", fake_print_ptx)
    compiler.clear_cache()
    yield passes
    compiler.clear_cache()


@pytest.fixture
def gemm(backend) -> tawa.Kernel:
    return tawa.compile(GEMM, "gemm", stages=4)


class FakeDtype:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class FakeDevice:
    def __init__(self, index: int | None):
        self.index = index
        self.type = "cuda" if index is not None else "cpu"


_SIZES = {"bfloat16": 2, "float16": 2, "float32": 4, "int32": 4, "uint16": 2, "int8": 1}


class FakeTensor:
    """The part of torch.Tensor the runtime reads."""

    def __init__(self, shape, dtype="bfloat16", ptr=0x7F00_0000_0000, strides=None, device=0):
        self.shape = tuple(shape)
        self.dtype = FakeDtype(dtype)
        self._ptr = ptr
        self._strides = strides if strides is not None else tuple(
            s // _SIZES[dtype] for s in dense_strides(self.shape, _SIZES[dtype])
        )
        self.device = FakeDevice(device)
        self.is_cuda = device is not None

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return self._strides

    def element_size(self) -> int:
        return _SIZES[self.dtype.name]

    @property
    def __cuda_array_interface__(self):  # torch raises for bfloat16: never rely on it
        raise TypeError("fake tensors do not export the interface")


class FakeCupyDevice:
    def __init__(self, id: int):
        self.id = id


class FakeCupyArray:
    """An object with a `__cuda_array_interface__`, like a CuPy array."""

    def __init__(self, shape, typestr="<f2", ptr=0x7E00_0000_0000, strides=None, device=0):
        self.shape = tuple(shape)
        self.typestr = typestr
        self.ptr = ptr
        self.strides = strides
        self.device = FakeCupyDevice(device)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.typestr,
            "data": (self.ptr, False),
            "strides": self.strides,
            "version": 3,
        }


FakeCupyArray.__module__ = "cupy._core.core"


def gemm_args(M=256, N=512, K=128, *, dtype="bfloat16", A=None, B=None, C=None):
    A = A if A is not None else FakeTensor((M, K), dtype, ptr=0x1000_0000)
    B = B if B is not None else FakeTensor((N, K), dtype, ptr=0x2000_0000)
    C = C if C is not None else FakeTensor((M, N), dtype, ptr=0x3000_0000)
    return [A, B, C, M, N, K]


def one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text, text
    return text


# --------------------------------------------------------------------------- import and compile


def test_import_tawa_does_not_import_gpu_packages():
    code = (
        "import sys, tawa; tawa.compile; tawa.Kernel; import tawa.runtime\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('cupy', 'torch', 'cuda', 'triton')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_compile_gives_ptx_and_abi(gemm):
    assert isinstance(gemm, tawa.Kernel)
    assert ".entry gemm(" in gemm.ptx
    abi = gemm.abi
    assert abi.name == gemm.name == "gemm"
    assert abi.threads == THREADS and abi.smem_bytes == 4 * 49152 + 1024
    assert [(p.kind, p.arg, p.dim) for p in abi.params] == [
        ("ptr", 0, -1), ("dim", 0, 0), ("dim", 0, 1),
        ("ptr", 1, -1), ("dim", 1, 0), ("dim", 1, 1),
        ("ptr", 2, -1), ("dim", 2, 0), ("dim", 2, 1),
        ("index", 3, -1), ("index", 4, -1), ("index", 5, -1),
        ("tensormap", 0, -1), ("tensormap", 1, -1),
    ]  # fmt: skip
    assert gemm.arg_names == ("A", "B", "C", "M", "N", "K")
    assert gemm.options == {"stages": 4}
    assert isinstance(gemm.lowered, ModuleOp)
    assert "@gemm(%A: memref<?x?xbf16>" in repr(gemm)


def test_compile_accepts_a_module_and_leaves_it_alone(backend):
    module = tawa.parse(GEMM)
    before = str(module)
    kernel = tawa.compile(module, "@gemm")
    assert str(module) == before
    assert kernel.abi.smem_bytes == 3 * 49152 + 1024  # the pass's default stages
    assert any(isinstance(o, nvgpu.TmaDescriptorOp) for o in kernel.lowered.walk())


def test_compile_cache(backend):
    a = tawa.compile(GEMM, "gemm", stages=4)
    assert tawa.compile(GEMM, "gemm", stages=4) is a
    assert tawa.compile(GEMM.encode(), "gemm", stages=4) is a
    assert tawa.compile(GEMM, "gemm", stages=2) is not a
    assert tawa.compile(GEMM, "gemm") is not a
    compiler.clear_cache()
    assert tawa.compile(GEMM, "gemm", stages=4) is not a


def test_pipeline_spec():
    assert compiler.pipeline_spec({}) == "tawa-hopper-pipeline"
    spec = compiler.pipeline_spec({"stages": 4, "fail": False, "s": "a b", "l": (1, 2)})
    assert spec == 'tawa-hopper-pipeline{stages=4 fail=false s="a b" l=1,2}'


@pytest.mark.parametrize(
    "options, message",
    [
        ({"stage": 4}, "unknown option 'stage'; tawa-hopper-pipeline accepts: stages, fail"),
        ({"stages": "four"}, "bad options for tawa-hopper-pipeline"),
        ({"stages": {"a": 1}}, "option stages={'a': 1}: values must be"),
        ({"fail": True}, "tawa.compile: error: tawa-hopper-pipeline: something is wrong"),
    ],
)
def test_compile_errors(backend, options, message):
    with pytest.raises(TawaError) as err:
        tawa.compile(GEMM, "gemm", **options)
    assert message in one_line(err.value)


def test_compile_unknown_kernel(backend):
    with pytest.raises(TawaError, match=r"no kernel named @gemmm; the module defines: @gemm$"):
        tawa.compile(GEMM, "gemmm")


def test_compile_bad_input(backend):
    with pytest.raises(TawaError, match=r"<input>:1:15: error"):
        tawa.compile("func.func @f( {", "f")
    with pytest.raises(TawaError, match="expected a ModuleOp or the text of one, got int"):
        tawa.compile(3, "f")  # type: ignore[arg-type]


def test_compile_without_backend(monkeypatch):
    monkeypatch.setattr(compiler, "available_passes", lambda: {})
    compiler.clear_cache()
    with pytest.raises(TawaError, match="the tawa-hopper-pipeline pass is not available"):
        tawa.compile(GEMM, "gemm")


def test_compile_checks_the_entry_name(backend, monkeypatch):
    monkeypatch.setattr(compiler, "print_ptx", lambda m: ".visible .entry other(\n)\n{ ret; }")
    with pytest.raises(TawaError, match="the PTX has no entry named gemm"):
        tawa.compile(GEMM, "gemm")


# --------------------------------------------------------------------------- arrays


def test_array_info_torch_and_cai():
    t = FakeTensor((4, 8), "bfloat16", ptr=0x100)
    info = array_info(t)
    assert (info.dtype, info.itemsize, info.shape, info.strides, info.ptr) == (
        "bfloat16", 2, (4, 8), (16, 2), 0x100,
    )  # fmt: skip
    assert info.is_torch and info.on_gpu and info.device == 0
    c = FakeCupyArray((4, 8), "<f4", ptr=0x200, device=1)
    info = array_info(c)
    assert (info.dtype, info.itemsize, info.strides, info.device, info.kind) == (
        "float32", 4, None, 1, "CuPy array",
    )  # fmt: skip
    assert array_info(3) is None and array_info(np.zeros(3)) is None


def test_contiguity():
    assert is_dense_row_major((4, 8), None, 2)
    assert is_dense_row_major((4, 8), (16, 2), 2)
    assert not is_dense_row_major((4, 8), (2, 8), 2)  # transposed
    assert not is_dense_row_major((4, 8), (32, 2), 2)  # a column slice of a wider array
    assert is_dense_row_major((1, 8), (999, 2), 2)  # size-1 dims: any stride
    assert is_dense_row_major((0, 8), (5, 3), 2)  # empty: always
    assert dense_strides((3, 0, 5), 4) == (20, 20, 4)


def test_reinterpret_cupy_uint16_as_bf16(gemm):
    a = FakeCupyArray((256, 128), "<u2", ptr=0x1000_0000)
    args = gemm_args(A=a)
    with pytest.raises(ArgumentError, match=r"reinterpret\(x, 'bf16'\)"):
        gemm.plan(*args, grid=(2, 2))
    args[0] = reinterpret(a, "bf16")
    plan = gemm.plan(*args, grid=(2, 2))
    assert plan.params[0] == ("u64", 0x1000_0000)
    assert array_info(args[0]).dtype == "bfloat16"
    with pytest.raises(ArgumentError, match=r"cannot view float32 elements \(4 bytes\) as bfloat16"):
        reinterpret(FakeCupyArray((2,), "<f4"), np.dtype(np.float32).name.replace("float32", "bf16"))
    with pytest.raises(ArgumentError, match="unknown dtype"):
        reinterpret(a, "bf17")


# --------------------------------------------------------------------------- planning


def test_column_slices_of_tma_only_arrays_keep_their_strides(gemm):
    """A and B are read only through tensor maps: slices of wider matrices
    (leading strides not dense, rows contiguous) go to TMA with their own
    strides."""
    M, N, K = 256, 512, 128
    A = FakeTensor((M, K), ptr=0x1000_0000, strides=(3 * K, 1))  # A[:, :K] of an M x 3K matrix
    plan = gemm.plan(*gemm_args(M, N, K, A=A), grid=(2, 2))
    maps = [v for k, v in plan.params if k == "tensormap"]
    a_map = next(m for m in maps if m.dims == (K, M))
    assert a_map.strides == (3 * K * 2,)  # bytes, the outer dimension's
    with pytest.raises(ArgumentError, match=r"argument 0 \(%A\): the stride of its last dimension is 4 bytes, not one "
                       r"2-byte element: got byte strides \(512, 4\) .*a tensor map reads it: its rows must be contiguous"):
        gemm.plan(*gemm_args(M, N, K, A=FakeTensor((M, K), ptr=0x1000_0000, strides=(2 * K, 2))), grid=(2, 2))


ADDRESSED = """
func.func @rows(%X: memref<?x?x?xbf16>, %V: memref<?xf32>, %Y: memref<?x?xbf16>, %n: index)
    attributes {nvgpu.kernel = #nvgpu.kernel<threads = 128, smem = 0>} {
  %x = nvgpu.memref_base %X : memref<?x?x?xbf16>
  %s = nvgpu.memref_stride %X, 1 : memref<?x?x?xbf16>
  %v = nvgpu.memref_base %V : memref<?xf32>
  func.return
}
"""


def test_arrays_the_kernel_addresses_take_their_strides():
    """An array the kernel's threads address (`KernelABI.addressed`) takes
    the stride of each dimension but the innermost after its dims, in
    elements, so a view with contiguous rows (a column slice, a head of a
    [B, S, H, D] tensor) is read in place; a 1-D one takes none, nor does an
    array the kernel does not address (%Y).  A view whose rows are not
    contiguous, or whose strides are not positive, is refused naming the
    stride."""
    abi = kernel_abi(tawa.parse(ADDRESSED).ops.first)
    assert abi.addressed == (0, 1)
    assert [p.name for p in abi.params] == [
        "arg0_X_ptr", "arg0_X_dim0", "arg0_X_dim1", "arg0_X_dim2", "arg0_X_stride0", "arg0_X_stride1",
        "arg1_V_ptr", "arg1_V_dim0",
        "arg2_Y_ptr", "arg2_Y_dim0", "arg2_Y_dim1", "arg3_n",
    ]  # fmt: skip
    assert [p.ptx_decl for p in abi.params if p.kind == "stride"] == [".param .u64 arg0_X_stride0",
                                                                       ".param .u64 arg0_X_stride1"]
    assert arg_names(abi) == ("X", "V", "Y", "n")
    kernel = tawa.Kernel.from_ptx("", abi)
    V, Y = FakeTensor((8,), "float32", ptr=0x2000_0000), FakeTensor((4, 8), ptr=0x3000_0000)

    def x_params(X):
        plan = kernel.plan(X, V, Y, 3, grid=(1,))
        return [v for (_, v), p in zip(plan.params, abi.params) if p.arg == 0]

    B, S, H, D = 2, 5, 3, 64
    assert x_params(FakeTensor((B, S, D), ptr=0x1000_0000)) == [0x1000_0000, B, S, D, S * D, D]  # dense
    # One head of a seq-major [B, S, H, D] tensor, read as [B, S, D].
    head = FakeTensor((B, S, D), ptr=0x1000_0000, strides=(S * H * D, H * D, 1))
    assert x_params(head) == [0x1000_0000, B, S, D, S * H * D, H * D]
    # A size-1 dimension's stride is arbitrary: the dense one is passed.
    assert x_params(FakeTensor((1, S, D), ptr=0x1000_0000, strides=(3, 2 * D, 1))) == [
        0x1000_0000, 1, S, D, S * D, 2 * D]
    with pytest.raises(ArgumentError, match=r"^tawa.launch: error: @rows argument 0 \(%X\): the stride of its last dimension is 4 bytes, "
                       r"not one 2-byte element: got byte strides \(1280, 256, 4\) for shape \(2, 5, 64\) \(the "
                       r"kernel addresses it itself: its rows must be contiguous and its other strides positive\); "
                       r"pass a contiguous copy$"):
        x_params(FakeTensor((B, S, D), ptr=0x1000_0000, strides=(S * D * 2, D * 2, 2)))
    with pytest.raises(ArgumentError, match=r"^tawa.launch: error: @rows argument 0 \(%X\): the stride of dimension 1 is 0 bytes, not a "
                       r"positive multiple of its 2-byte elements: got byte strides \(128, 0, 2\)"):
        x_params(FakeTensor((B, S, D), ptr=0x1000_0000, strides=(D, 0, 1)))  # an expanded view


def test_plan_packs_parameters_in_abi_order(gemm):
    M, N, K = 256, 512, 4096
    plan = gemm.plan(*gemm_args(M, N, K), grid=(2, 2))
    tensormaps = [v for k, v in plan.params if k == "tensormap"]
    scalars = [(k, v) for k, v in plan.params if k != "tensormap"]
    assert scalars == [
        ("u64", 0x1000_0000), ("u64", M), ("u64", K),
        ("u64", 0x2000_0000), ("u64", N), ("u64", K),
        ("u64", 0x3000_0000), ("u64", M), ("u64", N),
        ("u64", M), ("u64", N), ("u64", K),
    ]  # fmt: skip
    assert [k for k, _ in plan.params[-2:]] == ["tensormap", "tensormap"]
    ta, tb = tensormaps
    assert ta == TensorMapSpec(
        data_type="CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
        address=0x1000_0000,
        dims=(K, M),
        strides=(2 * K,),
        box=(64, 128),
        element_strides=(1, 1),
        swizzle="CU_TENSOR_MAP_SWIZZLE_128B",
        interleave="CU_TENSOR_MAP_INTERLEAVE_NONE",
        l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
        oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
        arg=0,
    )
    assert (tb.address, tb.dims, tb.strides, tb.box, tb.arg) == (0x2000_0000, (K, N), (2 * K,), (64, 256), 1)
    assert plan.shape.grid == (2, 2, 1)
    assert plan.shape.block == (THREADS, 1, 1)
    assert plan.shape.smem_bytes == gemm.abi.smem_bytes
    assert plan.device == 0 and plan.uses_torch and not plan.empty



def test_rows_that_are_not_whole_l2_sectors_get_128_byte_fills():
    """A tensor map's L2 fill follows its row strides (tawa.target.hopper,
    L2_SECTOR_BYTES): 256 bytes a miss over rows that are whole 32-byte
    sectors apart, 128 where a box row straddles sectors; the address
    does not enter (a launch template holds for every address)."""
    assert l2_promotion((2 * 4096,)) == "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"
    assert l2_promotion((2 * 4104,)) == "CU_TENSOR_MAP_L2_PROMOTION_L2_128B"  # 8208 bytes: 16 past a sector
    assert l2_promotion((2 * 4112,)) == "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"  # 8224: whole sectors, not lines
    assert l2_promotion((256, 256 * 48)) == "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"
    assert l2_promotion((2 * 72, 2 * 72 * 100)) == "CU_TENSOR_MAP_L2_PROMOTION_L2_128B"  # any stride counts

def test_plan_f16_with_cupy_arrays(backend):
    kernel = tawa.compile(GEMM.replace("bf16", "f16"), "gemm", stages=2)
    M, N, K = 200, 136, 200
    args = [
        FakeCupyArray((M, K), "<f2", ptr=0x10_0000),
        FakeCupyArray((N, K), "<f2", ptr=0x20_0000),
        FakeCupyArray((M, N), "<f2", ptr=0x30_0000),
        M, N, K,
    ]  # fmt: skip
    plan = kernel.plan(*args, grid=(2, 1))
    ta = plan.params[-2][1]
    assert ta.data_type == "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"
    assert (ta.dims, ta.strides) == ((200, 200), (400,))
    assert not plan.uses_torch


def test_plan_3d_tensor_map():
    """Dims, strides and box innermost first for rank 3."""
    text = """
    func.func @k(%X: memref<?x?x?xf32>, %n: index) {
      func.return
    }
    """
    module = tawa.parse(text)
    fn = next(o for o in module.walk() if isinstance(o, func.FuncOp))
    record_kernel_info(fn, threads=128, smem=1024)
    from xdsl.dialects.builtin import f32

    desc = nvgpu.TmaDescriptorType((2, 8, 32), f32, 128)
    op = nvgpu.TmaDescriptorOp.create(operands=[fn.body.block.args[0]], result_types=[desc])
    Rewriter.insert_op(op, InsertPoint.at_start(fn.body.block))
    kernel = tawa.Kernel.from_ptx(stub_ptx(kernel_abi(fn)), kernel_abi(fn))
    x = FakeTensor((3, 40, 96), "float32", ptr=0x4000)
    plan = kernel.plan(x, 7, grid=5)
    assert plan.params[:5] == (("u64", 0x4000), ("u64", 3), ("u64", 40), ("u64", 96), ("u64", 7))
    spec = plan.params[5][1]
    assert spec.dims == (96, 40, 3)
    assert spec.strides == (96 * 4, 40 * 96 * 4)
    assert spec.box == (32, 8, 2) and spec.element_strides == (1, 1, 1)
    assert spec.data_type == "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"
    assert plan.shape.grid == (5, 1, 1)


def test_scalars(gemm):
    args = gemm_args()
    args[3] = np.int64(256)
    args[5] = -1  # index is signed 64-bit: wraps like the hardware
    plan = gemm.plan(*args, grid=(1, 1))
    assert plan.params[9] == ("u64", 256)
    assert plan.params[11] == ("u64", 2**64 - 1)


def test_f32_and_i32_scalars():
    text = "func.func @k(%a: f32, %b: i32, %c: i64) { func.return }"
    fn = next(o for o in tawa.parse(text).walk() if isinstance(o, func.FuncOp))
    record_kernel_info(fn, threads=128, smem=0)
    kernel = tawa.Kernel.from_ptx(stub_ptx(kernel_abi(fn)), kernel_abi(fn))
    plan = kernel.plan(0.1, -2, 3, grid=(1,))
    assert plan.params == (("f32", float(np.float32(0.1))), ("u32", 2**32 - 2), ("u64", 3))
    assert not plan.uses_torch and plan.device is None
    values = kernel_arguments(plan.params, encode=lambda s: None)
    assert values == (np.float32(0.1).tobytes(), np.uint32(2**32 - 2).tobytes(), np.uint64(3).tobytes())
    with pytest.raises(ArgumentError, match=r"argument 1 \(%b\): 4294967296 does not fit in i32"):
        kernel.plan(0.0, 2**32, 0, grid=1)
    with pytest.raises(ArgumentError, match=r"argument 0 \(%a\): expected a float \(f32\), got str"):
        kernel.plan("x", 0, 0, grid=1)


def _transposed():
    t = FakeTensor((256, 128), ptr=0x1000_0000)
    t._strides = (1, 256)
    return t


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a[:5], r"@gemm takes 6 arguments \(%A: memref<\?x\?xbf16>, .*%K: index\), got 5"),
        (
            lambda a: a.__setitem__(0, FakeTensor((256, 128), "float32", ptr=0x1000_0000)),
            r"argument 0 \(%A\): expected bf16 elements, got a float32 torch tensor of shape \(256, 128\)",
        ),
        (
            lambda a: a.__setitem__(1, FakeTensor((512 * 128,), ptr=0x2000_0000)),
            r"argument 1 \(%B\): expected a rank-2 array \(memref<\?x\?xbf16>\), got shape \(65536,\)",
        ),
        (
            lambda a: a.__setitem__(0, _transposed()),
            r"argument 0 \(%A\): the stride of its last dimension is 512 bytes, not one 2-byte element: "
            r"got byte strides \(2, 512\)",
        ),
        (
            lambda a: a.__setitem__(2, FakeTensor((256, 512), device=None)),
            r"argument 2 \(%C\): expected a rank-2 bf16 CUDA array .*in host memory; move it to the GPU",
        ),
        (
            lambda a: a.__setitem__(0, np.zeros((256, 128), np.float32)),
            r"argument 0 \(%A\): expected a rank-2 bf16 CUDA array .*got float32 NumPy array",
        ),
        (
            lambda a: a.__setitem__(0, FakeTensor((256, 128), ptr=0x1000_0002)),
            r"argument 0 \(%A\): address 0x10000002 is not 16-byte aligned, which TMA requires",
        ),
        (
            lambda a: a.__setitem__(2, FakeTensor((256, 512), ptr=0x3000_0001)),
            r"argument 2 \(%C\): address 0x30000001 is not aligned to its 2-byte elements",
        ),
        (
            lambda a: a.__setitem__(1, FakeTensor((512, 100), ptr=0x2000_0000)),
            r"argument 1 \(%B\): the stride of dimension 0 is 200 bytes, not a multiple of 16",
        ),
        (
            lambda a: a.__setitem__(2, FakeTensor((256, 512), ptr=0x3000_0000, device=1)),
            r"argument 2 \(%C\) is on CUDA device 1, argument 0 \(%A\) on device 0",
        ),
        (lambda a: a.__setitem__(3, 2.0), r"argument 3 \(%M\): expected a Python int \(index\), got float"),
        (lambda a: a.__setitem__(4, True), r"argument 4 \(%N\): expected a Python int \(index\), got bool"),
        (lambda a: a.__setitem__(5, 2**63), r"argument 5 \(%K\): 9223372036854775808 does not fit in index"),
    ],
)
def test_bad_arguments(gemm, change, message):
    args = gemm_args()
    args = change(args) or args
    with pytest.raises(ArgumentError) as err:
        gemm.plan(*args, grid=(2, 2))
    text = one_line(err.value)
    assert text.startswith("tawa.launch: error: @gemm")
    import re

    assert re.search(message, text), text


def test_non_tma_arrays_need_no_16_byte_strides(gemm):
    """C is written without TMA here: N = 100 (200-byte rows) is fine."""
    plan = gemm.plan(*gemm_args(N=100, B=FakeTensor((100, 128), ptr=0x2000_0000)), grid=(2, 1))
    assert plan.params[8] == ("u64", 100)


def test_static_dims_are_checked():
    text = "func.func @k(%X: memref<4x?xf32>) { func.return }"
    fn = next(o for o in tawa.parse(text).walk() if isinstance(o, func.FuncOp))
    record_kernel_info(fn, threads=128, smem=0)
    kernel = tawa.Kernel.from_ptx(stub_ptx(kernel_abi(fn)), kernel_abi(fn))
    kernel.plan(FakeTensor((4, 3), "float32"), grid=1)
    with pytest.raises(ArgumentError, match=r"dimension 0 must be 4 \(memref<4x\?xf32>\), got shape \(5, 3\)"):
        kernel.plan(FakeTensor((5, 3), "float32"), grid=1)


@pytest.mark.parametrize(
    "grid, message",
    [
        ((-1, 2), "grid must be 1 to 3 non-negative integers, got (-1, 2)"),
        ((1, 2, 3, 4), "grid must be 1 to 3 non-negative integers"),
        ("x", "grid must be 1 to 3 non-negative integers, got 'x'"),
        ((1.0,), "grid must be 1 to 3 non-negative integers"),
        ((True, 1), "grid must be 1 to 3 non-negative integers"),
        ((2**31, 1), "grid axis 0 has 2147483648 programs, more than CUDA's 2147483647"),
        ((1, 70000), "grid axis 1 has 70000 programs, more than CUDA's 65535"),
    ],
)
def test_bad_grids(gemm, grid, message):
    with pytest.raises(LaunchError) as err:
        gemm.plan(*gemm_args(), grid=grid)
    assert message in one_line(err.value)


def test_grid_forms(gemm):
    assert gemm.plan(*gemm_args(), grid=3).shape.grid == (3, 1, 1)
    assert gemm.plan(*gemm_args(), grid=[3, np.int32(2)]).shape.grid == (3, 2, 1)
    assert gemm.plan(*gemm_args(), grid=(3, 2, 2)).shape.grid == (3, 2, 2)


def test_empty_grid_is_a_no_op_after_the_checks(gemm, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # launching would need CuPy
    args = gemm_args(M=0, A=FakeTensor((0, 128), ptr=0), C=FakeTensor((0, 512), ptr=0))
    assert gemm.plan(*args, grid=(0, 2)).empty
    gemm(*args, grid=(0, 2))  # nothing to run, nothing imported
    with pytest.raises(ArgumentError):
        gemm(*gemm_args(A=FakeTensor((256, 128), "float32")), grid=(0, 2))


def test_empty_tensors_get_scratch_tensor_maps(gemm):
    """K = 0: A and B are empty, C is not; their maps are built over scratch."""
    args = gemm_args(K=0, A=FakeTensor((256, 0), ptr=0), B=FakeTensor((512, 0), ptr=0))
    plan = gemm.plan(*args, grid=(2, 2))
    assert plan.params[2] == ("u64", 0) and plan.params[11] == ("u64", 0)
    for kind, spec in plan.params[-2:]:
        assert kind == "tensormap"
        assert spec.address is None and spec.dims == (1, 1) and spec.strides == (16,)
    assert plan.params[-2][1].box == (64, 128)


def test_launch_without_cupy_is_a_clear_error(gemm, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(LaunchError, match=r"launching kernels needs CuPy and cuda-bindings \(pip install 'tawa\[gpu\]'\)"):
        gemm(*gemm_args(), grid=(2, 2))


def test_arg_names_without_hints():
    text = "func.func @k(%0: memref<?xf32>, %1: index) { func.return }"
    fn = next(o for o in tawa.parse(text).walk() if isinstance(o, func.FuncOp))
    record_kernel_info(fn, threads=128, smem=0)
    abi = kernel_abi(fn)
    names = arg_names(abi)
    assert len(names) == 2
    with pytest.raises(ArgumentError, match=rf"argument 1 \(%{names[1]}\)"):
        plan_launch(abi, [FakeTensor((4,), "float32"), 1.5], grid=1)


def test_unsupported_memref_element_type():
    text = "func.func @k(%X: memref<?xindex>) { func.return }"
    fn = next(o for o in tawa.parse(text).walk() if isinstance(o, func.FuncOp))
    record_kernel_info(fn, threads=128, smem=0)
    with pytest.raises(ArgumentError, match=r"argument 0 \(%X\): memrefs of index are not supported"):
        plan_launch(kernel_abi(fn), [FakeTensor((4,), "int32")], grid=1)


# --------------------------------------------------------------------------- tensor maps


def test_kernel_arguments_and_tensor_map_by_value():
    spec = TensorMapSpec("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 0x100, (8, 4), (16,), (8, 4), (1, 1), "CU_TENSOR_MAP_SWIZZLE_NONE")
    words = list(range(1, 17))
    values = kernel_arguments(
        [("u64", 2**64 - 1), ("u32", 7), ("f32", 1.5), ("tensormap", spec)],
        encode=lambda s: tensormap_by_value(words),
    )
    assert values[:3] == (np.uint64(2**64 - 1).tobytes(), np.uint32(7).tobytes(), np.float32(1.5).tobytes())
    assert values[3] == np.array(words, dtype=np.uint64).tobytes() and len(values[3]) == 128
    with pytest.raises(LaunchError, match="a CUtensorMap has 16 words, got 3"):
        tensormap_by_value([1, 2, 3])

    class Word:  # cuda-bindings' cuuint64_t: not an int, converts with int()
        def __init__(self, v: int):
            self.v = v

        def __int__(self) -> int:
            return self.v

    assert tensormap_by_value([Word(w) for w in words]) == values[3]


class FakeDriver:
    """The part of cuda.bindings.driver that encode_tensor_map uses."""

    class cuuint64_t:
        def __init__(self, v):
            self.v = ("u64", v)

    class cuuint32_t:
        def __init__(self, v):
            self.v = ("u32", v)

    class _Enum:
        def __getattr__(self, name):
            return name

    CUtensorMapDataType = CUtensorMapInterleave = CUtensorMapSwizzle = _Enum()
    CUtensorMapL2promotion = CUtensorMapFloatOOBfill = _Enum()

    class _Result(int):
        @property
        def name(self):
            return {0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE"}[int(self)]

    class _Map:
        opaque = list(range(16))

    def __init__(self, result=0):
        self.calls = []
        self.result = result

    def cuTensorMapEncodeTiled(self, *args):
        self.calls.append(args)
        return self._Result(self.result), self._Map()


def test_encode_tensor_map_calls_the_driver_innermost_first(gemm):
    plan = gemm.plan(*gemm_args(K=4096), grid=(2, 2))
    spec = plan.params[-2][1]
    drv = FakeDriver()
    value = cuda.encode_tensor_map(spec, drv)
    assert bytes(value) == np.arange(16, dtype=np.uint64).tobytes()
    (call,) = drv.calls
    dtype, rank, address, dims, strides, box, estrides, inter, swz, l2, oob = call
    assert (dtype, rank, address) == ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2, 0x1000_0000)
    assert [d.v for d in dims] == [("u64", 4096), ("u64", 256)]
    assert [s.v for s in strides] == [("u64", 8192)]
    assert [b.v for b in box] == [("u32", 64), ("u32", 128)]
    assert [e.v for e in estrides] == [("u32", 1), ("u32", 1)]
    assert (inter, swz, l2, oob) == (
        "CU_TENSOR_MAP_INTERLEAVE_NONE",
        "CU_TENSOR_MAP_SWIZZLE_128B",
        "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
        "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
    )


def test_encode_tensor_map_errors(gemm):
    spec = gemm.plan(*gemm_args(), grid=(2, 2)).params[-1][1]
    with pytest.raises(LaunchError, match=r"cuTensorMapEncodeTiled failed \(CUDA_ERROR_INVALID_VALUE\) for argument 1: .*dims \[128, 512\]"):
        cuda.encode_tensor_map(spec, FakeDriver(result=1))
    import dataclasses

    with pytest.raises(LaunchError, match="scratch tensor map has no address"):
        cuda.encode_tensor_map(dataclasses.replace(spec, address=None), FakeDriver())


def test_tensor_map_cache(gemm):
    drv = FakeDriver()
    cache = cuda.TensorMapCache(maxsize=2, driver=drv)
    specs = [gemm.plan(*gemm_args(K=k), grid=(1, 1)).params[-2][1] for k in (64, 128, 192)]
    cache(specs[0])
    cache(specs[0])
    assert len(drv.calls) == 1
    cache(specs[1])
    cache(specs[2])  # evicts specs[0]
    assert len(cache) == 2
    cache(specs[0])
    assert len(drv.calls) == 4


def test_compiler_side_box_errors_are_reported():
    """A box the ABI should never produce: a compiler bug, said clearly."""
    text = "func.func @k(%X: memref<?x?xbf16>) { func.return }"
    fn = next(o for o in tawa.parse(text).walk() if isinstance(o, func.FuncOp))
    record_kernel_info(fn, threads=128, smem=0)
    from xdsl.dialects.builtin import bf16

    desc = nvgpu.TmaDescriptorType((8, 128), bf16, 0)  # 256-byte rows: fine unswizzled
    op = nvgpu.TmaDescriptorOp.create(operands=[fn.body.block.args[0]], result_types=[desc])
    Rewriter.insert_op(op, InsertPoint.at_start(fn.body.block))
    abi = kernel_abi(fn)
    plan_launch(abi, [FakeTensor((16, 128))], grid=1)
    import dataclasses

    bad = dataclasses.replace(abi, params=tuple(dataclasses.replace(p, swizzle=64) for p in abi.params))
    with pytest.raises(LaunchError, match=r"tensor map tmap0: the inner box dim spans 256 bytes, more than the 64B swizzle span \(a compiler bug\)"):
        plan_launch(bad, [FakeTensor((16, 128))], grid=1)


# --------------------------------------------------------------------------- ptxas and the disk cache

needs_ptxas = pytest.mark.skipif(
    __import__("shutil").which("ptxas") is None, reason="ptxas is not on PATH"
)


@needs_ptxas
def test_assemble_and_cache(gemm, tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    first = assemble_mod.assemble(gemm.ptx, "gemm")
    assert not first.cached and first.path.is_file() and first.path.suffix == ".cubin"
    assert tmp_path in first.path.parents and first.path.parent.parent.name == "sm_90a"
    assert first.ptx_path.read_text() == gemm.ptx
    assert "Compiling entry function 'gemm'" in first.log
    second = assemble_mod.assemble(gemm.ptx, "gemm")
    assert second.cached and second.path == first.path and second.log == first.log
    other = assemble_mod.assemble(gemm.ptx + "\n// changed\n", "gemm")
    assert other.path != first.path
    kernel_cubin = gemm.assemble()
    assert kernel_cubin.path == first.path and gemm.assemble() is kernel_cubin


@needs_ptxas
def test_assemble_error_names_the_first_ptxas_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    abi = KernelABI("bad", (), (), 128, 0)
    with pytest.raises(TawaError) as err:
        assemble_mod.assemble(stub_ptx(abi, body="frobnicate;"), "bad")
    text = one_line(err.value)
    assert text.startswith(
        "tawa.assemble: error: ptxas rejected the PTX of @bad: ptxas bad.ptx, line 10; error : "
        "Not a name of any known instruction: 'frobnicate' (PTX kept at "
    )
    assert "PTX kept at" in text
    assert not list(tmp_path.rglob("*.cubin"))


@pytest.mark.slow
@needs_ptxas
def test_a_kernel_that_spills_says_so(tmp_path, monkeypatch):
    # gemm_chain with consumer_regs=152: estimated ~154, inside tawa-check-resources' margin of 8,
    # so it compiles; ptxas spills it.  The example at its defaults does not.
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    source = (Path(__file__).resolve().parents[2] / "examples" / "gemm_chain.mlir").read_text()
    tight = tawa.compile(source, "gemm_chain", consumer_regs=152)
    with pytest.warns(RegisterSpillWarning, match=r"ptxas spilled \d+ bytes .* in @gemm_chain"):
        cubin = tight.assemble()
    assert cubin.spill_bytes > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tawa.compile(source, "gemm_chain").assemble().spill_bytes == 0


def test_a_kernel_whose_wgmmas_ptxas_serializes_says_so(tmp_path, monkeypatch):
    """ptxas's notes C7513 and C7517 (it waits for wgmma itself) become one
    `SerializedWgmmaWarning` naming them; a log without them warns nothing
    (the ptxas run is replaced by cubins with those logs)."""
    from tawa.runtime import SerializedWgmmaWarning
    from tawa.runtime import kernel as kernel_mod
    from tawa.runtime.ptxas import Cubin

    source = (Path(__file__).resolve().parents[2] / "examples" / "gemm.mlir").read_text()
    notes = ("ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized ...\n"
             "ptxas info    : (C7517) warpgroup.wait is injected in around line 9 ...\n"
             "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized ...\n"
             "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n")
    for log, warns in ((notes, True), ("    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n", False)):
        cubin = Cubin(tmp_path / "k.cubin", tmp_path / "k.ptx", log, cached=True)
        monkeypatch.setattr(kernel_mod, "assemble", lambda ptx, name, arch, cubin=cubin: cubin)
        compiler.clear_cache()
        k = tawa.compile(source, "gemm")
        if warns:
            with pytest.warns(SerializedWgmmaWarning, match=r"ptxas waits for wgmma itself in @gemm \(C7513, C7517\)"):
                assert k.assemble().serialized_wgmma == ("C7513", "C7517")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                assert k.assemble().serialized_wgmma == ()


def test_missing_ptxas(monkeypatch, tmp_path):
    monkeypatch.setenv("TAWA_PTXAS", str(tmp_path / "no-ptxas"))
    with pytest.raises(TawaError, match="cannot run .*no-ptxas --version"):
        assemble_mod.assemble("// nothing", "k")


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    assert assemble_mod.cache_dir() == tmp_path
    monkeypatch.delenv("TAWA_CACHE_DIR")
    assert assemble_mod.cache_dir().parts[-2:] == (".cache", "tawa")


def test_first_error():
    out = "ptxas info : x\nptxas k.ptx, line 3; error   : Bad thing\nptxas fatal   : aborted\n"
    assert assemble_mod.first_error(out) == "ptxas k.ptx, line 3; error : Bad thing"
    assert assemble_mod.first_error("ptxas fatal : oops\n") == "ptxas fatal : oops"
    assert assemble_mod.first_error("") == "no output"
    assert assemble_mod.cache_key("a", "v", "sm_90a") != assemble_mod.cache_key("a", "v2", "sm_90a")


# --------------------------------------------------------------------------- the real backend


def test_the_real_backend_compiles_and_assembles_the_gemm(tmp_path, monkeypatch):
    """tawa.compile through tawa-hopper-pipeline and the PTX printer: the ABI
    is what the launch code expects, and ptxas accepts the PTX."""
    from tawa.transforms import get_all_passes

    if "tawa-hopper-pipeline" not in get_all_passes():
        pytest.skip("the Hopper backend (tawa-hopper-pipeline) is not there yet")
    compiler.clear_cache()
    kernel = tawa.compile(GEMM, "gemm", stages=3)
    assert kernel.options == {"stages": 3} and kernel.arg_names == ("A", "B", "C", "M", "N", "K")
    maps = kernel.abi.tensormap_params()
    # A, B, and C (the TMA-store epilogue, docs/passes.md): boxes of one 128B-swizzle span
    assert [(p.arg, p.box, p.swizzle) for p in maps] == [(0, (128, 64), 128), (1, (256, 64), 128), (2, (128, 64), 128)]
    plan = kernel.plan(*gemm_args(200, 136, 200), grid=(2, 1))
    assert [k for k, _ in plan.params].count("tensormap") == 3
    assert plan.shape.block == (kernel.abi.threads, 1, 1) and plan.shape.grid == (2, 1, 1)
    if __import__("shutil").which("ptxas") is None:
        return
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    cubin = kernel.assemble()
    assert cubin.path.is_file() and "0 bytes spill stores" in cubin.log


# --------------------------------------------------------------------------- persistent kernels (real backend)


def test_persistent_gemm_gets_the_logical_grid_and_fewer_ctas():
    """With the real backend, the default GEMM is persistent: the logical grid
    travels as `grid0`/`grid1` parameters and the launch is settled per device
    (at most one CTA per SM, never more CTAs than programs)."""
    tawa.runtime.clear_cache()
    text = (Path(__file__).resolve().parents[2] / "examples" / "gemm.mlir").read_text()
    kernel = tawa.compile(text, "gemm", stages=4)
    assert kernel.abi.persistent
    assert [p.name for p in kernel.abi.params if p.kind == "grid"] == ["grid0", "grid1"]
    M, N, K = 1024, 768, 128
    plan = kernel.plan(*gemm_args(M, N, K), grid=(8, 3))
    grid_params = [v for (k, v), p in zip(plan.params, kernel.abi.params) if p.kind == "grid"]
    assert grid_params == [8, 3]
    assert plan.shape.persistent and plan.shape.grid == (8, 3, 1)
    assert plan.shape.launch_grid(132) == (24, 1, 1)
    assert plan.shape.launch_grid(16) == (16, 1, 1)
    plain = tawa.compile(text, "gemm", stages=4, persistent=False)
    assert not plain.abi.persistent and not any(p.kind == "grid" for p in plain.abi.params)
    assert plain.plan(*gemm_args(M, N, K), grid=(8, 3)).shape.launch_grid(132) == (8, 3, 1)


def test_kernel_without_a_producer_launches_one_cta_per_program():
    """A kernel of one partition (no dots: its consumers load their own
    tiles) is not persistent however `persistent` is set: its launch is the
    logical grid, several CTAs an SM (`.minnctapersm`), and a grid past
    CUDA's limit along y is refused in one line."""
    from tawa.runtime.launch import LaunchError
    from tawa.torch.norm_kernels import norms

    kernel = norms().swiglu.compile(BLOCK_M=4, BLOCK_N=256)
    assert not kernel.abi.persistent and kernel.abi.ctas_per_sm > 1
    assert not any(p.kind == "grid" for p in kernel.abi.params)
    assert f".minnctapersm {kernel.abi.ctas_per_sm}" in kernel.ptx
    M, N = 1000, 512
    args = [FakeTensor((M, N), "bfloat16", ptr=0x1000_0000 * (i + 1)) for i in range(3)] + [M, N]
    shape = kernel.plan(*args, grid=(250, 2)).shape
    assert not shape.persistent and shape.launch_grid(132) == (250, 2, 1)
    with pytest.raises(LaunchError, match="grid axis 1 has 65536 programs, more than CUDA's 65535"):
        kernel.plan(*args, grid=(1, 65536))


@pytest.mark.slow
def test_clustered_gemm_launches_whole_clusters():
    """cluster=2: the ABI carries the cluster size, the PTX declares it, and
    the launch is whole clusters, one per cluster program (ceil(gx / 2) · gy
    of them), at most SMs / 2 of them."""
    tawa.runtime.clear_cache()
    text = (Path(__file__).resolve().parents[2] / "examples" / "gemm.mlir").read_text()
    kernel = tawa.compile(text, "gemm", stages=4, cluster=2)
    assert kernel.abi.persistent and kernel.abi.cluster == 2
    assert ".reqnctapercluster 2, 1, 1" in kernel.ptx
    M, N, K = 1000, 768, 128  # 8 row tiles, 3 column tiles
    shape = kernel.plan(*gemm_args(M, N, K), grid=(8, 3)).shape
    assert shape.cluster == 2
    assert shape.launch_grid(132) == (24, 1, 1)  # 4 · 3 cluster programs, 2 CTAs each
    assert shape.launch_grid(16) == (16, 1, 1)   # 8 clusters
    assert shape.launch_grid(15) == (14, 1, 1)   # whole clusters only
    odd = kernel.plan(*gemm_args(M, N, K), grid=(7, 1)).shape
    assert odd.launch_grid(132) == (8, 1, 1)     # 4 cluster programs: the last one's second CTA repeats row 6
    assert tawa.compile(text, "gemm", stages=4).abi.cluster == 1


def test_persistent_ctas():
    from tawa.dialects.nvgpu import persistent_ctas

    assert persistent_ctas((8, 3, 1), 132) == 24
    assert persistent_ctas((300, 4, 1), 132) == 132
    assert persistent_ctas((300, 4, 1), 132, cluster=2) == 132
    assert persistent_ctas((300, 4, 1), 131, cluster=2) == 130
    assert persistent_ctas((1, 1, 1), 132, cluster=2) == 2
    assert persistent_ctas((5, 2, 3), 132, cluster=4) == 4 * 2 * 2 * 3
    assert persistent_ctas((0, 1, 1), 132) == 1
