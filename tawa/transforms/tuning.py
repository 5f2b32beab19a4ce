"""`Tuning`: what `tawa-hopper-pipeline` chooses itself, apart from what it is asked to build.

The pipeline's own options (`HopperPipelinePass`) say *what* to build: the
ring depth (`stages`, `ring-depths`), the consumer's warps, the program
order, one CTA per SM or one per program, clusters, the epilogue, the
watchdog, and where to stop (`prepare`).  A kernel is fully described by
them.  `Tuning` holds the compiler's own choices of *how*: each has a
default that the planner decides per kernel (`auto`, 0 or None) or that
measured best on the kernels at hand, and each may be set by one of:

- the GEMM autotuner (`tawa.runtime.autotune.Choice.options`): `max_stages`
  (`GEMM_MAX_STAGES`), `group_m`, `defer_stores`, and `staging=single` for
  warp groups of 128 rows;
- the attention cost model (`tawa.analysis.attention_cost.VARIANTS`):
  `early_release`, `pin_waits` and `pingpong`, variants of a kernel that it
  chooses per problem;
- experiments and tests only (`python -m tawa.bench attention-ab --new
  overlap=all`, docs/perf.md): the others, `once_depth`, `producer_regs`,
  `consumer_regs`, `overlap`, `store_group` and `cache_hints`, which the
  planner's defaults decide for every kernel shipped.

Text and `tawa.compile` spell them flat among the pipeline's options
(`tawa-hopper-pipeline{stages=3 staging=subtiled pin-waits=true}`,
`tawa.compile(src, "attention_fwd", pin_waits=True)`); in Python the pass
holds them as one value (`HopperPipelinePass(tuning=Tuning(...))`, or flat:
`HopperPipelinePass.of(stages=3, staging="subtiled")`).  Each is checked
once, when the `Tuning` is made: a value no kernel can take is a one-line
`TawaError` of `tawa-hopper-pipeline`.  The strategies' choices are defined
where their concept lives (`tawa.transforms.lower.tma_epilogue.STAGINGS` and
`STORE_GROUPS`, `tawa.transforms.pipeline.overlap_dots.OVERLAPS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.utils.arg_spec import ArgSpecConvertible

from tawa.diagnostics import TawaError
from tawa.target.hopper import MAX_REGS, MIN_REGS, REGS_GRANULE
from tawa.transforms.lower.tma_epilogue import STAGINGS, STORE_GROUPS
from tawa.transforms.pipeline.overlap_dots import OVERLAPS
from tawa.transforms.utils import check_choice

PIPELINE = "tawa-hopper-pipeline"
"""Where a bad value is reported: the pipeline the tuning belongs to."""
MAX_STAGES = 4
"""`max-stages`' default: the deepest ring `stages=0` tries.  Deeper rings
pay where the producer must run far ahead (memory-bound GEMM tiles: the
GEMM configurations ask for up to 8, `tawa.runtime.autotune.GEMM_MAX_STAGES`)
but not in attention: on the H100 (docs/perf.md, "Deep rings for small GEMM
tiles"), head dim 64 with 6-deep K and V rings, all that fit, ran slightly
slower than with 4, and 3-deep too (clearly slower before
`tawa-assign-stage-phase` counted modulo 2D: its division by a depth that
is no power of two had cost the issue-bound consumer more instructions)."""


@dataclass(frozen=True)
class Tuning(ArgSpecConvertible):
    """The compiler's own choices for `tawa-hopper-pipeline` (see the module docstring)."""

    name: ClassVar[str] = "tuning"

    max_stages: int = MAX_STAGES
    """The deepest ring `stages=0` tries (`MAX_STAGES`)."""
    once_depth: int = 0
    """Slots of the arefs filled once per program (attention's Q tile;
    `tawa-pipeline{once-depth}`): 2 lets a persistent kernel load the next
    program's tile while this one runs.  0 (the default) decides: 2 for a
    persistent kernel when the second slots fit beside the rings, epilogue
    and staging chosen without them (the ring depth keeps priority), else 1.
    On the H100 2 ran attention faster at head dims 64 and 128, most on
    short causal rows; d256's Q does not fit twice beside its 2-deep rings
    (docs/perf.md, "Three warp groups at head dim 64")."""
    producer_regs: int | None = None
    """The producer's register budget; derived when left out (tawa-warp-specialize)."""
    consumer_regs: int | None = None
    """Each consumer warp group's budget; derived when left out."""
    group_m: int = 8
    """Programs per group of the grouped program order (`tawa-persistent`,
    `tawa-materialize-partitions`); 0 keeps program id = CTA id for grouped
    kernels that are not persistent."""
    overlap: str = "auto"
    """`auto`, `all` or `none`: which consumer loops `tawa-overlap-dots`
    rewrites so that their last dot runs under the next iteration's work
    (FA3's intra-warp-group overlap): `auto` those that keep at most
    `MAX_OVERLAP_REGS` registers per thread in flight (attention at head
    dims 64, 128 and 256), `all` every loop that qualifies."""
    early_release: str = "auto"
    """`auto`, `all` or `none` (`OVERLAPS`): which slots taken before an
    overlapped loop (attention's Q) `tawa-overlap-dots` releases right after
    it instead of after the epilogue: `auto` those of at most
    `MAX_EARLY_RELEASE_BYTES` (Q at head dims 64 and 128)."""
    pingpong: bool = True
    """`tawa-pingpong` (not run when false): the consumer warp groups of an
    overlapped loop take turns issuing their dots, in a ring."""
    pin_waits: bool = False
    """`tawa-pin-waits` (run when true): a wgmma wait after register math (the
    overlapped loop's P·V wait) gets a fence that keeps ptxas from moving it
    above that math."""
    staging: str = "auto"
    """`auto`, `full`, `subtiled`, `single` or `full-in-loops`: the
    TMA-store epilogue's staging buffers (`tawa.transforms.lower.tma_epilogue`;
    `single`: one chunk buffer, the least shared memory; `full-in-loops`: the
    full tile for the stores in a loop of the program, single for the
    others).  `auto` chooses among `AUTO_STAGINGS` (the full tile, then
    subtiled): with `stages=0` the one that allows the deepest ring (the
    first on a tie), with explicit stages the first that fits beside them;
    where neither fits (beside a ring of 2 with `stages=0`), the first of
    `LAST_STAGINGS` (full-in-loops, then single) that does."""
    store_group: str = "auto"
    """`auto`, `cta` or `warpgroup`: who stores a staged tile
    (`tawa-stage-stores{store-group}`, `tawa.transforms.lower.tma_epilogue`): one
    thread of the CTA, or one of each warp group its own rows; `auto` per
    warp group where they ping-pong and for the stores in a loop of the
    program, per CTA otherwise."""
    defer_stores: bool = False
    """`tawa-defer-stores`: a persistent consumer stores program i's tile
    under program i+1's first dot (needs `persistent`; applies where the
    pass's conditions hold, other kernels are left as they are)."""
    cache_hints: bool = True
    """`tawa-cache-hints`: the TMA loads of tiles that only one program reads
    (attention's Q) are `evict_first` in L2."""

    def __post_init__(self) -> None:
        if self.max_stages < 1:
            raise TawaError(f"max-stages must be at least 1, got {self.max_stages}", PIPELINE)
        if self.once_depth < 0:
            raise TawaError(f"once-depth must be 0 (decided per kernel) or at least 1, got {self.once_depth}",
                            PIPELINE)
        for option in ("producer_regs", "consumer_regs"):
            regs = getattr(self, option)
            if regs is not None and (not MIN_REGS <= regs <= MAX_REGS or regs % REGS_GRANULE):
                raise TawaError(f"{option.replace('_', '-')} must be a multiple of {REGS_GRANULE} in "
                                f"[{MIN_REGS}, {MAX_REGS}], got {regs}", PIPELINE)
        check_choice("overlap", self.overlap, OVERLAPS, PIPELINE)
        check_choice("early_release", self.early_release, OVERLAPS, PIPELINE)
        check_choice("staging", self.staging, STAGINGS, PIPELINE)
        check_choice("store_group", self.store_group, STORE_GROUPS, PIPELINE)
