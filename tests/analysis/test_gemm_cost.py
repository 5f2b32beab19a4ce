"""The GEMM cost model (`tawa.analysis.gemm_cost`) and the choices it makes
through `tawa.runtime.autotune.heuristic`, without a GPU: the schedule's
arithmetic (rounds, the last round, k-steps), monotonic sanity, the
choices on edge shapes with the model's reasons, and that the chooser only
returns configurations the compiler takes."""

from __future__ import annotations

import itertools

import pytest

from tawa.analysis.gemm_cost import FITTED, FITTED_H200, HELD_SLOTS, Estimate, estimate, ring_stages
from tawa.kernels.gemm import GemmConfig, unsupported
from tawa.runtime.autotune import DEFAULT_SPACE, Choice, GemmProblem, candidates, heuristic, ranked
from tawa.target.hopper import SM_COUNT

FP8 = "f8E4M3FN"


def best(problem: GemmProblem, split: bool = False) -> tuple[Choice, Estimate]:
    """The heuristic's choice and its estimate."""
    choice = heuristic(problem, split=split)
    return choice, estimate(problem, choice)


def test_the_ring_depth_is_the_compilers():
    """`ring_stages` asks the compiler's shared-memory plan: 128x256 keeps 4
    slots of 48 KiB beside subtiled staging, 256x128 on four 64-row warp
    groups only 3 (its staging takes the fourth), on two 128-row ones 4."""
    depths = {(bm, bn, rows): ring_stages(Choice(GemmConfig(bm, bn, 64), group_rows=rows))
              for bm, bn, rows in ((128, 256, 64), (256, 128, 64), (256, 128, 128), (128, 128, 64), (64, 128, 64))}
    assert depths == {(128, 256, 64): 4, (256, 128, 64): 3, (256, 128, 128): 4, (128, 128, 64): 6, (64, 128, 64): 8}
    assert ring_stages(Choice(GemmConfig(128, 256, 64), stages=3)) == 3  # asked for


def test_rounds_and_the_last_round():
    p = GemmProblem(8192, 8192, 8192)
    e = estimate(p, Choice(GemmConfig(128, 256, 64)))
    assert (e.programs, e.ctas, e.rounds, e.tail, e.k_steps) == (2048, 132, 16, 2048 - 15 * 132, 128)
    assert e.fill == pytest.approx(68 / 132)
    assert e.total == pytest.approx(e.prologue + e.kernel + e.reduction)
    # Each round the soft bound of its loops and DRAM time: at least the longer, far above the DRAM
    # floor as good as the loops.
    assert max(e.main + e.epilogue, e.dram) <= e.kernel <= (e.main + e.epilogue) * 1.001
    one = estimate(GemmProblem(100, 200, 64), Choice(GemmConfig(128, 256, 64)))
    assert (one.programs, one.ctas, one.rounds, one.tail, one.k_steps) == (1, 1, 1, 1, 1)
    split = estimate(p, Choice(GemmConfig(128, 256, 64, split_k=4)))
    assert split.programs == 4 * 2048 and split.k_steps == 32 and split.reduction > 0
    assert e.per_round == SM_COUNT
    assert estimate(GemmProblem(0, 256, 256), Choice(GemmConfig(64, 64, 64))).programs == 0


def test_a_last_round_of_few_ctas_is_not_hidden_under_dram():
    """A DRAM-bound problem in two rounds whose last has a few CTAs: that round's loads are bound by
    their rings' latency, not by the DRAM time the whole problem would take, so the kernel costs
    more than the one-round floor, and more than the same split in one round of the SMs."""
    p = GemmProblem(24, 3304, 21520)
    two = estimate(p, Choice(GemmConfig(64, 24, 64, transposed=True, split_k=3)), params=FITTED_H200)
    assert (two.rounds, two.tail) == (2, 156 - SM_COUNT)
    assert two.kernel > max(two.main + two.epilogue, two.dram) * 1.1
    one = estimate(p, Choice(GemmConfig(128, 24, 64, transposed=True, split_k=3)), params=FITTED_H200)
    assert one.rounds == 1 and one.total < two.total


def test_a_split_tile_is_reduced_by_one_cta():
    """Split-K's reduction: the last program of each tile reads the tile's
    S partials at one SM's rate after a fixed wait, the tiles' reductions
    sharing the SMs, and never faster than the partials' bytes at the
    DRAM bandwidth.  So a small grid pays about the fixed wait plus S
    tiles' reads, whatever its number of tiles, and a grid of more tiles
    than SMs pays in rounds."""
    def reduction(M: int, N: int, split: int) -> float:
        return estimate(GemmProblem(M, N, 4096), Choice(GemmConfig(64, 64, 64, split_k=split))).reduction

    one_tile = FITTED.split_fixed_s + 2 * 64 * 64 * 4 / FITTED.reduce_bytes_per_s + 64 * 64 * 2 / FITTED.store_bytes_per_s
    assert reduction(64, 64, 2) == pytest.approx(one_tile)
    assert reduction(64, 64 * 8, 2) == pytest.approx(one_tile)  # 8 tiles, 8 SMs, at once
    assert reduction(64, 64, 4) > reduction(64, 64, 2)  # more partials to read
    two_rounds = reduction(64, 64 * (SM_COUNT + 1), 2)  # one tile more than SMs: two rounds
    dram = (2 * 4 + 2) * 64 * 64 * (SM_COUNT + 1) / FITTED.dram_bytes_per_s
    assert two_rounds == pytest.approx(max(2 * one_tile, dram))


def test_small_grids_split_only_where_the_reduction_pays():
    """The reduction's fixed wait makes a split not pay on a short K (216 x
    912 x 1456: 60 tiles of 64x64 run unsplit), where a long K on few tiles
    still splits (32 x 264 x 28576: 5 tiles, 447 k-steps each)."""
    assert heuristic(GemmProblem(216, 912, 1456), split=True).config.split_k == 1
    assert heuristic(GemmProblem(32, 264, 28576), split=True).config.split_k > 4


def test_a_k_step_is_bound_by_its_longest_term():
    e = estimate(GemmProblem(8192, 8192, 8192), Choice(GemmConfig(128, 256, 64)))
    s = e.step
    assert s.time == max(s.tensor, s.smem, s.l2, s.latency) and s.bound in ("tensor", "smem")
    # 256x128 on four 64-row warp groups: a 3-deep ring keeps one load in flight.
    shallow = estimate(GemmProblem(8192, 8192, 8192), Choice(GemmConfig(256, 128, 64)))
    assert shallow.stages == 3 and shallow.step.latency == pytest.approx(FITTED.load_latency_s / (3 - HELD_SLOTS))
    assert shallow.step.bound == "latency"
    # Small tiles read more operand bytes per flop.
    small = estimate(GemmProblem(8192, 8192, 8192), Choice(GemmConfig(64, 64, 64)))
    flops = {e: 2 * c[0] * c[1] * 64 for e, c in ((e.step, (128, 256)), (small.step, (64, 64)))}
    assert small.step.smem / flops[small.step] > e.step.smem / flops[e.step]


@pytest.mark.parametrize("a", ["bf16", FP8])
def test_more_work_takes_more_time(a):
    """For a fixed configuration, and for the heuristic's best, the estimate
    never falls as M, N or K grow."""
    choice = Choice(GemmProblem(1, 1, 1, a, a).config(128, 128, 128 if a == FP8 else 64))
    sizes = (64, 200, 1000, 3000, 8192, 20000)
    for base in ((1000, 1000, 1000), (64, 8192, 8192)):
        for axis in range(3):
            times, best_times = [], []
            for size in sizes:
                dims = list(base)
                dims[axis] = size
                p = GemmProblem(*dims, a, a)
                times.append(estimate(p, choice).total)
                best_times.append(best(p)[1].total)
            assert times == sorted(times), (axis, base, times)
            assert best_times == sorted(best_times), (axis, base, best_times)


def test_a_cluster_runs_whole_clusters_of_rows():
    """In 2-CTA clusters a grid of an odd number of row tiles runs its last
    row twice (tawa-persistent: the CTA past the edge repeats it), so the
    rounds count whole clusters: 3 rows x 38 columns of 128x256 tiles are
    114 programs alone, 152 CTAs in clusters, two rounds on 132 SMs; an
    even number of rows is the same either way."""
    odd = GemmProblem(368, 9496, 3192)
    config = odd.config(128, 256, 64)
    alone, paired = estimate(odd, Choice(config)), estimate(odd, Choice(config, cluster=2))
    assert (alone.programs, alone.rounds) == (114, 1) and (paired.programs, paired.rounds) == (152, 2)
    even = GemmProblem(512, 9496, 3192)
    assert estimate(even, Choice(config)).programs == estimate(even, Choice(config, cluster=2)).programs == 152


def test_one_tile():
    """A problem inside the smallest tile runs one program.  One that a
    64x128 tile covers runs as two 64x64 programs on two SMs in one round,
    each with half the main loop: the model's estimate says so."""
    for a in ("bf16", FP8):
        choice, e = best(GemmProblem(64, 64, 256, a, a))
        assert e.programs == 1 and choice.config.tile[:2] == (64, 64)
        p = GemmProblem(50, 120, 512, a, a)
        choice, e = best(p)
        one = estimate(p, Choice(p.config(64, 128, choice.config.block_k)))
        assert one.programs == 1 and e.rounds == 1
        assert e.programs == 2 and e.total < one.total and e.main < one.main


def test_one_round_and_one_tile_more():
    """128x256 tiles of 896x4864 make 133 programs: a second round for one
    of them.  The model's choice does not pay a whole round for one tile: it
    is estimated faster than 128x256, and its last round is fuller."""
    p = GemmProblem(7 * 128, 19 * 256, 4096)
    coarse = estimate(p, Choice(p.config(128, 256, 64)))
    assert (coarse.programs, coarse.rounds, coarse.tail) == (133, 2, 1)
    choice, e = best(p)
    assert choice.config.tile[:2] != (128, 256)
    assert e.total < coarse.total and e.fill > coarse.fill


def test_k_shorter_than_the_ring():
    """K of one or two steps: the ring never fills; the prologue and the
    epilogues cost more than the main loops, and the choice has the most
    programs the tiles that cover the problem give (each program is short)."""
    for K in (32, 64, 128):
        p = GemmProblem(4096, 4096, K)
        choice, e = best(p)
        assert e.k_steps < e.stages
        assert unsupported(choice.config) is None
        assert e.prologue + e.epilogue > 0 and e.k_steps <= 2


def test_skinny_m_takes_64_rows():
    """M ≤ 64: every row of a 128-row tile past M is wasted work; the
    choice is a 64-row tile, or a transposed one (Cᵀ = B·Aᵀ) whose columns
    hold M in the fewest multiples of 8 (wgmma's N step)."""
    for M, a in itertools.product((1, 16, 33, 64), ("bf16", FP8)):
        for N, K in ((4096, 4096), (14336, 8192), (256, 28672)):
            c = heuristic(GemmProblem(M, N, K, a, a)).config
            assert (c.block_n == -(-M // 8) * 8) if c.transposed else c.block_m == 64, (M, N, K, a, c.id)


def test_huge_k_splits_when_asked():
    """K = 262144 on a 256x256 C: unsplit, 128x128 tiles are 4 programs on
    132 SMs.  With `split`, the model's choice splits K and is estimated
    several times faster; by default the heuristic does not split."""
    p = GemmProblem(256, 256, 262144)
    unsplit, e1 = best(p)
    split, e2 = best(p, split=True)
    assert unsplit.config.split_k == 1
    assert split.config.split_k > 1 and e2.total < e1.total / 3
    assert e2.programs > e1.programs


@pytest.mark.parametrize("a", ["bf16", FP8])
def test_the_chooser_returns_supported_configurations(a):
    """On shapes drawn as the random benchmark draws them (and a few
    degenerate ones), the choice is one `unsupported` takes, one of the
    candidates, and the first of them."""
    from tawa.bench.gemm import random_shapes

    shapes = random_shapes(24, seed=5, multiple=16) + [(1, 1, 1), (8, 8, 8), (16384, 28672, 28672), (16, 256, 256)]
    for M, N, K in shapes:
        p = GemmProblem(M, N, K, a, a)
        for split in (False, True):
            choice = heuristic(p, split=split)
            assert unsupported(choice.config) is None, (M, N, K, choice.id)
            assert split or choice.config.split_k == 1
        assert candidates(p)[0] == heuristic(p)


def test_ranked_orders_by_the_estimate():
    p = GemmProblem(3072, 3072, 3072)
    order = ranked(p)
    assert [e.total for _, e in order] == sorted(e.total for _, e in order)
    assert order[0][0] == heuristic(p, split=True)
    tiles = {c.config.tile[:2] for c, _ in order}
    # Every tile of the space covers 3072, but those whose accumulator does not fit a warp group's registers.
    assert tiles == {t[:2] for t in DEFAULT_SPACE.tiles if unsupported(GemmConfig(*t[:2], 64)) is None}
    assert (192, 192) in tiles and (192, 208) not in tiles
    assert {c.group_rows for c, _ in order if c.config.tile[:2] == (256, 128)} == {128}


def test_fewer_sms_take_larger_tiles():
    """Each SM does more of the work when there are few: rounds cost the
    same whatever the tile, so the tile with the least time per flop wins."""
    p = GemmProblem(1024, 1024, 1024)
    area = {sms: heuristic(p, sms).config.block_m * heuristic(p, sms).config.block_n for sms in (8, SM_COUNT)}
    assert area[8] > area[SM_COUNT]


def test_warm_estimates_skip_the_launch_and_dram():
    p = GemmProblem(1024, 1024, 1024)
    cold, warm = (estimate(p, Choice(p.config(64, 128, 64)), warm=w) for w in (False, True))
    assert warm.total < cold.total and warm.dram == 0 and cold.dram > 0
    big = GemmProblem(16384, 16384, 16384)  # A and B do not fit in L2: read from DRAM either way
    assert estimate(big, Choice(big.config(128, 256, 64)), warm=True).dram > 0


def test_a_cluster_costs_a_fixed_start():
    """A 2-CTA cluster adds `cluster_fixed_s` to the kernel's start (its launch, the first multicast
    load waiting for both CTAs), fitted on both GPUs' times: on a problem of a few microseconds,
    whose k-steps the L2 does not bound, a cluster only costs, and the model takes none."""
    p = GemmProblem(1000, 1000, 1000)
    plain, clustered = Choice(p.config(128, 128, 64)), Choice(p.config(128, 128, 64), cluster=2)
    e1, e2 = estimate(p, plain), estimate(p, clustered)
    assert e2.prologue - e1.prologue == pytest.approx(FITTED.cluster_fixed_s) and FITTED.cluster_fixed_s > 5e-7
    assert e2.total > e1.total
    assert heuristic(p, split=True).cluster == 1
