"""`tawa.kernels.gemm`: the one GEMM generator, and its space.

* `gemm_source` of the default configuration is op for op the shipped
  examples (gemm.mlir; matmul.mlir with B K×N; batched_gemm.mlir);
* `unsupported(config)` says what the compiler's own checks say
  (tawa-check-resources, tawa-lower-aref), on both sides of each rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tawa
from tawa.diagnostics import TawaError
from tawa.kernels.gemm import GemmConfig, gemm_grid, gemm_source, unsupported
from tawa.runtime.autotune import compiler_rejects

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def unnamed(text: str) -> str:
    """The module printed with every SSA value unnamed."""
    module = tawa.parse(text)
    for op in module.walk():
        for r in op.results:
            r.name_hint = None
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    arg.name_hint = None
    return str(module)


@pytest.mark.parametrize(
    "config, name, example",
    [
        (GemmConfig(), "gemm", "gemm.mlir"),
        (GemmConfig(b_layout="kn"), "matmul", "matmul.mlir"),
        (GemmConfig(batched=True), "batched_gemm", "batched_gemm.mlir"),
    ],
    ids=["gemm", "matmul", "batched_gemm"],
)
def test_default_config_is_the_example(config, name, example):
    assert unnamed(gemm_source(config, name)) == unnamed((EXAMPLES / example).read_text())


def test_names_types_and_grid():
    config = GemmConfig(64, 96, 128, "f8E4M3FN", "f8E5M2", "f32")
    assert config.id == "64x96x128-f8E4M3FNxf8E5M2-f32"
    text = gemm_source(config)
    assert text.startswith("func.func @gemm(%A: memref<?x?xf8E4M3FN>, %B: memref<?x?xf8E5M2>, %C: memref<?x?xf32>")
    assert "arith.truncf" not in text  # an f32 C is the accumulator
    assert gemm_grid(config, 65, 96) == (2, 1)
    assert gemm_grid(GemmConfig(batched=True), 300, 256, batch=3) == (3, 1, 3)
    with pytest.raises(TawaError, match="batch size"):
        gemm_grid(GemmConfig(batched=True), 1, 1)
    with pytest.raises(TawaError, match=r"tawa.kernels.GemmConfig: error: b_layout='mk'"):
        GemmConfig(b_layout="mk")


@pytest.mark.parametrize(
    "config",
    [
        GemmConfig(192, 192, 64),  # 512 threads start with 128 registers: m64n192 needs ~122
        GemmConfig(192, 256, 64),  # ... m64n256 ~154
        GemmConfig(256, 128, 64),  # 640 threads start with 96: m64n128 needs ~90
        GemmConfig(256, 192, 64),  # ... m64n192 ~122
        GemmConfig(128, 16, 64, b_layout="kn"),  # MN-major B rows of 32 bytes
        GemmConfig(128, 8, 64, b_layout="kn"),  # ... of 16 bytes
    ],
    ids=lambda c: c.id,
)
def test_unsupported_agrees_with_the_compiler(config):
    rule, compiler = unsupported(config), compiler_rejects(config, {})
    assert (rule is None) == (compiler is None), (rule, compiler)


def test_unsupported_types():
    assert "MN-major" in unsupported(GemmConfig(a_dtype="f8E4M3FN", b_dtype="f8E4M3FN", block_k=128, b_layout="kn"))
    assert "family" in unsupported(GemmConfig(a_dtype="bf16", b_dtype="f16"))
    assert "one wgmma" in unsupported(GemmConfig(block_k=8))
    assert "BLOCK_M" in unsupported(GemmConfig(block_m=96))
