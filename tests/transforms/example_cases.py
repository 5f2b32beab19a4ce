"""Arguments for every example kernel at small, ragged sizes whose ring loop
runs a chosen number of times (shared by the differential tests).

`case(kernel, trips, rng)` gives the arguments (outputs poisoned with NaN),
the logical grid and the indices of the output arguments.  Sizes: two or
three programs (so that persistent kernels on 2 CTAs run several programs
per CTA), ragged rows and columns, and a K (or key) loop of exactly `trips`
iterations whose last step is ragged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BF16 = ml_dtypes.bfloat16
F8 = ml_dtypes.float8_e4m3fn


@dataclass(frozen=True)
class Case:
    args: list[Any]
    grid: tuple[int, ...]
    outputs: tuple[int, ...]
    read_too: tuple[int, ...] = ()
    """Outputs the kernel also reads (C of C = αAB + βC): fresh copies of
    their initial values instead of poison."""


def _ragged(trips: int, step: int) -> int:
    """A length that takes exactly `trips` steps of `step`, the last short."""
    return 0 if trips == 0 else step * trips - step // 3


def _randn(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _poison(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return np.full(shape, np.nan, dtype=dtype)


def _gemm(dtype: Any, step: int, b_rows_k: bool = False) -> Callable[[int, np.random.Generator], Case]:
    def make(trips: int, rng: np.random.Generator) -> Case:
        m, n, k = 260, 100, _ragged(trips, step)
        a = _randn(rng, (m, k), dtype)
        b = _randn(rng, (k, n) if b_rows_k else (n, k), dtype)
        return Case([a, b, _poison((m, n), BF16), m, n, k], (3, 1), (2,))

    return make


def _scale_relu(trips: int, rng: np.random.Generator) -> Case:
    c = _gemm(BF16, 64)(trips, rng)
    return Case([*c.args, np.float32(0.5)], c.grid, c.outputs)


def _bias_gelu(trips: int, rng: np.random.Generator) -> Case:
    a, b, c, m, n, k = _gemm(BF16, 64)(trips, rng).args
    return Case([a, b, _randn(rng, (n,), BF16), c, m, n, k], (3, 1), (3,))


def _alpha_beta(trips: int, rng: np.random.Generator) -> Case:
    a, b, _, m, n, k = _gemm(BF16, 64)(trips, rng).args
    c = _randn(rng, (m, n), BF16)  # read (β·C) and written: not poisoned
    return Case([a, b, c, m, n, k, np.float32(0.75), np.float32(-0.5)], (3, 1), (2,), read_too=(2,))


def _fp8_scaled(trips: int, rng: np.random.Generator) -> Case:
    a, b, c, m, n, k = _gemm(F8, 128)(trips, rng).args
    sa, sb = rng.random(m).astype(np.float32) + 0.5, rng.random(n).astype(np.float32) + 0.5
    return Case([a, b, sa, sb, c, m, n, k], (3, 1), (4,))


def _a_prologue(trips: int, rng: np.random.Generator) -> Case:
    a, b, c, m, n, k = _gemm(BF16, 64)(trips, rng).args
    return Case([a.astype(np.float16), b, c, m, n, k, np.float32(0.5)], (3, 1), (2,))


def _batched(trips: int, rng: np.random.Generator) -> Case:
    m, n, k = 130, 100, _ragged(trips, 64)
    a, b = _randn(rng, (2, m, k), BF16), _randn(rng, (2, n, k), BF16)
    return Case([a, b, _poison((2, m, n), BF16), m, n, k], (2, 1, 2), (2,))


def _attention_bias(trips: int, rng: np.random.Generator) -> Case:
    c = _attention((np.float32(0.088),))(trips, rng)
    q, k, v, o, seq, scale = c.args
    bias = _randn(rng, (2, seq, seq), BF16)
    return Case([q, k, v, bias, o, seq, scale], c.grid, (4,))


def _softmax(trips: int, rng: np.random.Generator) -> Case:
    m, k = 260, _ragged(trips, 64)
    a, b = _randn(rng, (m, k), BF16), _randn(rng, (256, k), BF16)
    return Case([a, b, _poison((m, 256), BF16), m, k, np.float32(0.3)], (3,), (2,))


def _attention(extra: tuple[Any, ...], head_dim: int = 128, rows: int = 128) -> Callable[[int, np.random.Generator], Case]:
    # `trips` key blocks of 128 (the last one ragged); programs of `rows` query rows.
    def make(trips: int, rng: np.random.Generator) -> Case:
        seq = max(_ragged(trips, 128), 1) if extra else _ragged(trips, 128)
        q, k, v = (_randn(rng, (2, seq, head_dim), BF16) for _ in range(3))
        o = _poison((2, seq, head_dim), BF16)
        return Case([q, k, v, o, seq, *extra], (max(-(-seq // rows), 1), 2), (3,))

    return make


def _gqa_attention(scale: float, head_dim: int = 128, rows: int = 128) -> Callable[[int, np.random.Generator], Case]:
    # The 4-D kernels: q, o [1, 2, seq, D], k, v [1, 1, seq, D] (two query heads
    # share one key/value head); `trips` key blocks of 128, programs of `rows` rows.
    def make(trips: int, rng: np.random.Generator) -> Case:
        seq = max(_ragged(trips, 128), 1)
        q = _randn(rng, (1, 2, seq, head_dim), BF16)
        k, v = (_randn(rng, (1, 1, seq, head_dim), BF16) for _ in range(2))
        o = _poison(q.shape, BF16)
        return Case([q, k, v, o, seq, seq, np.float32(scale), 2], (-(-seq // rows), 2, 1), (3,))

    return make


CASES: dict[str, tuple[str, Callable[[int, np.random.Generator], Case]]] = {
    "gemm": ("gemm.mlir", _gemm(BF16, 64)),
    "matmul": ("matmul.mlir", _gemm(BF16, 64, b_rows_k=True)),
    "gemm_fp8": ("gemm_fp8.mlir", _gemm(F8, 128)),
    "gemm_scale_relu": ("gemm_scale_relu.mlir", _scale_relu),
    "gemm_bias_gelu": ("gemm_bias_gelu.mlir", _bias_gelu),
    "gemm_alpha_beta": ("gemm_alpha_beta.mlir", _alpha_beta),
    "gemm_fp8_scaled": ("gemm_fp8_scaled.mlir", _fp8_scaled),
    "batched_gemm": ("batched_gemm.mlir", _batched),
    "gemm_a_prologue": ("gemm_a_prologue.mlir", _a_prologue),
    "gemm_softmax": ("gemm_softmax.mlir", _softmax),
    "gemm_chain": ("gemm_chain.mlir", _attention(())),
    "attention_fwd": ("attention_fwd.mlir", _gqa_attention(0.088)),
    "attention_fwd_causal": ("attention_fwd.mlir", _gqa_attention(0.088)),
    "attention_fwd_d64": ("attention_fwd_d64.mlir", _gqa_attention(0.125, 64, 192)),
    "attention_fwd_d64_m128": ("attention_fwd_d64.mlir", _gqa_attention(0.125, 64)),
    "attention_fwd_d64_causal": ("attention_fwd_d64.mlir", _gqa_attention(0.125, 64)),
    "attention_fwd_bias": ("attention_fwd_bias.mlir", _attention_bias),
    "attention_fwd_d256": ("attention_fwd_d256.mlir", _gqa_attention(0.0625, 256)),
}
"""kernel → (example file, case builder)."""


def case(kernel: str, trips: int, rng: np.random.Generator) -> Case:
    return CASES[kernel][1](trips, rng)


def fresh_outputs(c: Case) -> list[Any]:
    """The case's arguments with new poisoned output arrays."""
    args = list(c.args)
    for i in c.outputs:
        args[i] = args[i].copy() if i in c.read_too else _poison(args[i].shape, args[i].dtype)
    return args


def simulated(kernel: str, module: Any, trips: int, seed: int, schedule: Any = None) -> list[np.ndarray]:
    """The outputs of `kernel` (poisoned first) after the CTA simulator runs
    it from `module` (a lowered module; or the tile program, with no
    `schedule`) on the kernel's case for `trips` and `seed`."""
    import tawa

    c = case(kernel, trips, np.random.default_rng(seed))
    args = fresh_outputs(c)
    tawa.interpret(module, kernel, c.grid, *args, **({} if schedule is None else {"schedule": schedule}))
    return [args[i] for i in c.outputs]


def assert_same_bits_as(kernel: str, got: list[np.ndarray], plain: list[np.ndarray], trips: int, seed: int) -> None:
    """`got` is fully written, equal bit for bit to `plain`, and within 1e-2
    (relative) of what the tile program computes on the same case."""
    import tawa

    want = simulated(kernel, tawa.parse((EXAMPLES / CASES[kernel][0]).read_text()), trips, seed)
    for g, p, w in zip(got, plain, want, strict=True):
        assert not np.isnan(g.astype(np.float32)).any(), f"{kernel}: output elements never written"
        np.testing.assert_array_equal(g.view(np.uint16), p.view(np.uint16))
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        assert np.linalg.norm(g64 - w64) / np.linalg.norm(w64) < 1e-2


def lowered_gemm(source: str | None = None, **options: Any) -> Any:
    """examples/gemm.mlir (or the tile program `source`) through
    `tawa-hopper-pipeline{options}` (persistent) to the last structured IR,
    the form the CTA simulator runs."""
    import tawa
    from tawa.transforms.hopper_pipeline import HopperPipelinePass
    from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

    pipeline = HopperPipelinePass.of(prepare=False, **options)
    if source is None:
        module = tawa.parse((EXAMPLES / "gemm.mlir").read_text(), "examples/gemm.mlir")
    else:
        module = tawa.parse(source, "gemm.mlir")
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for p in [*pipeline.planned_steps(module), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    return module


def simulate_gemm(module: Any, m: int, n: int, k: int, schedule: Any, ctas: int | None = None,
                  seed: int = 0, tile: tuple[int, int] = (128, 256)) -> tuple[np.ndarray, np.ndarray]:
    """(C from the CTA simulator running @gemm of `module` on `tile`-sized
    tiles, NumPy's A·Bᵀ in f32) for fresh inputs of `seed`; C starts as NaN,
    so an element no CTA writes stays NaN."""
    import tawa

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(BF16)
    b = rng.standard_normal((n, k)).astype(BF16)
    c = np.full((m, n), np.nan, BF16)
    grid = (-(-m // tile[0]), -(-n // tile[1]))
    tawa.interpret(module, "gemm", grid, a, b, c, m, n, k, schedule=schedule, ctas=ctas)
    return c, a.astype(np.float32) @ b.astype(np.float32).T

