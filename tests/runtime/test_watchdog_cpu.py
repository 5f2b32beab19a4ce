"""The watchdog without a GPU: decoding the buffer a timed-out wait writes
into the exception's message (fake buffer contents), the launch-side
plumbing (parameter, buffer, synchronize), the compiled kernel's parameter
and PTX, and that the PTX assembles.  The GPU side (a deliberately
deadlocking GEMM raising KernelHangError) is tests/runtime/test_watchdog_gpu.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import tawa
from tawa.backend.ptx.abi import WATCHDOG_BYTES, WATCHDOG_FIELDS, WATCHDOG_VALID
from tawa.diagnostics import TawaError
from tawa.runtime import LaunchError, compiler, cuda, plan_launch
from tawa.runtime.watchdog import KernelHangError, WaitRecord, Watchdog, WatchdogSpec, decode, hang_error
from tawa.transforms.testing import with_broken_protocol

ROOT = Path(__file__).resolve().parents[2]
GEMM = (ROOT / "examples" / "gemm.mlir").read_text()
PTXAS = shutil.which("ptxas")
SPEC = WatchdogSpec(
    "gemm",
    (
        ("gemm.mlir:19:5", "producer", "mbarrier<4> at shared offset 197664"),
        ("gemm.mlir:21:5", "consumer", "mbarrier<4> at shared offset 197632"),
    ),
)


def words(**fields: int) -> list[int]:
    """A watchdog buffer holding `fields` (the rest zero)."""
    out = [0] * (WATCHDOG_BYTES // 4)
    for name, value in fields.items():
        out[WATCHDOG_FIELDS.index(name)] = value
    return out


RECORD = dict(claim=1, valid=WATCHDOG_VALID, wait_id=1, cta_x=3, thread=200, index=2, parity=1)


def test_a_zeroed_or_unfinished_buffer_holds_no_record():
    assert decode(words()) is None
    # Claimed but not yet marked valid (the trap came first): no record either.
    assert decode(words(**{**RECORD, "valid": 0})) is None


def test_decode_a_record():
    rec = decode(words(**RECORD, cta_y=0, cta_z=0))
    assert rec == WaitRecord(wait_id=1, cta=(3, 0, 0), thread=200, index=2, parity=1)
    assert rec.warp_group == 1


def test_the_message_names_the_wait():
    rec = decode(words(**RECORD))
    assert rec is not None
    err = hang_error(SPEC, rec, (2, 4, 1), "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure")
    assert isinstance(err, KernelHangError) and isinstance(err, LaunchError) and isinstance(err, TawaError)
    assert str(err) == (
        "gemm.mlir:21:5: error: mbarrier wait timed out in block 3, warp group 1 (consumer), thread 200: "
        "barrier 2 of the mbarrier<4> at shared offset 197632, parity 1 (wait 1 of @gemm); the CUDA "
        "context is unusable now (restart the process) (CUDA: CUDA_ERROR_LAUNCH_FAILED: unspecified "
        'launch failure); tawa.interpret(module, "gemm", (2, 4, 1), *args) replays this launch on the CPU'
    )
    assert "\n" not in str(err)
    assert err.where == "gemm.mlir:21:5" and err.wait == SPEC.waits[1] and err.record == rec
    assert err.kernel == "gemm" and err.grid == (2, 4, 1)


def test_the_message_of_a_3d_block_without_a_role_or_table_entry():
    rec = decode(words(**{**RECORD, "wait_id": 7, "cta_y": 1, "cta_z": 2, "thread": 5}))
    assert rec is not None
    spec = WatchdogSpec("k", (("k.mlir:1:1", "", "mbarrier<1> at shared offset 0"),))
    msg = str(hang_error(spec, rec, (8,)))
    assert msg.startswith("@k: error: mbarrier wait timed out in block (3, 1, 2), warp group 0, thread 5: ")
    assert "wait id 7 is not in the wait table" in msg and '"k", (8,), *args' in msg


class FakeStream:
    def __init__(self, error: Exception | None = None):
        self.error = error
        self.synchronized = 0

    def synchronize(self) -> None:
        self.synchronized += 1
        if self.error is not None:
            raise self.error


def test_after_launch_turns_a_trap_into_the_hang_error():
    dog = Watchdog(SPEC, words(**RECORD), device_ptr=0x1000)
    with pytest.raises(KernelHangError, match=r"^gemm.mlir:21:5: error: mbarrier wait timed out .*IllegalInstruction"):
        dog.after_launch(FakeStream(RuntimeError("cudaErrorIllegalInstruction")), (1, 1, 1))


def test_a_failure_without_a_record_is_a_launch_error():
    dog = Watchdog(SPEC, words(), device_ptr=0x1000)
    with pytest.raises(LaunchError, match="@gemm failed .*without a watchdog record; the CUDA context is unusable"):
        dog.after_launch(FakeStream(RuntimeError("unspecified launch failure")), (1, 1, 1))
    ok = FakeStream()
    dog.after_launch(ok, (1, 1, 1))
    assert ok.synchronized == 1
    dog.synchronous = False
    dog.after_launch(ok, (1, 1, 1))
    assert ok.synchronized == 1


def test_check_raises_a_record_left_by_an_asynchronous_launch():
    Watchdog(SPEC, words(), 0).check()
    with pytest.raises(KernelHangError):
        Watchdog(SPEC, words(**RECORD), 0).check((1, 1, 1))


# --------------------------------------------------------------------------- compiled kernels


@pytest.fixture(scope="module")
def kernels() -> dict[str, tawa.Kernel]:
    f16 = GEMM.replace("bf16", "f16")
    return {
        "plain": tawa.compile(f16, "gemm", stages=2),
        "off": tawa.compile(f16, "gemm", stages=2, watchdog_ms=0),
        "on": tawa.compile(f16, "gemm", stages=2, watchdog_ms=300),
    }


@pytest.mark.slow
def test_off_by_default_and_nothing_changes_when_off(kernels):
    assert kernels["off"].ptx == kernels["plain"].ptx
    assert "watchdog" not in kernels["plain"].ptx and "%globaltimer" not in kernels["plain"].ptx
    assert kernels["plain"].abi.waits == () and all(p.kind != "watchdog" for p in kernels["plain"].abi.params)


def test_a_watchdog_kernel_takes_the_buffer_last_and_bounds_its_waits(kernels):
    k = kernels["on"]
    assert k.abi.params[-1].kind == "watchdog" and k.abi.params[-1].name == "watchdog"
    assert [(role, barrier.split(" at ")[0]) for _, role, barrier in k.abi.waits] == [
        ("producer", "mbarrier<2>"),
        ("consumer", "mbarrier<2>"),
    ]
    assert re.search(r"\.param \.u64 watchdog\n\)", k.ptx)
    assert k.ptx.count("setp.ge.u64") == k.ptx.count("trap;") == len(re.findall(r"mbarrier.try_wait", k.ptx)) // 2
    assert "300000000;" in k.ptx


def fake_array(shape):
    class Array:
        __module__ = "cupy._core.core"

        def __init__(self):
            self.shape = shape

        @property
        def __cuda_array_interface__(self):
            return {"shape": shape, "typestr": "<f2", "data": (0x7E00_0000_0000, False), "strides": None,
                    "version": 3}

    return Array()


def test_the_launch_plan_ends_with_the_watchdog_entry(kernels):
    M, N, K = 256, 256, 128
    args = [fake_array((M, K)), fake_array((N, K)), fake_array((M, N)), M, N, K]
    plan = kernels["on"].plan(*args, grid=(2, 1))
    assert plan.params[-1] == ("watchdog", kernels["on"].abi)
    assert all(k != "watchdog" for k, _ in kernels["plain"].plan(*args, grid=(2, 1)).params)
    assert plan_launch(kernels["on"].abi, args, (2, 1)).params[-1][0] == "watchdog"


def test_the_buffer_is_allocated_once_per_loaded_kernel(kernels, monkeypatch):
    made = []

    def allocate(spec, device):
        made.append((spec, device))
        return Watchdog(spec, words(), 0xABC0)

    monkeypatch.setattr(Watchdog, "allocate", staticmethod(allocate))
    loaded = cuda.LoadedKernel(module=None, function=None, device=0, name="gemm")
    params = (("u64", 1), ("watchdog", kernels["on"].abi))
    first = cuda._watchdog(loaded, params)
    assert first is cuda._watchdog(loaded, params) and first.device_ptr == 0xABC0
    assert made == [(WatchdogSpec("gemm", kernels["on"].abi.waits), 0)]
    assert cuda._watchdog(loaded, (("u64", 1),)) is None


def test_a_broken_protocol_compiles_through_a_substituted_registry(kernels, monkeypatch):
    """How the GPU test builds its deadlocking GEMM (test-only pass)."""
    monkeypatch.setattr(compiler, "available_passes", with_broken_protocol(compiler.available_passes, "flip-empty-parity"))
    compiler.clear_cache()
    try:
        broken = tawa.compile(GEMM.replace("bf16", "f16"), "gemm", stages=2, watchdog_ms=300)
    finally:
        compiler.clear_cache()
    # One xor more: the producer's empty wait asks for the other parity (the
    # 32-bit one its spin and its record share).
    assert broken.ptx.count("xor.b32") == kernels["on"].ptx.count("xor.b32") + 1


# --------------------------------------------------------------------------- ptxas


@pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")
def test_the_watchdog_ptx_assembles_without_spills(kernels, tmp_path):
    for name, ptx in (
        ("gemm", kernels["on"].ptx),
        ("bounded_wait", _ptx_of(ROOT / "tests" / "filecheck" / "backend" / "ptx" / "bounded_wait.mlir")),
    ):
        src = tmp_path / f"{name}.ptx"
        src.write_text(ptx)
        res = subprocess.run([PTXAS, "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / f"{name}.cubin")],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert "0 bytes spill stores, 0 bytes spill loads" in res.stderr, res.stderr


def _ptx_of(path: Path) -> str:
    from tawa.backend.ptx.printer import print_ptx

    return print_ptx(tawa.parse(path.read_text(), str(path)))
