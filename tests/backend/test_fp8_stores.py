"""GEMMs whose output C is fp8 (f8E4M3FN, f8E5M2): the consumers convert
pairs of accumulator values with `cvt.rn.satfinite.e4m3x2.f32` (or e5m2x2)
into one 16-bit register and store it with `st.global.b16`, or byte by byte
(`st.global.b8`) at a ragged edge.  They used to store the 16-bit pair with
`st.global.b32` (exit 0, then ptxas: `Arguments mismatch for instruction
'st'`).

CPU: ptxas accepts the PTX of fp8-output mutants of the fp8, scaled-fp8 and
batched GEMM examples, with every option set the fuzzer uses (the slow
tier; one in the fast tier).  GPU: the fp8 outputs are the float64 product
rounded to fp8, on ragged shapes, and nothing outside C is written.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tawa.tools.tawa_opt import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")

FP8 = ("f8E4M3FN", "f8E5M2")


def fp8_output(example: str, fp8: str) -> str:
    """The example with every bf16 (its output C, and A and B where they
    are bf16) made `fp8`."""
    return (EXAMPLES / f"{example}.mlir").read_text().replace("bf16", fp8)


def compile_ptx(text: str, options: str, tmp_path: Path, capsys) -> str:
    src = tmp_path / "k.mlir"
    src.write_text(text)
    spec = f"tawa-hopper-pipeline{{{options}}}" if options else "tawa-hopper-pipeline"
    status = main([str(src), "-p", spec, "-t", "ptx"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out


def assembles(ptx: str, tmp_path: Path) -> None:
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    res = subprocess.run([PTXAS, "-arch=sm_90a", str(src), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def stored_registers(ptx: str) -> dict[str, set[str]]:
    """For each global store width, the kinds of register it stores (`h`, `r`, `f`)."""
    out: dict[str, set[str]] = {}
    for width, reg in re.findall(r"st\.global\.(b8|b16|b32|f32|v\d\.f32) \[[^\]]+\], \{?%([a-z]+)", ptx):
        out.setdefault(width, set()).add(reg)
    return out


@needs_ptxas
def test_fp8_output_gemm_assembles(tmp_path, capsys):
    ptx = compile_ptx(fp8_output("gemm_fp8", "f8E4M3FN"), "", tmp_path, capsys)
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx
    # 16-bit pairs where the row is whole, single bytes at the ragged edge;
    # never a 32-bit store of a 16-bit register.
    assert stored_registers(ptx) == {"b16": {"h"}, "b8": {"h"}}
    assembles(ptx, tmp_path)


@needs_ptxas
@pytest.mark.slow
@pytest.mark.parametrize("options", ["", "stages=2", "persistent=false", "stages=1 persistent=false"])
@pytest.mark.parametrize("fp8", FP8)
@pytest.mark.parametrize("example", ["gemm_fp8", "gemm_fp8_scaled", "batched_gemm", "gemm_softmax"])
def test_fp8_output_mutants_assemble(example, fp8, options, tmp_path, capsys):
    ptx = compile_ptx(fp8_output(example, fp8), options, tmp_path, capsys)
    assert f"cvt.rn.satfinite.{'e4m3x2' if fp8 == 'f8E4M3FN' else 'e5m2x2'}.f32" in ptx
    assert "b32" not in stored_registers(ptx)
    assembles(ptx, tmp_path)


@pytest.mark.gpu
@pytest.mark.parametrize("fp8", FP8)
@pytest.mark.parametrize("M, N, K", [(200, 136, 80), (130, 264, 5 * 128 - 16), (256, 512, 1024)])
def test_fp8_output_values(cuda, seed, fp8, M, N, K):
    """C = A·Bᵀ (fp8 A and B) stored as fp8: every element the float64
    product rounded to fp8 (satfinite) up to the f32 accumulation, whatever
    the edge; the row after C, poisoned, stays as it was."""
    import torch

    import tawa

    fp8_torch = {"f8E4M3FN": torch.float8_e4m3fn, "f8E5M2": torch.float8_e5m2}[fp8]
    text = fp8_output("gemm_fp8", fp8)
    kernel = tawa.compile(text, "gemm_fp8")
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = (torch.randn(M, K, device="cuda", generator=g) * 0.5).to(torch.float8_e4m3fn)
    B = (torch.randn(N, K, device="cuda", generator=g) * 0.5).to(torch.float8_e4m3fn)
    poison = torch.full((M + 1, N), float("nan"), device="cuda").to(fp8_torch)
    C = poison[:M]
    kernel(A, B, C, M, N, K, grid=((M + 127) // 128, (N + 255) // 256))
    torch.cuda.synchronize()
    got = poison.float()
    assert not bool(torch.isnan(got[:M]).any()), "elements of C were not written"
    assert bool(torch.isnan(got[M]).all()), "the kernel wrote past the end of C"
    exact = A.double() @ B.double().T
    limit = torch.finfo(fp8_torch).max
    want = exact.clamp(-limit, limit).to(fp8_torch).double()  # satfinite, then round to nearest even
    # The GPU rounds its accumulator, not the exact sum, and Hopper's fp8
    # wgmma keeps about 14 bits while it accumulates (DeepSeek-V3 report,
    # section 3.3.2): near a cancellation the accumulator is off by up to a
    # few 2^-13 of the sum of the products' magnitudes, more than an fp8
    # step of the small result.  Allowed: one fp8 step of the result plus
    # 2^-10 of that sum (a wrong element is off by a product's size).
    mantissa_bits, smallest = (3, 2.0 ** -9) if fp8 == "f8E4M3FN" else (2, 2.0 ** -16)
    step = torch.clamp(want.abs() * 2.0 ** -mantissa_bits, min=smallest)  # the gap to a neighbour
    magnitude = A.double().abs() @ B.double().abs().T
    off = (got[:M].double() - want).abs() > step + 2.0 ** -10 * magnitude
    bad = [(i, j, float(got[i, j]), float(want[i, j]), float(exact[i, j])) for i, j in off.nonzero().tolist()[:6]]
    assert not bad, f"{int(off.sum())} of {M * N} values off by more than the tolerance: (row, col, got, want, exact) {bad}"
    assert float((got[:M].double() == want).double().mean()) > 0.95
