"""The time of an attention kernel on a problem, and the choice of kernel.

The operators have several kernels (and compile options) for one attention
problem: head dim 64 with 128 or 192 query rows a program, head dim 256 with
64- or 80-key blocks, the causal head dim 64 kernel with its warp groups
taking turns or not, ...  Which one finishes first depends on the problem's
shape: how the programs fill the SMs, how long each is, how much of it is
its fixed cost.  This module estimates each candidate's time from that
structure and a few fitted constants, and takes the fastest.

**The model.**  A kernel runs one CTA per SM (persistent), and CTA c takes
the programs c, c + P, c + 2P, ... of P CTAs (P = min(programs, SMs)),
longest first where programs differ (causal).  A program of R query rows
iterates over key blocks of N keys: all ⌈S_k/N⌉ of them, or (causal, the
queries aligned with the last keys) those up to its last row's key.  The
kernel's time is the busiest CTA's — CTA 0, which takes the longest program
of every round:

    time = LAUNCH_S + programs₀ · program_s + blocks₀ · block_factor · 4·R·N·D / tensor rate

where programs₀ and blocks₀ are CTA 0's programs and key blocks, 4·R·N·D
the flops of one key block (Q·Kᵀ and P·V) and the tensor rate one SM's
bf16 rate at the loaded clock (`tawa.target.hopper`).  Two constants per
kernel are fitted to measurements on the H100 (`tawa.bench.fit_attention_cost`,
data in docs/perf/): `program_s`, the fixed cost of a program (Q's load, the
first key block's latency, the output's store), and `block_factor`, how
much longer a key block takes than its tensor-core time (softmax, waits).
The launch constant is shared.  A kernel with a costlier program but
cheaper blocks (80-key blocks at head dim 256, three warp groups at head
dim 64) wins on long sequences and loses on short ones; the crossover is
not written anywhere, it follows from the constants.

Worked example: head dim 64, not causal, S = 1930, B·H = 16, 132 SMs.  With
192 rows a program: ⌈1930/192⌉·16 = 176 programs, so CTA 0 runs 2 of them,
2·⌈1930/128⌉ = 32 key blocks of 1.09 µs at the tensor rate:
7.5 + 2·1.07 + 32·1.45·1.09 = 60.2 µs.  With 128 rows: 256 programs, again 2
of 32 blocks for CTA 0, but blocks of 128 rows (0.73 µs):
7.5 + 2·0.71 + 32·1.75·0.73 = 49.5 µs.  So the 128-row kernel (the H100
measured 55.8 and 47.7 µs).  On 16·16384 the 192-row kernel's cheaper rows
win instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from tawa.target.hopper import LOADED_SM_CLOCK_HZ, SM_COUNT, TENSOR_FLOPS_PER_CLOCK


@dataclass(frozen=True)
class AttentionVariant:
    """One kernel of the attention examples, compiled with `options`."""

    kernel: str
    """The kernel's name (a function of the examples, `tawa.torch.kernels.FILES`)."""
    options: tuple[tuple[str, Any], ...]
    """`tawa.compile` options, sorted by name."""
    rows: int
    """Query rows per program (its accumulators' rows; a CPU test holds it to the example)."""
    key_block: int
    """Keys per iteration of its key loop (its Q·Kᵀ accumulator's columns)."""
    program_s: float
    """Fitted: the fixed time of one program, seconds."""
    block_factor: float
    """Fitted: one key block's time over its flops at one SM's tensor rate."""

    @property
    def label(self) -> str:
        """`kernel+option=value...`: how measurements name it."""
        return self.kernel + "".join(f"+{k}={v}" for k, v in self.options)


LAUNCH_S = 7.50e-6
"""Fitted: a launch's time beyond its busiest CTA's programs (the same for every kernel)."""


def _v(kernel: str, rows: int, key_block: int, program_us: float, block_factor: float,
       **options: Any) -> AttentionVariant:
    return AttentionVariant(kernel, tuple(sorted(options.items())), rows, key_block, program_us * 1e-6, block_factor)


VARIANTS: dict[tuple[int, bool], tuple[AttentionVariant, ...]] = {
    (64, False): (_v("attention_fwd_d64", 192, 128, 1.071, 1.451),
                  _v("attention_fwd_d64_m128", 128, 128, 0.708, 1.746)),
    (64, True): (_v("attention_fwd_d64_causal", 128, 128, 1.343, 1.702),
                 _v("attention_fwd_d64_causal", 128, 128, 1.626, 1.625, pin_waits=True, pingpong=False),
                 _v("attention_fwd_d64_causal_m192", 192, 128, 1.970, 1.485)),
    (128, False): (_v("attention_fwd", 128, 128, 2.380, 1.113),),
    (128, True): (_v("attention_fwd_causal", 128, 128, 2.000, 1.158),),
    (256, False): (_v("attention_fwd_d256", 128, 64, 3.173, 1.149, early_release="all"),
                   _v("attention_fwd_d256", 128, 64, 3.678, 1.119),
                   _v("attention_fwd_d256_n80", 128, 80, 6.961, 1.072)),
    (256, True): (_v("attention_fwd_d256_causal", 128, 64, 6.061, 1.110, early_release="all"),
                  _v("attention_fwd_d256_causal", 128, 64, 6.215, 1.111),
                  _v("attention_fwd_d256_n80_causal", 128, 80, 9.344, 1.056)),
}
"""(head dim, causal) → the kernels that compute it, with their fitted
constants (`tawa.bench.fit_attention_cost` prints this table); the first is
the one taken when the problem's size is not known."""

KERNEL_ROWS = {v.kernel: v.rows for vs in VARIANTS.values() for v in vs}
"""Query rows per program of every attention kernel the operators run."""


def busiest_cta(rows: int, key_block: int, q_len: int, kv_len: int, batch_heads: int, causal: bool,
                sms: int = SM_COUNT) -> tuple[int, int]:
    """(key blocks, programs) of CTA 0, the busiest: it takes programs 0, P,
    2P, ... of the longest-first order (P CTAs).  Causal queries are aligned
    with the last keys: row block i sees keys [0, kv_len − q_len + (i+1)·rows)."""
    per_head = -(-q_len // rows)
    programs = per_head * batch_heads
    if programs == 0:
        return 0, 0
    ctas = min(sms, programs)
    taken = range(0, programs, ctas)
    if not causal:
        return len(taken) * -(-kv_len // key_block), len(taken)
    offset = kv_len - q_len
    blocks = 0
    for t in taken:  # longest first: row block per_head − 1 of every head, then the one before, ...
        i = per_head - 1 - t // batch_heads
        keys = min(kv_len, max(0, offset + (i + 1) * rows))
        blocks += -(-keys // key_block)
    return blocks, len(taken)


def block_seconds(variant: AttentionVariant, head_dim: int) -> float:
    """One key block's tensor-core time on one SM at the loaded clock (before `block_factor`)."""
    return 4 * variant.rows * variant.key_block * head_dim / (TENSOR_FLOPS_PER_CLOCK["bf16"] * LOADED_SM_CLOCK_HZ)


def estimate(variant: AttentionVariant, head_dim: int, q_len: int, batch_heads: int, causal: bool,
             kv_len: int | None = None, sms: int = SM_COUNT, launch_s: float | None = None) -> float:
    """Seconds `variant` takes on the problem (the module's model), with
    the launch constant `launch_s` (default `LAUNCH_S`)."""
    kv = q_len if kv_len is None else kv_len
    blocks, programs = busiest_cta(variant.rows, variant.key_block, q_len, kv, batch_heads, causal, sms)
    return (LAUNCH_S if launch_s is None else launch_s) + programs * variant.program_s + blocks * variant.block_factor * block_seconds(variant, head_dim)


@cache
def choose(head_dim: int, causal: bool, q_len: int | None = None, batch_heads: int | None = None,
           kv_len: int | None = None, sms: int = SM_COUNT) -> AttentionVariant:
    """The variant expected to finish first (the first listed on a tie, and
    without a problem size).  KeyError for a head dim without a kernel."""
    variants = VARIANTS[(head_dim, causal)]
    if q_len is None or batch_heads is None:
        return variants[0]
    return min(variants, key=lambda v: estimate(v, head_dim, q_len, batch_heads, causal, kv_len, sms))
