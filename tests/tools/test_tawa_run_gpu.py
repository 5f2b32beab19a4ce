"""`tawa-run --gpu`: every example kernel compiled by `tawa.compile`, run on a
Hopper GPU on random inputs (NaN-poisoned outputs), compared with
`tawa.interpret` of the tile program (relative Frobenius error ≤ 1e-2).
Shapes are ragged in every dimension, with rows that are multiples of
16 bytes as TMA requires.

Run: `pytest -m gpu tests/tools/test_tawa_run_gpu.py -v`.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tawa.tools.tawa_run import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GEMM = ["--shape", "M=200,N=136,K=200"]
FP8 = ["--shape", "M=200,N=136,K=208"]
CHAIN = ["--shape", "seq_len=200", "--arg", "Q=3,seq_len,128"]


def _gqa(d: int) -> list[str]:
    """The 4-D attention kernels: 2 batches of 4 query heads on 2 key/value heads, keys past the queries."""
    return ["--shape", "q_len=200,kv_len=264,group=2", "--arg", f"Q=2,4,q_len,{d}",
            "--arg", f"K=2,2,kv_len,{d}", "--arg", f"V=2,2,kv_len,{d}", "--arg", f"O=2,4,q_len,{d}"]


ATT, ATT64, ATT256 = _gqa(128), _gqa(64), _gqa(256)
ATT8 = ["--shape", "seq_len=208", "--arg", "Q=3,seq_len,128", "--arg", "Vt=3,128,seq_len"]
"""fp8 attention: Vt's rows of seq_len bytes are whole 16-byte TMA strides."""
CASES = {
    "gemm": ("gemm.mlir", GEMM),
    "matmul": ("matmul.mlir", GEMM),
    "gemm_a_prologue": ("gemm_a_prologue.mlir", GEMM),
    "gemm_alpha_beta": ("gemm_alpha_beta.mlir", GEMM),
    "gemm_bias_gelu": ("gemm_bias_gelu.mlir", GEMM),
    "gemm_scale_relu": ("gemm_scale_relu.mlir", GEMM),
    "gemm_tf32": ("gemm_tf32.mlir", GEMM),
    "gemm_fp8": ("gemm_fp8.mlir", FP8),
    "gemm_fp8_scaled": ("gemm_fp8_scaled.mlir", FP8),
    "gemm_softmax": ("gemm_softmax.mlir", ["--shape", "M=200,K=200"]),
    "batched_gemm": ("batched_gemm.mlir", [*GEMM, "--arg", "A=3,M,K"]),
    "gemm_chain": ("gemm_chain.mlir", CHAIN),
    "attention_fwd": ("attention_fwd.mlir", ATT),
    "attention_fwd_causal": ("attention_fwd.mlir", ATT),
    "attention_fwd_d64": ("attention_fwd_d64.mlir", ATT64),
    "attention_fwd_d64_m128": ("attention_fwd_d64.mlir", ATT64),
    "attention_fwd_d64_causal": ("attention_fwd_d64.mlir", ATT64),
    "attention_fwd_d64_causal_m192": ("attention_fwd_d64.mlir", ATT64),
    "attention_fwd_d256": ("attention_fwd_d256.mlir", ATT256),
    "attention_fwd_d256_causal": ("attention_fwd_d256.mlir", ATT256),
    "attention_fwd_d256_n80": ("attention_fwd_d256_n80.mlir", ATT256),
    "attention_fwd_d256_n80_causal": ("attention_fwd_d256_n80.mlir", ATT256),
    "attention_fwd_bias": ("attention_fwd_bias.mlir", CHAIN),
    "attention_fwd_fp8": ("attention_fwd_fp8.mlir", ATT8),
    "attention_fwd_fp8_causal": ("attention_fwd_fp8.mlir", ATT8),
}
ROW = re.compile(r"^  \w+ +(bit-exact|relative Frobenius error (\S+) \(bound 1e-02\)): ok$", re.M)


def test_every_example_kernel_is_covered():
    defined = {
        m.group(1)
        for f in EXAMPLES.glob("*.mlir")
        for m in re.finditer(r"^func\.func @(\w+)", f.read_text(), re.M)
    }
    assert defined == set(CASES)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", list(CASES))
def test_example_on_gpu(cuda, capsys, kernel):
    file, options = CASES[kernel]
    rc = main([str(EXAMPLES / file), kernel, *options, "--gpu"])
    out, err = capsys.readouterr()
    assert rc == 0 and err == "", out + err
    assert "  result    tawa.compile, on the GPU: " in out
    rows = ROW.findall(out)
    assert len(rows) == 1 and out.endswith("\nPASS\n"), out


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_gpu_without_torch_is_one_line(capsys):
    rc = main([str(EXAMPLES / "gemm.mlir"), "gemm", *GEMM, "--gpu"])
    out, err = capsys.readouterr()
    assert rc == 1 and out == ""
    assert err == "tawa-run: error: --gpu needs torch (and cupy and cuda-bindings: pip install -e '.[gpu]')\n"
