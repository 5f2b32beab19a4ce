"""`tawa-hopper-pipeline`: the whole way from tile programs to Hopper ops.

    tawa-exp-to-exp2 , tawa-divide-by-reciprocal , tawa-fold-dot-addend ,
    tawa-warp-specialize{producer-regs consumer-warps consumer-regs strict} ,
    tawa-pipeline{stages ring-depths once-depth} , [tawa-overlap-dots{max-regs early-release-bytes}] ,
    [tawa-async-dots{max-regs}] , [tawa-cache-hints] , [tawa-cluster{size}] , [tawa-persistent{group-m order}] ,
    [tawa-defer-stores] ,
    tawa-assign-stage-phase{verify} , tawa-lower-aref , [tawa-bound-waits{timeout-ms}] ,
    tawa-stage-stores{epilogue staging store-group} , tawa-stage-operands , tawa-lower-tile ,
    [tawa-pingpong] , [tawa-pin-waits] , tawa-drain-stores , tawa-materialize-partitions{group-m order} ,
    tawa-expand-fragment-stores , tawa-occupancy , tawa-check-resources , tawa-verify-protocol ,
    [tawa-prepare-ptx]

(In brackets: the steps that only some options run; in braces: each step's
options, which the pipeline sets.  `steps` builds the list after
`tawa-warp-specialize`; tests/transforms/test_pipeline_steps.py checks this
list and docs/passes.md's against it.)

The protocol is proved once, by `tawa-verify-protocol` on the lowered
kernel: `tawa-assign-stage-phase` runs without its aref-level proof, which
`apply` runs only when a later step fails, for the error it locates at the
aref ops (`diagnose_at_aref_level`).

`tawa-opt f.mlir -p tawa-hopper-pipeline -t ptx` is the main job.  The
pass's own options say what to build (`OPTIONS`); the compiler's own
choices, which the planner makes by default, are its `tuning`
(`tawa.transforms.tuning.Tuning`), spelled flat among them in text
(`tawa-hopper-pipeline{stages=3 staging=subtiled}`) and by `of(**options)`.
With `stages=0` (the default) the ring depth is the deepest of `max-stages`
(4), ..., 2, 1 whose shared memory fits (GEMM 128×256's 48 KB stages: 4;
attention's Q plus K and V rings at head dim 128: 2).  That choice is made
after partitioning, by asking the shared-memory planner
(`tawa.analysis.smem_plan`) about the rings that `tawa-pipeline` would
deepen, at each depth: an analysis, no trial lowering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, NamedTuple, Self

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

from tawa.analysis.program_order import ProgramOrder
from tawa.analysis.smem_plan import plan_shared_memory
from tawa.diagnostics import TawaError
from tawa.dialects import aref
from tawa.transforms.lower.bound_waits import BoundWaitsPass
from tawa.transforms.lower.drain_stores import DrainStoresPass
from tawa.transforms.lower.expand_stores import ExpandFragmentStoresPass
from tawa.transforms.lower.lower_aref import LowerArefPass
from tawa.transforms.lower.lower_tile import LowerTilePass
from tawa.transforms.lower.occupancy import OccupancyPass
from tawa.transforms.lower.operand_staging import operand_types
from tawa.transforms.lower.pin_waits import PinWaitsPass
from tawa.transforms.lower.pingpong import PingPongPass
from tawa.transforms.lower.stage_operands import StageOperandsPass
from tawa.transforms.lower.stage_stores import StageStoresPass
from tawa.transforms.lower.tma_epilogue import AUTO_STAGINGS, EPILOGUES, LAST_STAGINGS, staging_types
from tawa.transforms.partition.materialize_partitions import MaterializePartitionsPass
from tawa.transforms.partition.warp_specialize import WarpSpecializePass
from tawa.transforms.pipeline.assign_stage_phase import AssignStagePhasePass
from tawa.transforms.pipeline.async_dots import AsyncDotsPass
from tawa.transforms.pipeline.cache_hints import CacheHintsPass
from tawa.transforms.pipeline.cluster import ClusterPass, size_problem
from tawa.transforms.pipeline.defer_stores import DeferStoresPass
from tawa.transforms.pipeline.overlap_dots import MAX_EARLY_RELEASE_BYTES, MAX_OVERLAP_REGS, OverlapDotsPass
from tawa.transforms.pipeline.persistent import PersistentPass
from tawa.transforms.pipeline.pipeline import PipelinePass, ring_depths_of
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass
from tawa.transforms.tile.dot_addend import FoldDotAddendPass
from tawa.transforms.tile.exp_to_exp2 import ExpToExp2Pass
from tawa.transforms.tile.reciprocal import DivideByReciprocalPass
from tawa.transforms.tuning import MAX_STAGES, Tuning
from tawa.transforms.utils import check_choice, kernel_of
from tawa.verify.check_resources import CheckResourcesPass
from tawa.verify.verify_protocol import VerifyProtocolPass

TUNING_OPTIONS = tuple(f.name for f in fields(Tuning))
"""The `Tuning` fields, which text and `tawa.compile` spell among the pipeline's options."""


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
    """Ring depth D; 0 picks the deepest of `tuning.max_stages`..1 that fits in shared memory."""
    ring_depths: tuple[int, ...] = ()
    """Each ring's depth, in the order of the kernel's `aref.create`s
    (`tawa-pipeline{ring-depths}`; attention: K, then V), instead of one
    `stages` for all; then `stages` must be 0.  Empty: decided by `stages`."""
    consumer_warps: int | None = None
    """Warps of the consumer partition; one warp group per 64 accumulator
    rows (BLOCK_M / 16 warps) when left out."""
    order: ProgramOrder = "auto"
    """Program order (tawa.analysis.program_order): grouped, column,
    longest-first, paired or paired-short-first (persistent kernels), or
    auto (a paired order for persistent kernels whose work grows with
    program id 0, column for kernels whose streamed tiles do not depend on
    it, grouped otherwise)."""
    persistent: bool = True
    """One CTA per SM looping over the programs (tawa-persistent; kernels
    with a producer, the others keep one CTA per program)."""
    cluster: int = 1
    """CTAs per thread-block cluster along program id 0 (`tawa-cluster`): the
    CTAs of a cluster load each tile they share (a GEMM's B) once, each a
    band multicast to all.  1: no clusters.  Needs `persistent`."""
    epilogue: str = "auto"
    """`auto`, `tma` or `threads`: how consumers store their tiles
    (`tawa-stage-stores`, `tawa.transforms.lower.tma_epilogue`).  With `stages=0`,
    `auto` takes the TMA-store epilogue when its staging tiles fit beside
    rings of at least 2 stages, `tma` at whatever depth fits.  `threads`
    uses no tensor map the threads can do without: in a kernel without dots
    the consumers also load the tiles a loop would stream from a TMA
    producer (`tawa-warp-specialize{stream-loads=false}`): the twin a launch
    takes where a tensor map cannot describe an array (`tawa.Kernel.fallback`)."""
    watchdog_ms: int = 0
    """The bound of every mbarrier wait in milliseconds (tawa-bound-waits): a
    hang becomes a KernelHangError naming the wait.  0 (the default): no
    watchdog, and nothing changes."""
    prepare: bool = True
    """End with tawa-prepare-ptx (what the PTX printer needs); false keeps
    scf and whole-tile wgmma, for tests of the lowering itself."""
    tuning: Tuning = Tuning()
    """The compiler's own choices (`tawa.transforms.tuning`): text and
    `tawa.compile` spell them flat among the options above."""

    def __post_init__(self) -> None:
        # Checked when made, from Python or from text: a bad value fails where it is given.
        check_choice("epilogue", self.epilogue, EPILOGUES, self.name)
        if size_problem(self.cluster):
            raise TawaError(f"cluster {size_problem(self.cluster)}", self.name)
        if self.cluster > 1 and not self.persistent:
            raise TawaError(f"cluster={self.cluster} needs a persistent kernel (persistent=true)", self.name)
        if self.tuning.defer_stores and not self.persistent:
            raise TawaError("defer-stores needs a persistent kernel (persistent=true)", self.name)
        if self.ring_depths and self.stages:
            raise TawaError(f"give stages={self.stages} or ring-depths="
                            f"{','.join(map(str, self.ring_depths))}, not both", self.name)
        if any(d < 1 for d in self.ring_depths):
            raise TawaError(f"ring-depths must be at least 1 each, got {','.join(map(str, self.ring_depths))}",
                            self.name)
        if self.stages < 0:
            raise TawaError(f"stages must be 0 (decided per kernel) or at least 1, got {self.stages}", self.name)
        if self.watchdog_ms < 0:
            raise TawaError(f"watchdog-ms must be 0 (no watchdog) or a positive bound, got {self.watchdog_ms}",
                            self.name)

    @classmethod
    def of(cls, **options: Any) -> Self:
        """The pipeline with flat keyword `options`, its own and its tuning's
        (`of(stages=3, staging="subtiled")`), spelled with `-` or `_`: what
        `tawa.compile` and `tawa.runtime.autotune.Choice.options` give."""
        options = {k.replace("-", "_"): v for k, v in options.items()}
        unknown = [k for k in options if k not in OPTIONS and k not in TUNING_OPTIONS]
        if unknown:
            raise TypeError(f"{cls.__name__}.of: unknown option {unknown[0]!r}; options: {', '.join(OPTIONS)}; "
                            f"tuning: {', '.join(TUNING_OPTIONS)}")
        tuning = Tuning(**{k: v for k, v in options.items() if k in TUNING_OPTIONS})
        return cls(**{k: v for k, v in options.items() if k in OPTIONS}, tuning=tuning)

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        """`tawa-hopper-pipeline{stages=3 staging=subtiled}`: the parameters
        that name `Tuning` fields make the tuning, the others the pass's own
        fields (each converted as xDSL converts pass options)."""
        parameters = spec.normalize_parameter_names().parameters
        unknown = [k for k in parameters if k not in OPTIONS and k not in TUNING_OPTIONS]
        if unknown:
            names = ", ".join(f'"{k}"' for k in unknown)
            raise ValueError(f"Provided arguments [{names}] not found in expected arguments "
                             f"[{', '.join(OPTIONS)}] or tuning arguments [{', '.join(TUNING_OPTIONS)}]")
        tuning = Tuning.from_spec(ArgSpec(Tuning.name, {k: v for k, v in parameters.items() if k in TUNING_OPTIONS}))
        own = super().from_spec(ArgSpec(spec.name, {k: v for k, v in parameters.items() if k in OPTIONS}))
        return own if tuning == own.tuning else replace(own, tuning=tuning)

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        """The pass's options, then its tuning's, flat: what `from_spec` reads back."""
        own = super().spec(include_default=include_default).parameters
        tuned = self.tuning.spec(include_default=include_default).parameters
        return ArgSpec(self.name, {**{k: v for k, v in own.items() if k != "tuning"}, **tuned})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        source = op.clone()  # for `diagnose_at_aref_level`: the steps rewrite `op` in place
        for p in self.tile_steps():
            p.apply(ctx, op)
        self.specialize_pass().apply(ctx, op)
        assigned = False
        for p in self.planned_steps(op):
            try:
                p.apply(ctx, op)
            except Exception:
                if assigned:
                    self.diagnose_at_aref_level(ctx, source)
                raise
            assigned = assigned or isinstance(p, AssignStagePhasePass)

    def diagnose_at_aref_level(self, ctx: Context, source: ModuleOp) -> None:
        """Raises the aref-level proof's error for `source` (the module as
        `apply` received it), if it has one: the steps up to
        `tawa-assign-stage-phase` again, that one with its proof.

        `steps` runs `tawa-assign-stage-phase{verify=false}`: its proof
        checks again what `tawa-verify-protocol` proves of the lowered
        kernel (the kernel that runs), so a compile that succeeds never
        needs it.  It only locates an error better, at the aref ops, and
        catches the broken slot use that makes a later step fail; so
        `apply` runs it only when a step after the slots are named fails,
        and its error, where it finds one, is the compile's, as when it ran
        first.  The steps are deterministic: the IR proved is the IR that
        `apply` lowered."""
        for p in self.tile_steps():
            p.apply(ctx, source)
        self.specialize_pass().apply(ctx, source)
        for p in self.planned_steps(source):
            if isinstance(p, AssignStagePhasePass):
                replace(p, verify=True).apply(ctx, source)
                return
            p.apply(ctx, source)

    @staticmethod
    def tile_steps() -> tuple[ModulePass, ...]:
        """The rewrites of the tile program before partitioning: exp of f32
        tiles as exp2 (what the hardware computes, `ex2.approx`; exp of
        other types is left for the lowering to name at its op), and
        division by a broadcast as a product with its reciprocal."""
        return ExpToExp2Pass(), DivideByReciprocalPass(), FoldDotAddendPass()

    def check_options(self) -> None:
        """Raises TawaError for an option value no kernel can take (also
        called by `tawa.compile` before it parses the module).  The
        pipeline's options and its tuning were checked when they were made;
        what remains are the checks of the passes it runs, made as `apply`
        makes them."""
        self.specialize_pass()
        self.steps(min(self.ring_depths, default=self.stages) or 1, ring_depths=self.ring_depths)

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
            stages, epilogue, staging = min(self.ring_depths), self.epilogue, self.tuning.staging
        elif not self.stages:
            stages, epilogue, staging = self.depth_and_epilogue(module)
        else:
            stages, epilogue, staging = self.stages, self.epilogue, self.tuning.staging
        depths = tuple(self.ring_depths) or stages
        return Decision(stages, epilogue, staging, self.once_depth_for(module, depths, epilogue, staging),
                        tuple(self.ring_depths))

    def once_depth_for(self, module: ModuleOp, stages: int | Sequence[int], epilogue: str, staging: str) -> int:
        """`once_depth`, or with 0 the one decided for `module` with rings
        `stages` deep (one depth, or one per ring) and that epilogue (see
        the option): 2 when persistent and the second slots fit, else 1."""
        if self.tuning.once_depth:
            return self.tuning.once_depth
        if not self.persistent:
            return 1
        # The staging the epilogue takes without the second slots (`auto`: the first that fits).
        variants = () if epilogue == "threads" else (*AUTO_STAGINGS, *LAST_STAGINGS) if staging == "auto" else (staging,)
        tiles = next((v for v in variants if fits_all(module, stages, v)), None)
        return 2 if fits_all(module, stages, tiles, once_depth=2) else 1

    def depth_and_epilogue(self, module: ModuleOp) -> tuple[int, str, str]:
        """With `stages=0`: the deepest ring that fits with the staging
        buffers of the TMA-store epilogue (`epilogue=tma`; `auto`: at least
        2 stages deep), else without them and the thread epilogue; and the
        staging (`auto`: of `AUTO_STAGINGS`, the one with the deepest ring;
        where neither reaches 2, the first of `LAST_STAGINGS` that does)."""
        if self.epilogue != "threads":
            variants = AUTO_STAGINGS if self.tuning.staging == "auto" else (self.tuning.staging,)
            depth, staging = max(((deepest_fitting(module, v, self.tuning.max_stages), v) for v in variants),
                                 key=lambda d: d[0])
            for last in LAST_STAGINGS if depth < 2 and self.tuning.staging == "auto" else ():
                depth, staging = deepest_fitting(module, last, self.tuning.max_stages), last
                if depth >= 2:
                    break
            if self.epilogue == "tma" or depth >= 2:
                return depth, self.epilogue, staging
        return deepest_fitting(module, max_stages=self.tuning.max_stages), "threads", self.tuning.staging

    def specialize_pass(self) -> WarpSpecializePass:
        return WarpSpecializePass(
            producer_regs=self.tuning.producer_regs,
            consumer_warps=self.consumer_warps,
            consumer_regs=self.tuning.consumer_regs,
            strict=True,
            stream_loads=self.epilogue != "threads",
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
            *((OverlapDotsPass(max_regs=MAX_OVERLAP_REGS if self.tuning.overlap == "auto" else 0,
                               early_release_bytes={"auto": MAX_EARLY_RELEASE_BYTES, "all": 0, "none": -1}[
                                   self.tuning.early_release]),)
              if self.tuning.overlap != "none" else ()),
            *((AsyncDotsPass(max_regs=MAX_OVERLAP_REGS if self.tuning.overlap == "auto" else 0),)
              if self.tuning.overlap != "none" else ()),
            *((CacheHintsPass(),) if self.tuning.cache_hints else ()),
            *((ClusterPass(size=self.cluster),) if self.cluster > 1 else ()),
            *((PersistentPass(group_m=self.tuning.group_m, order=self.order),) if self.persistent else ()),
            *((DeferStoresPass(),) if self.tuning.defer_stores else ()),
            AssignStagePhasePass(verify=False),  # proved on failure only: diagnose_at_aref_level
            LowerArefPass(),
            *((BoundWaitsPass(timeout_ms=self.watchdog_ms),) if self.watchdog_ms else ()),
            StageStoresPass(epilogue=self.epilogue if epilogue is None else epilogue,
                            staging=self.tuning.staging if staging is None else staging,
                            # `auto` stores per warp group where they take turns: with none, per CTA.
                            store_group="cta" if self.tuning.store_group == "auto" and not self.tuning.pingpong
                            else self.tuning.store_group),
            StageOperandsPass(),
            LowerTilePass(),
            *((PingPongPass(),) if self.tuning.pingpong else ()),
            *((PinWaitsPass(),) if self.tuning.pin_waits else ()),
            DrainStoresPass(),
            MaterializePartitionsPass(group_m=self.tuning.group_m, order=self.order),
            ExpandFragmentStoresPass(),
            OccupancyPass(),
            CheckResourcesPass(),
            VerifyProtocolPass(),
            *((PreparePtxPass(),) if self.prepare else ()),
        )


OPTIONS = tuple(f.name for f in fields(HopperPipelinePass) if f.name != "tuning")
"""The pipeline's own options: what to build (`Tuning` holds what the compiler chooses)."""


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
