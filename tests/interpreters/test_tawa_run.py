"""`tawa-run`: every example kernel at tiny shapes (reference: the tile
program on the interpreter; result: after a pipeline on the CPU simulator),
pipelined IR, the `tawa.grid` / `tawa.shapes` attributes, failures (exit 1)
and bad input (one located line, exit 1)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tawa.tools.tawa_run import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GEMM = str(EXAMPLES / "gemm.mlir")
WS = "tawa-warp-specialize"
FULL = "tawa-hopper-pipeline{prepare=false}"
SMALL = "M=130,N=72,K=80"
"""Ragged in every dimension: two row blocks, one column block, two K steps."""
CHAIN = ["--shape", "seq_len=130", "--arg", "Q=2,seq_len,128"]
ATT_BIAS = CHAIN


def _gqa(d: int) -> list[str]:
    """The 4-D attention kernels: two query heads on one key/value head."""
    return ["--shape", "q_len=130,kv_len=130,group=2", "--arg", f"Q=1,2,q_len,{d}",
            "--arg", f"K=1,1,kv_len,{d}", "--arg", f"V=1,1,kv_len,{d}"]


ATT, ATT64, ATT256 = _gqa(128), _gqa(64), _gqa(256)
ATT8 = ["--shape", "seq_len=144", "--arg", "Q=2,seq_len,128", "--arg", "Vt=2,128,seq_len"]

# kernel → (file, options, pipeline).  The whole Hopper pipeline on the CPU
# simulator for three kernels (a GEMM, an epilogue operand, causal attention);
# tawa-warp-specialize for the rest (the simulator is slow on lowered attention).
CASES = {
    "gemm": ("gemm.mlir", ["--shape", SMALL], FULL),
    "matmul": ("matmul.mlir", ["--shape", SMALL], WS),
    "gemm_a_prologue": ("gemm_a_prologue.mlir", ["--shape", SMALL], WS),
    "gemm_alpha_beta": ("gemm_alpha_beta.mlir", ["--shape", SMALL], WS),
    "gemm_bias_gelu": ("gemm_bias_gelu.mlir", ["--shape", SMALL], FULL),
    "gemm_scale_relu": ("gemm_scale_relu.mlir", ["--shape", SMALL, "--arg", "alpha=0.5"], WS),
    "gemm_tf32": ("gemm_tf32.mlir", ["--shape", SMALL], WS),
    "gemm_fp8": ("gemm_fp8.mlir", ["--shape", "M=130,N=72,K=160"], WS),
    "gemm_fp8_scaled": ("gemm_fp8_scaled.mlir", ["--shape", "M=130,N=72,K=160"], WS),
    "gemm_softmax": ("gemm_softmax.mlir", ["--shape", "M=130,K=80"], WS),
    "batched_gemm": ("batched_gemm.mlir", ["--shape", SMALL, "--arg", "A=2,M,K"], WS),
    "gemm_chain": ("gemm_chain.mlir", CHAIN, WS),
    "attention_fwd": ("attention_fwd.mlir", ATT, WS),
    "attention_fwd_causal": ("attention_fwd.mlir", ATT, FULL),
    "attention_fwd_d64": ("attention_fwd_d64.mlir", ATT64, WS),
    "attention_fwd_d64_m128": ("attention_fwd_d64.mlir", ATT64, WS),
    "attention_fwd_d64_causal": ("attention_fwd_d64.mlir", ATT64, WS),
    "attention_fwd_d64_causal_m192": ("attention_fwd_d64.mlir", ATT64, WS),
    "attention_fwd_d256": ("attention_fwd_d256.mlir", ATT256, WS),
    "attention_fwd_d256_causal": ("attention_fwd_d256.mlir", ATT256, WS),
    "attention_fwd_d256_n80": ("attention_fwd_d256_n80.mlir", ATT256, WS),
    "attention_fwd_d256_n80_causal": ("attention_fwd_d256_n80.mlir", ATT256, WS),
    "attention_fwd_bias": ("attention_fwd_bias.mlir", ATT_BIAS, WS),
    # fp8: Vt's rows of seq_len bytes are whole 16-byte TMA strides; P through shared memory.
    "attention_fwd_fp8": ("attention_fwd_fp8.mlir", ATT8, FULL),
    "attention_fwd_fp8_causal": ("attention_fwd_fp8.mlir", ATT8, WS),
}
SHAPES = {
    "gemm_softmax": "A bfloat16[130x80] in, B bfloat16[256x80] in, C bfloat16[130x256] out",
    "gemm_bias_gelu": "Bias bfloat16[72] in, C bfloat16[130x72] out",
    "gemm_alpha_beta": "C bfloat16[130x72] in/out",
    "batched_gemm": "A bfloat16[2x130x80] in, B bfloat16[2x72x80] in, C bfloat16[2x130x72] out",
    "attention_fwd_bias": "Bias bfloat16[2x130x130] in, O bfloat16[2x130x128] out",
    "gemm_fp8_scaled": "ScaleA float32[130] in, ScaleB float32[72] in",
    "matmul": "B bfloat16[80x72] in",
}
GRIDS = {"gemm_softmax": "2", "batched_gemm": "2x1x2",
         "attention_fwd_d64": "1x2x1", "attention_fwd_d64_causal_m192": "1x2x1"}  # 192 query rows a program
ROW = re.compile(r"^  (\w+) +(bit-exact|relative Frobenius error (\S+) \(bound 1e-02\)): ok$", re.M)


@pytest.fixture
def seed_arg(seed: int) -> str:
    """The suite's seed as tawa-run's --seed argument."""
    return str(seed)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_every_example_kernel_is_covered():
    defined = {
        m.group(1)
        for f in EXAMPLES.glob("*.mlir")
        for m in re.finditer(r"^func\.func @(\w+)", f.read_text(), re.M)
    }
    assert defined == set(CASES)


@pytest.mark.parametrize("kernel", [k if k == "gemm" else pytest.param(k, marks=pytest.mark.slow) for k in CASES])
def test_example(capsys, kernel, seed_arg):
    file, options, pipeline = CASES[kernel]
    rc, out, err = run(capsys, str(EXAMPLES / file), kernel, *options, "-p", pipeline, "--seed", seed_arg)
    assert rc == 0 and err == "", out + err
    assert out.startswith(f"tawa-run @{kernel} ({EXAMPLES / file}), seed {seed_arg}\n")
    assert f"  result    -p {pipeline}, CPU simulator: " in out
    grid = "2x2x1" if options[1].startswith("q_len") else "2x2" if "seq_len" in options[1] else "2x1"
    assert f"  grid      {GRIDS.get(kernel, grid)} (derived)" in out
    assert SHAPES.get(kernel, "") in out
    rows = ROW.findall(out)
    assert len(rows) == 1 and out.endswith("\nPASS\n"), out
    if rows[0][2]:
        assert float(rows[0][2]) <= 1e-2


def test_pipelined_ir(capsys, tmp_path, seed_arg):
    """IR after tawa-warp-specialize (tile.dot_async after tawa-pipeline):
    its own reference, or the tile program's with --reference."""
    import tawa
    from tawa.tools.tawa_run import apply_pipeline

    module = tawa.parse((EXAMPLES / "matmul.mlir").read_text(), "examples/matmul.mlir")
    apply_pipeline(module, "tawa-warp-specialize,tawa-pipeline{stages=2}")
    assert "tile.dot_async" in str(module)
    path = tmp_path / "matmul_pipelined.mlir"
    path.write_text(str(module))
    rc, out, _ = run(capsys, str(path), "matmul", "--shape", SMALL, "--seed", seed_arg)
    assert rc == 0 and "result    the input as given, CPU simulator" in out
    assert "(pipelined IR: --reference TILE_FILE checks it against the tile program)" in out
    rc, out, _ = run(
        capsys, str(path), "matmul", "--shape", SMALL, "--seed", seed_arg,
        "--reference", str(EXAMPLES / "matmul.mlir"), "-p", "tawa-assign-stage-phase,tawa-lower-aref",
    )
    assert rc == 0 and out.endswith("  C         bit-exact: ok\nPASS\n"), out


def test_lowered_ir_needs_the_tile_program(capsys, tmp_path):
    import tawa
    from tawa.tools.tawa_run import apply_pipeline

    module = tawa.parse((EXAMPLES / "gemm.mlir").read_text(), "examples/gemm.mlir")
    apply_pipeline(module, "tawa-warp-specialize,tawa-assign-stage-phase,tawa-lower-aref,tawa-lower-tile")
    path = tmp_path / "gemm_lowered.mlir"
    path.write_text(str(module))
    rc, out, err = run(capsys, str(path), "gemm", "--shape", SMALL)
    assert rc == 1 and out == ""
    assert err == (
        f"{path}:2:3: error: @gemm has no tile.load or tile.store to read its arguments from "
        "(IR after tawa-lower-tile?): give the tile program with --reference TILE_FILE\n"
    )


KERNEL_WITH_ATTRIBUTES = """
func.func @rows(%X: memref<?x?xf32>, %Y: memref<?x?xf32>, %R: index, %s: f32)
    attributes {tawa.grid = ["ceildiv(R, 64)", "2"], tawa.shapes = {X = "R,W"}} {
  %c64 = arith.constant 64 : index
  %c32 = arith.constant 32 : index
  %pid = tile.program_id 0
  %col = tile.program_id 1
  %r0 = arith.muli %pid, %c64 : index
  %c0 = arith.muli %col, %c32 : index
  %x = tile.load %X[%r0, %c0] : memref<?x?xf32> -> tensor<64x32xf32>
  %st = tile.splat %s : f32 -> tensor<64x32xf32>
  %y = arith.mulf %x, %st : tensor<64x32xf32>
  tile.store %y, %Y[%r0, %c0] : tensor<64x32xf32>, memref<?x?xf32>
  func.return
}
"""


def test_grid_and_shapes_attributes(capsys, tmp_path):
    path = tmp_path / "rows.mlir"
    path.write_text(KERNEL_WITH_ATTRIBUTES)
    # no tile.dot: tawa-warp-specialize declines it; -p '' compares the interpreter with itself
    rc, out, err = run(capsys, str(path), "rows", "--shape", "R=100,W=64", "--arg", "s=2", "-p", "")
    assert rc == 0, err
    assert "  grid      2x2 (tawa.grid)" in out
    assert "X float32[100x64] in, Y float32[100x64] out" in out
    assert "scalars   s=2" in out and out.endswith("  Y         bit-exact: ok\nPASS\n")
    # --grid wins; a grid too small leaves half of Y unwritten: FAIL, exit 1
    rc, out, _ = run(capsys, str(path), "rows", "--shape", "R=100,W=64", "--grid", "2,1", "-p", "")
    assert rc == 1 and "  grid      2x1 (--grid)" in out
    assert "3200 elements NaN in the reference (unwritten? grid too small?): FAILED" in out
    assert out.endswith("\nFAIL\n")


def test_wrong_result_fails(capsys, tmp_path):
    """A reference that computes something else: the error is reported, exit 1."""
    other = tmp_path / "gemm_scaled.mlir"
    other.write_text(
        (EXAMPLES / "gemm_scale_relu.mlir").read_text()
        .replace(", %alpha: f32", "")
        .replace("%alpha_t = tile.splat %alpha", "%alpha = arith.constant 2.0 : f32\n  %alpha_t = tile.splat %alpha")
        .replace("@gemm_scale_relu", "@gemm")
    )
    rc, out, _ = run(capsys, GEMM, "gemm", "--shape", SMALL, "--reference", str(other), "-p", WS)
    assert rc == 1 and re.search(r"  C +relative Frobenius error \S+ \(bound 1e-02\): FAILED\nFAIL\n$", out)


def _err(kernel_line: int, text: str) -> str:
    return f"{GEMM}:{kernel_line}:1: error: {text}"


@pytest.mark.parametrize(
    "argv, message",
    [
        ([GEMM, "gem"], _err(7, f"no kernel named @gem; {GEMM} defines: @gemm")),
        ([GEMM, "gemm"], _err(7, "@gemm: missing sizes M, N, K: give --shape M=...,N=...,K=...")),
        ([GEMM, "gemm", "--shape", "M=8,N=8"], _err(7, "@gemm: missing size K: give --shape K=...")),
        ([GEMM, "gemm", "--shape", "M=-1"], "tawa-run: error: --shape: expected NAME=INT,... (INT ≥ 0), got 'M=-1'"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8,Q=3"],
         "tawa-run: error: --shape: 'Q' is neither a size argument of @gemm (M, N, K) nor used by --arg"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--arg", "X=1"],
         "tawa-run: error: --arg: @gemm has no argument 'X' (arguments: A, B, C, M, N, K)"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--arg", "A=M"],
         "tawa-run: error: --arg A=M: A is memref<?x?xbf16> (rank 2), got 1 dimension"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--arg", "A=M,Q"],
         "tawa-run: error: --arg A: 'Q' is neither an integer nor a --shape name (given: M, N, K)"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--arg", "A=9,K", "--arg", "C=M,N"],
         _err(7, "@gemm: dimensions A[0], C[0] (one extent) would be both 9 (--arg A) and 8 (--arg C)")),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--arg", "A"], "tawa-run: error: --arg: expected NAME=VALUE, got 'A'"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--grid", "x"],
         "tawa-run: error: --grid: expected 1 to 3 comma-separated positive integers, got 'x'"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--grid", "2,0"],
         "tawa-run: error: --grid: expected 1 to 3 comma-separated positive integers, got '2,0'"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "-p", "no-such-pass"],
         "tawa-run: error: -p: invalid pass pipeline 'no-such-pass': Unrecognized passes: ['no-such-pass']"),
        ([str(EXAMPLES / "gemm_scale_relu.mlir"), "gemm_scale_relu", "--shape", "M=8,N=8,K=8", "--arg", "alpha=x"],
         "tawa-run: error: --arg alpha=x: expected a number for f32 argument alpha"),
        ([str(EXAMPLES / "attention_fwd.mlir"), "attention_fwd", "--shape", "q_len=8,kv_len=8,group=1"],
         f"{EXAMPLES / 'attention_fwd.mlir'}:17:1: error: @attention_fwd: cannot determine dimension 0 of Q "
         "(indexed by tile.program_id 2; shared with K, V, O): give its shape with --arg Q=?,group,q_len,128 "
         "(each ? an integer or a --shape name)"),
        ([GEMM], "tawa-run: error: the following arguments are required: kernel"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--tol", "-1"],
         "tawa-run: error: argument --tol: expected a finite number ≥ 0, got '-1'"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--tol", "nan"],
         "tawa-run: error: argument --tol: expected a finite number ≥ 0, got 'nan'"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--ctas", "0"],
         "tawa-run: error: argument --ctas: expected an integer ≥ 1, got '0'"),
        ([GEMM, "gemm", "--shape", "M=8,N=8,K=8", "--seed", "-1"],
         "tawa-run: error: argument --seed: expected an integer ≥ 0, got '-1'"),
        ([GEMM, "gemm", "--shape", "M=100000000,N=100000,K=64"],
         "tawa-run: error: --shape: the arrays (A[100000000x64], B[100000x64], C[100000000x100000]) would take "
         "1.86e+04 GiB, more than the 4 GiB tawa-run makes"),
        ([GEMM, "gemm", "--shape", f"M={10**30},N=8,K=8"],
         f"tawa-run: error: --shape: the arrays (A[{10**30}x8], B[8x8], C[{10**30}x8]) would take "
         "2.98e+22 GiB, more than the 4 GiB tawa-run makes"),
        ([GEMM, "gemm", "--nope"], "tawa-run: error: unrecognized arguments: --nope"),
        (["missing.mlir", "gemm"], "missing.mlir: error: cannot open input: No such file or directory"),
    ],
)
def test_bad_input(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 1 and out == ""
    assert err == message + "\n"


def test_parse_error(capsys, tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @k(%x: index) {\n  %y = arith.addi %x : index\n}\n")
    rc, _, err = run(capsys, str(path), "k")
    assert rc == 1 and err.startswith(f"{path}:2:") and err.count("\n") == 1


@pytest.mark.skipif(shutil.which("tawa-run") is None, reason="tawa-run is not installed (pip install -e .)")
def test_console_script():
    proc = subprocess.run(
        ["tawa-run", GEMM, "gemm", "--shape", "M=64,N=64,K=64", "-p", WS], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"tawa-run @gemm ({GEMM}), seed ")
    assert proc.stdout.endswith("\nPASS\n")
