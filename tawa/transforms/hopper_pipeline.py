"""`tawa-hopper-pipeline`: the whole way from tile programs to Hopper ops.

    tawa-warp-specialize{...} , tawa-pipeline{stages} , [tawa-overlap-dots] ,
    [tawa-cache-hints] , [tawa-cluster{size}] , [tawa-persistent{group-m order}] ,
    [tawa-defer-stores] , tawa-assign-stage-phase , tawa-lower-aref , [tawa-bound-waits{timeout_ms}] ,
    tawa-lower-tile , tawa-materialize-partitions{group-m order}

`tawa-opt f.mlir -p tawa-hopper-pipeline -t ptx` is the main job.  With
`stages=0` (the default) the ring depth is the deepest of `max-stages`
(4), ..., 2, 1 whose shared memory fits (GEMM 128×256's 48 KB stages: 4;
attention's Q plus K and V rings at head dim 128: 2).  That choice is made
after partitioning, by asking the shared-memory planner
(`tawa.transforms.smem_plan`) about the rings that `tawa-pipeline` would
deepen, at each depth: an analysis, no trial lowering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from tawa.diagnostics import TawaError
from tawa.dialects import aref
from tawa.target.hopper import MAX_REGS, MIN_REGS, REGS_GRANULE
from tawa.transforms.assign_stage_phase import AssignStagePhasePass
from tawa.transforms.bound_waits import BoundWaitsPass
from tawa.transforms.cache_hints import CacheHintsPass
from tawa.transforms.check_resources import CheckResourcesPass
from tawa.transforms.cluster import ClusterPass, size_problem
from tawa.transforms.defer_stores import DeferStoresPass
from tawa.transforms.exp_to_exp2 import ExpToExp2Pass
from tawa.transforms.expand_stores import ExpandFragmentStoresPass
from tawa.transforms.lower_aref import LowerArefPass
from tawa.transforms.lower_tile import LowerTilePass
from tawa.transforms.materialize_partitions import MaterializePartitionsPass
from tawa.transforms.operand_staging import operand_types
from tawa.transforms.overlap_dots import MAX_EARLY_RELEASE_BYTES, MAX_OVERLAP_REGS, OverlapDotsPass
from tawa.transforms.persistent import PersistentPass
from tawa.transforms.pipeline import PipelinePass, ring_depths_of
from tawa.transforms.prepare_ptx import PreparePtxPass
from tawa.transforms.program_order import ProgramOrder
from tawa.transforms.smem_plan import plan_shared_memory
from tawa.transforms.tma_epilogue import AUTO_STAGINGS, EPILOGUES, STAGINGS, STORE_GROUPS, staging_types
from tawa.transforms.utils import kernel_of
from tawa.transforms.verify_protocol import VerifyProtocolPass
from tawa.transforms.warp_specialize import WarpSpecializePass

OVERLAPS = ("auto", "all", "none")
"""`overlap=` values (`HopperPipelinePass.overlap`)."""
MAX_STAGES = 4
"""`max-stages`' default: the deepest ring `stages=0` tries.  Deeper rings
pay where the producer must run far ahead (memory-bound GEMM tiles: the
GEMM configurations ask for up to 8, `tawa.runtime.autotune.GEMM_MAX_STAGES`)
but not in attention: on the H100 (docs/perf.md, "Deep rings for small GEMM
tiles"), head dim 64 with 6-deep K and V rings, all that fit, ran slightly
slower than with 4, and 3-deep too (clearly slower before
`tawa-assign-stage-phase` counted modulo 2D: its division by a depth that
is no power of two had cost the issue-bound consumer more instructions)."""


class Decision(NamedTuple):
    """What `HopperPipelinePass.decide` settled for a module."""

    stages: int
    """The rings' depth (with `ring_depths`: the shallowest)."""
    epilogue: str
    staging: str
    once_depth: int
    ring_depths: tuple[int, ...] = ()
    """Each ring's depth in creation order; empty: `stages` each."""


@dataclass(frozen=True)
class HopperPipelinePass(ModulePass):
    """Warp-specializes, pipelines and lowers tile kernels to Hopper (nvgpu) ops."""

    name = "tawa-hopper-pipeline"

    stages: int = 0
    """Ring depth D; 0 picks the deepest of `max_stages`..1 that fits in shared memory."""
    max_stages: int = MAX_STAGES
    """The deepest ring `stages=0` tries (`MAX_STAGES`)."""
    ring_depths: tuple[int, ...] = ()
    """Each ring's depth, in the order of the kernel's `aref.create`s
    (`tawa-pipeline{ring-depths}`; attention: K, then V), instead of one
    `stages` for all; then `stages` must be 0.  Empty: decided by `stages`."""
    producer_regs: int | None = None
    """The producer's register budget; derived when left out (tawa-warp-specialize)."""
    consumer_warps: int | None = None
    """Warps of the consumer partition; one warp group per 64 accumulator
    rows (BLOCK_M / 16 warps) when left out."""
    consumer_regs: int | None = None
    """Each consumer warp group's budget; derived when left out."""
    group_m: int = 8
    order: ProgramOrder = "auto"
    """Program order (tawa.transforms.program_order): grouped, column,
    longest-first, paired or paired-short-first (persistent kernels), or
    auto (a paired order for persistent kernels whose work grows with
    program id 0, column for kernels whose streamed tiles do not depend on
    it, grouped otherwise)."""
    persistent: bool = True
    """One CTA per SM looping over the programs (tawa-persistent)."""
    prepare: bool = True
    """End with tawa-prepare-ptx (what the PTX printer needs); false keeps
    scf and whole-tile wgmma, for tests of the lowering itself."""
    watchdog: bool = False
    """Bound every mbarrier wait (tawa-bound-waits): a hang becomes a
    KernelHangError naming the wait.  Off by default; nothing changes when off."""
    watchdog_ms: int = 2000
    """The watchdog's bound on one wait, in milliseconds."""
    epilogue: str = "auto"
    """`auto`, `tma` or `threads`: how consumers store their tiles
    (`tawa-lower-tile`, `tawa.transforms.tma_epilogue`).  With `stages=0`,
    `auto` takes the TMA-store epilogue when its staging tiles fit beside
    rings of at least 2 stages, `tma` at whatever depth fits."""
    once_depth: int = 0
    """Slots of the arefs filled once per program (attention's Q tile;
    `tawa-pipeline{once-depth}`): 2 lets a persistent kernel load the next
    program's tile while this one runs.  0 (the default) decides: 2 for a
    persistent kernel when the second slots fit beside the rings, epilogue
    and staging chosen without them (the ring depth keeps priority), else 1.
    On the H100 2 ran attention faster at head dims 64 and 128, most on
    short causal rows; d256's Q does not fit twice beside its 2-deep rings
    (docs/perf.md, "Three warp groups at head dim 64")."""
    pingpong: bool = True
    """`tawa-lower-tile{pingpong}`: the consumer warp groups of an
    overlapped loop take turns issuing their dots, in a ring."""
    pin_waits: bool = False
    """`tawa-lower-tile{pin-waits}`: a wgmma wait after register math (the
    overlapped loop's P·V wait) gets a fence that keeps ptxas from moving it
    above that math."""
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
    staging: str = "auto"
    """`auto`, `full`, `subtiled` or `single`: the TMA-store epilogue's staging
    buffers (`tawa.transforms.tma_epilogue`; `single`: one chunk buffer, the
    least shared memory, never chosen by `auto`).  `auto` chooses among
    `AUTO_STAGINGS` (the full tile, then subtiled): with `stages=0` the one
    that allows the deepest ring (the first on a tie), with explicit stages
    the first that fits beside them."""

    cache_hints: bool = True
    """`tawa-cache-hints`: the TMA loads of tiles that only one program reads
    (attention's Q) are `evict_first` in L2."""
    cluster: int = 1
    """CTAs per thread-block cluster along program id 0 (`tawa-cluster`): the
    CTAs of a cluster load each tile they share (a GEMM's B) once, each a
    band multicast to all.  1: no clusters.  Needs `persistent`."""
    defer_stores: bool = False
    """`tawa-defer-stores`: a persistent consumer stores program i's tile
    under program i+1's first dot (needs `persistent`; applies where the
    pass's conditions hold, other kernels are left as they are)."""
    store_group: str = "auto"
    """`auto`, `cta` or `warpgroup`: who stores a staged tile
    (`tawa-lower-tile{store-group}`, `tawa.transforms.tma_epilogue`): one
    thread of the CTA, or one of each warp group its own rows; `auto` per
    warp group where they ping-pong."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.check_options()
        # exp of f32 tiles as exp2 (what the hardware computes, `ex2.approx`);
        # exp of other types is left for the lowering to name at its op.
        ExpToExp2Pass().apply(ctx, op)
        self.specialize_pass().apply(ctx, op)
        for p in self.planned_steps(op):
            p.apply(ctx, op)

    def check_options(self) -> None:
        """Raises TawaError for an option value no kernel can take (also
        called by `tawa.compile` before it parses the module)."""
        if self.epilogue not in EPILOGUES:
            raise TawaError(f"epilogue must be one of {', '.join(EPILOGUES)}, got {self.epilogue!r}", self.name)
        if self.staging not in STAGINGS:
            raise TawaError(f"staging must be one of {', '.join(STAGINGS)}, got {self.staging!r}", self.name)
        if self.store_group not in STORE_GROUPS:
            raise TawaError(f"store-group must be one of {', '.join(STORE_GROUPS)}, got {self.store_group!r}",
                            self.name)
        if size_problem(self.cluster):
            raise TawaError(f"cluster {size_problem(self.cluster)}", self.name)
        if self.cluster > 1 and not self.persistent:
            raise TawaError(f"cluster={self.cluster} needs a persistent kernel (persistent=true)", self.name)
        if self.defer_stores and not self.persistent:
            raise TawaError("defer-stores needs a persistent kernel (persistent=true)", self.name)
        if self.ring_depths and self.stages:
            raise TawaError(f"give stages={self.stages} or ring-depths="
                            f"{','.join(map(str, self.ring_depths))}, not both", self.name)
        if any(d < 1 for d in self.ring_depths):
            raise TawaError(f"ring-depths must be at least 1 each, got {','.join(map(str, self.ring_depths))}",
                            self.name)
        if self.stages < 0:
            raise TawaError(f"stages must be 0 (decided per kernel) or at least 1, got {self.stages}", self.name)
        if self.max_stages < 1:
            raise TawaError(f"max-stages must be at least 1, got {self.max_stages}", self.name)
        for option in ("producer_regs", "consumer_regs"):
            regs = getattr(self, option)
            if regs is not None and (not MIN_REGS <= regs <= MAX_REGS or regs % REGS_GRANULE):
                raise TawaError(f"{option.replace('_', '-')} must be a multiple of {REGS_GRANULE} in "
                                f"[{MIN_REGS}, {MAX_REGS}], got {regs}", self.name)
        if self.once_depth < 0:
            raise TawaError(f"once-depth must be 0 (decided per kernel) or at least 1, got {self.once_depth}",
                            self.name)
        for option in ("overlap", "early_release"):
            value = getattr(self, option)
            if value not in OVERLAPS:
                raise TawaError(f"{option.replace('_', '-')} must be one of {', '.join(OVERLAPS)}, got {value!r}",
                                self.name)

    def planned_steps(self, module: ModuleOp) -> tuple[ModulePass, ...]:
        """The passes after `specialize_pass()` for a warp-specialized
        `module`: its ring depth, epilogue and staging decided as `apply`
        decides them."""
        d = self.decide(module)
        return self.steps(d.stages, d.epilogue, d.staging, once_depth=d.once_depth, ring_depths=d.ring_depths)

    def decide(self, module: ModuleOp) -> Decision:
        """The ring depths, epilogue, staging and once-depth for a
        warp-specialized `module`: the options, with `stages=0` (and no
        `ring-depths`) and `once-depth=0` decided."""
        if self.ring_depths:
            stages, epilogue, staging = min(self.ring_depths), self.epilogue, self.staging
        elif not self.stages:
            stages, epilogue, staging = self.depth_and_epilogue(module)
        else:
            stages, epilogue, staging = self.stages, self.epilogue, self.staging
        depths = tuple(self.ring_depths) or stages
        return Decision(stages, epilogue, staging, self.once_depth_for(module, depths, epilogue, staging),
                        tuple(self.ring_depths))

    def once_depth_for(self, module: ModuleOp, stages: int | Sequence[int], epilogue: str, staging: str) -> int:
        """`once_depth`, or with 0 the one decided for `module` with rings
        `stages` deep (one depth, or one per ring) and that epilogue (see
        the option): 2 when persistent and the second slots fit, else 1."""
        if self.once_depth:
            return self.once_depth
        if not self.persistent:
            return 1
        # The staging the epilogue takes without the second slots (`auto`: the first that fits).
        variants = () if epilogue == "threads" else AUTO_STAGINGS if staging == "auto" else (staging,)
        tiles = next((v for v in variants if fits_all(module, stages, v)), None)
        return 2 if fits_all(module, stages, tiles, once_depth=2) else 1

    def depth_and_epilogue(self, module: ModuleOp) -> tuple[int, str, str]:
        """With `stages=0`: the deepest ring that fits with the staging
        buffers of the TMA-store epilogue (`epilogue=tma`; `auto`: at least
        2 stages deep), else without them and the thread epilogue; and the
        staging (`auto`: of `AUTO_STAGINGS`, the one with the deepest ring)."""
        if self.epilogue != "threads":
            variants = AUTO_STAGINGS if self.staging == "auto" else (self.staging,)
            depth, staging = max(((deepest_fitting(module, v, self.max_stages), v) for v in variants), key=lambda d: d[0])
            if self.epilogue == "tma" or depth >= 2:
                return depth, self.epilogue, staging
        return deepest_fitting(module, max_stages=self.max_stages), "threads", self.staging

    def specialize_pass(self) -> WarpSpecializePass:
        return WarpSpecializePass(
            producer_regs=self.producer_regs,
            consumer_warps=self.consumer_warps,
            consumer_regs=self.consumer_regs,
            strict=True,
        )

    def steps(self, stages: int, epilogue: str | None = None, staging: str | None = None,
              once_depth: int = 1, ring_depths: tuple[int, ...] = ()) -> tuple[ModulePass, ...]:
        """The passes that follow `specialize_pass()`, for ring depth
        `stages` (the differential tests run them one at a time); `epilogue`
        and `staging` override the options, `once_depth` and `ring_depths`
        are `tawa-pipeline`'s (slots of arefs filled once per program; each
        ring's depth instead of `stages`)."""
        return (
            PipelinePass(stages=stages, once_depth=once_depth, ring_depths=ring_depths),
            *((OverlapDotsPass(max_regs=MAX_OVERLAP_REGS if self.overlap == "auto" else 0,
                               early_release_bytes={"auto": MAX_EARLY_RELEASE_BYTES, "all": 0, "none": -1}[
                                   self.early_release]),)
              if self.overlap != "none" else ()),
            *((CacheHintsPass(),) if self.cache_hints else ()),
            *((ClusterPass(size=self.cluster),) if self.cluster > 1 else ()),
            *((PersistentPass(group_m=self.group_m, order=self.order),) if self.persistent else ()),
            *((DeferStoresPass(),) if self.defer_stores else ()),
            AssignStagePhasePass(),
            LowerArefPass(),
            *((BoundWaitsPass(timeout_ms=self.watchdog_ms),) if self.watchdog else ()),
            LowerTilePass(epilogue=self.epilogue if epilogue is None else epilogue,
                          staging=self.staging if staging is None else staging, store_group=self.store_group,
                          pingpong=self.pingpong, pin_waits=self.pin_waits),
            MaterializePartitionsPass(group_m=self.group_m, order=self.order),
            ExpandFragmentStoresPass(),
            CheckResourcesPass(),
            VerifyProtocolPass(),
            *((PreparePtxPass(),) if self.prepare else ()),
        )

def deepest_fitting(module: ModuleOp, staging: str | None = None, max_stages: int = MAX_STAGES) -> int:
    """The deepest ring (`max_stages`..1) with which every kernel's
    shared-memory plan fits, for the arefs `tawa-pipeline` deepens (the
    others keep their depth), with the TMA-store epilogue's staging buffers
    of that variant (`full` or `subtiled`) when `staging` is given.  With
    none, 1: `tawa-lower-aref` then reports the size."""
    for stages in range(max_stages, 1, -1):
        if fits_all(module, stages, staging):
            return stages
    return 1


def fits_all(module: ModuleOp, stages: int | Sequence[int], staging: str | None = None, once_depth: int = 1) -> bool:
    """Whether every kernel's shared-memory plan fits with `stages`-deep
    rings for the arefs filled in loops (one depth for all, or one per ring
    in creation order), `once_depth` slots for those filled once per
    program, and the staging buffers of `staging` (None: none)."""
    for ws in [o for o in module.walk() if isinstance(o, aref.WarpSpecializeOp)]:
        kernel = kernel_of(ws, HopperPipelinePass.name)
        creates = [o for o in kernel.body.block.ops if isinstance(o, aref.CreateOp)]
        deep = ring_depths_of(ws, stages)

        def depth_of(c: aref.CreateOp, deep: dict[SSAValue, int] = deep) -> int:
            t = c.result.type
            assert isinstance(t, aref.ArefType)
            return deep[c.result] if c.result in deep else max(once_depth, t.depth.data)

        tiles = (staging_types(ws, staging) if staging else []) + operand_types(ws, HopperPipelinePass.name)
        if not plan_shared_memory(creates, depth_of, staging=tiles).fits:
            return False
    return True
