"""The time of a GEMM configuration on a Hopper GPU: a cost model.

    from tawa.analysis.gemm_cost import estimate
    e = estimate(problem, choice)     # problem: a GemmProblem, choice: a Choice (tawa.runtime.gemm_choice)
    e.total                           # seconds; e.prologue + e.kernel + e.reduction
    e.describe()                      # one line: the parts, the rounds, what bounds a k-step

`tawa.runtime.gemm_choice.heuristic` takes the candidate with the least
estimate, and `autotune` times only the few it ranks first.  The model
counts what the hardware facts of `tawa.target.hopper` and the kernel's
schedule (a persistent, warp-specialized kernel: one CTA per SM looping
over the programs, a producer filling a ring of operand slots, consumer
warp groups issuing wgmma and storing C) say a configuration costs:

* **rounds**: P programs on S = min(P, SMs) CTAs run in ⌈P/S⌉ rounds, the
  last one holding what is left (its fill is the tail's share of the
  SMs); in clusters of C CTAs the rows of tiles count in whole clusters
  (the CTAs past the grid's last row run it again).
* **a k-step** (one BLOCK_K slice of a tile) takes the longest of (the
  others overlap it)
  - *tensor*: 2·BM·BN·BK flops at `TENSOR_FLOPS_PER_CLOCK` of the operand
    family × the clock under load, plus a few cycles per wgmma
    instruction (narrow tiles issue many small ones);
  - *shared memory*: the bytes the wgmmas read (each warp group's 64-row A
    block and the whole B tile, per instruction) and the bytes TMA writes,
    at `SMEM_BYTES_PER_CLOCK` × the clock × a fitted share: operand bytes
    per flop fall as tiles grow, which is what makes small tiles slow;
  - *L2*: this CTA's share of the L2's bandwidth among the CTAs of the
    round, for (BM + BN / cluster)·BK elements of A and B, an operand's
    bytes counted `misaligned_l2_factor` times where its rows are not
    whole L2 sectors apart (`L2_SECTOR_BYTES`: its box rows straddle
    sectors, more requests per byte);
  - *latency*: a ring of D slots has D − `HELD_SLOTS` loads in flight
    (the consumers hold the slot they read and the one their dot in flight
    reads), each taking the load latency: shallow rings of large stages
    (256x128 in 3 slots) wait for their data.
* **clusters**: a 2-CTA cluster multicasts B (half its L2 bytes per CTA)
  at a fixed start `cluster_fixed_s` and a share `cluster_overhead` of
  each k-step's time (a slot is free only
  when both CTAs' consumers released it).
* **epilogue**: per program a fixed cost (the last dot's drain, barriers)
  plus C's tile at a per-SM store rate (`misaligned_l2_factor` times where
  the tile's rows of C start inside L2 lines: BLOCK_N·bytes no multiple of
  `L2_LINE_BYTES`); the tensor cores idle meanwhile
  (the producer fills the ring for the next program, so the next main loop
  starts on loaded slots).
* **prologue**: the launch and the first load's latency.
* **DRAM**: the bytes read from DRAM (A and B once when they fit in half
  the L2, shared among the rounds by their programs, else each round's
  footprint under the grouped program order: the distinct rows of A and
  columns of B its programs touch) and C's writes, at a fitted bandwidth:
  a floor under each round's time (skinny problems are bound by it).  A
  round takes the longer of its main loops + epilogues and its bytes at
  the bandwidth, so a last round of a few CTAs, whose loads are bound by
  their own rings' latency, is not hidden under the full rounds' DRAM time;
  where the two are close neither hides the other wholly (a fitted norm,
  `bound_norm`: (loop^p + dram^p)^(1/p)).
* **split-K**: every program stores its f32 partial (its epilogue and DRAM
  bytes), and the last of a tile's programs reads the tile's partials back
  and stores C, in the same launch (`tawa.runtime.splitk`): one CTA per
  tile does that, so a tile's reduction costs a fixed wait plus its
  partials at one SM's read rate and C's tile at its store rate, the
  tiles' reductions sharing the SMs, and all of them together at least
  the partials' and C's bytes at the DRAM bandwidth.

The free parameters (the cycles per instruction, the shared-memory share,
the bandwidths, the latency, the epilogue's costs, the launch, the fp8
rate's share, split-K's reduction; the clock is the measured
`LOADED_SM_CLOCK_HZ`) are fitted by `python -m tawa.bench.fit_cost` to
each GPU's own measurements in docs/perf/ and recorded in `FITTED` (the
H100's, the default) and `FITTED_H200`, found by device name through
`parameters_for` (docs/perf.md, "Cost model").
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tawa.target.hopper import (
    L2_BYTES,
    L2_LINE_BYTES,
    L2_SECTOR_BYTES,
    LOADED_SM_CLOCK_HZ,
    SM_COUNT,
    SMEM_BYTES_PER_CLOCK,
    TENSOR_FLOPS_PER_CLOCK,
    WGMMA_K_BYTES,
    WGMMA_M,
    WGMMA_OPERAND_TYPES,
)

if TYPE_CHECKING:
    from tawa.runtime.gemm_choice import Choice, GemmProblem

HELD_SLOTS = 2
"""Ring slots the consumers hold while the producer refills the others:
the one the dot being issued reads and the one the dot still in flight
reads (`tawa-overlap-dots` keeps one dot in flight)."""
L2_RESIDENT_SHARE = 0.5
"""A and B are read from DRAM once when together they fill at most this
share of the L2 (C's lines and the other programs' tiles take the rest)."""
C_BYTES = {"bf16": 2, "f16": 2, "f32": 4}


@dataclass(frozen=True)
class CostParameters:
    """The model's free parameters (units: seconds, bytes, hertz)."""

    clock_hz: float
    """The SM clock under load (the board at its power cap): not fitted,
    `LOADED_SM_CLOCK_HZ`."""
    instruction_cycles: float
    """Cycles each wgmma instruction costs the tensor cores besides its
    flops (issue, the A operand's fetch): what makes narrow tiles' many
    small instructions slow."""
    smem_share: float
    """The share of `SMEM_BYTES_PER_CLOCK` that the wgmma operand reads
    and TMA writes get together."""
    l2_bytes_per_s: float
    """L2 → SM bandwidth, all SMs together."""
    dram_bytes_per_s: float
    """DRAM bandwidth a GEMM's loads and stores reach."""
    load_latency_s: float
    """From a slot's release to its refill's arrival."""
    epilogue_s: float
    """Per program: the drain of the last dots and the epilogue's barriers."""
    store_bytes_per_s: float
    """Per SM: C's tile from the accumulators to global memory."""
    launch_s: float
    """A kernel launch as timed back to back (the GPU's own gap)."""
    fp8_rate_share: float
    """The share of the fp8 tensor rate reached, twice the 16-bit one on
    paper (fitted; why fp8 falls short, a lower clock at the power cap or
    the instructions, is not measured)."""
    misaligned_l2_factor: float
    """How many times an operand's L2 bytes count where its rows are not
    whole L2 sectors apart."""
    cluster_overhead: float
    """The share a k-step's time grows by in a 2-CTA cluster."""
    cluster_fixed_s: float
    """Per kernel in 2-CTA clusters: the clusters' start (their launch, the
    first multicast load waiting for both CTAs' slots)."""
    split_fixed_s: float
    """Per tile of a split configuration: its last program's wait for the
    tile counter and the fences around the partials, before it reads them."""
    reduce_bytes_per_s: float
    """Per SM: the f32 partials the last program of a tile reads back."""
    bound_norm: float
    """How sharply a round's time follows the longer of its loops and its
    DRAM bytes: (loop^p + dram^p)^(1/p) with p this; where the two are
    close, neither hides the other wholly (loads queue behind DRAM)."""

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


FITTED = CostParameters(
    clock_hz=LOADED_SM_CLOCK_HZ,
    instruction_cycles=6.042,
    smem_share=1.019,
    l2_bytes_per_s=1.164e+13,
    dram_bytes_per_s=2.278e+12,
    load_latency_s=8.368e-07,
    epilogue_s=1.569e-07,
    store_bytes_per_s=1.114e+11,
    launch_s=4.776e-06,
    fp8_rate_share=0.9684,
    misaligned_l2_factor=2.339,
    cluster_overhead=1.269e-07,
    cluster_fixed_s=1.766e-06,
    split_fixed_s=3.698e-06,
    reduce_bytes_per_s=3.068e+10,
    bound_norm=9.257,
)
"""Fitted by `python -m tawa.bench.fit_cost` (docs/perf.md, "Cost model")."""

FITTED_H200 = CostParameters(
    clock_hz=LOADED_SM_CLOCK_HZ,
    instruction_cycles=3.839e-05,
    smem_share=1.197,
    l2_bytes_per_s=1.061e+13,
    dram_bytes_per_s=3.627e+12,
    load_latency_s=8.716e-07,
    epilogue_s=4.914e-13,
    store_bytes_per_s=6.767e+10,
    launch_s=4.947e-06,
    fp8_rate_share=0.9684,
    misaligned_l2_factor=1.552,
    cluster_overhead=0.001239,
    cluster_fixed_s=1.329e-06,
    split_fixed_s=2.655e-06,
    reduce_bytes_per_s=4.436e+10,
    bound_norm=2.186,
)
"""The same parameters fitted to the NVIDIA H200's times (`python -m
tawa.bench.fit_cost --gpu h200`; docs/perf.md, "Cost model")."""

DEVICE_PARAMETERS = {"NVIDIA H100 80GB HBM3": FITTED, "NVIDIA H200": FITTED_H200}
"""Fitted parameters by the name CUDA gives the device: the same kernels
run at other rates on another GPU (the H200's faster memory and other
clocks under the same power cap), so each GPU measured has its own."""


def parameters_for(device: str | None) -> CostParameters:
    """The parameters fitted for `device` (a CUDA device name); `FITTED`
    (the H100's) for a device not measured, or None (no device)."""
    return DEVICE_PARAMETERS.get(device, FITTED) if device is not None else FITTED


@dataclass(frozen=True)
class Step:
    """The terms of one k-step of one program (seconds)."""

    tensor: float
    smem: float
    l2: float
    latency: float
    time: float
    """The longest of them (the others overlap it), in a cluster grown by
    `cluster_overhead`."""

    @property
    def bound(self) -> str:
        """The largest term's name."""
        terms = {"tensor": self.tensor, "smem": self.smem, "l2": self.l2, "latency": self.latency}
        return max(terms, key=lambda k: terms[k])


@dataclass(frozen=True)
class Estimate:
    """The estimated time of a configuration on a problem, in parts (seconds)."""

    total: float
    """prologue + kernel + reduction."""
    prologue: float
    """The launch and the first load."""
    main: float
    """The main loops: k-steps × their time, summed over the rounds."""
    epilogue: float
    """The epilogues: one per program of a CTA."""
    dram: float
    """The DRAM floor: bytes from and to DRAM at its bandwidth."""
    kernel: float
    """Over the rounds, each round's main loops + epilogues against its DRAM
    bytes at the bandwidth: the longer, softened by `bound_norm`."""
    reduction: float
    """Split-K's reduction in the last program of each tile (the partials'
    and C's bytes); 0 unsplit."""
    programs: int
    ctas: int
    per_round: int
    """Programs a full round runs: one per SM."""
    rounds: int
    """Rounds of the persistent schedule: ⌈programs / per_round⌉."""
    tail: int
    """Programs of the last round."""
    k_steps: int
    """K-steps of one program (of its K-slice when split)."""
    stages: int
    step: Step = field(repr=False)
    """A k-step's terms in a full round."""

    @property
    def fill(self) -> float:
        """The last round's share of a full one (of the SMs' program slots)."""
        return self.tail / self.per_round if self.per_round else 0.0

    def parts(self) -> dict[str, Any]:
        """What `--explain` prints, by name (times in µs)."""
        us = 1e6
        return {"total": self.total * us, "prologue": self.prologue * us, "main": self.main * us,
                "epilogue": self.epilogue * us, "dram": self.dram * us, "reduction": self.reduction * us,
                "programs": self.programs, "rounds": self.rounds, "tail": self.tail, "ctas": self.ctas,
                "k_steps": self.k_steps, "stages": self.stages, "bound": self.step.bound,
                "step": {"tensor": self.step.tensor * us, "smem": self.step.smem * us, "l2": self.step.l2 * us,
                         "latency": self.step.latency * us, "time": self.step.time * us}}

    def describe(self) -> str:
        """One line: the total, its parts, the rounds and the k-step."""
        us = 1e6
        s = self.step
        split = f" + reduction {self.reduction * us:.1f}" if self.reduction else ""
        kernel = (f"kernel {self.kernel * us:.1f} (main {self.main * us:.1f} + epilogue {self.epilogue * us:.1f} "
                  f"against dram {self.dram * us:.1f}, by round)")
        return (f"{self.total * us:.1f} µs = prologue {self.prologue * us:.1f} + {kernel}{split}; "
                f"{self.programs} programs in {self.rounds} round{'s' * (self.rounds != 1)} of {self.per_round} "
                f"(last {self.tail}); "
                f"{self.k_steps} k-steps of {s.time * us:.3f} µs, {s.bound}-bound (tensor {s.tensor * us:.3f}, "
                f"smem {s.smem * us:.3f}, l2 {s.l2 * us:.3f}, latency {s.latency * us:.3f}), {self.stages} stages")


@functools.lru_cache(maxsize=None)
def _decided_stages(config: Any, options: tuple[tuple[str, Any], ...]) -> int:
    """The ring depth `tawa-hopper-pipeline` decides for `config` with
    `options` (its shared-memory plan: the deepest ring that fits beside
    the staging buffers)."""
    from tawa.ir import context, parse
    from tawa.kernels.gemm import gemm_source
    from tawa.transforms.hopper_pipeline import HopperPipelinePass

    pipeline = HopperPipelinePass.of(**dict(options), prepare=False)
    module = parse(gemm_source(config), f"{config.id}.mlir")
    pipeline.specialize_pass().apply(context(), module)
    return pipeline.decide(module).stages


PLAN_OPTIONS = ("max_stages", "staging", "epilogue", "consumer_warps", "consumer_regs", "producer_regs")
"""The options of `tawa-hopper-pipeline` its ring depth depends on (those
`decide` and the warp specialization before it read)."""


def ring_stages(choice: Choice) -> int:
    """The ring depth `choice` compiles with: its `stages`, or (0) what the
    compiler's shared-memory plan decides (once per configuration and
    `PLAN_OPTIONS`; raises the compiler's `TawaError` for one it rejects)."""
    if choice.stages:
        return choice.stages
    options = tuple(sorted((k, v) for k, v in choice.options.items() if k in PLAN_OPTIONS))
    config = choice.config
    return _decided_stages(config.replace(split_k=2) if config.split_k > 2 else config, options)  # one split program


def _bound(a: float, b: float, p: float) -> float:
    """(a^p + b^p)^(1/p): the longer of two overlapping times, softened
    where they are close (`CostParameters.bound_norm`)."""
    top = max(a, b)
    return top * ((a / top) ** p + (b / top) ** p) ** (1 / p) if top > 0 else 0.0


def _window(start: int, count: int, rows: int, cols: int, group: int) -> tuple[int, int]:
    """(distinct tile rows, distinct tile columns) of `count` programs from
    linear index `start` of a rows × cols grid in grouped order (groups of
    `group` rows sweep the columns; `tawa.transforms.utils.grouped_ids`)."""
    per_group = group * cols
    end = min(start + count, rows * cols)
    distinct_rows, spans = 0, []
    for g in range(start // per_group, -(-end // per_group)):
        size = min(group, rows - g * group)
        lo, hi = max(start, g * per_group) - g * per_group, min(end, (g + 1) * per_group) - g * per_group
        distinct_rows += min(size, hi - lo)
        spans.append((lo // size, (hi - 1) // size + 1))
    if len(spans) > 2:  # a whole group in between sweeps every column
        return distinct_rows, cols
    columns = spans[0][1] - spans[0][0]
    if len(spans) == 2:  # the first group's last columns, the second's first ones
        columns += max(0, min(spans[1][1], spans[0][0]) - spans[1][0])
    return distinct_rows, min(cols, columns)


def estimate(problem: GemmProblem, choice: Choice, sms: int = SM_COUNT, params: CostParameters | None = None,
             warm: bool = False, stages: int | None = None) -> Estimate:
    """The estimated time of `choice` on `problem` on a GPU of `sms` SMs
    with `params` (default `FITTED`, the H100's) (module docstring).  `warm`: as timed back to back from a CUDA graph
    (autotuning's timer): operands that fit in L2 stay there, no launch gap.
    `stages`: the ring depth, when the caller knows it (default
    `ring_stages(choice)`)."""
    params = params or FITTED
    depth = stages if stages is not None else ring_stages(choice)
    if choice.config.transposed:  # Cᵀ = B·Aᵀ: the mirrored problem's tile
        problem = problem.mirrored()
        a, b, _ = problem.types
        choice = dataclasses.replace(choice, config=choice.config.replace(transposed=False, a_dtype=a, b_dtype=b))
    c = choice.config
    a_type, b_type, c_type = problem.types
    ea, eb = WGMMA_OPERAND_TYPES[a_type].bytes, WGMMA_OPERAND_TYPES[b_type].bytes
    family = WGMMA_OPERAND_TYPES[a_type].family
    bm, bn, bk, split = c.block_m, c.block_n, c.block_k, c.split_k
    batch = problem.batch or 1
    rows, cols = -(-problem.M // bm), -(-problem.N // bn)
    # A cluster runs `cluster` rows of tiles; past the grid's last row its CTAs run that row
    # again (tawa-persistent), so an odd number of rows in 2-CTA clusters takes a row more of SMs.
    launched_rows = -(-rows // choice.cluster) * choice.cluster
    programs = launched_rows * cols * batch * split
    k_steps = -(-(-(-problem.K // bk)) // split)
    ctas = max(1, min(programs, sms))
    per_round = sms
    rounds = -(-programs // per_round) if programs else 0
    tail = programs - (rounds - 1) * per_round if rounds else 0
    clock = params.clock_hz

    # A k-step: its terms but L2's do not depend on how many CTAs run.
    groups = bm // WGMMA_M
    instructions = groups * bk * ea // WGMMA_K_BYTES  # wgmmas a k-step issues, each 64 x BN x (32 bytes of K)
    rate = TENSOR_FLOPS_PER_CLOCK[family] * (params.fp8_rate_share if family == "fp8" else 1.0)
    tensor = (2 * bm * bn * bk / rate + instructions * params.instruction_cycles) / clock
    smem_bytes = groups * (WGMMA_M * ea + bn * eb) * bk + (bm * ea + bn * eb) * bk
    smem = smem_bytes / (SMEM_BYTES_PER_CLOCK * clock * params.smem_share)
    latency = params.load_latency_s / max(1, depth - HELD_SLOTS)
    b_row_bytes = problem.K * eb if problem.b_layout == "nk" else problem.N * eb
    a_factor, b_factor = (params.misaligned_l2_factor if row % L2_SECTOR_BYTES else 1.0
                          for row in (problem.K * ea, b_row_bytes))
    l2_bytes = (bm * ea * a_factor + bn * eb * b_factor / choice.cluster) * bk
    coupled = 1.0 + params.cluster_overhead if choice.cluster > 1 else 1.0

    def step(active: int) -> Step:
        l2 = active * l2_bytes / params.l2_bytes_per_s
        return Step(tensor, smem, l2, latency, max(tensor, smem, l2, latency) * coupled)

    full = step(ctas)
    c_row = bn * (4 if split > 1 else C_BYTES[c_type])
    tile_c_bytes = bm * c_row
    # Tiles whose rows of C start inside L2 lines touch a line more per row (as misaligned operand rows do).
    store = tile_c_bytes / params.store_bytes_per_s * (params.misaligned_l2_factor if c_row % L2_LINE_BYTES else 1.0)
    epilogue_one = params.epilogue_s + (max(0.0, store - full.time) if choice.defer_stores else store)

    def round_time(k_step: Step) -> tuple[float, float]:
        """(main loop, epilogue) of a round, each CTA running one program."""
        loop = k_steps * k_step.time
        epi = epilogue_one
        if not choice.persistent:
            epi += params.load_latency_s  # a fresh CTA fills its ring: nothing overlaps it
        return loop, epi

    # DRAM: A and B (once, or per round's footprint), C or the partials, by round.
    k_len = min(problem.K, k_steps * bk)
    a_all, b_all = problem.M * problem.K * ea * batch, problem.N * problem.K * eb * batch
    c_all = problem.M * problem.N * batch * (4 * split if split > 1 else C_BYTES[c_type])
    shares = (per_round / programs, tail / programs) if programs else (0.0, 0.0)  # a full round's, the last's
    if a_all + b_all <= L2_RESIDENT_SHARE * L2_BYTES:
        operands = 0.0 if warm else a_all + b_all
        c_all = 0.0 if warm else c_all
        round_operands = [operands * share for share in shares]
    else:
        group = max(1, min(choice.group_m, rows))

        def footprint(start: int, count: int) -> float:
            r, n = _window(start % (rows * cols), min(count, rows * cols), rows, cols, group)
            return (min(r * bm, problem.M) * ea + min(n * bn, problem.N) * eb) * k_len

        round_operands = [footprint(0, per_round), footprint((rounds - 1) * per_round, tail)] if rounds else [0, 0]
        read = (rounds - 1) * round_operands[0] + round_operands[1]
        if rounds and read < a_all + b_all:  # every byte of A and B is read at least once
            round_operands = [b * (a_all + b_all) / read for b in round_operands]
        operands = max(read, a_all + b_all)
    dram = (operands + c_all) / params.dram_bytes_per_s
    full_dram, tail_dram = ((b + c_all * share) / params.dram_bytes_per_s
                            for b, share in zip(round_operands, shares, strict=True))

    # Each round takes the longer of its programs' loops and epilogues and its DRAM bytes: the
    # last round's few CTAs cannot draw the DRAM bandwidth that a full round's share assumes.
    main = epilogue = kernel = 0.0
    if rounds:
        p = params.bound_norm
        loop, epi = round_time(full)
        main, epilogue, kernel = (rounds - 1) * loop, (rounds - 1) * epi, (rounds - 1) * _bound(loop + epi, full_dram, p)
        tail_ctas = min(ctas, tail)
        loop, epi = round_time(full if tail_ctas == ctas else step(tail_ctas))
        main, epilogue, kernel = main + loop, epilogue + epi, kernel + _bound(loop + epi, tail_dram, p)

    launch = 0.0 if warm else params.launch_s
    prologue = launch + params.load_latency_s if programs else launch
    if choice.cluster > 1:
        prologue += params.cluster_fixed_s
    reduction = 0.0
    if split > 1:
        # The last program of each tile, after its own main loop, reads the
        # tile's partials back and stores C: one CTA per tile, so each reads
        # `split` f32 tiles at one SM's rate, and the tiles' last programs
        # share the SMs; all of them together are bound by DRAM.
        mn = problem.M * problem.N * batch
        tiles = rows * cols * batch
        per_tile = (params.split_fixed_s + split * bm * bn * 4 / params.reduce_bytes_per_s
                    + bm * bn * C_BYTES[c_type] / params.store_bytes_per_s)
        reduction = max(-(-tiles // sms) * per_tile, (split * mn * 4 + mn * C_BYTES[c_type]) / params.dram_bytes_per_s)
    return Estimate(prologue + kernel + reduction, prologue, main, epilogue, dram, kernel, reduction, programs, ctas,
                    per_round, rounds, tail, k_steps, depth, full)


__all__ = ["FITTED", "CostParameters", "Estimate", "Step", "estimate", "ring_stages"]
