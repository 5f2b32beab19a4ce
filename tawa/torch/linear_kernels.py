"""The generated kernels behind `tawa.torch.linear`, `tawa.torch.gated_mlp`
and `tawa.torch.matmul_fp8` (no torch needed).

Each is `tawa.kernels.gemm_source` of a `GemmConfig` with an `Epilogue`:
one GEMM kernel whose consumer warp groups add the bias, apply the
activation on the f32 accumulator, multiply by the second product (gated),
add the residual tile and store (the training forward pass of an activated
linear layer stores the pre-activation too, `save_pre`).
`epilogue_choice` picks the tile: the heuristic's choice for the same
problem as `tawa.torch.matmul`'s (`tawa.runtime.autotune.heuristic`),
unsplit, where the epilogue's live tiles (a second accumulator, a
residual tile, the bias) fit the consumers' registers
(`tawa.kernels.gemm.unsupported`); else the next smaller tile that does
(`HEURISTIC_TILES`, each cut to the heuristic's), and of those the first
whose kernel ptxas assembles without spills (`spill_free`).
`linear_kernel` compiles it (`build`) and remembers the kernel and grid
per problem: a warm call is one dictionary look-up.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tawa.diagnostics import TawaError
from tawa.kernels.gemm import Epilogue, unsupported
from tawa.target.hopper import SM_COUNT, WGMMA_M
from tawa.torch import kernels
from tawa.torch.kernels import ELEMENT_TYPES

SMALLEST_TILE = (64, 64)
"""The last tile `epilogue_choices` tries (after `HEURISTIC_TILES`)."""

_KERNELS: dict[tuple[Any, ...], tuple[Any, tuple[int, ...]]] = {}


def epilogue_choices(layout: str, dtype: str, M: int, N: int, K: int, epilogue: Epilogue,
                     sms: int = SM_COUNT, types: tuple[str, str, str] | None = None) -> list[Any]:
    """The `tawa.runtime.autotune.Choice`s for an M×N×K GEMM in `dtype` (or
    of IR element `types` (A, B, C), an fp8 GEMM's) with `epilogue`, B
    [N, K] (`layout` "nk") or [K, N] ("kn"), best first: the heuristic's
    choice, unsplit (the epilogue needs the whole sum over K), where the
    epilogue fits its registers (`unsupported` with its warp groups' rows);
    then its tile, `HEURISTIC_TILES` and `SMALLEST_TILE`, each cut to the
    heuristic's, where the epilogue fits them on warp groups of 64 rows.  A
    gated epilogue streams a second B operand, so its ring depth is the
    deepest that fits (stages 0).  A located error where none fits."""
    from tawa.runtime.autotune import HEURISTIC_TILES, GemmProblem, heuristic, machine_parameters

    a, b, c = types or (ELEMENT_TYPES[dtype],) * 3
    base = heuristic(GemmProblem(M, N, K, a, b, c, layout), sms, transposed=False, params=machine_parameters())
    stages = 0 if epilogue.gated else base.stages
    first = replace(base, config=base.config.replace(split_k=1, epilogue=epilogue), stages=stages)
    choices = [first] if unsupported(first.config, first.group_rows) is None else []
    bm, bn = base.config.block_m, base.config.block_n
    cooperative = replace(first, stages=0, group_rows=WGMMA_M)
    why = None
    for tm, tn in ((bm, bn), *HEURISTIC_TILES, SMALLEST_TILE):
        choice = replace(cooperative, config=first.config.replace(block_m=min(tm, bm), block_n=min(tn, bn)))
        why = unsupported(choice.config)
        if why is None and choice not in choices:
            choices.append(choice)
    if not choices:
        raise TawaError(f"no tile fits the epilogue {'-'.join(epilogue.parts)}: {why}", "tawa.torch.linear")
    return choices


def epilogue_choice(layout: str, dtype: str, M: int, N: int, K: int, epilogue: Epilogue,
                    sms: int = SM_COUNT, types: tuple[str, str, str] | None = None) -> Any:
    """The first of `epilogue_choices`: the tile the register estimate
    accepts (ptxas may still spill it: `spill_free`)."""
    return epilogue_choices(layout, dtype, M, N, K, epilogue, sms, types)[0]


def spill_free(choices: list[Any]) -> tuple[Any, Any]:
    """(choice, kernel): the first of `choices` whose kernel (`build`) ptxas
    assembles without spills (`tawa.torch.kernels.spills`: the register
    estimate can fall short of what ptxas keeps live in an epilogue), or the
    last (correct, only slower)."""
    for choice in choices[:-1]:
        kernel = build(choice)
        if not kernels.spills(kernel):
            return choice, kernel
    return choices[-1], build(choices[-1])


def build(choice: Any) -> Any:
    """The compiled kernel of `choice` (`Choice.compile`; the CPU tests
    substitute a stand-in)."""
    return choice.compile()


def linear_kernel(layout: str, dtype: str, M: int, N: int, K: int, bias: bool, activation: str | None,
                  residual: bool, gated: bool, sms: int = SM_COUNT,
                  save_pre: bool = False) -> tuple[Any, tuple[int, ...]]:
    """The kernel and launch grid for a problem (`epilogue_choice`),
    compiled once and remembered per (layout, dtype, M, N, K, epilogue);
    `save_pre`: the kernel also stores the pre-activation, or gated both
    products (the training forward passes, `tawa::linear_save` and
    `tawa::gated_mlp_save`)."""
    key = (layout, dtype, M, N, K, bias, activation, residual, gated, save_pre)
    hit = _KERNELS.get(key)
    if hit is not None:
        return hit
    epilogue = Epilogue(bias=bias, activation=activation, residual=residual, gated=gated, save_pre=save_pre)
    choice, kernel = spill_free(epilogue_choices(layout, dtype, M, N, K, epilogue, sms))
    hit = _KERNELS[key] = (kernel, choice.grid(M, N))
    return hit


def fp8_kernel(types: tuple[str, str, str], M: int, N: int, K: int, scale_a: str, scale_b: str,
               sms: int = SM_COUNT) -> tuple[Any, tuple[int, ...]]:
    """The kernel and launch grid of a scaled fp8 GEMM (`tawa.torch.matmul_fp8`):
    A [M, K] · B [N, K]ᵀ of IR element `types` (A, B, C) with the epilogue's
    scales (`Epilogue.scale_a`, `scale_b`), the tile `epilogue_choice`'s,
    compiled once and remembered per problem."""
    key = ("fp8", types, M, N, K, scale_a, scale_b)
    hit = _KERNELS.get(key)
    if hit is not None:
        return hit
    choice, kernel = spill_free(epilogue_choices("nk", "", M, N, K, Epilogue(scale_a=scale_a, scale_b=scale_b),
                                                 sms, types))
    hit = _KERNELS[key] = (kernel, choice.grid(M, N))
    return hit


def clear_cache() -> None:
    """Forgets the kernels (`tawa.runtime.clear_cache()` forgets tawa.compile's)."""
    _KERNELS.clear()
