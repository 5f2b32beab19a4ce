"""GEMM tile programs with fused epilogues (`tawa.kernels.gemm.Epilogue`):
what `tawa.torch.linear` and `tawa.torch.gated_mlp` run.

* the generated text: the kernel's arguments and ops for each epilogue part
  (FileCheck-style: each expected line, in order), configurations without
  an epilogue written as before;
* the tile program in the CPU interpreter against NumPy float32 on ragged
  M, N, K (not multiples of the tile), C poisoned with NaN: every
  activation × bias × residual, gated with each activation, f32 and f16 C,
  B K×N, batched, the pre-activation saved (P poisoned too); the bias +
  GELU program computes the bits of examples/gemm_bias_gelu.mlir;
* the program lowered by `tawa-hopper-pipeline` and run by the CTA simulator
  on 2 persistent CTAs computes what the tile program computes;
* the register rule (`unsupported`) agrees with tawa-check-resources on
  both sides of it; the tile chooser (`epilogue_choice`) falls back to a
  smaller tile of the heuristic's list where the epilogue does not fit;
* ptxas assembles each combination at its default tile (and the thread-
  epilogue twin) without spills.
"""

from __future__ import annotations

import itertools
import re
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tawa
from tawa.diagnostics import TawaError
from tawa.kernels.gemm import (
    ACTIVATIONS,
    Epilogue,
    GemmConfig,
    consumer_registers,
    gemm_grid,
    gemm_source,
    unsupported,
)
from tawa.runtime.autotune import Choice, compiler_rejects
from tawa.torch.linear_kernels import epilogue_choice, epilogue_choices, spill_free
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NUMPY_TYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}
ACTS = [None, *ACTIVATIONS]
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) is not on PATH")


def reference_activation(kind: str | None, y: np.ndarray) -> np.ndarray:
    """The activations' definitions in float32 (not the kernels' formulas)."""
    if kind == "gelu_tanh":
        return 0.5 * y * (1 + np.tanh(np.sqrt(2 / np.pi) * (y + 0.044715 * y**3)))
    if kind == "silu":
        return y / (1 + np.exp(-y))
    if kind == "relu":
        return np.maximum(y, 0)
    return y


def operands(config: GemmConfig, M: int, N: int, K: int, seed: int = 0, batch: int | None = None):
    """The kernel's arguments (C, and P and P2 where saved, poisoned) and
    NumPy's float32 reference: C's, or with `save_pre` (C's, P's[, P2's])."""
    rng = np.random.default_rng(seed)
    ep, t = config.epilogue, NUMPY_TYPES[config.c_dtype]
    lead = () if batch is None else (batch,)
    kn = config.b_layout == "kn"

    def randn(*shape, dtype=ml_dtypes.bfloat16):
        return rng.standard_normal(shape).astype(dtype)

    f = lambda x: x.astype(np.float32)  # noqa: E731
    A = randn(*lead, M, K, dtype=NUMPY_TYPES[config.a_dtype])
    Bs = [randn(*lead, *((K, N) if kn else (N, K)), dtype=NUMPY_TYPES[config.b_dtype]) for _ in range(1 + ep.gated)]
    products = [f(A) @ (f(B) if kn else np.swapaxes(f(B), -1, -2)) for B in Bs]
    y = products[0]
    args = [A, *Bs]
    if ep.bias:
        bias = randn(N, dtype=t)
        args.append(bias)
        y = y + f(bias)
    pre = y
    y = reference_activation(ep.activation, y)
    if ep.gated:
        y = y * products[1]
    if ep.residual:
        R = randn(*lead, M, N, dtype=t)
        args.append(R)
        y = y + f(R)
    saved = [pre, *products[1:]] if ep.save_pre else []
    outs = [np.full((*lead, M, N), np.nan, t) for _ in range(1 + len(saved))]
    return [*args, *outs, M, N, K], ((y, *saved) if saved else y)


def assert_close(got: np.ndarray, want: np.ndarray, c_dtype: str) -> None:
    got = got.astype(np.float32)
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements of C never written"
    tol = 1e-4 if c_dtype == "f32" else 1.5e-2  # bf16's rounding is 2⁻⁸ of the value
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max()) / 8))


def run(module, config: GemmConfig, M: int, N: int, K: int, seed: int = 0, batch: int | None = None, **kw):
    """(C, want) after running `module`; with `save_pre`, ((C, P[, P2]), (C's, P's[, P2's] want))."""
    args, want = operands(config, M, N, K, seed, batch)
    tawa.interpret(module, config.kernel, gemm_grid(config, M, N, batch), *args, **kw)
    return (tuple(args[-4 - len(want) + 1:-3]) if config.epilogue.save_pre else args[-4]), want


def check_lines(text: str, expected: list[str]) -> None:
    """Each of `expected` occurs in `text`, in this order (FileCheck's CHECK)."""
    at = 0
    for line in expected:
        found = text.find(line, at)
        assert found >= 0, f"expected after offset {at}: {line!r}\n{text}"
        at = found + len(line)


# --------------------------------------------------------------------------- the text


def test_no_epilogue_is_the_plain_program():
    """The default epilogue writes the program as before (the examples, op
    for op: test_autotune_kernels.py), and names it so."""
    config = GemmConfig(128, 128, 64)
    assert config.epilogue == Epilogue() and config.kernel == "gemm" and config.id == "128x128x64"
    text = gemm_source(config)
    assert "Epilogue" not in text and "%Bias" not in text and "%R" not in text and "%B2" not in text


def test_bias_activation_residual_text():
    config = GemmConfig(128, 256, 64, epilogue=Epilogue(bias=True, activation="gelu_tanh", residual=True))
    assert config.kernel == "gemm_bias_gelu_tanh_residual" and config.id == "128x256x64-bias-gelu_tanh-residual"
    check_lines(gemm_source(config), [
        "func.func @gemm_bias_gelu_tanh_residual(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, "
        "%Bias: memref<?xbf16>, %R: memref<?x?xbf16>, %C: memref<?x?xbf16>,",
        "%M: index, %N: index, %K: index) {",
        "// Epilogue: C = gelu_tanh(acc + Bias) + R; Bias a vector of N bf16, R shaped as C.",
        "%acc = scf.for %k = %c0 to %K step %block_k iter_args(%acc_i = %zero)",
        "tile.dot %a, %bt, %acc_i {rhs_transposed}",
        "%bias = tile.load %Bias[%n0] : memref<?xbf16> -> tensor<256xbf16>",
        "%bias_f = arith.extf %bias : tensor<256xbf16> to tensor<256xf32>",
        "tile.expand_dims %bias_f, 0 : tensor<256xf32> -> tensor<1x256xf32>",
        "%bias_t = tile.broadcast %bias_row : tensor<1x256xf32> -> tensor<128x256xf32>",
        "%biased = arith.addf %acc, %bias_t",
        "%gelu_x3 = arith.mulf %gelu_x2, %biased",
        "%act_tanh = math.tanh %act_arg : tensor<128x256xf32>",
        "%act = arith.mulf %biased, %act_gate",
        "%res = tile.load %R[%m0, %n0] : memref<?x?xbf16> -> tensor<128x256xbf16>",
        "%with_res = arith.addf %act, %res_f",
        "%c = arith.truncf %with_res : tensor<128x256xf32> to tensor<128x256xbf16>",
        "tile.store %c, %C[%m0, %n0]",
    ])


@pytest.mark.parametrize("activation, ops", [
    ("relu", ["%relu_zeros = tile.splat %relu_zero", "%act = arith.maximumf %acc, %relu_zeros"]),
    ("silu", ["%act_arg = arith.mulf %acc, %act_half_t", "%act_tanh = math.tanh %act_arg",
              "%act_gate = arith.addf %act_htanh, %act_half_t", "%act = arith.mulf %acc, %act_gate"]),
])
def test_activation_ops(activation, ops):
    """Only ops the lowering has: SiLU is x·(½ + ½·tanh(x/2)), no exp, no division."""
    text = gemm_source(GemmConfig(64, 128, 64, epilogue=Epilogue(activation=activation)))
    check_lines(text, ops)
    assert "math.exp" not in text and "arith.divf" not in text


def test_gated_text():
    config = GemmConfig(128, 128, 64, b_layout="kn", epilogue=Epilogue(activation="silu", gated=True, residual=True))
    assert config.kernel == "gemm_gated_silu_residual"
    check_lines(gemm_source(config), [
        "func.func @gemm_gated_silu_residual(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %B2: memref<?x?xbf16>, "
        "%R: memref<?x?xbf16>, %C: memref<?x?xbf16>,",
        "%acc:2 = scf.for %k = %c0 to %K step %block_k iter_args(%acc_i = %zero, %acc2_i = %zero) "
        "-> (tensor<128x128xf32>, tensor<128x128xf32>) {",
        "%a = tile.load %A[%m0, %k]",
        "%bt = tile.load %B[%k, %n0] : memref<?x?xbf16> -> tensor<64x128xbf16>",
        "%b2t = tile.load %B2[%k, %n0] : memref<?x?xbf16> -> tensor<64x128xbf16>",
        "%d = tile.dot %a, %bt, %acc_i : ",  # B K×N: no rhs_transposed
        "%d2 = tile.dot %a, %b2t, %acc2_i : ",
        "scf.yield %d, %d2 : tensor<128x128xf32>, tensor<128x128xf32>",
        "%act_arg = arith.mulf %acc#0, %act_half_t",
        "%gated = arith.mulf %act, %acc#1",
        "%with_res = arith.addf %gated, %res_f",
    ])


def test_f32_output_reads_f32_operands():
    config = GemmConfig(64, 64, 64, "f16", "f16", "f32", epilogue=Epilogue(bias=True, residual=True))
    text = gemm_source(config)
    check_lines(text, ["%Bias: memref<?xf32>, %R: memref<?x?xf32>, %C: memref<?x?xf32>",
                       "%bias_row = tile.expand_dims %bias, 0", "%with_res = arith.addf %biased, %res",
                       "tile.store %with_res, %C[%m0, %n0] : tensor<64x64xf32>"])
    assert "arith.extf" not in text and "arith.truncf" not in text


def test_batched_epilogue_indices():
    text = gemm_source(GemmConfig(64, 64, 64, batched=True, epilogue=Epilogue(bias=True, residual=True)))
    check_lines(text, ["func.func @batched_gemm_bias_residual(", "%b = tile.program_id 2",
                       "tile.load %Bias[%n0] : memref<?xbf16>", "tile.load %R[%b, %m0, %n0] : memref<?x?x?xbf16>"])


def test_epilogue_rules():
    with pytest.raises(TawaError, match=r"activation='gelu': expected None or one of gelu_tanh, silu, relu"):
        Epilogue(activation="gelu")
    with pytest.raises(TawaError, match="a gated epilogue takes no bias"):
        Epilogue(bias=True, gated=True)
    with pytest.raises(TawaError, match="bias=1: expected a bool"):
        Epilogue(bias=1)
    with pytest.raises(TawaError, match="epilogue='relu': expected a tawa.kernels.gemm.Epilogue"):
        GemmConfig(epilogue="relu")
    config = GemmConfig(64, 256, 64, split_k=2, epilogue=Epilogue(activation="relu"))
    assert "split_k = 2 with an epilogue (relu)" in unsupported(config)
    with pytest.raises(TawaError, match="split_k = 2 with an epilogue"):
        gemm_source(config)
    # A configuration and its choice go through as_dict and back (the autotune cache's form).
    choice = Choice(GemmConfig(128, 128, 64, epilogue=Epilogue(bias=True, activation="silu")))
    assert Choice.from_dict(choice.as_dict()) == choice
    assert choice.config.replace(block_n=64).epilogue == choice.config.epilogue


# --------------------------------------------------------------------------- the interpreter

RAGGED = (100, 72, 136)
"""M, N, K of 64-tiles: two ragged rows and columns of tiles, three K steps, the last ragged."""


@pytest.mark.parametrize("activation", ACTS, ids=str)
@pytest.mark.parametrize("bias, residual", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["plain", "bias", "residual", "bias-residual"])
def test_epilogue_in_the_interpreter(activation, bias, residual, seed):
    config = GemmConfig(64, 64, 64, epilogue=Epilogue(bias=bias, activation=activation, residual=residual))
    C, want = run(gemm_source(config), config, *RAGGED, seed=seed)
    assert_close(C, want, "bf16")


@pytest.mark.parametrize("activation", ACTS, ids=str)
@pytest.mark.parametrize("residual", [False, True], ids=["", "residual"])
def test_gated_in_the_interpreter(activation, residual, seed):
    config = GemmConfig(64, 64, 64, epilogue=Epilogue(activation=activation, residual=residual, gated=True))
    C, want = run(gemm_source(config), config, *RAGGED, seed=seed)
    assert_close(C, want, "bf16")


@pytest.mark.parametrize("config, batch", [
    (GemmConfig(64, 64, 64, "f16", "f16", "f32", epilogue=Epilogue(bias=True, activation="silu", residual=True)), None),
    (GemmConfig(64, 64, 64, "f16", "f16", "f16", epilogue=Epilogue(activation="gelu_tanh", gated=True)), None),
    (GemmConfig(64, 64, 64, b_layout="kn", epilogue=Epilogue(activation="silu", gated=True, residual=True)), None),
    (GemmConfig(64, 64, 64, batched=True, epilogue=Epilogue(bias=True, activation="relu", residual=True)), 2),
], ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_types_layouts_and_batches_in_the_interpreter(config, batch, seed):
    C, want = run(gemm_source(config), config, *RAGGED, seed=seed, batch=batch)
    assert_close(C, want, config.c_dtype)


def test_bias_gelu_is_the_example():
    """The generated bias + GELU program computes examples/gemm_bias_gelu.mlir's bits."""
    config = GemmConfig(128, 256, 64, epilogue=Epilogue(bias=True, activation="gelu_tanh"))
    M, N, K = 150, 300, 72
    got, _ = run(gemm_source(config), config, M, N, K, seed=5)
    args, _ = operands(config, M, N, K, seed=5)
    tawa.interpret((EXAMPLES / "gemm_bias_gelu.mlir").read_text(), "gemm_bias_gelu", gemm_grid(config, M, N), *args)
    np.testing.assert_array_equal(got.view(np.uint16), args[-4].view(np.uint16))


# --------------------------------------------------------------------------- lowered, in the CTA simulator


def lowered(choice: Choice, epilogue: str = "auto"):
    """The choice's program after tawa-hopper-pipeline with its options,
    less the final scf-to-cf conversion (the form the CTA simulator runs)."""
    module = tawa.parse(gemm_source(choice.config))
    ctx = tawa.context()
    HopperPipelinePass.of(prepare=False, **{"epilogue": epilogue, **choice.options}).apply(ctx, module)
    for p in PreparePtxPass.steps()[:-1]:
        p.apply(ctx, module)
    return module


def _slow(choice: Choice, epilogue: str = "auto"):
    return pytest.param(choice, epilogue, marks=pytest.mark.slow)


SIMULATED = [
    (Choice(GemmConfig(128, 128, 64, epilogue=Epilogue(activation="silu", gated=True))), "auto"),
    _slow(Choice(GemmConfig(128, 128, 64, epilogue=Epilogue(bias=True, activation="gelu_tanh", residual=True)))),
    _slow(Choice(GemmConfig(64, 128, 64, epilogue=Epilogue(bias=True, activation="relu", residual=True))), "threads"),
    _slow(Choice(GemmConfig(128, 256, 64, epilogue=Epilogue(activation="silu", residual=True)))),
    _slow(Choice(GemmConfig(128, 128, 64, b_layout="kn",
                            epilogue=Epilogue(activation="gelu_tanh", gated=True, residual=True)))),
    # Warp groups of 128 rows (the cost model's large tile): R and the bias in 128-row fragments.
    _slow(Choice(GemmConfig(256, 128, 64, epilogue=Epilogue(bias=True, activation="silu", residual=True)),
                 group_rows=128)),
]


@pytest.mark.parametrize("choice, epilogue", SIMULATED, ids=lambda v: v.id.replace(" ", "-") if isinstance(v, Choice) else v)
def test_lowered_program_computes_the_tile_program(choice, epilogue, seed):
    """Ragged M, N and K (the TMA-store epilogue clips, the consumers' loads
    of R and the bias are masked at the edges), 3 programs per CTA."""
    config = choice.config
    M, N, K = config.block_m * 2 + 17, config.block_n + 40, 3 * 64 - 24
    want, _ = run(gemm_source(config), config, M, N, K, seed=seed)
    got, _ = run(lowered(choice, epilogue), config, M, N, K, seed=seed, ctas=2)
    assert not np.isnan(got.astype(np.float32)).any(), "elements of C never written"
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.linalg.norm(g - w) / np.linalg.norm(w) < 1e-2


# --------------------------------------------------------------------------- registers and tiles


@pytest.mark.parametrize("config, group_rows", [
    (GemmConfig(128, 256, 64, epilogue=Epilogue(residual=True)), 64),  # 128 + 64 + 26 = 218 ≤ 232
    (GemmConfig(128, 256, 64, epilogue=Epilogue(bias=True, residual=True)), 64),  # + 32 for the bias: 250
    (GemmConfig(128, 256, 64, epilogue=Epilogue(activation="silu", gated=True)), 64),  # 2 x 128 + 26
    (GemmConfig(128, 128, 64, epilogue=Epilogue(activation="silu", gated=True, residual=True)), 64),  # 186
    (GemmConfig(64, 256, 64, epilogue=Epilogue(bias=True, activation="gelu_tanh", residual=True)), 64),  # ≤ 256
    (GemmConfig(192, 192, 64, epilogue=Epilogue(residual=True)), 64),  # 170 > 160 + 8
    (GemmConfig(192, 128, 64, epilogue=Epilogue(activation="silu", gated=True)), 64),  # 154 ≤ 160
    (GemmConfig(256, 128, 64, epilogue=Epilogue(bias=True, residual=True)), 128),  # 234 ≤ 232 + 8
    (GemmConfig(256, 128, 64, epilogue=Epilogue(activation="silu", gated=True)), 128),  # 282
    # A saved pre-activation: its rounded tile is live with the accumulators, not with R or the bias.
    (GemmConfig(128, 256, 64, epilogue=Epilogue(bias=True, activation="gelu_tanh", save_pre=True)), 64),  # 218
    (GemmConfig(192, 192, 64, epilogue=Epilogue(activation="silu", save_pre=True)), 64),  # 170 > 160 + 8
    (GemmConfig(128, 192, 64, epilogue=Epilogue(activation="silu", gated=True, save_pre=True)), 64),  # 266
    (GemmConfig(128, 128, 64, epilogue=Epilogue(activation="silu", gated=True, residual=True, save_pre=True)), 64),
], ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_register_rule_agrees_with_the_compiler(config, group_rows):
    options = Choice(config, group_rows=group_rows).options
    rule, compiler = unsupported(config, group_rows), compiler_rejects(config, options)
    assert (rule is None) == (compiler is None), (rule, compiler)
    if rule is not None:
        assert f"~{consumer_registers(config, group_rows)} registers" in rule and "tawa-check-resources" in compiler


def _base(config, **options):
    return Choice(config, **options)


GATED_SILU = Epilogue(activation="silu", gated=True)
BIAS_RESIDUAL = Epilogue(bias=True, activation="gelu_tanh", residual=True)


@pytest.mark.parametrize("base, epilogue, expected", [
    # The heuristic's choice where the epilogue fits it, options and all.
    (_base(GemmConfig(128, 256, 64), stages=3), Epilogue(activation="silu", residual=True),
     _base(GemmConfig(128, 256, 64, epilogue=Epilogue(activation="silu", residual=True)), stages=3)),
    (_base(GemmConfig(256, 128, 64), group_rows=128), BIAS_RESIDUAL,  # 128 + 64 + 16 + 26 = 234, within the estimate's error
     _base(GemmConfig(256, 128, 64, epilogue=BIAS_RESIDUAL), group_rows=128)),
    (_base(GemmConfig(64, 256, 64, split_k=4)), Epilogue(activation="relu"),  # unsplit: the epilogue needs all of K
     _base(GemmConfig(64, 256, 64, epilogue=Epilogue(activation="relu")))),
    # Else the next tile down that fits, on 64-row warp groups.
    (_base(GemmConfig(128, 256, 64)), Epilogue(bias=True, residual=True),  # ~250 > 232
     _base(GemmConfig(128, 128, 64, epilogue=Epilogue(bias=True, residual=True)))),
    (_base(GemmConfig(128, 256, 64), stages=3), GATED_SILU, _base(GemmConfig(128, 128, 64, epilogue=GATED_SILU))),
    (_base(GemmConfig(256, 128, 64), group_rows=128), GATED_SILU, _base(GemmConfig(128, 128, 64, epilogue=GATED_SILU))),
    (_base(GemmConfig(64, 64, 64)), GATED_SILU, _base(GemmConfig(64, 64, 64, epilogue=GATED_SILU))),
], ids=lambda v: v.id if isinstance(v, Choice) else "-".join(v.parts))
def test_epilogue_choice_walks_down_from_the_heuristic(base, epilogue, expected, monkeypatch):
    import tawa.runtime.autotune as autotune

    monkeypatch.setattr(autotune, "heuristic", lambda problem, sms, transposed, params: base)
    assert epilogue_choice("nk", "bfloat16", 8192, 8192, 8192, epilogue) == expected


@pytest.mark.parametrize("M, N, K", [(8192, 8192, 4096), (1, 4096, 1024), (1000, 4104, 520), (200, 264, 200),
                                     (1, 24, 64)])
@pytest.mark.parametrize("epilogue", [Epilogue(activation="gelu_tanh", residual=True), BIAS_RESIDUAL, GATED_SILU],
                         ids=lambda e: "-".join(e.parts))
def test_epilogue_choice_of_the_heuristic(M, N, K, epilogue):
    """Whatever the heuristic picks, the choice compiles with the epilogue (by
    the rule) and its tile is no larger than the heuristic's."""
    from tawa.runtime.autotune import GemmProblem, heuristic

    base = heuristic(GemmProblem(M, N, K), 132, transposed=False)  # what a fused epilogue takes
    choice = epilogue_choice("nk", "bfloat16", M, N, K, epilogue, sms=132)
    assert choice.config.epilogue == epilogue and choice.config.split_k == 1
    assert unsupported(choice.config, choice.group_rows) is None
    assert choice.config.block_m <= base.config.block_m and choice.config.block_n <= base.config.block_n
    assert choice.config.replace(block_m=base.config.block_m, block_n=base.config.block_n, epilogue=Epilogue(),
                                 split_k=base.config.split_k) == base.config


# --------------------------------------------------------------------------- ptxas


def default_tile_config(bias: bool, activation: str | None, residual: bool, gated: bool) -> Choice:
    """What `tawa.torch` runs for a large problem (8192³) with this epilogue."""
    epilogue = Epilogue(bias=bias, activation=activation, residual=residual, gated=gated)
    return epilogue_choice("nk", "bfloat16", 8192, 8192, 8192, epilogue)


COMBINATIONS = [(b, a, r, False) for a, b, r in itertools.product(ACTS, (False, True), (False, True))]
COMBINATIONS += [(False, a, r, True) for a, r in itertools.product(ACTIVATIONS, (False, True))]
FAST_PTXAS = (True, "gelu_tanh", True, False)
"""The combination the default tier assembles (the most live tiles); the sweep is slow."""


def _ids(c):
    return "-".join(Epilogue(bias=c[0], activation=c[1], residual=c[2], gated=c[3]).parts) or "plain"


def assert_assembles_without_spills(choice: Choice) -> None:
    kernel = choice.compile()
    assert kernel.name == choice.config.kernel and "wgmma.mma_async" in kernel.ptx
    if choice.config.epilogue.activation in ("gelu_tanh", "silu"):
        assert "tanh.approx.f32" in kernel.ptx
    # ... and its thread-epilogue twin (launched for C rows a tensor map cannot hold: N·2 bytes not a multiple of 16).
    for log in (kernel.assemble().log, kernel.fallback().assemble().log):
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
        assert spills and all(s == ("0", "0") for s in spills), log


@needs_ptxas
@pytest.mark.parametrize("combination", [
    pytest.param(c, marks=[] if c == FAST_PTXAS else [pytest.mark.slow]) for c in COMBINATIONS], ids=_ids)
def test_default_tile_assembles_without_spills(combination, tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    assert_assembles_without_spills(default_tile_config(*combination))


@needs_ptxas
@pytest.mark.slow
@pytest.mark.parametrize("activation", ACTS, ids=str)
def test_row_groups_of_128_assemble_without_spills(activation, tmp_path, monkeypatch):
    """256x128 on two warp groups of 128 rows with a bias and a residual:
    ~234 registers by the estimate, 232 by setmaxnreg (within the estimate's error)."""
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    config = GemmConfig(256, 128, 64, epilogue=Epilogue(bias=True, activation=activation, residual=True))
    assert_assembles_without_spills(Choice(config, group_rows=128))


# --------------------------------------------------------------------------- the pre-activation saved

SAVE_PRE = Epilogue(bias=True, activation="gelu_tanh", save_pre=True)


def test_save_pre_text():
    """P is a second output after C; acc + bias is rounded and stored into it
    before the activation's ops."""
    config = GemmConfig(128, 256, 64, epilogue=SAVE_PRE)
    assert config.kernel == "gemm_bias_save_pre_gelu_tanh" and config.id == "128x256x64-bias-save_pre-gelu_tanh"
    text = gemm_source(config)
    check_lines(text, [
        "func.func @gemm_bias_save_pre_gelu_tanh(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, "
        "%Bias: memref<?xbf16>, %C: memref<?x?xbf16>, %P: memref<?x?xbf16>,",
        "%M: index, %N: index, %K: index) {",
        "// Epilogue: C = gelu_tanh(acc + Bias); Bias a vector of N bf16; P = acc + Bias (before the activation), "
        "shaped as C.",
        "%biased = arith.addf %acc, %bias_t",
        "%pre = arith.truncf %biased : tensor<128x256xf32> to tensor<128x256xbf16>",
        "tile.store %pre, %P[%m0, %n0] : tensor<128x256xbf16>, memref<?x?xbf16>",
        "%act_tanh = math.tanh",
        "tile.store %c, %C[%m0, %n0]",
    ])
    f32 = gemm_source(GemmConfig(64, 64, 64, "f16", "f16", "f32",
                                 epilogue=Epilogue(activation="relu", residual=True, save_pre=True)))
    check_lines(f32, ["%R: memref<?x?xf32>, %C: memref<?x?xf32>, %P: memref<?x?xf32>,",
                      "tile.store %acc, %P[%m0, %n0] : tensor<64x64xf32>", "%act = arith.maximumf %acc",
                      "tile.store %with_res, %C[%m0, %n0]"])
    assert "arith.truncf" not in f32


@pytest.mark.parametrize("kwargs", [dict(), dict(bias=True, residual=True)], ids=["plain", "bias-residual"])
def test_save_pre_rules(kwargs):
    with pytest.raises(TawaError, match=r"save_pre needs an activation \(P is acc \+ bias before the activation\)"):
        Epilogue(save_pre=True, **kwargs)
    with pytest.raises(TawaError, match="save_pre=1: expected a bool"):
        Epilogue(activation="relu", save_pre=1)


def test_gated_save_pre_text():
    """Gated: P is the first product and P2 the second, stored before the activation."""
    config = GemmConfig(128, 128, 64, epilogue=Epilogue(activation="silu", gated=True, residual=True, save_pre=True))
    assert config.kernel == "gemm_gated_save_pre_silu_residual"
    check_lines(gemm_source(config), [
        "%R: memref<?x?xbf16>, %C: memref<?x?xbf16>, %P: memref<?x?xbf16>, %P2: memref<?x?xbf16>,",
        "P = acc, P2 = acc2 (before the activation), shaped as C.",
        "%pre = arith.truncf %acc#0", "tile.store %pre, %P[%m0, %n0]",
        "%pre2 = arith.truncf %acc#1", "tile.store %pre2, %P2[%m0, %n0]",
        "%act_arg = arith.mulf %acc#0", "%gated = arith.mulf %act, %acc#1", "tile.store %c, %C[%m0, %n0]",
    ])


def test_save_pre_register_rule():
    """The rounded P tile is live with the accumulators (gated: both): at
    128x192 two 96-register accumulators and a 48-register P need ~266."""
    config = GemmConfig(128, 192, 64, epilogue=Epilogue(activation="silu", gated=True, save_pre=True))
    assert consumer_registers(config) == 2 * 96 + 48 + 26
    assert "two accumulators and a saved pre-activation tile need ~266 registers" in unsupported(config)
    # Not on top of a residual tile (loaded after P's store) nor of a bias.
    plain = Epilogue(bias=True, activation="silu", residual=True)
    assert consumer_registers(GemmConfig(128, 128, 64, epilogue=plain)) == \
        consumer_registers(GemmConfig(128, 128, 64, epilogue=Epilogue(**{**plain.__dict__, "save_pre": True})))


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias, residual", [(False, False), (True, True)], ids=["plain", "bias-residual"])
def test_save_pre_in_the_interpreter(activation, bias, residual, seed):
    config = GemmConfig(64, 64, 64, epilogue=Epilogue(bias=bias, activation=activation, residual=residual,
                                                      save_pre=True))
    (C, P), (want, want_pre) = run(gemm_source(config), config, *RAGGED, seed=seed)
    assert_close(C, want, "bf16")
    assert_close(P, want_pre, "bf16")


@pytest.mark.parametrize("config, batch", [
    (GemmConfig(64, 64, 64, "f16", "f16", "f32", epilogue=Epilogue(bias=True, activation="silu", save_pre=True)), None),
    (GemmConfig(64, 64, 64, b_layout="kn", batched=True,
                epilogue=Epilogue(bias=True, activation="gelu_tanh", residual=True, save_pre=True)), 2),
    (GemmConfig(64, 64, 64, epilogue=Epilogue(activation="silu", gated=True, residual=True, save_pre=True)), None),
    (GemmConfig(64, 64, 64, "f16", "f16", "f32", epilogue=Epilogue(activation="gelu_tanh", gated=True,
                                                                   save_pre=True)), None),
], ids=lambda v: v.id if isinstance(v, GemmConfig) else str(v))
def test_save_pre_types_and_batches_in_the_interpreter(config, batch, seed):
    got, want = run(gemm_source(config), config, *RAGGED, seed=seed, batch=batch)
    assert len(got) == len(want) == 2 + config.epilogue.gated
    for g, w in zip(got, want):
        assert_close(g, w, config.c_dtype)


SAVE_PRE_SIMULATED = [
    (Choice(GemmConfig(128, 128, 64, epilogue=SAVE_PRE)), "auto"),
    _slow(Choice(GemmConfig(64, 128, 64, epilogue=Epilogue(bias=True, activation="relu", residual=True,
                                                           save_pre=True))), "threads"),
    _slow(Choice(GemmConfig(128, 256, 64, epilogue=Epilogue(bias=True, activation="silu", residual=True,
                                                            save_pre=True)))),
    _slow(Choice(GemmConfig(128, 128, 64, epilogue=Epilogue(activation="silu", gated=True, save_pre=True))), "auto"),
    _slow(Choice(GemmConfig(64, 128, 64, b_layout="kn", epilogue=Epilogue(activation="gelu_tanh", gated=True,
                                                                          residual=True, save_pre=True))), "threads"),
]


@pytest.mark.parametrize("choice, epilogue", SAVE_PRE_SIMULATED,
                         ids=lambda v: v.id.replace(" ", "-") if isinstance(v, Choice) else v)
def test_lowered_save_pre_computes_the_tile_program(choice, epilogue, seed):
    """The consumers' stores (P, P2 when gated, then C) lowered, on ragged
    M, N, K, 3 programs per CTA: every output as the tile program's."""
    config = choice.config
    M, N, K = config.block_m * 2 + 17, config.block_n + 40, 3 * 64 - 24
    want, _ = run(gemm_source(config), config, M, N, K, seed=seed)
    got, _ = run(lowered(choice, epilogue), config, M, N, K, seed=seed, ctas=2)
    assert len(got) == 2 + config.epilogue.gated
    for name, g, w in zip(("C", "P", "P2"), got, want):
        assert not np.isnan(g.astype(np.float32)).any(), f"elements of {name} never written"
        g, w = g.astype(np.float64), w.astype(np.float64)
        assert np.linalg.norm(g - w) / np.linalg.norm(w) < 1e-2, name


GATED_SAVE_PRE = Epilogue(activation="gelu_tanh", gated=True, save_pre=True)
"""A gated MLP's training forward that runs the saving kernel (silu's runs two
matmuls and the swiglu kernel instead)."""
MODEL_MLPS = (("gpt2", 1024, 4096), ("gpt2", 2048, 8192), ("llama", 4096, 14336))
"""(family, width, hidden) of tawa.bench's models' MLPs (tawa.bench.model_nets.MODELS, which needs torch)."""


def model_save_pre_choices() -> list[Choice]:
    """The distinct choices `tawa.torch.linear` and `gated_mlp` make for the
    training forward of MLPs of tawa.bench's models' sizes, 128 to 16384
    tokens: GPT-2's x·W_fcᵀ + b_fc with GELU at widths 1024 and 2048
    (N = 4·width), a gated MLP at Llama's width 4096 (N = 14336)."""
    choices = {}
    for family, width, hidden in MODEL_MLPS:
        epilogue = SAVE_PRE if family == "gpt2" else GATED_SAVE_PRE
        for tokens in (128, 256, 512, 1024, 2048, 4096, 8192, 16384):
            choices.setdefault(epilogue_choice("nk", "bfloat16", tokens, hidden, width, epilogue), None)
    return list(choices)


def test_model_save_pre_choices():
    """Tiles of one or two warp groups' rows, columns cut to the problem
    (gated: at most 128 columns, where the saved products fit): what the
    slow ptxas sweep assembles."""
    tiles = sorted((c.config.epilogue.gated, c.config.tile) for c in model_save_pre_choices())
    assert (False, (128, 256, 64)) in tiles and (True, (128, 128, 64)) in tiles
    assert all(t[1] <= 128 for g, t in tiles if g)
    assert all(t[0] in (64, 128) and t[1] % 16 == 0 for _, t in tiles) and len(tiles) >= 4


@needs_ptxas
def test_save_pre_default_tile_assembles_without_spills(tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    choice = epilogue_choice("nk", "bfloat16", 8192, 4096, 1024, SAVE_PRE)
    assert choice.config.tile == (128, 256, 64)
    assert_assembles_without_spills(choice)
    # Two TMA stores of 64-column boxes per warp group's 64 rows: C's and P's.
    assert choice.compile().ptx.count("cp.async.bulk.tensor.2d.global.shared") == 8


@needs_ptxas
@pytest.mark.slow
def test_model_save_pre_choices_assemble_without_spills(tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    for choice in model_save_pre_choices():
        assert_assembles_without_spills(choice)


@needs_ptxas
@pytest.mark.slow
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias, residual", [(False, False), (True, True)], ids=["plain", "bias-residual"])
def test_save_pre_combinations_assemble_without_spills(activation, bias, residual, tmp_path, monkeypatch):
    """The tiles `linear_kernel` takes (`spill_free`: past a first choice that the register
    estimate accepts and ptxas spills, as 128x224 with a bias, a residual and P at 8192³)."""
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    for epilogue in (Epilogue(bias=bias, activation=activation, residual=residual, save_pre=True),
                     Epilogue(activation=activation, residual=residual, gated=True, save_pre=True)):
        choices = epilogue_choices("nk", "bfloat16", 8192, 8192, 8192, epilogue)
        choice, _ = spill_free(choices)
        assert choice in choices
        assert_assembles_without_spills(choice)
