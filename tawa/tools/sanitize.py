"""Every example kernel under NVIDIA's compute-sanitizer (memcheck, racecheck,
synccheck, initcheck): `python -m tawa.tools.sanitize [--tool T ...] [--example E ...]`.

For each tool, one process runs `compute-sanitizer --tool T python -m
tawa.tools.sanitize --child E ...` (the tools run in parallel, one process
each).  The child compiles each example kernel with `tawa.compile`, builds
its inputs on the host (NumPy, `ml_dtypes` for bf16 and fp8) and copies them
to the GPU with CuPy (no other GPU kernel runs, so every report is about
tawa's kernel; CuPy's memory pool is off so that memcheck sees each array's
own bounds), launches the kernel twice on NaN-poisoned outputs, and checks
the result against a float32 NumPy reference.  Shapes are small and ragged:
no dimension is a multiple of its tile, at least 2 programs, and at least
2D+1 iterations of the main loop for a ring of depth D (the ring wraps
twice), so that memcheck sees the TMA edge boxes and racecheck / synccheck
see every slot reused.

The parent parses the sanitizer's output: the authoritative `ERROR SUMMARY:
N errors` line of each tool, and the report lines between the child's
`SANITIZE-BEGIN` / `SANITIZE-END` markers to say which example they belong to.
API errors are left to the child (`--report-api-errors no`: CuPy probes the
driver with calls that may fail harmlessly), which fails on any CUDA error.

Exit status 0 when every tool reports 0 errors and every example ran and
matched its reference.  `tests/runtime/test_sanitizers_gpu.py` asserts the
same per tool and example.  docs/testing.md, section Sanitizers.
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tawa.bench.attention import FP8_TOLERANCE
from tawa.kernels.gemm import GemmConfig, gemm_source
from tawa.runtime.autotune import Choice

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
TOLERANCE = 2e-2
BEGIN, END = "SANITIZE-BEGIN", "SANITIZE-END"
_NOT_A_REPORT = re.compile(r"^========= (COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY)")
_REPORT = re.compile(r"^========= \S")
_SUMMARY = re.compile(
    r"^========= (?:ERROR SUMMARY: (\d+) errors?|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?)", re.M
)
"""racecheck prints its own summary line instead of ERROR SUMMARY (seen on
the H100 here: `RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)`)."""


# --------------------------------------------------------------------------- the examples


@dataclass(frozen=True)
class Case:
    """One example kernel at small ragged shapes."""

    name: str
    file: str
    kernel: str
    stages: int
    inputs: Callable[[np.random.Generator], tuple[list[Any], tuple[int, ...], Callable[[list[Any]], float]]]
    """(host arguments, logical grid, rel. error of the outputs) from a generator.
    Host arrays are NumPy (bf16 / fp8 through ml_dtypes); the last array is the output."""
    config: GemmConfig | None = None
    """A GEMM configuration's program (`tawa.kernels.gemm_source`) instead of
    the example file, compiled as the configurations are (`Choice.options`:
    the deepest ring up to `GEMM_MAX_STAGES`)."""
    pipeline: tuple[tuple[str, Any], ...] = ()
    """More `tawa-hopper-pipeline` options (`(("cluster", 2),)`)."""
    tolerance: float = TOLERANCE
    """Relative error allowed (fp8 attention rounds P to e4m3: `FP8_TOLERANCE`)."""

    def text(self) -> str:
        return gemm_source(self.config) if self.config else (EXAMPLES_DIR / self.file).read_text()

    def options(self) -> dict[str, Any]:
        options = Choice(self.config).options if self.config else {"stages": self.stages}
        return {**options, **dict(self.pipeline)}


def _bf16(a: np.ndarray) -> np.ndarray:
    import ml_dtypes

    return a.astype(ml_dtypes.bfloat16)


def _f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float32)


def _rel(out: np.ndarray, ref: np.ndarray) -> float:
    out = _f32(out)
    if not np.isfinite(out).all():
        return math.inf
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def _nan(shape: tuple[int, ...]) -> np.ndarray:
    return _bf16(np.full(shape, np.nan, np.float32))


def _gemm(transposed_b: bool = True, fp8: bool = False, relu_alpha: float | None = None,
          tile: tuple[int, int] = (128, 256), depth: int = 4, m_tiles: int = 2, n_tiles: int = 1):
    # m_tiles programs along M (the last with 2 rows), n_tiles along N (the last ragged:
    # BLOCK_N - 56 columns, 200 of 256), and 2D+1 k-tiles for a ring of depth D, the last one partial.
    M, N = tile[0] * (m_tiles - 1) + 2, tile[1] * n_tiles - 56
    K = 2 * depth * 128 + 16 if fp8 else 2 * depth * 64 + 40

    def make(rng: np.random.Generator):
        a = rng.standard_normal((M, K), np.float32)
        b = rng.standard_normal((N, K) if transposed_b else (K, N), np.float32)
        if fp8:
            import ml_dtypes

            a, b = a.astype(ml_dtypes.float8_e4m3fn), b.astype(ml_dtypes.float8_e4m3fn)
        else:
            a, b = _bf16(a), _bf16(b)
        ref = _f32(a) @ (_f32(b).T if transposed_b else _f32(b))
        args: list[Any] = [a, b, _nan((M, N)), M, N, K]
        if relu_alpha is not None:
            args.append(relu_alpha)
            ref = np.maximum(relu_alpha * ref, 0)
        return args, (math.ceil(M / tile[0]), math.ceil(N / tile[1])), lambda out: _rel(out[2], ref)

    return make


def _epilogue(kind: str):
    """The GEMMs with consumer-side operands, on the shapes of `_gemm`."""
    M, N = 130, 200
    K = 8 * 128 + 16 if kind == "fp8_scaled" else 8 * 64 + 40

    def make(rng: np.random.Generator):
        a = rng.standard_normal((M, K), np.float32)
        b = rng.standard_normal((N, K), np.float32)
        if kind == "fp8_scaled":
            import ml_dtypes

            a, b = a.astype(ml_dtypes.float8_e4m3fn), b.astype(ml_dtypes.float8_e4m3fn)
        else:
            a, b = _bf16(a), _bf16(b)
        acc = _f32(a) @ _f32(b).T
        grid = (math.ceil(M / 128), math.ceil(N / 256))
        if kind == "bias_gelu":
            bias = _bf16(rng.standard_normal(N, np.float32))
            x = acc + _f32(bias)
            ref = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
            return [a, b, bias, _nan((M, N)), M, N, K], grid, lambda out: _rel(out[3], ref)
        if kind == "alpha_beta":
            c = _bf16(rng.standard_normal((M, N), np.float32))
            ref = 0.75 * acc - 0.5 * _f32(c)
            return [a, b, c, M, N, K, 0.75, -0.5], grid, lambda out: _rel(out[2], ref)
        sa = rng.random(M).astype(np.float32) + 0.5
        sb = rng.random(N).astype(np.float32) + 0.5
        ref = sa[:, None] * sb[None, :] * acc
        return [a, b, sa, sb, _nan((M, N)), M, N, K], grid, lambda out: _rel(out[4], ref)

    return make


def _a_prologue(rng: np.random.Generator):
    """f16 A scaled and rounded to bf16 in registers, bf16 B (RS wgmma)."""
    M, N, K = 130, 200, 8 * 64 + 40
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = _bf16(rng.standard_normal((N, K), np.float32))
    ref = _f32(_bf16(0.5 * a.astype(np.float32))) @ _f32(b).T
    return [a, b, _nan((M, N)), M, N, K, 0.5], (math.ceil(M / 128), math.ceil(N / 256)), lambda out: _rel(out[2], ref)


def _tf32(rng: np.random.Generator):
    """f32 operands (tf32 wgmma: the low 13 mantissa bits are dropped) and
    an f32 C, on the shapes of `_gemm` with K in 32-wide steps."""
    M, N, K = 130, 200, 8 * 32 + 8
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    ref = a @ b.T
    c = np.full((M, N), np.nan, np.float32)
    return [a, b, c, M, N, K], (math.ceil(M / 128), math.ceil(N / 256)), lambda out: _rel(out[2], ref)


def _batched(rng: np.random.Generator):
    """Two batches of the `_gemm` shapes: a 3-D grid."""
    M, N, K = 130, 200, 8 * 64 + 40
    a = _bf16(rng.standard_normal((2, M, K), np.float32))
    b = _bf16(rng.standard_normal((2, N, K), np.float32))
    ref = np.einsum("bmk,bnk->bmn", _f32(a), _f32(b))
    grid = (math.ceil(M / 128), math.ceil(N / 256), 2)
    return [a, b, _nan((2, M, N)), M, N, K], grid, lambda out: _rel(out[2], ref)


def _softmax(rng: np.random.Generator):
    M, K, s = 130, 8 * 64 + 40, 0.05
    a, b = _bf16(rng.standard_normal((M, K), np.float32)), _bf16(rng.standard_normal((256, K), np.float32))
    x = s * (_f32(a) @ _f32(b).T)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    return [a, b, _nan((M, 256)), M, K, s * math.log2(math.e)], (math.ceil(M / 128),), lambda out: _rel(out[2], ref)


def _fp8_attention(causal: bool):
    """examples/attention_fwd_fp8.mlir on `_per_key_block`'s 520 keys: e4m3
    Q, K and Vᵀ (rows padded to 528 keys with zeros: 16-byte TMA strides)."""
    import ml_dtypes

    S, D, padded = 4 * 128 + 8, 128, 4 * 128 + 16

    def make(rng: np.random.Generator):
        q, k, v = (rng.standard_normal((1, S, D), np.float32).astype(ml_dtypes.float8_e4m3fn) for _ in range(3))
        vt = np.zeros((1, D, padded), ml_dtypes.float8_e4m3fn)
        vt[:, :, :S] = np.swapaxes(v, 1, 2)
        scale, v_scale = 1 / math.sqrt(D), 0.75
        s = np.einsum("bqd,bkd->bqk", _f32(q), _f32(k)) * scale
        if causal:
            s = np.where(np.triu(np.ones((S, S), bool), 1), -np.inf, s)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        ref = v_scale * np.einsum("bqk,bkd->bqd", p / p.sum(axis=-1, keepdims=True), _f32(v))
        args = [q, k, vt, _nan((1, S, D)), S, scale, v_scale]
        return args, (math.ceil(S / 128), 1), lambda out: _rel(out[3], ref)

    return make


def _per_key_block(kind: str, D: int = 128, rows: int = 128):
    # 2D+1 = 5 key blocks of 128 for D = 2, the last one partial (520 keys):
    # ⌈520 / rows⌉ programs of `rows` query rows along the sequence (the last
    # one partial).  gemm_chain and the bias kernel: one head ([1, S, D]); the
    # attention kernels: two query heads on one key/value head ([1, H, S, D]).
    S = 4 * 128 + 8
    if kind in ("chain", "bias"):
        return _per_key_block_3d(kind, S, D, rows)

    def make(rng: np.random.Generator):
        q = _bf16(rng.standard_normal((1, 2, S, D), np.float32))
        k, v = (_bf16(rng.standard_normal((1, 1, S, D), np.float32)) for _ in range(2))
        scale = 1 / math.sqrt(D)
        s = np.einsum("bhqd,bkd->bhqk", _f32(q), _f32(k)[:, 0]) * scale
        if kind == "causal":
            s = np.where(np.triu(np.ones((S, S), bool), 1), -np.inf, s)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        ref = np.einsum("bhqk,bkd->bhqd", p / p.sum(axis=-1, keepdims=True), _f32(v)[:, 0])
        args: list[Any] = [q, k, v, _nan((1, 2, S, D)), S, S, scale, 2]
        return args, (math.ceil(S / rows), 2, 1), lambda out: _rel(out[3], ref)

    return make


def _per_key_block_3d(kind: str, S: int, D: int, rows: int):
    def make(rng: np.random.Generator):
        q, k, v = (_bf16(rng.standard_normal((1, S, D), np.float32)) for _ in range(3))
        qf, kf, vf = _f32(q), _f32(k), _f32(v)
        s = np.einsum("bqd,bkd->bqk", qf, kf)
        if kind == "chain":
            ref = np.einsum("bqk,bkd->bqd", _f32(_bf16(s)), vf)
            return [q, k, v, _nan((1, S, D)), S], (math.ceil(S / rows), 1), lambda out: _rel(out[3], ref)
        bias = _bf16(rng.standard_normal((1, S, S), np.float32))
        scale = 1 / math.sqrt(D)
        s = s * scale + _f32(bias)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        ref = np.einsum("bqk,bkd->bqd", p / p.sum(axis=-1, keepdims=True), vf)
        args = [q, k, v, bias, _nan((1, S, D)), S, scale]
        return args, (math.ceil(S / rows), 1), lambda out: _rel(out[4], ref)

    return make


CASES = {
    c.name: c
    for c in (
        Case("matmul", "matmul.mlir", "matmul", 4, _gemm(transposed_b=False)),
        Case("gemm", "gemm.mlir", "gemm", 4, _gemm()),
        # The GEMM configurations' deep rings (runtime.autotune.GEMM_MAX_STAGES): 6 and 8 stages.
        Case("gemm_128x128_deep", "gemm_source(128x128x64)", "gemm", 0, _gemm(tile=(128, 128), depth=6),
             GemmConfig(128, 128, 64)),
        Case("gemm_64x128_deep", "gemm_source(64x128x64)", "gemm", 0, _gemm(tile=(64, 128), depth=8),
             GemmConfig(64, 128, 64)),
        # 2-CTA clusters multicasting B (tawa-cluster), 3 row tiles: the second cluster's
        # second CTA runs the last row tile again.
        Case("gemm_cluster2", "gemm.mlir", "gemm", 4, _gemm(m_tiles=3), pipeline=(("cluster", 2),)),
        # Deferred stores (tawa-defer-stores), 12 x 12 = 144 programs: more than the SMs, so
        # some CTAs carry a tile into their second program; three store sites, one staging buffer.
        Case("gemm_defer_stores", "gemm.mlir", "gemm", 4, _gemm(m_tiles=12, n_tiles=12),
             pipeline=(("defer_stores", True),)),
        # Warp groups that own 128 rows (one wgmma per 64-row block): the 256x128 tile on two,
        # as Choice(group_rows=128) compiles it.
        Case("gemm_group_rows", "gemm_source(256x128x64)", "gemm", 0, _gemm(tile=(256, 128), n_tiles=2),
             GemmConfig(256, 128, 64), pipeline=(("consumer_warps", 8), ("staging", "single"))),
        Case("gemm_fp8", "gemm_fp8.mlir", "gemm_fp8", 4, _gemm(fp8=True)),
        Case("gemm_chain", "gemm_chain.mlir", "gemm_chain", 2, _per_key_block("chain")),
        Case("gemm_scale_relu", "gemm_scale_relu.mlir", "gemm_scale_relu", 4, _gemm(relu_alpha=-0.37)),
        Case("gemm_bias_gelu", "gemm_bias_gelu.mlir", "gemm_bias_gelu", 4, _epilogue("bias_gelu")),
        Case("gemm_alpha_beta", "gemm_alpha_beta.mlir", "gemm_alpha_beta", 4, _epilogue("alpha_beta")),
        Case("gemm_fp8_scaled", "gemm_fp8_scaled.mlir", "gemm_fp8_scaled", 4, _epilogue("fp8_scaled")),
        Case("batched_gemm", "batched_gemm.mlir", "batched_gemm", 4, _batched),
        Case("gemm_tf32", "gemm_tf32.mlir", "gemm_tf32", 4, _tf32),
        Case("gemm_a_prologue", "gemm_a_prologue.mlir", "gemm_a_prologue", 4, _a_prologue),
        Case("gemm_softmax", "gemm_softmax.mlir", "gemm_softmax", 4, _softmax),
        Case("attention_fwd", "attention_fwd.mlir", "attention_fwd", 2, _per_key_block("plain")),
        Case("attention_fwd_causal", "attention_fwd.mlir", "attention_fwd_causal", 2, _per_key_block("causal")),
        Case("attention_fwd_d64", "attention_fwd_d64.mlir", "attention_fwd_d64", 2, _per_key_block("plain", 64, 192)),
        Case("attention_fwd_d64_m128", "attention_fwd_d64.mlir", "attention_fwd_d64_m128", 2,
             _per_key_block("plain", 64)),
        Case("attention_fwd_bias", "attention_fwd_bias.mlir", "attention_fwd_bias", 2, _per_key_block("bias")),
        Case("attention_fwd_d256", "attention_fwd_d256.mlir", "attention_fwd_d256", 2, _per_key_block("plain", 256)),
        Case("attention_fwd_d256_causal", "attention_fwd_d256.mlir", "attention_fwd_d256_causal", 2,
             _per_key_block("causal", 256)),
        # Variants the attention cost model chooses (tawa.analysis.attention_cost.VARIANTS): Q released right after the key loop.
        Case("attention_fwd_d256_early_release", "attention_fwd_d256.mlir", "attention_fwd_d256", 2,
             _per_key_block("plain", 256), pipeline=(("early_release", "all"),)),
        Case("attention_fwd_d256_causal_early_release", "attention_fwd_d256.mlir", "attention_fwd_d256_causal", 2,
             _per_key_block("causal", 256), pipeline=(("early_release", "all"),)),
        Case("attention_fwd_d256_n80", "attention_fwd_d256_n80.mlir", "attention_fwd_d256_n80", 2,
             _per_key_block("plain", 256)),
        Case("attention_fwd_d256_n80_causal", "attention_fwd_d256_n80.mlir", "attention_fwd_d256_n80_causal", 2,
             _per_key_block("causal", 256)),
        Case("attention_fwd_d64_causal", "attention_fwd_d64.mlir", "attention_fwd_d64_causal", 2,
             _per_key_block("causal", 64)),
        # A variant the attention cost model chooses (tawa.analysis.attention_cost.VARIANTS).
        Case("attention_fwd_d64_causal_pinned", "attention_fwd_d64.mlir", "attention_fwd_d64_causal", 2,
             _per_key_block("causal", 64), pipeline=(("pin_waits", True), ("pingpong", False))),
        # K and V rings of their own depths (tawa-hopper-pipeline{ring-depths}): 3 key slots, 2 value slots.
        Case("attention_fwd_causal_ring_depths", "attention_fwd.mlir", "attention_fwd_causal", 0,
             _per_key_block("causal"), pipeline=(("ring_depths", (3, 2)),)),
        Case("attention_fwd_d64_causal_m192", "attention_fwd_d64.mlir", "attention_fwd_d64_causal_m192", 2,
             _per_key_block("causal", 64, 192)),
        Case("attention_fwd_fp8", "attention_fwd_fp8.mlir", "attention_fwd_fp8", 2, _fp8_attention(False),
             tolerance=FP8_TOLERANCE),
        Case("attention_fwd_fp8_causal", "attention_fwd_fp8.mlir", "attention_fwd_fp8_causal", 2,
             _fp8_attention(True), tolerance=FP8_TOLERANCE),
    )
}
"""Every example kernel (examples/*.mlir), with the stages its GPU test uses,
two GEMM configurations at their deep rings (stages 0: the deepest that fits),
the GEMM in 2-CTA clusters, the GEMM with deferred stores, a GEMM whose
warp groups own 128 rows, and attention
with K and V rings of different depths."""


# --------------------------------------------------------------------------- the child: run under the sanitizer


def run_case(case: Case, seed: int = 0, launches: int = 2) -> float:
    """Compiles and runs one case on the GPU; returns the worst rel. error."""
    import cupy

    import tawa
    from tawa.runtime import reinterpret

    kernel = tawa.compile(case.text(), case.kernel, **case.options())
    args, grid, error = case.inputs(np.random.default_rng(seed))
    worst = 0.0
    for _ in range(launches):
        device = [
            reinterpret(cupy.asarray(a.view(f"u{a.itemsize}")), a.dtype.name) if isinstance(a, np.ndarray) else a
            for a in args
        ]
        kernel(*device, grid=grid)
        cupy.cuda.runtime.deviceSynchronize()
        outs = [cupy.asnumpy(d.array).view(a.dtype) if isinstance(a, np.ndarray) else a
                for a, d in zip(args, device)]
        worst = max(worst, error(outs))
    return worst


def child(names: Sequence[str]) -> int:
    import cupy

    cupy.cuda.set_allocator(None)  # one cudaMalloc per array: memcheck sees its bounds
    failed = 0
    for name in names:
        print(f"{BEGIN} {name}", flush=True)
        try:
            err = run_case(CASES[name])
        except Exception as e:  # report and go on: the other examples still run
            print(f"{END} {name} FAILED {type(e).__name__}: {' '.join(str(e).split())}", flush=True)
            failed += 1
            continue
        ok = err <= CASES[name].tolerance
        failed += not ok
        print(f"{END} {name} {'ok' if ok else 'WRONG'} rel_err={err:.2e}", flush=True)
    return 1 if failed else 0


# --------------------------------------------------------------------------- the parent: parse


@dataclass
class ToolResult:
    """What one sanitizer run said."""

    tool: str
    errors: int | None = None
    """The ERROR SUMMARY count (None: no summary line)."""
    reports: dict[str, int] = field(default_factory=dict)
    """Report lines per example (and `<outside>` for lines outside the markers)."""
    outcome: dict[str, str] = field(default_factory=dict)
    """Per example: `ok rel_err=...`, `WRONG ...` or `FAILED ...`; missing if it never finished."""
    returncode: int = 0
    output: str = ""

    def clean(self, names: Sequence[str]) -> bool:
        return self.errors == 0 and all(self.outcome.get(n, "").startswith("ok") for n in names)


def parse_output(tool: str, text: str) -> ToolResult:
    """The errors, per-example report lines and outcomes in a sanitizer's output."""
    result = ToolResult(tool, output=text)
    summaries = _SUMMARY.findall(text)
    if summaries:
        result.errors = int(next(g for g in summaries[-1] if g))
    current = "<outside>"
    for line in text.splitlines():
        if line.startswith(BEGIN + " "):
            current = line.split()[1]
            result.reports.setdefault(current, 0)
        elif line.startswith(END + " "):
            _, name, *rest = line.split(maxsplit=2)
            result.outcome[name] = rest[0] if rest else ""
            current = "<outside>"
        elif _REPORT.match(line) and not _NOT_A_REPORT.match(line):
            result.reports[current] = result.reports.get(current, 0) + 1
    return result


def sanitizer() -> str | None:
    """The compute-sanitizer executable, or None."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (Path("/usr/local/cuda/bin"), *sorted(Path("/usr/local").glob("cuda-*/bin"))):
        if (root / "compute-sanitizer").exists():
            return str(root / "compute-sanitizer")
    return None


def command(tool: str, names: Sequence[str], exe: str) -> list[str]:
    return [
        exe, "--tool", tool, "--report-api-errors", "no",
        sys.executable, "-m", "tawa.tools.sanitize", "--child", *names,
    ]  # fmt: skip


def run_tool(tool: str, names: Sequence[str], timeout: float = 600) -> ToolResult:
    exe = sanitizer()
    if exe is None:
        raise RuntimeError("compute-sanitizer is not on PATH (nor in /usr/local/cuda*/bin)")
    try:
        # One pipe for both streams keeps the sanitizer's reports between the child's markers.
        res = subprocess.run(command(tool, names, exe), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=timeout, cwd=EXAMPLES_DIR.parent)
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        result = parse_output(tool, out)
        result.returncode = -1
        result.output += f"\n[timed out after {timeout} s]"
        return result
    result = parse_output(tool, res.stdout)
    result.returncode = res.returncode
    return result


def run_all(tools: Sequence[str], names: Sequence[str], jobs: int = 4, timeout: float = 600) -> dict[str, ToolResult]:
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {t: pool.submit(run_tool, t, names, timeout) for t in tools}
        return {t: f.result() for t, f in futures.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tawa.tools.sanitize", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tool", action="append", choices=TOOLS, help="default: all four")
    parser.add_argument("--example", action="append", choices=sorted(CASES), help="default: all")
    parser.add_argument("--jobs", type=int, default=4, help="sanitizer processes at once")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per sanitizer process")
    parser.add_argument("--verbose", action="store_true", help="print each sanitizer's whole output")
    parser.add_argument("--child", nargs="+", metavar="EXAMPLE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child)
    tools, names = args.tool or list(TOOLS), args.example or list(CASES)
    if sanitizer() is None:
        print("tawa.tools.sanitize: error: compute-sanitizer is not on PATH (nor in /usr/local/cuda*/bin)",
              file=sys.stderr)
        return 2
    results = run_all(tools, names, args.jobs, args.timeout)
    clean = True
    for tool, r in results.items():
        clean &= r.clean(names)
        print(f"{tool}: ERROR SUMMARY {r.errors if r.errors is not None else '(none: the run failed)'}"
              f"{'' if r.returncode == 0 else f', exit {r.returncode}'}")
        for name in names:
            print(f"  {name:<22} reports {r.reports.get(name, 0):>3}  {r.outcome.get(name, 'did not finish')}")
        if r.reports.get("<outside>"):
            print(f"  (outside any example: {r.reports['<outside>']} report lines)")
        if args.verbose or not r.clean(names):
            print(r.output)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
